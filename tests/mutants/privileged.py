"""Planted errors for Part III (privileged information). See ``registry.py``.

Chapter 01's claims run in this order: pi-gap-identity, (pi-gap-label-vs-kl, consistency),
(pi-gap-non-increasing, sanity), pi-gap-two-term-constant, the d-grid constants, then the
representation claims. Each patch below leaves every verification before its target intact.
The training-effect claims of chapters 02-05 need book-scale training: their planted errors run the
chapter at book scale with the bug in every seed worker.
"""

from mutants.registry import Mutant

GAP = "privileged/01_privileged_gap"
TF = "privileged/02_teacher_forcing"

_SHIFT = """
import numpy as np
from blindspots.privileged import theory as _th
_orig = _th.label_logprobs_given_context
def _shifted(prior, post, x):
    lp = _orig(prior, post, x)
    z = lp[..., 1] - lp[..., 0] + {shift}
    return np.stack([-np.logaddexp(0.0, z), -np.logaddexp(0.0, -z)], axis=-1)
_th.label_logprobs_given_context = _shifted
"""

_DROP = """
from blindspots.privileged import theory as _th
_orig = _th.posterior_from_class_stats
def _dropping(prior, counts, means, m2):
    if counts.sum(axis=1).max() >= 1000:  # the largest context of the grid: statistics lost
        counts, means, m2 = 0 * counts, 0 * means, 0 * m2
    return _orig(prior, counts, means, m2)
_th.posterior_from_class_stats = _dropping
"""

_FISHER = """
import numpy as np
from blindspots.privileged import theory as _th
def _constant(prior, samples, rng):
    # the sigma^2 Fisher information taken as 1/sigma^4 instead of 1/(2 sigma^4): 2 z^4 becomes z^4
    y = (rng.random(samples) < prior.anomaly_rate).astype(np.int64)
    z = np.sqrt(prior.scales[y])[:, None] * rng.standard_normal((samples, prior.d))
    lp = _th.label_logprobs_given_generator(prior, np.zeros_like(z), np.ones_like(z), z)
    p = np.exp(lp[:, 1])
    a = 0.5 * (1.0 - 1.0 / prior.inflation)
    wbar = 1.0 - prior.anomaly_rate + prior.anomaly_rate / prior.inflation
    term = 0.5 * p * (1.0 - p) * (a ** 2 * (4.0 * z ** 2 / wbar + z ** 4)).sum(axis=1)
    return float(term.mean()), float(term.std(ddof=1) / np.sqrt(samples))
_th.asymptotic_gap_constant = _constant
"""

_C_AT_D = """
from blindspots.privileged import theory as _th
_orig = _th.asymptotic_gap_constant
def _wrong_at_d(prior, samples, rng):
    C, se = _orig(prior, samples, rng)
    return (1.25 * C, se) if prior.d == {d} else (C, se)
_th.asymptotic_gap_constant = _wrong_at_d
"""

_SWAP_LIMITS = """
from blindspots.privileged import representation as _rp
_rp.{target} = _rp.{source}
"""

_META_FIRST_POINTS = """
from blindspots.privileged import representation as _rp
_orig = _rp.meta_features
_rp.meta_features = lambda data, **kw: _orig(data[..., :20, :], **kw)
"""

_META_NO_SHAPE = """
from blindspots.privileged import representation as _rp
_orig = _rp.meta_features
def _moments_only(data, **kw):
    out = _orig(data, **kw).copy()
    out[..., 2:] = 0.0  # skewness, kurtosis and quantiles lost: only mean and std left
    return out
_rp.meta_features = _moments_only
"""

_PSI_NO_SECOND_MOMENT = """
from blindspots.privileged import representation as _rp
_rp.CONTEXT_FEATURES["x2"] = lambda x: x  # the pooled second moment replaced by the mean
"""

# An arm of the teacher-forcing table trained as scratch (no forcing, no embedding loss).
_TF_ARMS_SCRATCH = """from blindspots.privileged import teacher_forcing as _tf
for _arm in ("student", "embed loss only", "schedule only"):
    _tf.ARMS[_arm] = (False, False)
"""
# Meta-features misaligned in training: every batch's meta rows rolled by one task (evaluation is untouched).
_META_MISALIGNED = """import torch as _torch
from blindspots.privileged import piql as _piql
if not hasattr(_piql, "_unplanted_fit_pfn"):
    _piql._unplanted_fit_pfn = _piql.fit_pfn
    def _misaligned_fit(model, batches, **kw):
        def rolled():
            for t in batches:
                if t.get("meta") is not None:
                    t = {**t, "meta": _torch.roll(t["meta"], shifts=1, dims=0)}
                yield t
        return _piql._unplanted_fit_pfn(model, rolled(), **kw)
    _piql.fit_pfn = _misaligned_fit
"""

# Meta-features misaligned wherever a variant's tensors are assembled (training, evaluation, probes).
_META_MISALIGNED_EVERYWHERE = """import torch as _torch
from blindspots.privileged import piql as _piql
if not hasattr(_piql, "_unplanted_for_variant"):
    _piql._unplanted_for_variant = _piql._for_variant
    def _misaligned(tensors, variant):
        out = _piql._unplanted_for_variant(tensors, variant)
        if out["meta"] is not None:
            out["meta"] = _torch.roll(out["meta"], shifts=1, dims=0)
        return out
    _piql._for_variant = _misaligned
"""

# The probe sees its labels: one-hot label columns appended to the representation, in fitting and in scoring.
_PROBE_FED_LABELS = """import numpy as _np
from blindspots.privileged import piql as _piql
if not hasattr(_piql, "_unplanted_probe_accuracy"):
    _piql._unplanted_probe_accuracy = _piql.probe_accuracy
    def _fed(train_h, train_y, test_h, test_y):
        classes = _np.unique(_np.concatenate([_np.asarray(train_y), _np.asarray(test_y)]))
        onehot = lambda y: (_np.asarray(y)[:, None] == classes[None, :]).astype(float)
        return _piql._unplanted_probe_accuracy(_np.hstack([train_h, onehot(train_y)]), train_y,
                                               _np.hstack([test_h, onehot(test_y)]), test_y)
    _piql.probe_accuracy = _fed
"""

MUTANTS: list[Mutant] = [
    Mutant("pi-posterior-logit-shift", GAP, "pi-gap-identity",
           "p(y|x,D) with its logit shifted by +1.5 (a wrong posterior predictive)",
           patch=_SHIFT.format(shift=1.5)),
    Mutant("pi-posterior-logit-shift-small", GAP, "pi-gap-identity",
           "p(y|x,D) with its logit shifted by +0.3", patch=_SHIFT.format(shift=0.3)),
    Mutant("pi-context-dropped-at-nmax", GAP, "pi-gap-two-term-constant",
           "the largest context's sufficient statistics are lost (its posterior is the prior's: calibrated, "
           "but the gap rises)", patch=_DROP),
    Mutant("pi-fisher-sigma-wrong", GAP, "pi-gap-two-term-constant",
           "the Fisher information of sigma^2 taken as 1/sigma^4 (C's z^4 term halved)", patch=_FISHER),
    *[Mutant(f"pi-constant-wrong-d{d}", GAP, f"pi-gap-two-term-constant-d{d}",
             f"C(d) 25 % too large at d = {d} only", patch=_C_AT_D.format(d=d)) for d in (1, 4, 8)],
    Mutant("pi-psi-loses-second-moment", GAP, "pi-rep-control-plain-gap-falls",
           "the pooled context feature x^2 replaced by x (the control's plain class can no longer identify s)",
           patch=_PSI_NO_SECOND_MOMENT),
    Mutant("pi-meta-moments-only", GAP, "pi-rep-control-gain-below-main",
           "meta-features lose skewness, kurtosis and quantiles (only mean and std reach the read-out)",
           patch=_META_NO_SHAPE),
    Mutant("pi-plain-limit-is-eps", GAP, "pi-rep-plain-gap-constant",
           "wrong theory: the plain class's limit taken as epsilon_phi (the plain gap would vanish)",
           patch=_SWAP_LIMITS.format(target="shape_blind_excess", source="per_shape_excess")),
    Mutant("pi-meta-from-20-points", GAP, "pi-rep-meta-gap-falls",
           "meta-features computed from the first 20 context points only (not consistent as n grows)",
           patch=_META_FIRST_POINTS),
    # pi-rep-meta-above-eps is a consistency record (a rule fitted in the class cannot beat the class's best);
    # pi-tf-program-below-rd is a sanity record (the premise that the program can be used at all): no mutants.
    # teacher forcing's effects: only a book-scale run makes them (at half of book's steps the embedding-loss
    # arm's speedup was not resolved, so the chapter has no smaller mutant scale); the bug is planted in every
    # seed worker. One run: every privileged arm is trained as scratch, so each arm's claims lose their effect
    # (each arm's bug alone, in a run of its own, also killed that arm's claims; one run costs a third).
    Mutant("pi-tf-arms-unforced", TF, "pi-tf-student-below-scratch",
           "the arm table trains the student, the embedding-loss-only and the schedule-only arms without teacher "
           "forcing or embedding loss (each is scratch)",
           patch=_TF_ARMS_SCRATCH, scale="book", workers=True,
           also=("pi-tf-speed-student", "pi-tf-aux-loss-effect", "pi-tf-schedule-below-aux",
                 "pi-tf-speed-embed-loss", "pi-tf-schedule-only-effect")),
]

# --- chapters 03-04: PIQL's training experiments (issue 12)
PIQL = "privileged/03_piql_training"
PROBES = "privileged/04_piql_probes"
# pi-odds-wdbc-isolation-forest, pi-piql-baseline-learns, pi-piql-student-learns and pi-probe-family-decodable are
# sanity records (premises of the comparisons: the data's labels, the positive control): no mutants.
MUTANTS += [
    Mutant("pi-piql-auroc-ordinal-ties", PIQL, "pi-piql-task-auroc-matches-sklearn",
           "the per-task AUROC ranks tied scores in order of appearance instead of giving them their average rank",
           patch="""import numpy as _np
from scipy.stats import rankdata as _rankdata
from blindspots.privileged import piql as _piql
def _ordinal(y, p):
    y = _np.asarray(y).astype(bool)
    r = _rankdata(_np.asarray(p, dtype=float), axis=1, method="ordinal")
    n1 = y.sum(axis=1)
    n0 = y.shape[1] - n1
    return ((r * y).sum(axis=1) - n1 * (n1 + 1) / 2) / (n1 * n0)
_piql.task_aurocs = _ordinal
"""),
    Mutant("pi-metapp-pearson-for-spearman", PIQL, "pi-metapp-spearman-matches-scipy",
           "meta-PI++'s rank correlation is computed on the raw values (Pearson) instead of their ranks",
           patch="""from blindspots.privileged import piql as _piql
_piql._ranks = lambda x: x
"""),
    Mutant("pi-speedup-drops-censored", PIQL, "pi-speedup-km-recovers-known-ratio",
           "the speedup's median time-to-target ignores censoring: runs that never reach the target are left out",
           patch="""import numpy as _np
from blindspots.privileged import piql as _piql
_orig_km = _piql.km_median
def _drop_censored(times, horizon):
    t = _np.asarray(times, dtype=float)
    return _orig_km(t[_np.isfinite(t)], horizon) if _np.isfinite(t).any() else _orig_km(t, horizon)
_piql.km_median = _drop_censored
"""),
    # the draws claim needs book scale's 5 draws x 5 splits; it comes before training, so the run stops there
    # meta-PI's effects: only a book-scale run makes them (chapters 03 and 04 run at book scale; chapter 05 at its
    # mutant scale, book's run at one layer only, where its claims are); the bug is planted in every seed worker
    Mutant("pi-piql-meta-misaligned", PIQL, "pi-piql-meta-used",
           "in training, each task's meta-features are those of the next task in the batch",
           patch=_META_MISALIGNED, scale="book", workers=True, also=("pi-piql-meta-lowers-loss",)),
    # misaligned in training and at read-out: meta-PI's input probe no longer reads the task's own family, so the
    # first layer adds to it what it adds to the baseline's
    Mutant("pi-probe-meta-misaligned", PROBES, "pi-probe-meta-gain-below-baseline",
           "each task's meta-features are those of the next task, in training and when the layers are probed",
           patch=_META_MISALIGNED_EVERYWHERE, scale="book", workers=True),
    Mutant("pi-probe-fed-labels", PROBES, "pi-probe-control-at-chance",
           "the linear probe is fed the labels it is fitted and scored on, as extra one-hot features",
           patch=_PROBE_FED_LABELS, workers=True),
]
MUTANTS.append(Mutant("pi-depth-meta-misaligned", "privileged/05_piql_depth",
                      "pi-depth-meta-lowers-loss-at-one-layer",
                      "in training, each task's meta-features are those of the next task in the batch",
                      patch=_META_MISALIGNED, scale="mutant", workers=True))
MUTANTS.append(Mutant("pi-depth-shuffled-gets-own-meta", "privileged/05_piql_depth",
                      "pi-depth-meta-beats-shuffled-at-one-layer",
                      "the shuffled-meta control arm is fed each task's own meta-features (it is meta-PI)",
                      patch="""from blindspots.privileged import piql as _piql
_piql.SHUFFLED_META = frozenset()
""", scale="mutant", workers=True))
MUTANTS.append(Mutant("pi-depth-zeros-gets-meta", "privileged/05_piql_depth",
                      "pi-depth-meta-beats-zeros-at-one-layer",
                      "the widened baseline is fed the task's own meta-features instead of zeros (it is meta-PI)",
                      patch="""from blindspots.privileged import piql as _piql
_piql.VARIANTS["meta (zeros)"] = ("meta", None)
""", scale="mutant", workers=True))
