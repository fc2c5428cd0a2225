"""Planted errors for Part II (self-pretraining). See ``registry.py``.

Notebook level (smoke scale, in-process: ``map_seeds`` runs with ``n_jobs=1`` there, so a patch reaches
the training functions): chapter 01's exact and full-model claims, chapter 02's bag-of-tokens claim.
Unit level: the training claims that smoke scale cannot make (``tests/selfpretraining/test_training_claims.py``
feeds each claim, with the notebook's criterion, the per-seed results of a swapped or perturbed model).
"""

from mutants.registry import Mutant

NB01 = "selfpretraining/01_gradient_blindness"
NB02 = "selfpretraining/02_training_mechanism"
NB03 = "selfpretraining/03_ablations"
NB04 = "selfpretraining/04_depth"
UNIT = "tests/selfpretraining/test_training_claims.py::"

_G = "from blindspots.selfpretraining import gradients as _G\n"

MUTANTS: list[Mutant] = [
    # --- chapter 01: exact abstraction
    Mutant("sp-label-closed-form-uncentred", NB01, "label-closed-form",
           "the closed form of the label gradient forgets to centre u (c = u / n^2)",
           patch=_G + """import torch
def _cf(inst):
    n = inst.n
    vbar = inst.values.mean(0)
    z = inst.label_readout @ vbar
    g = inst.label_readout.T @ (torch.softmax(z, 0) - torch.nn.functional.one_hot(torch.tensor(inst.label), z.shape[0]).double())
    u = inst.values @ g
    return torch.ones(n, 1, dtype=torch.float64) @ (u / n ** 2)[None]
_G.label_gradient_closed_form = _cf
"""),
    Mutant("sp-recon-closed-form-uncentred", NB01, "recon-closed-form",
           "the closed form of the reconstruction gradient drops the softmax centring (R / n instead of R(I - J/n) / n)",
           patch=_G + """import torch
def _cf(inst):
    vbar = inst.values.mean(0)
    k = inst.recon_readout.shape[0]
    pi = torch.softmax(inst.recon_readout @ vbar, 0)
    err = (pi[None] - torch.nn.functional.one_hot(inst.targets, k).double()) * inst.masked[:, None].double() / inst.masked.sum()
    return (err @ inst.recon_readout) @ inst.values.T / inst.n
_G.reconstruction_gradient_closed_form = _cf
"""),
    Mutant("sp-band-rows-centred-only", NB01, "label-band-zero",
           "a proximity direction with only its row sums removed (not its column sums), outside the theorem's scope",
           patch=_G + """import torch
def _band(n, k=1, *, include_self=False, dtype=torch.float64, device=None):
    i = torch.arange(n, device=device)
    dist = (i[:, None] - i[None, :]).abs()
    b = ((dist <= k) & (dist >= (0 if include_self else 1))).to(dtype)
    b = b - b.mean(-1, keepdim=True)
    return b / b.norm()
_G.band_direction = _band
"""),
    Mutant("sp-one-target-all-masked", NB01, "recon-relational-nonzero",
           "instances in which every position is masked with the same target: the reconstruction gradient's rows coincide",
           patch=_G + """import torch
_orig = _G.random_abstraction
def _inst(rng, **kw):
    a = _orig(rng, **kw)
    a.masked = torch.ones_like(a.masked)
    a.targets = torch.zeros_like(a.targets)
    return a
_G.random_abstraction = _inst
"""),
    Mutant("sp-projection-of-row-mean", NB01, "recon-band-nonzero",
           "the band projection estimator reads only the row-shared part of a gradient",
           patch=_G + """def _proj(g, d):
    g = g.double().reshape(-1, *g.shape[-2:])
    shared = _G.row_shared_part(g)
    return (shared * d.double()).sum((-1, -2)) / g.norm(dim=(-1, -2))
_G.per_matrix_projection = _proj
"""),
    Mutant("sp-iid-diagonal-forgotten", NB01, "iid-band-mean",
           "the centred band direction taken to have no diagonal (tr D_k = 0): the old 'mean zero on i.i.d. tokens'",
           patch=_G + "_G.band_trace = lambda n, k=1: 0.0\n"),
    # --- chapter 01: full model
    Mutant("sp-label-readout-not-mean-init", NB01, "row-shared-label-exceeds-recon-init",
           "a label loss whose score gradient has no row-shared part (a read-out that is not a mean)",
           patch=_G + """_orig = _G.label_score_gradients
_G.label_score_gradients = lambda m, x, y: [g - _G.row_shared_part(g) for g in _orig(m, x, y)]
"""),
    Mutant("sp-label-readout-not-mean-uniform", NB01, "row-shared-label-exceeds-recon-uniform",
           "as above, only at uniform attention (the theorem's point)",
           patch=_G + """_orig = _G.label_score_gradients
_G.label_score_gradients = lambda m, x, y: ([g - _G.row_shared_part(g) for g in _orig(m, x, y)]
                                            if m.attentions[0].hold_uniform else _orig(m, x, y))
"""),
    Mutant("sp-qk-weight-slope-1.05", NB01, "qk-weight-gradient-slope",
           "a wrong power law for the W_Q, W_K gradient: slope 1.05 instead of 1",
           patch=_G + "_G.QK_SLOPES['weight_gradient'] = 1.05\n"),
    Mutant("sp-qk-score-slope-2.05", NB01, "qk-score-change-slope",
           "a wrong power law for the score change: slope 2.05 instead of 2",
           patch=_G + "_G.QK_SLOPES['score_change'] = 2.05\n"),
    Mutant("sp-warm-label-for-recon", NB01, "warm-recon-points-to-proximity",
           "the label-warmed model's gradient in place of the reconstruction-warmed one",
           unit=UNIT + "test_warm_recon_claim_fails_for_the_label_gradient"),
    # --- chapter 02
    Mutant("sp-counts-leak-label", NB02, "bag-of-tokens-at-chance",
           "a task whose noise rate depends on the label, so that token counts carry it (the reversal symmetry broken)",
           patch="""from blindspots.selfpretraining import tasks as _T
import numpy as _np
_orig = _T.sample_walks
def _leaky(n, rng, task=_T.WalkTask()):
    x, y = _orig(n, rng, task)
    if task.noise_prob > 0:
        extra = (rng.random(x.shape) < 0.2) & (y[:, None] == 1)
        x = _np.where(extra, _T.NOISE, x)
    return x, y
_T.sample_walks = _leaky
"""),
    Mutant("sp-no-attention-swapped", NB02, "no-attention-at-chance",
           "the SPT + fine-tune accuracies in place of the no-attention model's",
           unit=UNIT + "test_chance_claim_fails_for_a_model_that_learned"),
    Mutant("sp-02-gain-swapped", NB02, "spt-beats-scratch",
           "scratch accuracies in place of SPT + fine-tune (a swapped model)",
           unit=UNIT + "test_spt_gain_claim_fails_with_scratch_in_place_of_spt"),
]

for _tag in ("spt", "finetuned"):
    for _m in ("local-mass", "toeplitz"):
        MUTANTS.append(Mutant(f"sp-{_tag}-{_m}-swapped", NB02, f"{_tag}-more-proximal-{_m}",
                              f"trained scratch attention in place of the {_tag} model's ({_m})",
                              unit=UNIT + "test_proximity_claim_fails_with_scratch_attention"))

MUTANTS += [
    # --- chapter 03
    Mutant("sp-03-gain-swapped", NB03, "spt-beats-scratch",
           "scratch accuracies in place of SPT + fine-tune (a swapped model)",
           unit=UNIT + "test_spt_gain_claim_fails_with_scratch_in_place_of_spt"),
    Mutant("sp-frozen-swapped", NB03, "frozen-random-attention-at-chance",
           "the SPT + fine-tune accuracies in place of frozen random attention",
           unit=UNIT + "test_chance_claim_fails_for_a_model_that_learned"),
]
for _row, _cid in (("QK only", "qk-only"), ("all attention", "all-attention"), ("MLP only", "mlp-only"),
                   ("SPT 200 steps", "spt-200-steps")):
    MUTANTS.append(Mutant(f"sp-{_cid}-is-full-checkpoint", NB03, f"{_cid}-recovers-less-than-half",
                          f"{_row}: the full SPT checkpoint's accuracies in place of the row (a hybrid that copies everything)",
                          unit=UNIT + "test_recovered_half_claim_fails_when_the_row_is_the_full_checkpoint"))
for _L in (1, 2):
    MUTANTS.append(Mutant(f"sp-depth-{_L}-gain-swapped", NB04, f"depth-{_L}-spt-beats-scratch",
                          f"{_L} layer(s): scratch accuracies in place of SPT + fine-tune",
                          unit=UNIT + "test_spt_gain_claim_fails_with_scratch_in_place_of_spt"))

# --- chapters 05-06: the mini Long Range Arena (issue 11)
NB05 = "selfpretraining/05_mini_lra"
NB06 = "selfpretraining/06_mini_lra_pathfinder"
UNIT_LRA = "tests/selfpretraining/test_mini_lra_claims.py::"
_PF_LABEL_NOISE = """from blindspots.selfpretraining import pathfinder as _P
_orig = _P.sample_image
def _noisy(rng, task=_P.PathFinderTask(), label=None, max_tries=1000):
    image, y = _orig(rng, task, label, max_tries)
    return image, (1 - y if rng.random() < 0.1 else y)
_P.sample_image = _noisy
"""
MUTANTS += [
    Mutant("sp-lra-median-rounded", NB05, "listops-labels-match-independent-evaluator",
           "the ListOps generator labels MED with the rounded median (5.5 -> 6) instead of LRA's int(np.median)",
           patch="""from blindspots.selfpretraining import listops as _L
import numpy as _np
_orig = _L.apply_operator
_L.apply_operator = lambda op, values: int(_np.floor(_np.median(values) + 0.5)) if op == "[MED" else _orig(op, values)
"""),
    Mutant("sp-lra-pathfinder-label-noise", NB06, "pathfinder-labels-match-connectivity",
           "the PathFinder generator flips one label in ten (a label not tied to the marked ends)",
           patch=_PF_LABEL_NOISE),
]
for _task in ("listops", "image"):
    MUTANTS.append(Mutant(f"sp-lra-{_task}-learns-nothing", NB05, f"{_task}-spt-learns",
                          f"{_task}: accuracies of a model that learned nothing (the majority label, with the test "
                          "set's binomial noise) in place of SPT + fine-tune",
                          unit=UNIT_LRA + "test_learns_claim_fails_for_a_model_at_the_majority_label"))

# --- chapter 07: the pretraining-length sweep
_ALIASED_CHECKPOINTS = """from blindspots.selfpretraining import train as _T
_orig = _T.pretrain
def _aliased(model, tokens, **kw):
    out = _orig(model, tokens, **kw)
    for c in kw.get("checkpoints", ()):
        if c:
            kw["saved"][c] = model.state_dict()
    return out
_T.pretrain = _aliased
"""
MUTANTS.append(Mutant(
    "sp-spt-checkpoint-aliased", "selfpretraining/07_spt_length", "spt-checkpoint-is-a-shorter-run",
    "SPT checkpoints keep the live state dict instead of a copy, so every checkpoint is the end of the run",
    patch=_ALIASED_CHECKPOINTS))
# --- chapter 09: the sweep on ListOps and PathFinder
MUTANTS.append(Mutant(
    "sp-lra-checkpoint-aliased", "selfpretraining/09_lra_spt_length", "lra-checkpoint-is-a-shorter-run",
    "SPT checkpoints keep the live state dict instead of a copy, so every checkpoint is the end of the run",
    patch=_ALIASED_CHECKPOINTS))
# --- chapters 10-12: every arm beyond one layer, ListOps, the digits and PathFinder
_QK_FIRST_BLOCK = """from blindspots.selfpretraining import transfer as _T
import re as _re
_T.GROUPS["qk"] = _re.compile(r"^blocks\\.0\\.attn\\.(q_proj|k_proj)\\.(weight|bias)$")
"""
_QK_VALUES = """from blindspots.selfpretraining import transfer as _T
_T.GROUPS["qk"] = _T.GROUPS["attention"]
"""


def _qk_mutants(chapter: str, short: str) -> list[Mutant]:
    """The two planted errors of a deep-arms chapter's QK-only check: too few tensors copied, or too many."""
    return [Mutant(f"sp-qk-hybrid-first-block-only-{short}", chapter, "qk-hybrid-copies-every-layer",
                   "the QK-only hybrid matches only the first block's W_Q, W_K, so a deep hybrid is fresh above layer 1",
                   patch=_QK_FIRST_BLOCK),
            Mutant(f"sp-qk-hybrid-copies-values-{short}", chapter, "qk-hybrid-copies-every-layer",
                   "the QK-only hybrid copies the whole attention (W_V and the output map too), not W_Q, W_K alone",
                   patch=_QK_VALUES)]


for _chapter, _task, _short in (("selfpretraining/10_deep_arms_listops", "listops", "listops"),
                                ("selfpretraining/11_deep_arms_digits", "image", "digits")):
    MUTANTS += [
        *_qk_mutants(_chapter, _short),
        Mutant(f"sp-lra-{_task}-deep-learns-nothing", _chapter, f"{_task}-spt-learns-deep",
               f"{_task}, two layers: accuracies of a model that learned nothing (the majority label, with "
               "the test set's binomial noise) in place of SPT + fine-tune",
               unit=UNIT_LRA + f"test_deep_learns_claim_fails_for_a_model_at_the_majority_label[{_task}]"),
    ]
_PF_DEEP = "selfpretraining/12_deep_arms_pathfinder"
MUTANTS += [
    *_qk_mutants(_PF_DEEP, "pathfinder"),
    Mutant("sp-pf-deep-checkpoint-aliased", _PF_DEEP, "pf-deep-checkpoint-is-a-shorter-run",
           "SPT checkpoints keep the live state dict instead of a copy, so every checkpoint is the end of the run",
           patch=_ALIASED_CHECKPOINTS),
]
