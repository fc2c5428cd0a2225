"""What chapters 10-12 compute from the mini LRA's records: accuracies, effects, the paper's rows, the QK check."""

import numpy as np
import pytest
from scipy import stats

from blindspots.selfpretraining import deep_arms, mini_lra


def _records(rows_per_seed):
    return [{"seed": s, "layers": 2, "rows": rows} for s, rows in enumerate(rows_per_seed)]


SCRATCH = np.array([0.50, 0.52, 0.48, 0.51, 0.49])


def _acc(spt_gain, qk_gain, other_gain=0.0, alibi_gain=0.0, noise=(0.01, -0.01, 0.02, -0.02, 0.0)):
    noise = np.array(noise)
    return {"scratch": SCRATCH, "spt": SCRATCH + spt_gain + noise, "qk_only": SCRATCH + qk_gain - noise,
            "other_source": SCRATCH + other_gain + noise / 2, "alibi": SCRATCH + alibi_gain - noise / 2}


def test_accuracies_follow_the_records_in_order():
    recs = _records([{"scratch": s / 10, "spt": s / 5} for s in range(5)])
    acc = deep_arms.accuracies(recs, ["scratch", "spt"])
    np.testing.assert_array_equal(acc["spt"], [s / 5 for s in range(5)])
    with pytest.raises(ValueError, match="missing \\['alibi'\\]"):
        deep_arms.accuracies(recs, ["scratch", "alibi"])
    with pytest.raises(ValueError, match="no results"):
        deep_arms.accuracies([], ["scratch"])


def test_effects_are_paired_t_intervals():
    acc = _acc(0.1, 0.05)
    eff = deep_arms.effects_over_scratch(acc)
    assert set(eff) == {"spt", "qk_only", "other_source", "alibi"}
    d = acc["spt"] - acc["scratch"]
    half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    assert eff["spt"].difference == pytest.approx(d.mean(), rel=1e-12)
    assert (eff["spt"].low, eff["spt"].high) == pytest.approx((d.mean() - half, d.mean() + half), rel=1e-12)
    with pytest.raises(ValueError, match="scratch"):
        deep_arms.effects_over_scratch({"spt": SCRATCH})


def test_paper_rows_verdicts():
    rows = {key: (eff, v) for key, _, eff, v in deep_arms.paper_rows(_acc(0.1, 0.08, other_gain=-0.1))}
    assert rows["spt"][1] == "reproduces" and rows["other"][1] == "opposite"
    assert rows["alibi"][1] == "not resolved at this scale"
    # QK-only: its gain minus half of SPT's, paired; 0.08 - 0.05 with the noise of qk minus half of spt's
    assert rows["qk"][0].difference == pytest.approx(0.03, abs=1e-12)
    assert rows["qk"][1] == "reproduces"
    assert deep_arms.paper_rows(_acc(0.1, 0.02))[1][3] == "opposite"  # 0.02 < half of 0.1


def test_qk_row_needs_a_resolved_spt_gain():
    rows = deep_arms.paper_rows(_acc(0.0, 0.1))
    assert rows[0][3] == "not resolved at this scale"
    assert rows[1][3] == deep_arms.NO_GAIN
    with pytest.raises(ValueError, match="alibi"):
        deep_arms.paper_rows({k: v for k, v in _acc(0.1, 0.1).items() if k != "alibi"})


def test_layers_qk_copied_counts_complete_layers_and_penalises_extras():
    full = set().union(*(deep_arms.qk_tensor_names(i) for i in range(4)))
    assert len(full) == 16
    assert deep_arms.layers_qk_copied([full, full], 4) == 4
    first_block = deep_arms.qk_tensor_names(0)
    assert deep_arms.layers_qk_copied([full, first_block], 4) == 1  # the least over seeds
    assert deep_arms.layers_qk_copied([full - {"blocks.3.attn.k_proj.bias"}], 4) == 3
    values = full | {f"blocks.{i}.attn.v_proj.weight" for i in range(4)}
    assert deep_arms.layers_qk_copied([values], 4) == 0  # four complete layers minus four extra tensors
    with pytest.raises(ValueError, match="n_layers"):
        deep_arms.layers_qk_copied([full], 0)
    with pytest.raises(ValueError, match="at least one seed"):
        deep_arms.layers_qk_copied([], 2)


def test_layers_qk_copied_on_a_real_hybrid():
    """The names must be those transfer.hybrid_init copies from the model, or the check measures nothing."""
    sizes = dict(d_model=8, n_heads=2, max_len=64, batch_size=8, lr=3e-3, mlm_prob=0.5, n_train=24, n_test=10,
                 listops_min_length=10, listops_max_length=30, listops_max_depth=4, listops_max_args=4,
                 spt_epochs=1, label_steps=2, data_seed=0, deep_arms=["scratch", "spt", "qk_only"])
    data = mini_lra.task_data("listops", sizes, 0)
    r = mini_lra.lra_seed(1300, sizes, data, data)  # group 1: the SPT model and the arms that start from it
    assert deep_arms.layers_qk_copied([r["copied_qk"]], 3) == 3


def test_sweep_rows_and_labels():
    config = {"spt_epochs": 50, "spt_checkpoints": [10, 1]}
    acc = {"scratch": SCRATCH, "spt_1ep": SCRATCH + 0.01, "spt_10ep": SCRATCH + 0.02, "spt": SCRATCH + 0.03}
    rows = deep_arms.sweep_rows(acc, config)
    assert list(rows) == [0, 1, 10, 50]
    np.testing.assert_array_equal(rows[10], SCRATCH + 0.02)
    with pytest.raises(ValueError, match="spt_10ep"):
        deep_arms.sweep_rows({k: v for k, v in acc.items() if k != "spt_10ep"}, config)
    assert deep_arms.arm_label("spt_1ep") == "SPT 1 epoch + fine-tune"
    assert deep_arms.arm_label("spt_10ep") == "SPT 10 epochs + fine-tune"
    assert deep_arms.arm_label("qk_only") == mini_lra.ARM_LABELS["qk_only"]
    with pytest.raises(ValueError, match="arm must be"):
        deep_arms.arm_label("spt_xep")


def test_figure_draws_one_bar_per_arm():
    fig, ax = deep_arms.figure(_acc(0.1, 0.05), 0.5, 2, "listops")
    assert len(ax.patches) == 5 and ax.get_title() == "listops"
    import matplotlib.pyplot as plt
    plt.close(fig)


def test_merged_rows_list_early_stops_by_epochs():
    """Tables print rows in the merged order: SPT stopped after 10 epochs comes after 1 and 2, not before."""
    recs = [{"layers": 1, "seed": 0, "group": 1, "cpu_s": 1.0, "spt_loss": [1.0], "diag": {},
             "rows": {"spt": 0.4, "spt_10ep": 0.3, "spt_1ep": 0.1, "spt_2ep": 0.2, "qk_only": 0.5}},
            {"layers": 1, "seed": 0, "group": 2, "cpu_s": 1.0, "spt_loss": None, "diag": {},
             "rows": {"alibi": 0.6, "scratch": 0.0}}]
    merged = mini_lra.merge_lra_jobs(recs)
    assert list(merged[0]["rows"]) == ["scratch", "spt", "spt_1ep", "spt_2ep", "spt_10ep", "qk_only", "alibi"]


def test_constant_prediction_runs_counts_scores_of_one_label():
    y = np.array([0] * 7 + [1] * 3)  # predicting 0 everywhere scores 0.7, predicting 1 scores 0.3
    acc = {"scratch": np.array([0.7, 0.3, 0.8]), "spt": np.array([0.7 + 1e-12, 0.6, 0.5])}
    assert deep_arms.constant_prediction_runs(acc, y) == (3, 6)
    ten = np.arange(10).repeat(3)  # ten classes, each a tenth: a missing class's share (0) never counts
    assert deep_arms.constant_prediction_runs({"a": np.array([0.1, 0.0, 0.2])}, ten) == (1, 3)
    with pytest.raises(ValueError, match="y_test"):
        deep_arms.constant_prediction_runs(acc, np.array([]))


def test_stopped_epochs_reads_the_names_sweep_points_writes():
    points = mini_lra.sweep_points({"spt_epochs": 50, "spt_checkpoints": [1, 10]})
    assert {e: mini_lra.stopped_epochs(row) for e, row in points.items() if e not in (0, 50)} == {1: 1, 10: 10}
    assert [mini_lra.stopped_epochs(r) for r in ("scratch", "spt", "spt_xep", "qk_only")] == [None] * 4
