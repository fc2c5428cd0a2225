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

The speedup of :func:`speedup` is the paper's {cite}`ding2026piql`: the number of steps the baseline needs
to reach its own final validation value, divided by the number of steps the variant needs to reach it.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .metafeatures import META_FEATURE_NAMES
from .pfn import PFN, batch_tensors, bce, fit_pfn, steps_to_reach, task_aurocs
from .program import PAD_ID, ProgramEncoder, ProgramTokenizer, freeze, pretrain_program_encoder, seeded_init
from .teacher_forcing import _single_thread

#: variant -> (meta-PI kind, program-PI kind)
VARIANTS: dict = {
    "baseline": (None, None),
    "meta": ("meta", None),
    "program": (None, "trained"),
    "both": ("meta", "trained"),
    "meta++": ("meta++", None),
    "hashed program": (None, "hashed"),
}
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
def speedup(variant_values, baseline_values, steps, *, higher_is_better: bool = False) -> float:
    """The paper's speedup: steps for the baseline to reach its final value / steps for the variant.

    ``0`` when the variant never reaches it within the run (a censored ratio, at most
    ``baseline steps / last step``).
    """
    target = float(np.asarray(baseline_values, dtype=float)[-1])
    s_base = steps_to_reach(baseline_values, target, steps, higher_is_better=higher_is_better)
    s_var = steps_to_reach(variant_values, target, steps, higher_is_better=higher_is_better)
    return 0.0 if math.isinf(s_var) else s_base / s_var


def log_ratio_interval(ratios, confidence: float = 0.95) -> dict:
    """Geometric mean of per-seed ratios and its Student-t interval over seeds (on the log scale).

    Censored ratios (0: the variant never reached the target) are replaced by the smallest positive ratio
    of any seed divided by 2 and counted in ``censored``; with every ratio censored the mean is 0.
    """
    from scipy import stats

    r = np.asarray(ratios, dtype=float)
    if r.size < 2 or np.any(r < 0) or not np.all(np.isfinite(r)):
        raise ValueError(f"ratios must be >= 2 finite non-negative values, got {ratios!r}")
    censored = int((r == 0).sum())
    if censored == r.size:
        return {"mean": 0.0, "low": 0.0, "high": 0.0, "censored": censored, "seeds": int(r.size)}
    r = np.where(r == 0, r[r > 0].min() / 2, r)
    lr = np.log(r)
    half = float(stats.t.ppf(0.5 + confidence / 2, r.size - 1)) * lr.std(ddof=1) / math.sqrt(r.size)
    m = float(lr.mean())
    return {"mean": math.exp(m), "low": math.exp(m - half), "high": math.exp(m + half), "censored": censored,
            "seeds": int(r.size)}


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


def _for_variant(tensors: dict, variant: str) -> dict:
    meta_kind, program_kind = VARIANTS[variant]
    out = dict(tensors)
    out["meta"] = None if meta_kind is None else tensors[meta_kind]
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
    """Per layer (0 = embeddings) the context-pooled representation ``(tasks, width)``, deployable model."""
    t = _for_variant(tensors, variant)
    model.eval()
    with torch.no_grad():
        out = model(t["context_x"], t["context_y"], t["query_x"], t["feature_mask"], meta=t["meta"],
                    return_hidden=True)
    return [h.cpu().numpy() for h in out.hidden]


def probe_accuracy(train_h: np.ndarray, train_y, test_h: np.ndarray, test_y) -> float:
    """Held-out accuracy of a linear probe (standardised features, multinomial logistic regression)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    probe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000, C=1.0))
    probe.fit(train_h, np.asarray(train_y))
    return float(probe.score(test_h, np.asarray(test_y)))


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
    ``real_data``: name -> (OutlierDataset, splits) for the novelty benchmarks.
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
    real = {name: (ds, split_batch(ds, splits, d_max)) for name, (ds, splits) in (real_data or {}).items()}
    real_t = {name: stream_tensors(b, tok, max_len, device=device) for name, (_, b) in real.items()}
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
            shuffled = torch.roll(val[meta_kind], shifts=1, dims=0)
            res["meta_shuffled_bce"] = evaluate(model, val, v, meta=shuffled)["bce"]
        if program_kind is not None:
            res["student_r2"] = student_r2(model, val)
        if probe:
            res["probes"] = {}
            for target in ("family", "components"):
                (t_tr, y_tr), (t_te, y_te) = probe["train"][target], probe["test"][target]
                h_tr, h_te = hidden_states(model, t_tr, v), hidden_states(model, t_te, v)
                res["probes"][target] = [probe_accuracy(x, y_tr, z, y_te) for x, z in zip(h_tr, h_te)]
        res["real"] = {name: detection_scores(np.asarray(b.query_y), predict(model, real_t[name], v))
                       for name, (_, b) in real.items()}
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
#: Probe claims of chapter 04, fixed before the book run.
PROBE_CLAIMS: dict = {
    "pi-probe-family-decodable": "a linear probe on the baseline's last layer decodes the prior family above chance "
                                 "(1/3)",
    "pi-probe-meta-earlier": "with meta-PI the prior family is more decodable at layer 1 than without (probe "
                             "accuracy, meta minus baseline)",
}
LEARNS_AUROC = 0.75
CHANCE_FAMILY = 1.0 / 3.0
#: Claims of TRAINING_CLAIMS / PROBE_CLAIMS that check a premise of the comparisons, not a result of the paper:
#: the baseline learns (the positive control), the student learns at all, the family is decodable at all.
#: They are sanity records; every other training claim is a verification.
PREMISE_CLAIMS = ("pi-piql-baseline-learns", "pi-piql-student-learns", "pi-probe-family-decodable")


def claim_kind(cid: str) -> str:
    """``"sanity"`` for a premise (:data:`PREMISE_CLAIMS`), ``"verification"`` for the other training claims."""
    known = {**TRAINING_CLAIMS, **PROBE_CLAIMS, **DEPTH_CLAIMS}
    if cid not in known:
        raise ValueError(f"cid must be one of {sorted(known)}, got {cid!r}")
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
    if cid == "pi-probe-meta-earlier":
        return (np.array([x["probes"]["family"][1] for x in v("meta")]),
                np.array([x["probes"]["family"][1] for x in v("baseline")]), 0.0)
    if cid == "pi-depth-meta-lowers-loss-at-one-layer":
        d = [r["depths"]["1"] for r in results]
        return (np.array([x["baseline"]["curve"]["bce"][-1] for x in d]),
                np.array([x["meta"]["curve"]["bce"][-1] for x in d]), 0.0)
    raise ValueError(f"cid must be one of {sorted({**TRAINING_CLAIMS, **PROBE_CLAIMS, **DEPTH_CLAIMS})}, got {cid!r}")


def speedups(results: list, variant: str, metric: str = "bce") -> np.ndarray:
    """Per-seed :func:`speedup` of ``variant`` over the baseline on the validation ``metric`` (bce or auroc)."""
    if metric not in ("bce", "auroc"):
        raise ValueError(f"metric must be 'bce' or 'auroc', got {metric!r}")
    out = []
    for r in results:
        b, x = r["variants"]["baseline"]["curve"], r["variants"][variant]["curve"]
        out.append(speedup(x[metric], b[metric], b["steps"], higher_is_better=metric == "auroc"))
    return np.array(out)


#: Depth claim of chapter 05, fixed before its book run.
DEPTH_CLAIMS: dict = {
    "pi-depth-meta-lowers-loss-at-one-layer": "with one layer, meta-PI ends with a lower validation log-loss than the "
                                              "baseline (same task stream, same initial weights)",
}


def depth_gains(results: list, depth: int) -> np.ndarray:
    """Per-seed final validation log-loss of the baseline minus meta-PI's, at ``depth`` layers."""
    key = str(int(depth))
    return np.array([r["depths"][key]["baseline"]["curve"]["bce"][-1] - r["depths"][key]["meta"]["curve"]["bce"][-1]
                     for r in results])
