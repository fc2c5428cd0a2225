"""PIQL's training experiments: paired task streams, the privileged variants, speedups, probes, real data.

Every variant of one seed trains on the *same* stream of tasks (same batches in the same order) from the
same initial weights of the shared layers, so the variants of a seed differ only in their privileged
information. A variant is a pair (meta-PI kind, program-PI kind):

* meta-PI: ``None``; ``"meta"``, the nine meta-features per feature of
  :func:`blindspots.privileged.metafeatures.meta_features`; or ``"meta++"``, :func:`meta_pi_plus`, about a
  hundred statistics per task (per feature and per feature pair);
* program-PI: ``None``; ``"trained"``, the contrastively pretrained and frozen
  :class:`~blindspots.privileged.program.ProgramEncoder`; or ``"hashed"``, :class:`HashedProgramEncoder`, a
  generic character n-gram embedding of the program text (no pretrained language model can be downloaded).

The control arm ``"meta (shuffled)"`` (:data:`SHUFFLED_META`) is meta-PI fed another task's meta-features. Three
more arms split meta-PI's information (:data:`DERIVED_META`), with meta-PI's architecture and parameter count:
``"meta (standardised)"`` computes the meta-features on the context the PFN sees, standardised per feature
(:func:`~blindspots.privileged.pfn.standardise`), so it carries shape but no location or scale; ``"meta (location,
scale)"`` keeps only the mean and standard deviation, so it gives the baseline the location and scale that
standardisation removes; ``"meta (zeros)"`` is fed zeros, the baseline widened to meta-PI's parameters and tokens.

The speedup of :func:`speedup` is the book's reading of the paper's sentence {cite}`ding2026piql`: the number
of steps the baseline needs to reach its own validation value (after a fraction of its training), divided by
the number of steps the variant needs to reach it; :func:`speedup_interval` handles runs that never reach it.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .. import claims
from .metafeatures import META_FEATURE_NAMES
from .pfn import PFN, batch_tensors, bce, fit_pfn, meta_pi, standardise, steps_to_reach, task_aurocs
from .program import PAD_ID, ProgramEncoder, ProgramTokenizer, freeze, pretrain_program_encoder, seeded_init
from .speed import target_index
from .teacher_forcing import _single_thread

#: variant -> (meta-PI kind, program-PI kind)
VARIANTS: dict = {
    "baseline": (None, None),
    "meta": ("meta", None),
    "program": (None, "trained"),
    "both": ("meta", "trained"),
    "meta++": ("meta++", None),
    "hashed program": (None, "hashed"),
    "meta (shuffled)": ("meta", None),
    "meta (standardised)": ("meta-std", None),
    "meta (location, scale)": ("meta-loc", None),
    "meta (zeros)": ("meta-zero", None),
}
#: Control arms: each task gets another task's meta-PI (the batch's meta rows rolled by one), in training
#: and at evaluation, so a gain that remains cannot come from the task's own meta-features.
SHUFFLED_META: frozenset = frozenset({"meta (shuffled)"})
#: Meta-PI kinds computed from a batch's tensors when first asked for (:func:`meta_tensor`): meta-features of
#: the standardised context, the raw meta-features with every statistic but the mean and std zeroed, and zeros.
DERIVED_META: tuple[str, ...] = ("meta-std", "meta-loc", "meta-zero")
#: Indices, in :data:`~blindspots.privileged.metafeatures.META_FEATURE_NAMES`, of location and scale.
LOCATION_SCALE: tuple[int, ...] = (META_FEATURE_NAMES.index("mean"), META_FEATURE_NAMES.index("std"))
PER_FEATURE_PLUS: tuple[str, ...] = (
    "mean", "std", "skewness", "excess kurtosis", "5th standardised moment", "6th standardised moment",
    "q01", "q05", "q10", "q25", "q50", "q75", "q90", "q95", "q99", "min", "max",
    "Hill tail index of |x - median|", "upper/lower tail spread ratio", "fraction beyond 3 std", "histogram modes")
PER_PAIR_PLUS: tuple[str, ...] = ("Pearson correlation", "Spearman rank correlation", "quadrant (Blomqvist) beta")
_MODE_BINS = 12


# ----------------------------------------------------------------------------- meta-PI++
def meta_pi_plus_size(d_max: int) -> int:
    """Length of :func:`meta_pi_plus`'s vector: 21 statistics per feature and 3 per feature pair."""
    return d_max * len(PER_FEATURE_PLUS) + d_max * (d_max - 1) // 2 * len(PER_PAIR_PLUS)


def _ranks(x: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    return rankdata(x, axis=1)


def _corr(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a - a.mean(axis=1, keepdims=True)
    b = b - b.mean(axis=1, keepdims=True)
    den = np.sqrt((a ** 2).sum(axis=1) * (b ** 2).sum(axis=1))
    return np.where(den > 0, (a * b).sum(axis=1) / np.where(den > 0, den, 1.0), 0.0)


def meta_pi_plus(context_x: np.ndarray, feature_mask: np.ndarray) -> np.ndarray:
    """Meta-PI++ ``(B, meta_pi_plus_size(d_max))`` of raw contexts ``(B, n, d_max)``.

    Per feature (:data:`PER_FEATURE_PLUS`): moments up to the sixth, nine quantiles, the extremes, the Hill
    estimator of the tail index of ``|x - median|`` from its top tenth, the ratio of upper to lower tail
    spread ``(q99 - q50) / (q50 - q01)``, the fraction of points beyond 3 standard deviations and the number
    of modes of a smoothed 12-bin histogram. Per feature pair (:data:`PER_PAIR_PLUS`): Pearson and Spearman
    correlation and Blomqvist's quadrant beta. Padded features and pairs are 0; every statistic is then
    squashed by ``sign(m) log(1 + |m|)`` like :func:`blindspots.privileged.pfn.meta_pi`.
    """
    from scipy import stats

    x = np.asarray(context_x, dtype=float)
    mask = np.asarray(feature_mask, dtype=bool)
    if x.ndim != 3 or x.shape[1] < 2:
        raise ValueError(f"context_x must have shape (tasks, points >= 2, d_max), got {x.shape}")
    if mask.shape != (x.shape[0], x.shape[2]):
        raise ValueError(f"feature_mask must have shape {(x.shape[0], x.shape[2])}, got {mask.shape}")
    n = x.shape[1]
    mean = x.mean(axis=1)
    std = x.std(axis=1)
    safe = np.where(std > 0, std, 1.0)
    z = (x - mean[:, None]) / safe[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        skew = np.nan_to_num(stats.skew(x, axis=1))
        kurt = np.nan_to_num(stats.kurtosis(x, axis=1))
    m5, m6 = (z ** 5).mean(axis=1), (z ** 6).mean(axis=1)
    q = np.quantile(x, [0.01, 0.05, 0.10, 0.25, 0.50, 0.75, 0.90, 0.95, 0.99], axis=1)  # (9, B, d)
    dev = np.sort(np.abs(x - q[4][:, None]), axis=1)[:, ::-1]  # descending
    k = max(2, n // 10)
    top, ref = dev[:, :k], dev[:, k]
    with np.errstate(divide="ignore", invalid="ignore"):
        hill = np.where(ref[:, None] > 0, np.log(np.where(top > 0, top, 1.0) / np.where(ref > 0, ref, 1.0)[:, None]),
                        0.0).mean(axis=1)
        lower = q[4] - q[0]
        ratio = np.where(lower > 0, (q[8] - q[4]) / np.where(lower > 0, lower, 1.0), 0.0)
    beyond = (np.abs(z) > 3).mean(axis=1)
    lo, hi = x.min(axis=1), x.max(axis=1)
    span = np.where(hi > lo, hi - lo, 1.0)
    bins = np.clip(((x - lo[:, None]) / span[:, None] * _MODE_BINS).astype(int), 0, _MODE_BINS - 1)
    counts = (bins[..., None] == np.arange(_MODE_BINS)).sum(axis=1).astype(float)  # (B, d, bins)
    padded = np.pad(counts, ((0, 0), (0, 0), (1, 1)))
    smooth = 0.25 * padded[..., :-2] + 0.5 * padded[..., 1:-1] + 0.25 * padded[..., 2:]
    sp = np.pad(smooth, ((0, 0), (0, 0), (1, 1)), constant_values=-1.0)
    peaks = (smooth > sp[..., :-2]) & (smooth >= sp[..., 2:]) & (smooth >= 0.05 * n)
    modes = peaks.sum(axis=-1).astype(float)
    per_feature = np.stack([mean, std, skew, kurt, m5, m6, *q, lo, hi, hill, ratio, beyond, modes], axis=-1)
    per_feature = per_feature * mask[..., None]
    d = x.shape[2]
    pairs = [(i, j) for i in range(d) for j in range(i + 1, d)]
    r = _ranks(x)
    med = q[4][:, None]
    per_pair = np.zeros((x.shape[0], len(pairs), len(PER_PAIR_PLUS)))
    for p, (i, j) in enumerate(pairs):
        both = mask[:, i] & mask[:, j]
        quadrant = (np.sign(x[:, :, i] - med[:, :, i]) * np.sign(x[:, :, j] - med[:, :, j])).mean(axis=1)
        per_pair[:, p] = np.stack([_corr(x[:, :, i], x[:, :, j]), _corr(r[:, :, i], r[:, :, j]), quadrant],
                                  axis=-1) * both[:, None]
    m = np.concatenate([per_feature.reshape(len(x), -1), per_pair.reshape(len(x), -1)], axis=1)
    return np.sign(m) * np.log1p(np.abs(m))


# ----------------------------------------------------------------------------- hashed program embedding
class HashedProgramEncoder(torch.nn.Module):
    """A generic text embedding of the program string, standing in for an off-the-shelf embedding model.

    The DSL tokens are joined into text, hashed into ``n_features`` character n-gram counts (scikit-learn's
    ``HashingVectorizer``, n-grams of 2-4 characters, l2-normalised) and mapped by a fixed random Gaussian
    matrix to ``prefix`` embeddings of size ``width``. Nothing in it is trained on the task, like an
    embedding model used off the shelf; it has no parameters, only buffers.
    """

    def __init__(self, tokenizer: ProgramTokenizer, *, width: int = 32, prefix: int = 4, max_len: int = 512,
                 n_features: int = 1024, seed: int = 0):
        super().__init__()
        for name, v, low in (("width", width, 1), ("prefix", prefix, 1), ("max_len", max_len, 8),
                             ("n_features", n_features, 16)):
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {v!r}")
        from sklearn.feature_extraction.text import HashingVectorizer

        self.tokenizer, self.width, self.prefix, self.max_len = tokenizer, width, prefix, max_len
        self.vectorizer = HashingVectorizer(analyzer="char", ngram_range=(2, 4), n_features=n_features,
                                            alternate_sign=False, norm="l2")
        with seeded_init(seed):
            self.register_buffer("projection", torch.randn(n_features, prefix * width))

    def text(self, ids: torch.Tensor) -> list[str]:
        """The program strings of ``ids (B, L)`` (padding dropped)."""
        return [" ".join(self.tokenizer.decode([int(i) for i in row if int(i) != PAD_ID])) for row in ids.cpu()]

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.vectorizer.transform(self.text(ids)).toarray()
        h = torch.as_tensor(h, dtype=self.projection.dtype, device=self.projection.device)
        return (h @ self.projection).view(len(h), self.prefix, self.width)


# ----------------------------------------------------------------------------- metrics
#: Target levels of the speedup: the baseline's own validation value after these fractions of its training.
SPEEDUP_FRACTIONS: tuple[float, ...] = (0.5, 0.75, 1.0)


def speedup(variant_values, baseline_values, steps, *, higher_is_better: bool = False,
            fraction: float = 1.0) -> tuple[float, bool]:
    """The book's reading of the paper's sentence ("baseline-equivalent performance in about half the
    training time"): steps for the baseline to reach its own value after ``fraction`` of its training, over
    steps for the variant to reach that value.

    Returns ``(ratio, censored)``. A variant that never reaches the target within the run is *censored*: its
    ratio is only known to lie below ``t_base / T`` (``T`` the last step), which is returned as the bound.
    """
    steps = np.asarray(steps, dtype=float)
    b = np.asarray(baseline_values, dtype=float)
    if b.shape != steps.shape:
        raise ValueError(f"steps must match baseline_values' shape {b.shape}, got {steps.shape}")
    target = float(b[target_index(steps, fraction)])
    s_base = steps_to_reach(b, target, steps, higher_is_better=higher_is_better)
    s_var = steps_to_reach(variant_values, target, steps, higher_is_better=higher_is_better)
    if math.isinf(s_var):
        return s_base / float(steps[-1]), True
    return s_base / s_var, False


def km_median(times, horizon: float) -> tuple[float, bool]:
    """Kaplan-Meier median of times-to-target, ``inf`` = never reached (right-censored at ``horizon``).

    Returns ``(median, censored)``: the smallest time at which the estimated share still short of the target
    is at most 1/2, or ``(horizon, True)`` when more than half the mass is censored (the median exceeds the
    run).
    """
    from scipy import stats

    t = np.asarray(times, dtype=float)
    if t.ndim != 1 or t.size < 1 or np.any(t <= 0) or np.any(np.isfinite(t) & (t > horizon)):
        raise ValueError(f"times must be a non-empty 1-d array in (0, horizon={horizon}] or inf, "
                         f"got {times!r}")
    ev = t[np.isfinite(t)]
    if ev.size == 0:
        return float(horizon), True
    sf = stats.ecdf(stats.CensoredData(uncensored=ev, right=np.full(t.size - ev.size, float(horizon)))).sf
    hit = np.flatnonzero(sf.probabilities <= 0.5 + 1e-12)
    return (float(sf.quantiles[hit[0]]), False) if hit.size else (float(horizon), True)


def speedup_interval(t_base, t_var, horizon: float, *, confidence: float = 0.95, n_resamples: int = 2000,
                     seed: int = 0) -> dict:
    """Speedup as the ratio of Kaplan-Meier median times-to-target (baseline over variant), with a percentile
    bootstrap interval over seeds (paired: a resample draws whole seeds, both arms).

    ``t_base, t_var``: per-seed steps to the target, ``inf`` where the run never reaches it (censored at
    ``horizon``). Nothing is imputed: where the variant's median is censored the estimate is only an upper
    bound (``estimate_bound``), the baseline's median over ``horizon``. The interval's ends are conservative:
    resamples with a censored median count as 0 for the lower end and as their bound for the upper end, and an
    end that moves between the two readings is flagged (``low_bound``: the lower end is at most
    ``low_reading``, unknown below; ``high_bound``: the upper end is at most ``high``).

    Returns ``estimate``, ``estimate_bound``, ``low``, ``low_reading``, ``low_bound``, ``high``,
    ``high_bound``, ``censored`` (variant runs that never reach the target) and ``seeds``.
    """
    from scipy import stats

    tb, tv = np.asarray(t_base, dtype=float), np.asarray(t_var, dtype=float)
    if tb.shape != tv.shape or tb.ndim != 1 or tb.size < 2:
        raise ValueError(f"t_base and t_var must be 1-d of the same length >= 2, got {tb.shape} and "
                         f"{tv.shape}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    cache: dict = {}

    def median(t):
        key = tuple(np.sort(t))
        if key not in cache:
            cache[key] = km_median(t, horizon)
        return cache[key]

    def ratio(a, b):  # (lower reading, upper reading) of one (re)sample's speedup
        (mb, _), (mv, cens) = median(a), median(b)
        return np.array([0.0, mb / horizon]) if cens else np.array([mb / mv, mb / mv])

    (mb, _), (mv, cens) = median(tb), median(tv)
    est = mb / mv
    if np.unique(tb).size == 1 and np.unique(tv).size == 1:  # every resample is the sample
        lo = hi = np.array([0.0, est]) if cens else np.array([est, est])
    else:
        ci = stats.bootstrap((tb, tv), ratio, paired=True, vectorized=False, method="percentile",
                             confidence_level=confidence, n_resamples=n_resamples,
                             random_state=np.random.default_rng(seed)).confidence_interval
        lo, hi = np.asarray(ci.low), np.asarray(ci.high)
    return {"estimate": float(est), "estimate_bound": bool(cens), "low": float(lo[0]),
            "low_reading": float(lo[1]), "low_bound": bool(lo[1] - lo[0] > 1e-12), "high": float(hi[1]),
            "high_bound": bool(hi[1] - hi[0] > 1e-12), "censored": int(np.isinf(tv).sum()),
            "seeds": int(tb.size)}


def speedup_verdict(s: dict) -> str:
    """Whether :func:`speedup_interval`'s conservative interval excludes 1 (no speedup), with the bound
    spelled out where the estimate is censored."""
    word = ("resolved: the interval excludes 1" if s["low"] > 1.0 or s["high"] < 1.0
            else "not resolved: the interval includes 1")
    if s["estimate_bound"]:
        word += f" (median run never reaches the target: speedup at most {s['estimate']:.2f}x)"
    return word


def speedup_text(s: dict) -> str:
    """``1.29x [1.15, 1.46]``, with censored values written as bounds: ``<= 0.80x [<= 0.41, 1.03]``."""
    est = f"{'<= ' if s['estimate_bound'] else ''}{s['estimate']:.2f}x"
    low = f"<= {s['low_reading']:.2f}" if s["low_bound"] else f"{s['low']:.2f}"
    high = f"<= {s['high']:.2f}" if s["high_bound"] else f"{s['high']:.2f}"
    return f"{est} [{low}, {high}]"


# ----------------------------------------------------------------------------- training on a stream
def make_prior(config: dict):
    """The task prior of ``config`` (``family`` one of gmm, scm, copula, mixture, plus its sizes)."""
    from . import priors

    cfg = dict(config)
    family = cfg.pop("family", "mixture")
    classes = {"gmm": priors.GMMPrior, "scm": priors.SCMPrior, "copula": priors.CopulaPrior,
               "mixture": priors.MixturePrior}
    if family not in classes:
        raise ValueError(f"family must be one of {sorted(classes)}, got {family!r}")
    if "families" in cfg:
        cfg["families"] = tuple(cfg["families"])
    return classes[family](**cfg)


def stream_tensors(batch, tokenizer: ProgramTokenizer, max_len: int, *, meta_plus: bool = True, device="cpu") -> dict:
    """Every tensor any variant needs for one batch: data, ``meta``, ``meta++`` and ``program_ids`` (synthetic
    tasks only: a real dataset has no generator program)."""
    synthetic = bool(batch.generators) and all(g is not None for g in batch.generators)
    t = batch_tensors(batch, meta=True, tokenizer=tokenizer if synthetic else None, max_len=max_len, device=device)
    if meta_plus:
        t["meta++"] = torch.as_tensor(meta_pi_plus(batch.context_x, batch.feature_mask), dtype=torch.float32,
                                      device=device)
    return t


def meta_tensor(tensors: dict, kind: str) -> torch.Tensor:
    """The meta-PI tensor of ``kind`` for one batch of :func:`stream_tensors`; a kind of :data:`DERIVED_META` is
    computed on first use and kept in ``tensors`` (every variant and depth of a seed reuses the stream)."""
    if kind in tensors and tensors[kind] is not None:
        return tensors[kind]
    if kind == "meta-std":
        cx, _ = standardise(tensors["context_x"], tensors["query_x"], tensors["feature_mask"])
        value = meta_pi(cx.double().cpu().numpy(), tensors["feature_mask"].cpu().numpy())
    elif kind == "meta-loc":
        keep = np.zeros(len(META_FEATURE_NAMES))
        keep[list(LOCATION_SCALE)] = 1.0
        value = tensors["meta"].double().cpu().numpy() * keep
    elif kind == "meta-zero":
        value = np.zeros(tuple(tensors["meta"].shape))
    else:
        raise ValueError(f"kind must be one of {sorted({'meta', 'meta++', *DERIVED_META})}, got {kind!r}")
    tensors[kind] = torch.as_tensor(value, dtype=torch.float32, device=tensors["context_x"].device)
    return tensors[kind]


def _for_variant(tensors: dict, variant: str) -> dict:
    meta_kind, program_kind = VARIANTS[variant]
    out = dict(tensors)
    out["meta"] = None if meta_kind is None else meta_tensor(tensors, meta_kind)
    if variant in SHUFFLED_META:
        out["meta"] = torch.roll(out["meta"], shifts=1, dims=0)
    out["program_ids"] = tensors["program_ids"] if program_kind is not None else None
    return out


def build_model(variant: str, d_max: int, encoders: dict, *, width: int, layers: int, heads: int, seed: int) -> PFN:
    """The PFN of ``variant`` with its privileged prefixes (encoders: program kind -> frozen encoder)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {sorted(VARIANTS)}, got {variant!r}")
    meta_kind, program_kind = VARIANTS[variant]
    meta_size = meta_pi_plus_size(d_max) if meta_kind == "meta++" else None
    if program_kind is not None and program_kind not in encoders:
        raise ValueError(f"variant {variant!r} needs a {program_kind!r} program encoder")
    return PFN(d_max, width=width, layers=layers, heads=heads, meta=meta_kind is not None, meta_size=meta_size,
               program_encoder=encoders[program_kind] if program_kind else None, seed=seed)


def predict(model: PFN, tensors: dict, variant: str, meta=None) -> np.ndarray:
    """``P(anomaly) (tasks, queries)`` of the deployable model (no program; ``meta`` overrides the meta-PI)."""
    t = _for_variant(tensors, variant)
    m = t["meta"] if meta is None else meta
    p = model.predict_proba(t["context_x"], t["context_y"], t["query_x"], t["feature_mask"], meta=m)
    return p.double().cpu().numpy()


def evaluate(model: PFN, tensors: dict, variant: str, meta=None) -> dict:
    """``bce`` and mean per-task ``auroc`` of the deployable model on held-out tensors."""
    p = predict(model, tensors, variant, meta)
    y = tensors["query_y"].cpu().numpy()
    auc = task_aurocs(y, p)
    return {"bce": bce(y, p), "auroc": float(np.nanmean(auc))}


def student_r2(model: PFN, tensors: dict) -> float:
    """Fraction of the teacher embedding's variance across tasks that the student predicts (held out)."""
    from .pfn import standardise

    with torch.no_grad():
        cx, _ = standardise(tensors["context_x"], tensors["query_x"], tensors["feature_mask"])
        s = model.student(cx, tensors["context_y"], tensors["feature_mask"]).flatten(1)
        t = model.program_encoder(tensors["program_ids"]).flatten(1)
    sse = float(((s - t) ** 2).sum())
    sst = float(((t - t.mean(dim=0)) ** 2).sum())
    return 1.0 - sse / sst


def hidden_states(model: PFN, tensors: dict, variant: str) -> list[np.ndarray]:
    """Per layer the representation of each task, ``(tasks, features)``, of the deployable model.

    Layer 0 is the model's whole input: the mean over context rows of their embeddings, concatenated with
    the prefix tokens the first block receives (meta-PI's tokens; the student's program tokens), so that a
    probe on it reads everything the model is handed. Layer ``l >= 1`` is the mean over context rows of the
    hidden state after block ``l`` (``(tasks, width)``).
    """
    from .pfn import standardise

    t = _for_variant(tensors, variant)
    model.eval()
    with torch.no_grad():
        out = model(t["context_x"], t["context_y"], t["query_x"], t["feature_mask"], meta=t["meta"],
                    return_hidden=True)
        cx, _ = standardise(t["context_x"], t["query_x"], t["feature_mask"])
        prefix, _, _ = model._prefix(t["meta"], cx, t["context_y"], t["feature_mask"], None, 0.0)
    first = torch.cat([out.hidden[0], *[p.flatten(1) for p in prefix]], dim=1)
    return [first.cpu().numpy()] + [h.cpu().numpy() for h in out.hidden[1:]]


def probe_accuracy(train_h: np.ndarray, train_y, test_h: np.ndarray, test_y) -> float:
    """Held-out accuracy of a linear probe (standardised features, multinomial logistic regression)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    probe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000, C=1.0))
    probe.fit(train_h, np.asarray(train_y))
    return float(probe.score(test_h, np.asarray(test_y)))


def control_probe_accuracy(train_h: np.ndarray, train_y, test_h: np.ndarray, test_y, seed: int) -> float:
    """:func:`probe_accuracy` with the labels shuffled across tasks, independently for fitting and for
    scoring (a control task): nothing in the tasks predicts them, so it must score at chance."""
    rng = np.random.default_rng([seed, 11])
    y_tr, y_te = np.asarray(train_y), np.asarray(test_y)
    return probe_accuracy(train_h, rng.permutation(y_tr), test_h, rng.permutation(y_te))


def train_variant(variant: str, stream: list, *, d_max: int, encoders: dict, width: int, layers: int, heads: int,
                  lr: float, embed_weight: float, seed: int, val: dict, eval_every: int, device="cpu"):
    """Train ``variant`` on ``stream`` (a list of :func:`stream_tensors`), Adam with cosine learning rate.

    Returns the model (eval mode) and its log: validation ``bce``/``auroc`` every ``eval_every`` steps
    (``steps``), and the per-step training ``train_bce`` and teacher weight ``alpha``.
    """
    model = build_model(variant, d_max, encoders, width=width, layers=layers, heads=heads, seed=seed).to(device)
    total = len(stream)
    log = {"steps": [], "bce": [], "auroc": []}

    def validate(step, model):
        if step % eval_every == 0 or step == total:
            ev = evaluate(model, val, variant)
            log["steps"].append(step)
            log["bce"].append(ev["bce"])
            log["auroc"].append(ev["auroc"])

    parts = fit_pfn(model, (_for_variant(t, variant) for t in stream), steps=total, lr=lr,
                    embed_weight=embed_weight, on_step=validate)
    log["train_bce"] = [x["bce"] for x in parts]
    log["alpha"] = [x["alpha"] for x in parts]
    return model, log


def pretrain_encoder(config: dict, seed: int) -> dict:
    """Pretrain the program encoder on ``config['prior']`` and return its frozen state dict.

    ``config['encoder']``: ``width``, ``layers``, ``prefix``, ``max_len``, ``steps``, ``batch``, ``lr``.
    """
    e = config["encoder"]
    tok = ProgramTokenizer()
    enc = ProgramEncoder(tok, width=e["width"], layers=e["layers"], prefix=e["prefix"], max_len=e["max_len"], seed=seed)
    losses = pretrain_program_encoder(enc, tok, make_prior(config["prior"]), steps=e["steps"], batch=e["batch"],
                                      rng=np.random.default_rng([seed, 7]), lr=e["lr"])
    return {"state": {k: v.clone() for k, v in enc.state_dict().items()}, "losses": losses}


def encoders_from(config: dict, encoder_state: dict | None, seed: int) -> dict:
    """The frozen program encoders: ``trained`` (from its state dict) and ``hashed``."""
    e = config["encoder"]
    tok = ProgramTokenizer()
    out = {"hashed": HashedProgramEncoder(tok, width=e["width"], prefix=e["prefix"], max_len=e["max_len"], seed=seed)}
    if encoder_state is not None:
        enc = ProgramEncoder(tok, width=e["width"], layers=e["layers"], prefix=e["prefix"], max_len=e["max_len"])
        enc.load_state_dict(encoder_state)
        out["trained"] = freeze(enc)
    return out


def _held_out(prior, tasks: int, rng, tok, max_len, device="cpu") -> tuple:
    batch = prior.sample_batch(tasks, rng)
    return batch, stream_tensors(batch, tok, max_len, device=device)


def run_seed(seed: int, *, config: dict, variants, encoder_state: dict | None = None, real_data: dict | None = None,
             checkpoint_dir: str | None = None, device: str = "cpu", depths=None) -> dict:
    """One seed of the experiment: every variant on the same task stream; held-out metrics of each.

    ``config``: ``prior`` (see :func:`make_prior`), ``model`` (width, layers, heads), ``train`` (steps, batch, lr,
    embed_weight, eval_every), ``eval`` (val_tasks, test_tasks per family, probe_train, probe_test), ``encoder``.
    ``real_data``: name -> (OutlierDataset, splits) for the novelty benchmarks, or name -> a list of them (one
    per outlier draw, :func:`~blindspots.privileged.realdata.outlier_draws`), scored draw by draw.
    ``device``: where the tensors and models live (``"cuda"`` at full scale on a GPU).
    ``depths``: when given, every variant is trained at each of these layer counts (on the same stream) instead of
    ``config['model']['layers']``, and the results go to ``out['depths'][str(layers)][variant]``.
    ``checkpoint_dir``: when given, each finished variant's state dict and results are saved there
    (``torch.save``) and a rerun loads them (``weights_only=True``) instead of training again.

    Returns per variant the validation curves, final per-family test AUROC/BCE, the meta-permutation
    effect (meta variants), the student's R^2 (program variants), probe accuracies per layer and the
    real-data scores.
    """
    from pathlib import Path

    from . import priors as P
    from .realdata import detection_scores, split_batch

    variants = list(variants)
    for v in variants:
        if v not in VARIANTS:
            raise ValueError(f"variants must be in {sorted(VARIANTS)}, got {v!r}")
    if depths is not None and (not list(depths) or any(isinstance(L, bool) or not isinstance(L, (int, np.integer))
                                                       or L < 1 for L in depths)):
        raise ValueError(f"depths must be None or a non-empty list of integers >= 1, got {depths!r}")
    tr, mc, ec = config["train"], config["model"], config["eval"]
    tok = ProgramTokenizer()
    max_len = config["encoder"]["max_len"]
    prior = make_prior(config["prior"])
    d_max = prior.d_max
    encoders = encoders_from(config, encoder_state, seed)
    rng = np.random.default_rng([seed, 1])
    stream = [stream_tensors(prior.sample_batch(tr["batch"], rng), tok, max_len, device=device)
              for _ in range(tr["steps"])]
    hrng = np.random.default_rng([seed, 2])
    _, val = _held_out(prior, ec["val_tasks"], hrng, tok, max_len, device)
    families = prior.families if isinstance(prior, P.MixturePrior) else (config["prior"].get("family", "mixture"),)
    tests = {f: _held_out(prior.component(f) if isinstance(prior, P.MixturePrior) else prior, ec["test_tasks"], hrng,
                          tok, max_len, device)[1] for f in families}
    probe = {}
    if isinstance(prior, P.MixturePrior) and ec.get("probe_train"):
        for part in ("train", "test"):
            b, t = _held_out(prior, ec[f"probe_{part}"], hrng, tok, max_len, device)
            gb, gt = _held_out(prior.component("gmm"), ec[f"probe_{part}"], hrng, tok, max_len, device)
            probe[part] = {"family": (t, list(b.families)),
                           "components": (gt, [g.components for g in gb.generators])}
    # one draw (a tuple) gives one score dict; a list of draws gives a list, one per draw
    real = {name: [(ds, split_batch(ds, sp, d_max)) for ds, sp in ([d] if isinstance(d, tuple) else d)]
            for name, d in (real_data or {}).items()}
    real_t = {name: [stream_tensors(b, tok, max_len, device=device) for _, b in draws]
              for name, draws in real.items()}
    out = {"seed": int(seed), "variants": {}}
    folder = Path(checkpoint_dir) if checkpoint_dir else None
    jobs = [(None, mc["layers"])] if depths is None else [(int(L), int(L)) for L in depths]

    def measure(v: str, layers: int) -> tuple[dict, PFN]:
        model, log = train_variant(v, stream, d_max=d_max, encoders=encoders, width=mc["width"], layers=layers,
                                   heads=mc["heads"], lr=tr["lr"], embed_weight=tr["embed_weight"], seed=seed,
                                   val=val, eval_every=tr["eval_every"], device=device)
        res = {"curve": log, "test": {f: evaluate(model, t, v) for f, t in tests.items()}}
        meta_kind, program_kind = VARIANTS[v]
        if meta_kind is not None:  # the meta prefix of another task: does the model use its own?
            shuffled = torch.roll(meta_tensor(val, meta_kind), shifts=1, dims=0)
            res["meta_shuffled_bce"] = evaluate(model, val, v, meta=shuffled)["bce"]
        if program_kind is not None:
            res["student_r2"] = student_r2(model, val)
        if probe:
            res["probes"] = {}
            for target in ("family", "components"):
                (t_tr, y_tr), (t_te, y_te) = probe["train"][target], probe["test"][target]
                h_tr, h_te = hidden_states(model, t_tr, v), hidden_states(model, t_te, v)
                res["probes"][target] = [probe_accuracy(x, y_tr, z, y_te) for x, z in zip(h_tr, h_te)]
                if target == "family":
                    res["probes"]["family_control"] = [control_probe_accuracy(x, y_tr, z, y_te, seed + k)
                                                       for k, (x, z) in enumerate(zip(h_tr, h_te))]
        res["real"] = {}
        for name, draws in real.items():
            per_draw = [detection_scores(np.asarray(b.query_y), predict(model, t, v))
                        for (_, b), t in zip(draws, real_t[name])]
            res["real"][name] = per_draw[0] if isinstance(real_data[name], tuple) else per_draw
        return res, model

    with _single_thread(device):
        for depth, layers in jobs:
            results = out["variants"] if depth is None else out.setdefault("depths", {}).setdefault(str(depth), {})
            for v in variants:
                tag = "" if depth is None else f"L{depth}_"
                ck = folder / f"seed{seed}_{tag}{v.replace(' ', '_')}.pt" if folder else None
                if ck is not None and ck.exists():
                    results[v] = torch.load(ck, weights_only=True, map_location="cpu")["result"]
                    continue
                results[v], model = measure(v, layers)
                if ck is not None:
                    folder.mkdir(parents=True, exist_ok=True)
                    torch.save({"state": model.state_dict(), "result": results[v]}, ck)
    return out


# ----------------------------------------------------------------------------- claims over seeds
#: Training claims of chapter 03, fixed before the book run: id -> statement. Each is a paired effect over
#: seeds (:func:`claim_samples`) whose 95 % interval must clear the threshold.
TRAINING_CLAIMS: dict = {
    "pi-piql-baseline-learns": "the baseline's mean test AUROC on held-out GMM tasks exceeds 0.75",
    "pi-piql-meta-used": "the meta-PI model uses its meta-features: another task's meta-PI raises its validation "
                         "log-loss",
    "pi-piql-meta-lowers-loss": "meta-PI ends with a lower validation log-loss than the baseline (same task stream, "
                                "same initial weights)",
    "pi-piql-student-learns": "the program variant's student predicts the frozen teacher embedding from the data: "
                              "held-out R^2 above 0",
}
#: Probe claims of chapter 04, fixed before the book run. The depth claim is about the gain of a probe over
#: the probe on the model's own input (layer 0 of :func:`hidden_states`, prefix included): reformulated after
#: runs on seeds 0-5 showed that meta-PI's input alone decodes the family about as well as its layer 1;
#: tested on fresh seeds (chapter 04's ``seed_base``).
PROBE_CLAIMS: dict = {
    "pi-probe-family-decodable": "a linear probe on the baseline's last layer decodes the prior family above chance "
                                 "(1/3)",
    "pi-probe-meta-gain-below-baseline": "the first layer adds less family information to meta-PI's input "
                                         "than to the baseline's: probe gain from layer 0 (the input, meta "
                                         "prefix included) to layer 1, baseline's minus meta-PI's",
}
LEARNS_AUROC = 0.75
CHANCE_FAMILY = 1.0 / 3.0
#: A probe fitted to shuffled labels must stay below chance + this (mean over seeds, arms and layers).
CONTROL_PROBE_SLACK = 0.1
#: Claims of TRAINING_CLAIMS / PROBE_CLAIMS that check a premise of the comparisons, not a result of the paper:
#: the baseline learns (the positive control), the student learns at all, the family is decodable at all.
#: They are sanity records; every other training claim is a verification.
PREMISE_CLAIMS = ("pi-piql-baseline-learns", "pi-piql-student-learns", "pi-probe-family-decodable")


def _known_claims() -> dict:
    return {**TRAINING_CLAIMS, **PROBE_CLAIMS, **DEPTH_CLAIMS, **SPLIT_CLAIMS}


def claim_kind(cid: str) -> str:
    """``"sanity"`` for a premise (:data:`PREMISE_CLAIMS`), ``"verification"`` for the other training claims."""
    if cid not in _known_claims():
        raise ValueError(f"cid must be one of {sorted(_known_claims())}, got {cid!r}")
    return "sanity" if cid in PREMISE_CLAIMS else "verification"


def claim_samples(results: list, cid: str) -> tuple[np.ndarray, np.ndarray, float]:
    """``(treated, control, exceeds)`` per seed for claim ``cid`` of :data:`TRAINING_CLAIMS`, :data:`PROBE_CLAIMS`
    or :data:`DEPTH_CLAIMS` (paired: one value per seed and arm)."""
    v = lambda name: [r["variants"][name] for r in results]  # noqa: E731
    if cid == "pi-piql-baseline-learns":
        a = np.array([x["test"]["gmm"]["auroc"] for x in v("baseline")])
        return a, np.full_like(a, LEARNS_AUROC), 0.0
    if cid == "pi-piql-meta-used":
        return (np.array([x["meta_shuffled_bce"] for x in v("meta")]),
                np.array([x["curve"]["bce"][-1] for x in v("meta")]), 0.0)
    if cid == "pi-piql-meta-lowers-loss":
        return (np.array([x["curve"]["bce"][-1] for x in v("baseline")]),
                np.array([x["curve"]["bce"][-1] for x in v("meta")]), 0.0)
    if cid == "pi-piql-student-learns":
        a = np.array([x["student_r2"] for x in v("program")])
        return a, np.zeros_like(a), 0.0
    if cid == "pi-probe-family-decodable":
        a = np.array([x["probes"]["family"][-1] for x in v("baseline")])
        return a, np.full_like(a, CHANCE_FAMILY), 0.0
    if cid == "pi-probe-meta-gain-below-baseline":
        return probe_gains(results, "baseline"), probe_gains(results, "meta"), 0.0
    if cid == "pi-depth-meta-lowers-loss-at-one-layer":
        d = [r["depths"]["1"] for r in results]
        return (np.array([x["baseline"]["curve"]["bce"][-1] for x in d]),
                np.array([x["meta"]["curve"]["bce"][-1] for x in d]), 0.0)
    if cid in ONE_LAYER_CONTROLS:
        d = [r["depths"]["1"] for r in results]
        return (np.array([x[ONE_LAYER_CONTROLS[cid]]["curve"]["bce"][-1] for x in d]),
                np.array([x["meta"]["curve"]["bce"][-1] for x in d]), 0.0)
    raise ValueError(f"cid must be one of {sorted(_known_claims())}, got {cid!r}")


def probe_gains(results: list, variant: str, layer: int = 1, target: str = "family") -> np.ndarray:
    """Per-seed probe accuracy of ``variant`` at ``layer`` minus that on its input (layer 0, with prefix)."""
    acc = np.array([r["variants"][variant]["probes"][target] for r in results])
    if not 1 <= layer < acc.shape[1]:
        raise ValueError(f"layer must lie in [1, {acc.shape[1] - 1}], got {layer!r}")
    return acc[:, layer] - acc[:, 0]


def control_probe_mean(results: list, variants) -> float:
    """Mean held-out accuracy of the shuffled-label family probes over seeds, ``variants`` and layers."""
    return float(np.mean([r["variants"][v]["probes"]["family_control"] for r in results for v in variants]))


def speedups(results: list, variant: str, metric: str = "bce", fraction: float = 1.0) -> dict:
    """Per-seed times-to-target of the baseline and ``variant`` on the validation ``metric`` (bce or auroc),
    the target being the baseline's own value after ``fraction`` of its training (:func:`speedup`).

    Returns ``t_base``, ``t_var`` (``inf`` where the variant never reaches the target: censored), ``horizon``
    (the last step), and per seed ``ratio`` with ``censored`` (where censored, ``ratio`` is an upper bound).
    """
    if metric not in ("bce", "auroc"):
        raise ValueError(f"metric must be 'bce' or 'auroc', got {metric!r}")
    hib = metric == "auroc"
    out = {"t_base": [], "t_var": [], "ratio": [], "censored": []}
    for r in results:
        b, x = r["variants"]["baseline"]["curve"], r["variants"][variant]["curve"]
        steps = np.asarray(b["steps"], dtype=float)
        target = float(np.asarray(b[metric], dtype=float)[target_index(steps, fraction)])
        out["t_base"].append(steps_to_reach(b[metric], target, steps, higher_is_better=hib))
        out["t_var"].append(steps_to_reach(x[metric], target, steps, higher_is_better=hib))
        ratio, cens = speedup(x[metric], b[metric], steps, higher_is_better=hib, fraction=fraction)
        out["ratio"].append(ratio)
        out["censored"].append(cens)
    res = {k: np.array(v) for k, v in out.items()}
    res["horizon"] = float(steps[-1])
    return res


#: Depth claim of chapter 05, fixed before its book run.
DEPTH_CLAIMS: dict = {
    "pi-depth-meta-lowers-loss-at-one-layer": "with one layer, meta-PI ends with a lower validation log-loss than the "
                                              "baseline (same task stream, same initial weights)",
    "pi-depth-meta-beats-shuffled-at-one-layer": "with one layer, meta-PI ends with a lower validation "
                                                 "log-loss than its control fed another task's meta-features "
                                                 "(same parameters, tokens, task stream and initial weights)",
}
#: Chapter 05's parameter-matched claim, written after the split arms' first run (seeds 0-5) and tested on the
#: chapter's fresh seeds (its ``seed_base``): meta-PI against the baseline widened to its size.
SPLIT_CLAIMS: dict = {
    "pi-depth-meta-beats-zeros-at-one-layer": "with one layer, meta-PI ends with a lower validation log-loss "
                                              "than the baseline widened to its parameters and tokens "
                                              "(meta-PI fed zeros; same task stream and initial weights)",
}
#: One-layer claims of meta-PI against an arm of its own architecture: claim id -> that arm.
ONE_LAYER_CONTROLS: dict = {"pi-depth-meta-beats-shuffled-at-one-layer": "meta (shuffled)",
                            "pi-depth-meta-beats-zeros-at-one-layer": "meta (zeros)"}


def depth_gains(results: list, depth: int, variant: str = "meta", control: str = "baseline") -> np.ndarray:
    """Per-seed final validation log-loss of ``control`` minus ``variant``'s, at ``depth`` layers."""
    key = str(int(depth))
    final = lambda r, v: r["depths"][key][v]["curve"]["bce"][-1]  # noqa: E731
    return np.array([final(r, control) - final(r, variant) for r in results])


#: Chapter 05's split of meta-PI's information at one layer: (treated, control) pairs, one Holm family. Every
#: meta arm has meta-PI's architecture and parameter count; "meta (zeros)" is the baseline widened to them, so
#: rows against it are parameter-matched. Measured, not claimed: no criterion was fixed before these arms ran.
META_SPLIT: tuple[tuple[str, str], ...] = (
    ("meta (zeros)", "baseline"),
    ("meta", "meta (zeros)"),
    ("meta (standardised)", "meta (zeros)"),
    ("meta (location, scale)", "meta (zeros)"),
    ("meta", "meta (location, scale)"),
    ("meta", "meta (standardised)"),
)


#: Verdicts of :func:`split_table`: the treated arm's loss is lower, higher, or not resolved.
SPLIT_VERDICTS = ("resolved: lower loss", "resolved: higher loss", "not resolved")


def split_table(results: list, depth: int = 1, comparisons=META_SPLIT, *, alpha: float = 0.05,
                power: float = 0.8) -> list[dict]:
    """Paired gains ``loss(control) - loss(treated)`` at ``depth`` for each pair of ``comparisons``, as one family.

    Each row has ``treated``, ``control``, the :class:`~blindspots.claims.SeedEffect` ``effect``, the two-sided
    paired t ``p``, Holm's ``p_holm`` over the rows, ``detectable`` (the gain a paired t test at level
    ``alpha / rows``, Holm's strictest step, detects with probability ``power`` at the rows' seed spread) and a
    ``verdict``: *lower loss* or *higher loss* (the treated arm's, Holm-adjusted p below ``alpha``), else *not
    resolved (could have detected >= x)*.
    """
    if not comparisons:
        raise ValueError("comparisons must name at least one (treated, control) pair")
    rows = []
    for treated, control in comparisons:
        d = depth_gains(results, depth, variant=treated, control=control)
        eff = claims.seed_effect(d, np.zeros_like(d), paired=True)
        rows.append({"treated": treated, "control": control, "effect": eff, "p": eff.p_value()})
    family = claims.family_verdicts([r["effect"] for r in rows], alpha=alpha, power=power, words=SPLIT_VERDICTS,
                                    digits=4)
    for r, v in zip(rows, family):
        r["p_holm"], r["detectable"], r["verdict"] = v.p_holm, v.detectable, v.verdict
    return rows
