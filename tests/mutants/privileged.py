"""Planted errors for Part III (privileged information). See ``registry.py``.

Chapter 01's claims run in this order: pi-gap-identity, (pi-gap-label-vs-kl, consistency),
pi-gap-non-increasing, pi-gap-two-term-constant, the d-grid constants, then the representation
claims. Each patch below leaves every verification before its target intact. Chapter 02's
training-effect claims need book-scale training; they are covered by unit-level mutants in
tests/privileged/test_teacher_forcing.py, which feed the claim the book run's per-seed results
(tests/privileged/data/tf_book_seeds.json) with one arm replaced by what a swapped model gives
(two arms with the same configuration are the same model, tested there).
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

MUTANTS: list[Mutant] = [
    Mutant("pi-posterior-logit-shift", GAP, "pi-gap-identity",
           "p(y|x,D) with its logit shifted by +1.5 (a wrong posterior predictive)",
           patch=_SHIFT.format(shift=1.5)),
    Mutant("pi-posterior-logit-shift-small", GAP, "pi-gap-identity",
           "p(y|x,D) with its logit shifted by +0.3", patch=_SHIFT.format(shift=0.3)),
    Mutant("pi-context-dropped-at-nmax", GAP, "pi-gap-non-increasing",
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
    Mutant("pi-tf-student-is-scratch", TF, "pi-tf-student-below-scratch",
           "the student arm trained without teacher forcing or embedding loss (a swapped model: it is scratch)",
           unit="tests/privileged/test_teacher_forcing.py::test_mutant_student_is_scratch_fails_student_below_scratch"),
    Mutant("pi-tf-ablation-is-scratch", TF, "pi-tf-aux-loss-effect",
           "the embedding-loss-only arm trained without the embedding loss (a swapped model: it is scratch)",
           unit="tests/privileged/test_teacher_forcing.py::test_mutant_ablation_is_scratch_fails_aux_loss_effect"),
    Mutant("pi-tf-ablation-is-scratch-schedule", TF, "pi-tf-schedule-below-aux",
           "the embedding-loss-only arm swapped for scratch, so the whole gain is credited to the schedule",
           unit="tests/privileged/test_teacher_forcing.py::test_mutant_ablation_is_scratch_fails_schedule_below_aux"),
]

# --- chapters 03-04: PIQL's training experiments (issue 12)
PIQL = "privileged/03_piql_training"
PROBES = "privileged/04_piql_probes"
UNIT_PIQL = "tests/privileged/test_piql_claims.py::"
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
    Mutant("pi-piql-meta-shuffled-ignored", PIQL, "pi-piql-meta-used",
           "meta-features shuffled across tasks in training: the model ignores its meta prefix",
           unit=UNIT_PIQL + "test_meta_used_claim_fails_when_meta_was_shuffled_in_training"),
    Mutant("pi-piql-meta-shuffled-no-gain", PIQL, "pi-piql-meta-lowers-loss",
           "meta-features shuffled across tasks in training: the meta variant ends at the baseline's loss",
           unit=UNIT_PIQL + "test_meta_lowers_loss_claim_fails_when_meta_carries_nothing"),
    Mutant("pi-probe-meta-shuffled", PROBES, "pi-probe-meta-earlier",
           "meta-features shuffled across tasks in training: the meta model's probes read what the baseline's do",
           unit=UNIT_PIQL + "test_meta_earlier_claim_fails_when_meta_was_shuffled_in_training"),
]
MUTANTS.append(Mutant("pi-depth-meta-shuffled-no-gain", "privileged/05_piql_depth",
                      "pi-depth-meta-lowers-loss-at-one-layer",
                      "meta-features shuffled across tasks in training: at one layer meta ends at the baseline's loss",
                      unit=UNIT_PIQL + "test_depth_claim_fails_when_meta_carries_nothing_at_one_layer"))
