"""ODDS-style outlier benchmarks built from datasets that ship with scikit-learn, and the novelty protocol.

The ODDS library {cite}`rayana2016odds` turns classification datasets into outlier benchmarks by keeping
some classes as inliers and downsampling another to a few percent. The recipes here follow it with the
copies of the data that scikit-learn installs (nothing is downloaded):

* ``wine``: cultivars 2 and 3 (scikit-learn classes 1 and 2, 119 wines) are inliers; cultivar 1 (class 0)
  is downsampled to 10 outliers, ODDS's recipe for its ``wine`` set (129 points, 13 features);
* ``wdbc``: the 357 benign tumours are inliers; the malignant ones are downsampled to 5 % of the total
  (19 outliers, 30 features);
* ``digits``: the digits 1-9 are inliers; zeros are downsampled to 5 % of the total (85 outliers of 1,712
  points, 64 pixel features).

A foundation model has a fixed feature budget ``d_max``, so every dataset is z-scored and reduced to its
first ``d_max`` principal components (scikit-learn's PCA, fitted without labels). The same reduced
features go to every detector, the foundation models and scikit-learn's.

**Protocol (novelty detection).** A *split* draws ``n_context`` inliers as the clean context (labelled
inlier) and scores every other point. IsolationForest, LocalOutlierFactor (``novelty=True``) and
OneClassSVM are fitted on the same context and score the same queries, so all detectors see the same
information. AUROC and AUPR (average precision, whose chance level is the outlier fraction of the
queries) are averaged over the splits. Which outliers the downsampling keeps moves every detector more than
the split does, so :func:`outlier_draws` repeats the downsampling and detectors are compared over draws
(:func:`paired_over_draws`, :func:`blindspots.claims.holm` across datasets).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .priors import make_task, stack_tasks

#: name -> (sklearn loader name, inlier classes, outlier class, outlier count rule)
RECIPES: dict = {
    "wine": ("load_wine", (1, 2), 0, ("count", 10)),
    "wdbc": ("load_breast_cancer", (1,), 0, ("fraction", 0.05)),
    "digits": ("load_digits", tuple(range(1, 10)), 0, ("fraction", 0.05)),
}
BASELINES: tuple[str, ...] = ("IsolationForest", "LocalOutlierFactor", "OneClassSVM")


@dataclass(frozen=True)
class OutlierDataset:
    """``x (n, d)`` reduced features, ``y (n,)`` 1 = outlier, ``name`` and the original feature count."""

    name: str
    x: np.ndarray
    y: np.ndarray
    raw_features: int

    @property
    def outliers(self) -> int:
        return int(self.y.sum())


def _outlier_count(rule, inliers: int) -> int:
    kind, value = rule
    if kind == "count":
        return int(value)
    return int(round(value / (1.0 - value) * inliers))  # outliers / (inliers + outliers) = value


def odds_dataset(name: str, d_max: int, seed: int = 0) -> OutlierDataset:
    """The ODDS-style dataset ``name`` (module docstring), reduced to ``min(d_max, features)`` components.

    ``seed`` fixes which outliers the downsampling keeps.
    """
    import sklearn.datasets
    from sklearn.decomposition import PCA
    from sklearn.preprocessing import StandardScaler

    if name not in RECIPES:
        raise ValueError(f"name must be one of {sorted(RECIPES)}, got {name!r}")
    if isinstance(d_max, bool) or not isinstance(d_max, (int, np.integer)) or d_max < 1:
        raise ValueError(f"d_max must be an integer >= 1, got {d_max!r}")
    loader, inlier_classes, outlier_class, rule = RECIPES[name]
    data = getattr(sklearn.datasets, loader)()
    x, target = np.asarray(data.data, dtype=float), np.asarray(data.target)
    inl = np.flatnonzero(np.isin(target, inlier_classes))
    out_all = np.flatnonzero(target == outlier_class)
    k = _outlier_count(rule, inl.size)
    rng = np.random.default_rng(seed)
    out = np.sort(rng.choice(out_all, size=k, replace=False))
    keep = np.concatenate([inl, out])
    x, y = x[keep], np.concatenate([np.zeros(inl.size, np.int64), np.ones(k, np.int64)])
    z = StandardScaler().fit_transform(x)
    d = min(int(d_max), z.shape[1])
    z = PCA(n_components=d, random_state=0).fit_transform(z)
    return OutlierDataset(name, z, y, int(x.shape[1]))


def novelty_splits(dataset: OutlierDataset, n_context: int, splits: int, seed: int = 0) -> list:
    """``splits`` pairs ``(context, queries)`` of index arrays: ``n_context`` inliers, and all other points."""
    inliers = np.flatnonzero(dataset.y == 0)
    if isinstance(n_context, bool) or not isinstance(n_context, (int, np.integer)) or not 1 <= n_context < inliers.size:
        raise ValueError(f"n_context must be an integer in [1, {inliers.size - 1}] (the inliers of "
                         f"{dataset.name!r} less one), got {n_context!r}")
    if isinstance(splits, bool) or not isinstance(splits, (int, np.integer)) or splits < 1:
        raise ValueError(f"splits must be an integer >= 1, got {splits!r}")
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(int(splits)):
        ctx = np.sort(rng.choice(inliers, size=int(n_context), replace=False))
        out.append((ctx, np.setdiff1d(np.arange(dataset.y.size), ctx)))
    return out


def split_batch(dataset: OutlierDataset, splits: list, d_max: int):
    """The splits as a :class:`~blindspots.privileged.priors.TaskBatch` (clean context labelled 0)."""
    tasks = [make_task(dataset.x[c], np.zeros(c.size, np.int64), dataset.x[q], dataset.y[q], d_max=d_max)
             for c, q in splits]
    return stack_tasks(tasks)


def detection_scores(y: np.ndarray, scores: np.ndarray) -> dict:
    """``{"auroc", "aupr"}`` means over splits of ``y, scores (splits, queries)`` (higher score = more anomalous)."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    y, scores = np.atleast_2d(y), np.atleast_2d(scores)
    return {"auroc": float(np.mean([roc_auc_score(a, s) for a, s in zip(y, scores)])),
            "aupr": float(np.mean([average_precision_score(a, s) for a, s in zip(y, scores)]))}


def baseline_scores(dataset: OutlierDataset, splits: list, seed: int = 0) -> dict:
    """Scores ``(splits, queries)`` of each of :data:`BASELINES`, fitted on each split's context."""
    from sklearn.ensemble import IsolationForest
    from sklearn.neighbors import LocalOutlierFactor
    from sklearn.svm import OneClassSVM

    out = {b: [] for b in BASELINES}
    for c, q in splits:
        xc, xq = dataset.x[c], dataset.x[q]
        models = {"IsolationForest": IsolationForest(n_estimators=200, random_state=seed),
                  "LocalOutlierFactor": LocalOutlierFactor(n_neighbors=min(20, c.size - 1), novelty=True),
                  "OneClassSVM": OneClassSVM(gamma="scale", nu=0.1)}
        for name, m in models.items():
            m.fit(xc)
            out[name].append(-m.score_samples(xq))  # score_samples: higher = more normal
    return {k: np.array(v) for k, v in out.items()}


def outlier_draws(name: str, d_max: int, n_context: int, draws: int, splits: int, seed: int = 0) -> list:
    """``draws`` independent outlier downsamplings of ``name``, each with its own ``splits`` novelty splits.

    Draw ``k`` keeps the outliers of :func:`odds_dataset` with seed ``seed + k`` and draws its splits with
    seed ``1000 + seed + k``. Which outliers a draw keeps moves the AUROC of every detector far more than which
    inliers form the context, so comparisons are made over draws (paired: every detector sees the same draws).
    Returns a list of ``(OutlierDataset, splits)``.
    """
    if isinstance(draws, bool) or not isinstance(draws, (int, np.integer)) or draws < 1:
        raise ValueError(f"draws must be an integer >= 1, got {draws!r}")
    out = []
    for k in range(int(draws)):
        ds = odds_dataset(name, d_max, seed=seed + k)
        out.append((ds, novelty_splits(ds, n_context, splits, seed=1000 + seed + k)))
    return out


def paired_over_draws(treated, control, confidence: float = 0.95) -> dict:
    """Paired comparison of two detectors over outlier draws (one value per draw each): mean difference,
    Student-t interval and two-sided p-value of ``scipy.stats.ttest_rel``."""
    from scipy import stats

    a, b = np.asarray(treated, dtype=float), np.asarray(control, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or a.size < 2:
        raise ValueError(f"treated and control must be 1-d of the same length >= 2, got {a.shape} and "
                         f"{b.shape}")
    res = stats.ttest_rel(a, b)
    ci = res.confidence_interval(confidence)
    return {"difference": float((a - b).mean()), "low": float(ci.low), "high": float(ci.high),
            "p": float(res.pvalue), "draws": int(a.size)}
