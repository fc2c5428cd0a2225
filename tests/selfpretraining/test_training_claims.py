"""Unit-level planted errors for the training claims that smoke scale cannot make (tests/mutants).

Each test feeds a claim of chapters 01-04, with the notebook's criterion (constants from
``protocols``), the per-seed results of a swapped or perturbed model, and checks that the claim
fails; the unplanted per-seed results must pass. The per-seed values are of the size the book-scale
runs give (one-layer walk task, six seeds): scratch near chance, SPT + fine-tune at 0.76-0.91.
"""

import numpy as np
import pytest
import torch

from blindspots import claims
from blindspots.claims import ClaimFailed
from blindspots.selfpretraining import gradients as G
from blindspots.selfpretraining import protocols, tasks, train
from blindspots.selfpretraining.model import ModelConfig

SCRATCH = np.array([0.492, 0.476, 0.524, 0.486, 0.516, 0.486])
SPT = np.array([0.852, 0.902, 0.760, 0.804, 0.906, 0.800])
N_TEST = 500


@pytest.fixture(autouse=True)
def _records(tmp_path, monkeypatch):
    monkeypatch.setenv("BLINDSPOTS_CLAIMS_DIR", str(tmp_path))


def gain_claim(treated, control):
    return claims.claim_effect("spt-beats-scratch", "gain above SPT_GAIN_MIN", treated, control,
                               exceeds=protocols.SPT_GAIN_MIN, paired=True, show=False)


def test_spt_gain_claim_fails_with_scratch_in_place_of_spt():
    gain_claim(SPT, SCRATCH)  # the unplanted results pass
    rng = np.random.default_rng(0)
    other_scratch = SCRATCH[rng.permutation(SCRATCH.size)]  # a second scratch run of the same seeds
    with pytest.raises(ClaimFailed):
        gain_claim(other_scratch, SCRATCH)
    assert protocols.DEPTH_GAIN_MIN == protocols.SPT_GAIN_MIN  # chapter 04 uses the same criterion
    for L in protocols.DEPTH_CONFIRMATORY:  # chapter 04's weaker two-layer claim fails too
        thr = protocols.depth_gain_threshold(L)
        with pytest.raises(ClaimFailed):
            claims.claim_effect("depth-2-spt-beats-scratch", "c", other_scratch, SCRATCH, exceeds=thr,
                                paired=True, show=False)


def test_gain_claim_survives_one_seed_on_the_plateau_but_not_three():
    """The criterion's robustness: one seed whose SPT never leaves the plateau does not flip it."""
    one = SPT.copy(); one[2] = SCRATCH[2]
    gain_claim(one, SCRATCH)
    three = SPT.copy(); three[:3] = SCRATCH[:3]
    with pytest.raises(ClaimFailed):
        gain_claim(three, SCRATCH)


def chance_claim(acc):
    return claims.claim("at-chance", "mean within chance tolerance", float(np.mean(acc)), 0.5,
                        protocols.chance_tolerance(acc, N_TEST), kind="verification", show=False)


def test_chance_claim_fails_for_a_model_that_learned():
    chance_claim(SCRATCH)
    with pytest.raises(ClaimFailed):
        chance_claim(SPT)


def test_chance_tolerance_keeps_the_shared_test_set_error():
    same = np.full(6, 0.52)  # six seeds predicting one class: no spread, the test set's error remains
    assert protocols.chance_tolerance(same, N_TEST) == pytest.approx(3 * protocols.binomial_se(N_TEST))


def test_proximity_claim_fails_with_scratch_attention():
    scratch_mass = np.array([0.046, 0.047, 0.045, 0.048, 0.046, 0.047])
    spt_mass = np.array([0.62, 0.66, 0.55, 0.64, 0.70, 0.61])
    kw = dict(exceeds=protocols.PROXIMITY_GAIN_MIN, paired=True, show=False)
    claims.claim_effect("spt-more-proximal-local-mass", "c", spt_mass, scratch_mass, **kw)
    with pytest.raises(ClaimFailed):
        claims.claim_effect("spt-more-proximal-local-mass", "c", scratch_mass[::-1].copy(), scratch_mass, **kw)


def test_recovered_half_claim_fails_when_the_row_is_the_full_checkpoint():
    half = (SPT + SCRATCH) / 2
    hybrid = SCRATCH + np.array([0.01, -0.02, 0.03, 0.0, 0.02, -0.01])
    claims.claim_effect("qk-only-recovers-less-than-half", "c", half, hybrid, exceeds=0.0, paired=True, show=False)
    with pytest.raises(ClaimFailed):
        claims.claim_effect("qk-only-recovers-less-than-half", "c", half, SPT, exceeds=0.0, paired=True, show=False)


def test_recovered_fractions_per_seed():
    r = protocols.recovered_fractions([0.6, 0.5], [0.5, 0.5], [0.9, 0.5])
    assert r[0] == pytest.approx(0.25) and np.isnan(r[1])


def test_warm_recon_claim_fails_for_the_label_gradient():
    """Chapter 01's warm-recon claim with a label-loss gradient in place of the reconstruction one."""
    n = 100
    cfg = ModelConfig(vocab_size=tasks.VOCAB_SIZE, d_model=32, n_heads=2, n_layers=1, max_len=128,
                      pad_id=tasks.PAD, cls_id=tasks.CLS)
    x, y = tasks.sample_walks(256, np.random.default_rng(2), tasks.WalkTask(length=n))
    X, Y = train.to_device(x, y, device="cpu")
    m = train.build_model(cfg, seed=500, device="cpu")
    m.set_uniform(True)
    cos_lab = G.head_cosines(G.label_score_gradients(m, X, Y)[0], G.band_direction(n, 1))
    with pytest.raises(ClaimFailed):
        claims.claim_bound("warm-recon-points-to-proximity", "c", cos_lab.max(), "<",
                           -10 * G.random_direction_scale(n), kind="verification", show=False)


def test_depth_confirmatory_seeds_are_fresh_and_its_exploratory_run_failed_the_first_criterion():
    for L, record in protocols.DEPTH_EXPLORATORY.items():
        fresh = protocols.depth_seeds(L, 5)
        assert not set(fresh) & set(record["seeds"]), "a confirmatory run must not reuse the exploratory seeds"
        eff = claims.seed_effect(record["spt"], record["scratch"], paired=True)
        assert eff.t(protocols.DEPTH_GAIN_MIN) < eff.critical_t()  # the record: 0.1 failed there
        assert protocols.depth_gain_threshold(L) < protocols.DEPTH_GAIN_MIN
    assert protocols.depth_seeds(1, 3) == [0, 1, 2] and protocols.depth_gain_threshold(1) == protocols.DEPTH_GAIN_MIN
