"""Statistics of the training claims of chapters 01-03, and statistic-only planted errors.

Two kinds of test live here. Unit tests of a claim's statistic or of a protocol's bookkeeping (the
chance tolerance, the recovered fractions, the ablation table's rows and gates, the confirmatory depth
seeds, one tiny ablation seed). And *statistic-only* planted errors (``tests/mutants``, level ``unit``):
a claim fed, with the notebook's criterion, the per-seed results of a swapped model must fail, while the
book-scale per-seed results pass. Those show that the statistic can say no; they plant no bug in the
training code, so the verification report lists them apart from notebook-level kills. The per-seed
arrays are the book-scale outputs of the chapters named beside them.
"""

import dataclasses

import numpy as np
import pytest

from blindspots import claims
from blindspots.claims import ClaimFailed
from blindspots.selfpretraining import gates, presets, protocols, tasks, train
from blindspots.selfpretraining import gradients as G
from blindspots.selfpretraining.model import ModelConfig

# chapter 02 at book scale (6 seeds, 300 label steps, 1600 SPT steps)
SCRATCH = np.array([0.492, 0.476, 0.524, 0.486, 0.516, 0.486])
SPT = np.array([0.888, 0.906, 0.804, 0.926, 0.880, 0.880])
# chapter 03 at book scale: one layer (seeds 0-5, 200 label steps, 1600 SPT steps) and two layers (seeds 5-8);
# SPT's numbers differ between CPUs (when a seed leaves the plateau depends on the floating-point path)
SCRATCH_03 = np.array([0.474, 0.474, 0.520, 0.474, 0.486, 0.474])
SPT_03 = np.array([0.858, 0.912, 0.714, 0.806, 0.738, 0.678])
SCRATCH_03_L2 = np.array([0.474, 0.518, 0.488, 0.474])
SPT_03_L2 = np.array([0.718, 0.804, 0.608, 0.638])
N_TEST = 500


@pytest.fixture(autouse=True)
def _records(tmp_path, monkeypatch):
    monkeypatch.setenv("BLINDSPOTS_CLAIMS_DIR", str(tmp_path))


def gain_claim(treated, control, exceeds=protocols.SPT_GAIN_MIN):
    return claims.claim_effect("spt-beats-scratch", f"gain above {exceeds}", treated, control,
                               exceeds=exceeds, paired=True, show=False)


def test_spt_gain_claim_fails_with_scratch_in_place_of_spt():
    """Chapter 02 (statistic only)."""
    gain_claim(SPT, SCRATCH)  # the book-scale results pass
    other_scratch = SCRATCH[np.random.default_rng(0).permutation(SCRATCH.size)]  # a second scratch run
    with pytest.raises(ClaimFailed):
        gain_claim(other_scratch, SCRATCH)


def test_ablation_gain_claims_fail_with_scratch_in_place_of_spt():
    """Chapter 03, one layer and the revised two-layer criterion (statistic only)."""
    assert protocols.DEPTH_GAIN_MIN == protocols.SPT_GAIN_MIN  # one criterion at every depth, one layer too
    gain_claim(SPT_03, SCRATCH_03)
    thr = protocols.depth_gain_threshold(2)
    gain_claim(SPT_03_L2, SCRATCH_03_L2, exceeds=thr)
    rng = np.random.default_rng(0)
    with pytest.raises(ClaimFailed):
        gain_claim(SCRATCH_03[rng.permutation(SCRATCH_03.size)], SCRATCH_03)
    with pytest.raises(ClaimFailed):  # the weaker two-layer criterion fails too
        gain_claim(SCRATCH_03_L2[rng.permutation(SCRATCH_03_L2.size)], SCRATCH_03_L2, exceeds=thr)


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
    """Chapter 02's no-attention claim (statistic only)."""
    chance_claim(SCRATCH)
    with pytest.raises(ClaimFailed):
        chance_claim(SPT)


def test_chance_tolerance_keeps_the_shared_test_set_error():
    same = np.full(6, 0.52)  # six seeds predicting one class: no spread, the test set's error remains
    assert protocols.chance_tolerance(same, N_TEST) == pytest.approx(3 * protocols.binomial_se(N_TEST))
    assert protocols.CHANCE_Z * protocols.binomial_se(N_TEST) == pytest.approx(3 * np.sqrt(0.25 / N_TEST))


def test_proximity_claim_fails_with_scratch_attention():
    """Chapter 02 (statistic only)."""
    scratch_mass = np.array([0.046, 0.047, 0.045, 0.048, 0.046, 0.047])
    spt_mass = np.array([0.62, 0.66, 0.55, 0.64, 0.70, 0.61])
    kw = dict(exceeds=protocols.PROXIMITY_GAIN_MIN, paired=True, show=False)
    claims.claim_effect("spt-more-proximal-local-mass", "c", spt_mass, scratch_mass, **kw)
    with pytest.raises(ClaimFailed):
        claims.claim_effect("spt-more-proximal-local-mass", "c", scratch_mass[::-1].copy(), scratch_mass,
                            **kw)


def test_recovered_fractions_per_seed():
    r = protocols.recovered_fractions([0.6, 0.5], [0.5, 0.5], [0.9, 0.5])
    assert r[0] == pytest.approx(0.25) and np.isnan(r[1])


# ----------------------------------------------------------------------------- chapter 03's ablation table
FULL = "SPT 1600 steps"


def _table(rows: dict, n_pred: dict, common=()):
    return gates.comparison_table(protocols.ablation_rows(rows, n_pred, full=FULL, common=common),
                                  where="at book scale")


def test_ablation_rows_are_oriented_by_the_paper_and_skip_the_reference_rows():
    rng = np.random.default_rng(1)
    scratch, full = rng.uniform(0.55, 0.6, 6), rng.uniform(0.85, 0.9, 6)
    acc = {"scratch": scratch, "SPT 200 steps": scratch + 0.01, FULL: full, protocols.FROZEN: scratch,
           "hybrid: QK only": full - 0.02, "hybrid: MLP only": scratch + 0.02, protocols.MATCHED: scratch}
    n_pred = {k: np.full(6, 2) for k in acc}
    rows = {r.name.rsplit(": recovers", 1)[0]: r for r in _table(acc, n_pred)}
    assert sorted(rows) == ["SPT 200 steps", "hybrid: MLP only", "hybrid: QK only"]
    half = (scratch + full) / 2
    assert rows["hybrid: QK only"].effect.difference == pytest.approx(np.mean(full - 0.02 - half))
    assert rows["hybrid: MLP only"].effect.difference == pytest.approx(np.mean(half - scratch - 0.02))
    assert rows["hybrid: QK only"].verdict == "reproduces"  # recovers most of the gain, as the paper finds
    assert rows["hybrid: MLP only"].verdict == "reproduces"  # recovers little of it, as the paper finds
    assert rows["SPT 200 steps"].verdict == "opposite"  # a short SPT run that recovers little


def test_a_row_whose_runs_predict_one_class_is_not_tested():
    """The old "recovers less than half" claims held for any hybrid that broke the model: no more."""
    scratch, full = np.full(6, 0.474), np.array([0.83, 0.89, 0.75, 0.81, 0.85, 0.71])
    acc = {"scratch": scratch, FULL: full, "hybrid: QK only": scratch.copy()}
    n_pred = {"scratch": np.ones(6, int), FULL: np.full(6, 2), "hybrid: QK only": np.ones(6, int)}
    control_moves = gates.shortcut_gate(scratch + np.linspace(0, 0.01, 6), 0.526,
                                        name=protocols.CONTROL_LEARNS)
    (row,) = _table(acc, n_pred, common=[control_moves])
    assert not row.tested and row.verdict.startswith("not tested at book scale (gate failed: ")
    assert gates.CONSTANT in row.verdict and protocols.CONTROL_LEARNS in row.verdict
    n_pred = {k: np.full(6, 2) for k in acc}
    (row,) = _table(acc, n_pred)
    assert row.tested and row.verdict == "opposite"


def test_ablation_rows_need_scratch_and_the_full_checkpoint():
    with pytest.raises(ValueError, match="full="):
        protocols.ablation_rows({"scratch": [0.5, 0.5]}, {}, full=FULL)


def test_task_ids_name_layers_and_seed():
    with pytest.raises(ValueError, match="task must be 100"):
        protocols.ablation_or_depth_seed(7, {})


TINY = {"d_model": 16, "n_heads": 2, "n_layers": 1, "max_len": 64, "length": 40, "batch_size": 16, "lr": 3e-3,
        "mlm_prob": 0.5, "local_k": 2, "n_train": 32, "n_test": 40, "spt_checkpoints": [0, 2, 4],
        "label_steps": 2, "other_source": True, "scratch_matched": True, "data_seed": 0}


def test_one_ablation_seed_records_labels_masked_losses_and_the_transfer():
    r = protocols.ablation_or_depth_seed(100, TINY)
    assert r["layers"] == 1 and set(r["rows"]) == set(r["n_predicted"])
    assert {protocols.FROZEN, protocols.OTHER_SOURCE, protocols.MATCHED, protocols.CONTROL,
            "SPT 4 steps"} <= set(r["rows"])
    assert all(n in (1, 2) for n in r["n_predicted"].values())
    assert set(r["masked_loss"]) == {"SPT 2 steps", "SPT 4 steps", protocols.OTHER_SOURCE}
    assert r["copied_err"] == 0.0 and r["head_gap"] > 0 and r["n_head"] > 0
    deep = protocols.ablation_or_depth_seed(205, TINY)
    assert deep["layers"] == 2 and deep["seed"] == 5 and len(deep["spt_loss"]) == 4  # the longest checkpoint
    assert set(deep["n_predicted"]) == {"scratch", "spt", protocols.MATCHED} and deep["copied_err"] == 0.0


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
        assert not set(fresh) & set(record["seeds"]), "a confirmatory run must use fresh seeds"
        eff = claims.seed_effect(record["spt"], record["scratch"], paired=True)
        assert eff.t(protocols.DEPTH_GAIN_MIN) < eff.critical_t()  # the record: 0.1 failed there
        assert protocols.depth_gain_threshold(L) < protocols.DEPTH_GAIN_MIN
    assert protocols.depth_seeds(1, 3) == [0, 1, 2]
    full = presets.PRESETS["selfpretraining/03_ablations"]["full"]
    one_layer = range(full["first_seed"], full["first_seed"] + full["seeds"])
    assert full["first_seed"] == protocols.ABLATION_CONFIRMATORY_FIRST_SEED
    assert not set(one_layer) & set(protocols.ABLATION_EXPLORATORY_SEEDS), "the control gate needs fresh seeds"


def test_the_positive_control_is_scratch_with_the_task_sized_bias(monkeypatch):
    """The control row trains scratch's initial weights with ALiBi at slopes 1, 1/2, ...: a control built
    without its bias is the scratch run again (same weights, same mini-batches, same accuracy)."""
    assert protocols.walk_control_slopes(2) == (1.0, 0.5) and protocols.walk_control_slopes(3)[-1] == 0.25
    with pytest.raises(ValueError, match="n_heads"):
        protocols.walk_control_slopes(0)
    cfg = {**TINY, "other_source": False, "scratch_matched": False, "spt_checkpoints": [0, 2], "label_steps": 6}
    built = []
    real = train.build_model
    monkeypatch.setattr(protocols.train, "build_model", lambda c, **k: built.append(c) or real(c, **k))
    unbiased = lambda c, **k: real(dataclasses.replace(c, alibi=False, alibi_slopes=()), **k)  # noqa: E731
    protocols.ablation_seed(3, cfg)
    assert built[-1].alibi and built[-1].alibi_slopes == (1.0, 0.5)
    monkeypatch.setattr(protocols.train, "build_model", unbiased)
    r = protocols.ablation_seed(3, cfg)
    assert r["rows"][protocols.CONTROL] == r["rows"]["scratch"]
    assert protocols.depth_gain_threshold(1) == protocols.DEPTH_GAIN_MIN
