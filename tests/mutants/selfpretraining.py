"""Planted errors for Part II (self-pretraining). See ``registry.py``.

Notebook level at smoke scale (in-process: ``map_seeds`` runs with ``n_jobs=1`` there, so a patch reaches
the training functions): the exact and full-model claims of chapter 01, the label, transfer and checkpoint
checks of chapters 02, 04 and 05. The training claims that smoke scale cannot make run at book scale:
chapter 01's and chapter 02's (at half of book's SPT steps and 5 seeds, chapter 02's gain over scratch was no
longer resolved, so it has no smaller ``mutant`` scale), with the bug planted in every seed worker too
(``workers=True``).
"""

from mutants.registry import Mutant

NB01 = "selfpretraining/01_gradient_blindness"
NB02 = "selfpretraining/02_training_mechanism"
UNIT = "tests/selfpretraining/test_training_claims.py::"

_G = "from blindspots.selfpretraining import gradients as _G\n"


_SPT_FROZEN = """from blindspots.selfpretraining import train as _T
if not hasattr(_T, "_unplanted_pretrain"):
    _T._unplanted_pretrain = _T.pretrain
    _T.pretrain = lambda model, tokens, **kw: _T._unplanted_pretrain(model, tokens, **{**kw, "lr": 0.0})
"""

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
    Mutant("sp-recon-loss-on-visible-tokens", NB01, "warm-recon-points-to-proximity",
           "the reconstruction loss is taken on the visible tokens (targets where the mask is not), so the model "
           "learns to copy its input and needs no neighbour",
           patch="""from blindspots.selfpretraining import masking as _M
import torch as _torch
def _visible_targets(tokens, *, mask_id, mlm_prob=0.5, pad_id=None, generator=None):
    p = _M.check_mlm_prob(mlm_prob)
    masked = _torch.rand(tokens.shape, generator=generator, device=tokens.device) < p
    keep = ~masked if pad_id is None else ~masked & tokens.ne(pad_id)
    inputs = _torch.where(masked, _torch.full_like(tokens, mask_id), tokens)
    return inputs, _torch.where(keep, tokens, _torch.full_like(tokens, _M.IGNORE))
_M.mask_tokens = _visible_targets
""", scale="book"),
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
    # --- chapter 02's training claims: only a book-scale run makes them. The bug is planted in the kernel and
    # in every seed worker too (runtime.map_seeds' workers are fresh processes: workers=True). The chapter makes
    # its accuracy and attention claims in one block, so one run kills all six (attention after SPT is then the
    # initial, near-uniform attention).
    Mutant("sp-02-spt-never-updates", NB02, "spt-beats-scratch",
           "SPT's optimiser gets a learning rate of 0: the model fine-tuned after SPT starts from its initial weights",
           patch=_SPT_FROZEN, workers=True, scale="book",
           also=("spt-beats-compute-matched-scratch", "spt-more-proximal-local-mass", "spt-more-proximal-toeplitz",
                 "finetuned-more-proximal-local-mass", "finetuned-more-proximal-toeplitz")),
]

# --- chapter 03 makes no verification at book scale: its one-layer gain repeats chapter 02's check
# (consistency) and depth is compared by its full-scale run.

# --- chapter 04: every arm of the mini Long Range Arena, on ListOps, the digits and PathFinder
NB04_ARMS = "selfpretraining/04_mini_lra_arms"
_PF_LABEL_NOISE = """from blindspots.selfpretraining import pathfinder as _P
_orig = _P.sample_image
def _noisy(rng, task=_P.PathFinderTask(), label=None, max_tries=1000):
    image, y = _orig(rng, task, label, max_tries)
    return image, (1 - y if rng.random() < 0.1 else y)
_P.sample_image = _noisy
"""
_QK_VALUES = """from blindspots.selfpretraining import transfer as _T
_T.GROUPS["qk"] = _T.GROUPS["attention"]
"""
_QK_QUERY_ONLY = """from blindspots.selfpretraining import transfer as _T
import re as _re
_T.GROUPS["qk"] = _re.compile(r"^blocks\\.\\d+\\.attn\\.q_proj\\.(weight|bias)$")
"""
MUTANTS += [
    Mutant("sp-lra-median-rounded", NB04_ARMS, "listops-labels-match-independent-evaluator",
           "the ListOps generator labels MED with the rounded median (5.5 -> 6), not LRA's int(np.median)",
           patch="""from blindspots.selfpretraining import listops as _L
import numpy as _np
_orig = _L.apply_operator
_L.apply_operator = lambda op, values: (int(_np.floor(_np.median(values) + 0.5)) if op == "[MED"
                                        else _orig(op, values))
"""),
    Mutant("sp-lra-pathfinder-label-noise", NB04_ARMS, "pathfinder-labels-match-connectivity",
           "the PathFinder generator flips one label in ten (a label not tied to the marked ends)",
           patch=_PF_LABEL_NOISE),
    Mutant("sp-lra-pathfinder-paired-by-row-offset", NB04_ARMS, "pathfinder-labels-paired-by-offset",
           "the PathFinder generator pairs the labels by the endpoints' row offset alone, so the column offset "
           "(and the distance) still tells connected from unconnected",
           patch="""from blindspots.selfpretraining import pathfinder as _P
import numpy as _np
def _row_offset(image):
    ends = _np.argwhere(_np.asarray(image) == _P.ENDPOINT)
    return 0, int(abs(ends[0][0] - ends[1][0]))
_P.endpoint_offset = _row_offset
"""),
    Mutant("sp-qk-hybrid-copies-values", NB04_ARMS, "qk-hybrid-copies-every-layer",
           "the QK-only hybrid copies the whole attention (W_V and the output map too), not W_Q, W_K alone",
           patch=_QK_VALUES),
    Mutant("sp-qk-hybrid-query-only", NB04_ARMS, "qk-hybrid-copies-every-layer",
           "the QK-only hybrid matches only W_Q and b_Q, so the keys stay fresh",
           patch=_QK_QUERY_ONLY),
]

# --- chapter 05: the pretraining-length sweep in optimiser steps
NB05_LENGTH = "selfpretraining/05_spt_length"
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
# The off-by-one of storing a checkpoint after the step that follows it (keep(step + 2) for keep(step + 1)).
_LATE_CHECKPOINTS = """from blindspots.selfpretraining import train as _T
_orig = _T.pretrain
def _late(model, tokens, **kw):
    cks = kw.get("checkpoints", ())
    if not cks:
        return _orig(model, tokens, **kw)
    shifted = {c: c + 1 if 0 < c < kw["steps"] else c for c in cks}
    tmp = {}
    out = _orig(model, tokens, **{**kw, "checkpoints": tuple(shifted.values()), "saved": tmp})
    kw["saved"].update({c: tmp[s] for c, s in shifted.items()})
    return out
_T.pretrain = _late
"""
MUTANTS += [
    Mutant("sp-length-checkpoint-aliased", NB05_LENGTH, "checkpoint-is-a-shorter-run",
           "SPT checkpoints keep the live state dict instead of a copy, so every checkpoint is the end of the run",
           patch=_ALIASED_CHECKPOINTS),
    Mutant("sp-length-checkpoint-one-step-late", NB05_LENGTH, "checkpoint-is-a-shorter-run",
           "SPT stores the checkpoint of s steps after step s + 1 (an off-by-one in the step count)",
           patch=_LATE_CHECKPOINTS),
]
