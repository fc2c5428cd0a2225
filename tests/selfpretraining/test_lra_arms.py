"""What chapter 04 computes from the mini LRA's records: data checks, gates, comparison rows, the QK check."""

import math

import numpy as np
import pytest

from blindspots.selfpretraining import gates, lra_arms, mini_lra

TINY = dict(d_model=8, n_heads=2, max_len=64, batch_size=8, lr=3e-3, mlm_prob=0.5, n_train=24, n_test=10,
            listops_min_length=10, listops_max_length=30, listops_max_depth=4, listops_max_args=4,
            spt_steps=2, label_steps=2, data_seed=0)
PF = dict(pathfinder_size=12, pathfinder_path_length=8, pathfinder_distractors=1,
          pathfinder_distractor_length=3)


def _record(seed, rows, *, layers=1, spt_loss=1.0, other_loss=1.0, n_pred=None, copied=None):
    return {"task": "listops", "layers": layers, "seed": seed, "rows": dict(rows),
            "n_predicted": {a: 3 for a in rows} if n_pred is None else n_pred,
            "masked_loss": {"spt": spt_loss, "other_source": other_loss},
            "copied_qk": sorted(lra_arms.qk_tensor_names(0)) if copied is None else copied,
            "spt_loss": [2.0, spt_loss], "diag": {}}


SCRATCH = np.array([0.30, 0.32, 0.28, 0.31, 0.29])
NOISE = np.array([0.01, -0.01, 0.02, -0.02, 0.0])


def _arm_rows(spt_gain=0.3, matched_gain=0.1, qk_gain=0.2, other_gain=0.0, alibi_gain=0.4):
    acc = {"scratch": SCRATCH, "scratch_matched": SCRATCH + matched_gain - NOISE / 2,
           "spt": SCRATCH + spt_gain + NOISE, "qk_only": SCRATCH + qk_gain - NOISE,
           "other_source": SCRATCH + other_gain + NOISE / 2, "alibi": SCRATCH + alibi_gain + NOISE}
    return [{a: float(v[s]) for a, v in acc.items()} for s in range(len(SCRATCH))]


def _uniform_data(k):
    """Test tokens spread evenly over k content tokens: unigram entropy ln k."""
    x = np.tile(np.arange(k), (10, 4))
    return {"x_train": x, "y_train": np.zeros(10, int), "x_test": x, "y_test": np.zeros(10, int)}


DATA = {"listops": _uniform_data(8), "image": _uniform_data(4)}  # entropies ln 8 = 2.08 and ln 4 = 1.39


def test_job_ids_put_every_task_in_one_pool_and_round_trip():
    ids = lra_arms.arms_job_ids(["pathfinder", "listops"], [1, 2], [0, 3])
    assert len(ids) == 2 * 2 * 2 * 2  # tasks x depths x seeds x halves
    assert [i // 10000 for i in ids[:8]] == [mini_lra.TASKS.index("pathfinder")] * 8  # in the order given
    assert {i % 10000 for i in ids} == set(mini_lra.lra_job_ids([1, 2], [0, 3]))
    with pytest.raises(ValueError, match="tasks"):
        lra_arms.arms_job_ids(["text"], [1], [0])
    with pytest.raises(ValueError, match="tasks"):
        lra_arms.arms_job_ids([], [1], [0])


def test_arms_job_runs_lra_seed_on_its_task_with_the_other_source():
    data = {t: mini_lra.task_data(t, TINY, 0) for t in ("listops", "image")}
    job = 10000 * mini_lra.TASKS.index("image") + 2101  # group 2 (no own SPT), one layer, seed 1
    r = lra_arms.arms_job(job, TINY, data)
    direct = mini_lra.lra_seed(2101, TINY, data["image"], data["listops"])
    assert r["task"] == "image" and r["rows"] == direct["rows"] and r["masked_loss"] == direct["masked_loss"]
    with pytest.raises(ValueError, match="other source 'listops'"):
        lra_arms.arms_job(job, TINY, {"image": data["image"]})
    with pytest.raises(ValueError, match="task index"):
        lra_arms.arms_job(90101, TINY, data)


def test_merge_groups_by_task_and_unites_the_halves():
    spt_half = {"group": 1, "spt_loss": [1.0], "rows": {"spt": 0.5}, "n_predicted": {"spt": 2},
                "masked_loss": {"spt": 1.0}, "label_loss": {"spt": [0.9, 0.7]}}
    rest = {"group": 2, "spt_loss": None, "rows": {"scratch": 0.4}, "n_predicted": {"scratch": 3},
            "masked_loss": {}, "label_loss": {"scratch": [2.3, 2.2]}}
    halves = [{"task": t, "layers": 1, "seed": 0, "cpu_s": 1.0, "diag": {}, **half}
              for t in ("image", "listops") for half in (rest, spt_half)]
    merged = lra_arms.merge_arms_jobs(halves)
    assert list(merged) == ["image", "listops"]
    assert merged["listops"][0]["rows"] == {"scratch": 0.4, "spt": 0.5}
    assert merged["listops"][0]["cpu_s"] == 2.0
    assert merged["listops"][0]["label_loss"] == {"scratch": [2.3, 2.2], "spt": [0.9, 0.7]}  # in the rows' order


def test_lra_seed_keeps_every_arms_label_loss_curve():
    data = {t: mini_lra.task_data(t, TINY, 0) for t in ("listops", "image")}
    config = {**TINY, "label_steps": 12, "arms": ["scratch", "scratch_matched", "spt", "qk_only"]}
    r = mini_lra.lra_seed(101, config, data["listops"], data["image"])
    assert set(r["label_loss"]) == set(r["rows"]) == set(config["arms"])
    assert len(r["label_loss"]["scratch"]) == 12 and len(r["label_loss"]["scratch_matched"]) == 12 + TINY["spt_steps"]
    curve = np.asarray(r["label_loss"]["spt"])
    assert np.all(curve[1:10] == curve[0]) and curve[10] != curve[0]  # read at steps 0 and 10, repeated between
    assert np.all(np.isfinite(curve)) and curve.min() > 0


def test_label_loss_figure_draws_every_arm_and_the_label_entropy():
    import matplotlib
    matplotlib.use("Agg")
    recs = [{**_record(s, {"scratch": 0.3, "spt": 0.5}), "label_loss": {"scratch": [2.3] * 25, "spt": [1.0] * 25}}
            for s in (0, 1)]
    data = {"listops": {**DATA["listops"], "y_train": np.repeat(np.arange(5), 2)}}  # entropy ln 5
    fig, axes = lra_arms.label_loss_figure({"listops": recs}, data)
    lines = axes[0][0].get_lines()
    assert any(np.allclose(ln.get_ydata(), math.log(5)) for ln in lines)
    assert {ln.get_label() for ln in lines} >= {lra_arms.arm_label("scratch"), lra_arms.arm_label("spt")}
    assert np.array_equal(lines[0].get_xdata(), [1, 11, 21, 25])  # the steps whose loss was read, 1-based
    with pytest.raises(ValueError, match="label loss curves of \\['alibi'\\]"):
        lra_arms.label_loss_figure({"listops": recs}, data, arms=["scratch", "alibi"])
    # per task, its own arms and legend labels: a task without an arm the other runs is drawn without it
    short = [{**r, "label_loss": {"scratch": r["label_loss"]["scratch"]}} for r in recs]
    fig, axes = lra_arms.label_loss_figure({"listops": recs, "image": short}, {**data, "image": data["listops"]},
                                           arms={"listops": {"scratch": "a", "spt": "b"}, "image": {"scratch": "c"}})
    assert {ln.get_label() for ln in axes[0][1].get_lines()} >= {"c"} and "b" not in {
        ln.get_label() for ln in axes[0][1].get_lines()}
    with pytest.raises(ValueError, match="arms of every task"):
        lra_arms.label_loss_figure({"listops": recs}, data, arms={"image": {"scratch": "c"}})


def test_at_depth_and_accuracies_follow_the_seeds():
    recs = [_record(s, {"scratch": s / 10, "spt": s / 5}, layers=L) for L in (2, 1) for s in (1, 0)]
    one = lra_arms.at_depth(recs, 1)
    assert [r["seed"] for r in one] == [0, 1] and all(r["layers"] == 1 for r in one)
    acc = lra_arms.accuracies(one)
    assert list(acc) == ["scratch", "spt"] and np.allclose(acc["spt"], [0.0, 0.2])
    with pytest.raises(ValueError, match="missing \\['alibi'\\]"):
        lra_arms.accuracies(one, ["scratch", "alibi"])
    with pytest.raises(ValueError, match="n_layers = 3"):
        lra_arms.at_depth(recs, 3)
    partial = [_record(0, {"scratch": 0.1, "spt": 0.2}), _record(1, {"scratch": 0.1})]
    assert list(lra_arms.accuracies(partial)) == ["scratch"]  # only arms every seed ran


def test_listops_check_finds_a_wrong_label_and_measures_lengths():
    data = mini_lra.task_data("listops", TINY, 2)
    mismatch, lengths = lra_arms.listops_mismatches(data)
    assert mismatch == 0 and len(lengths) == 34
    assert lengths.min() >= TINY["listops_min_length"] and lengths.max() <= TINY["listops_max_length"]
    wrong = {**data, "y_test": (data["y_test"] + 1) % 10}
    assert lra_arms.listops_mismatches(wrong)[0] == len(data["y_test"])


def test_pathfinder_check_finds_a_flipped_label():
    sizes = {**TINY, **PF}
    data = mini_lra.task_data("pathfinder", sizes, 1)
    assert lra_arms.pathfinder_mismatches(data, sizes) == 0
    y = data["y_train"].copy()
    y[:3] = 1 - y[:3]
    assert lra_arms.pathfinder_mismatches({**data, "y_train": y}, sizes) == 3


def test_train_test_overlap_counts_shared_sequences():
    x = np.arange(12).reshape(4, 3)
    assert lra_arms.train_test_overlap({"x_train": x[:3], "x_test": x[3:]}) == 0
    assert lra_arms.train_test_overlap({"x_train": x, "x_test": x[[1, 3, 3]]}) == 3


def _gated(rows, **kw):
    recs = [_record(s, r, **kw) for s, r in enumerate(rows)]
    return recs, lra_arms.task_gates("listops", recs, DATA, shortcut=0.35)


def test_gates_pass_when_spt_left_the_plateau_and_arms_beat_the_shortcut():
    recs, tg = _gated(_arm_rows(), spt_loss=math.log(8) - 0.3, other_loss=math.log(4) - 0.3)
    assert tg.entropy == pytest.approx({"spt": math.log(8), "other_source": math.log(4)})  # the digits' too
    assert tg.best_arm == "spt"  # the control (alibi, higher still) is not a candidate
    assert all(g.passed for g in tg.all()), [str(g) for g in tg.all()]
    names = [g.name for g in tg.for_row("spt", "scratch_matched")]
    assert names == [gates.PLATEAU, gates.SHORTCUT, gates.CONSTANT, gates.CONTROL]
    assert tg.for_row("other_source", "scratch")[0] is tg.plateau["other_source"]
    assert tg.for_row("scratch_matched", "scratch")[0].name == gates.SHORTCUT  # no SPT, no plateau gate


def test_each_gate_fails_on_its_own():
    _, tg = _gated(_arm_rows(), spt_loss=math.log(8) - 0.05, other_loss=math.log(4) - 0.3)  # 0.05 < 0.1 below
    assert not tg.plateau["spt"].passed and tg.plateau["other_source"].passed
    _, tg = _gated(_arm_rows(spt_gain=0.0, matched_gain=0.0, qk_gain=0.0))  # every paper arm near 0.30 < 0.35
    assert not tg.shortcut.passed and tg.control.passed
    _, tg = _gated(_arm_rows(alibi_gain=0.0))
    assert tg.shortcut.passed and not tg.control.passed
    rows = _arm_rows()
    n_pred = {a: 3 for a in rows[0]}
    recs = [_record(s, r, n_pred={**n_pred, "scratch": 1 if s == 2 else 3}) for s, r in enumerate(rows)]
    tg = lra_arms.task_gates("listops", recs, DATA, shortcut=0.35)
    assert not tg.for_row("spt", "scratch")[2].passed and tg.for_row("spt", "scratch_matched")[2].passed
    with pytest.raises(ValueError, match="one depth"):
        lra_arms.task_gates("listops", recs + [_record(0, rows[0], layers=2)], DATA, shortcut=0.35)


def test_full_scale_claims_every_gate_and_names_the_failures(tmp_path, monkeypatch):
    """Where a run decides the comparisons, each gate is a (sanity) claim; a failed gate stops with its id."""
    from blindspots import claims

    monkeypatch.setenv("BLINDSPOTS_CLAIMS_DIR", str(tmp_path))
    _, tg = _gated(_arm_rows(), spt_loss=math.log(8) - 0.3, other_loss=math.log(4) - 0.3)
    assert sorted(tg.named()) == ["listops-1l-best-arm-beats-shortcut", "listops-1l-control-learns",
                                  "listops-1l-no-constant-run", "listops-1l-other-spt-left-plateau",
                                  "listops-1l-spt-left-plateau"]
    gates.claim_gates(tg.named())  # every gate passes
    _, tg = _gated(_arm_rows(alibi_gain=0.0), spt_loss=math.log(8) - 0.05, other_loss=math.log(4) - 0.3)
    with pytest.raises(claims.ClaimFailed) as err:
        gates.claim_gates(tg.named())
    assert err.value.ids == ["listops-1l-spt-left-plateau", "listops-1l-control-learns"]


def test_control_gate_fails_when_the_control_did_not_run():
    rows = [{a: v for a, v in r.items() if a != "alibi"} for r in _arm_rows()]
    _, tg = _gated(rows)
    assert tg.control is None
    g = tg.for_row("spt", "scratch")[-1]
    assert g.name == gates.CONTROL and not g.passed


def test_comparison_rows_are_keyed_gated_and_get_verdicts():
    ok = dict(spt_loss=math.log(8) - 0.3, other_loss=math.log(4) - 0.3)
    recs_a, tg_a = _gated(_arm_rows(), **ok)
    recs_b, tg_b = _gated(_arm_rows(), spt_loss=math.log(8))  # on the plateau
    recs_b = [{**r, "task": "image"} for r in recs_b]
    rows = lra_arms.comparison_rows({"listops": recs_a, "image": recs_b},
                                    {("listops", 1): tg_a, ("image", 1): tg_b})
    assert list(rows)[:4] == ["listops-1-primary", "listops-1-spt", "listops-1-qk", "listops-1-other"]
    assert rows["listops-1-primary"].name.endswith("(primary)")
    assert "(primary)" not in rows["listops-1-spt"].name
    assert rows["listops-1-primary"].effect.difference == pytest.approx(0.2)  # 0.3 - 0.1, paired
    gates.comparison_table(list(rows.values()), where="at book scale")
    assert gates.verdict_word(rows["listops-1-primary"]) == "reproduces"
    assert rows["listops-1-other"].verdict.startswith("not resolved (could have detected ≥ ")
    assert rows["image-1-primary"].verdict == "not tested at book scale (gate failed: SPT left its plateau)"
    assert rows["image-1-other"].tested  # its own SPT run (on the digits' inputs) left the plateau
    table = lra_arms.comparison_records(rows.values())
    assert table[0]["p (Holm)"] != "-" and table[4]["p (Holm)"] == "-" and table[4]["detectable"] == "-"


def test_comparison_rows_skip_arms_that_did_not_run():
    rows = [{"scratch": r["scratch"], "spt": r["spt"], "alibi": r["alibi"]} for r in _arm_rows()]
    recs, tg = _gated(rows)
    assert list(lra_arms.comparison_rows({"listops": recs}, {("listops", 1): tg})) == ["listops-1-spt"]


def test_primary_comparison_is_spt_against_compute_matched_scratch():
    assert lra_arms.PRIMARY == ("spt", "scratch_matched") == lra_arms.COMPARISONS[0]
    assert set(lra_arms.COMPARISON_KEYS) == set(lra_arms.COMPARISONS)
    assert {a for pair in lra_arms.COMPARISONS for a in pair} | {lra_arms.CONTROL_ARM} == set(mini_lra.ARMS)
    assert set(lra_arms.SHORTCUTS) == set(mini_lra.TASKS)


def test_gate_records_name_each_plateau():
    _, tg = _gated(_arm_rows())
    recs = lra_arms.gate_records([tg])
    assert [r["gate"] for r in recs] == [gates.PLATEAU, gates.PLATEAU + " (SPT on another task)",
                                         gates.SHORTCUT, gates.CONSTANT, gates.CONTROL]
    assert {r["passed"] for r in recs} <= {"pass", "FAIL"}


def test_layers_qk_copied_counts_complete_layers_and_penalises_extras():
    full = set().union(*(lra_arms.qk_tensor_names(i) for i in range(4)))
    assert len(full) == 16
    assert lra_arms.layers_qk_copied([full, full], 4) == 4
    assert lra_arms.layers_qk_copied([full, lra_arms.qk_tensor_names(0)], 4) == 1  # the least over seeds
    assert lra_arms.layers_qk_copied([full - {"blocks.3.attn.k_proj.bias"}], 4) == 3
    values = full | {f"blocks.{i}.attn.v_proj.weight" for i in range(4)}
    assert lra_arms.layers_qk_copied([values], 4) == 0  # four complete layers minus four extra tensors
    with pytest.raises(ValueError, match="n_layers"):
        lra_arms.layers_qk_copied([full], 0)
    with pytest.raises(ValueError, match="at least one seed"):
        lra_arms.layers_qk_copied([], 2)


def test_qk_copy_shortfall_takes_the_worst_run_of_every_task_and_depth():
    two = sorted(lra_arms.qk_tensor_names(0) | lra_arms.qk_tensor_names(1))
    good = {"listops": [_record(0, {"qk_only": 0.1}), _record(0, {"qk_only": 0.1}, layers=2, copied=two)],
            "image": [_record(0, {"scratch": 0.1}, copied=[])]}  # no QK-only arm: not judged
    assert lra_arms.qk_copy_shortfall(good) == 0
    first = sorted(lra_arms.qk_tensor_names(0))
    first_block = {**good, "image": [_record(0, {"qk_only": 0.1}, layers=2, copied=first)]}
    assert lra_arms.qk_copy_shortfall(first_block) == 1
    with pytest.raises(ValueError, match="qk_only"):
        lra_arms.qk_copy_shortfall({"image": good["image"]})


def test_qk_check_reads_the_names_a_real_hybrid_copies():
    """The names must be those transfer.hybrid_init copies from the model, or the check measures nothing."""
    sizes = {**TINY, "deep_arms": ["scratch", "spt", "qk_only"]}
    data = mini_lra.task_data("listops", sizes, 0)
    r = mini_lra.lra_seed(1300, sizes, data, data)  # group 1: the SPT model and the arms that start from it
    assert lra_arms.qk_copy_shortfall({"listops": [r]}) == 0 and r["layers"] == 3


def test_arm_labels():
    assert lra_arms.arm_label("qk_only") == mini_lra.ARM_LABELS["qk_only"]
    with pytest.raises(ValueError, match="arm must be"):
        lra_arms.arm_label("spt_10st")


def test_figures_draw_every_task():
    import matplotlib.pyplot as plt

    recs, tg = _gated(_arm_rows())
    by_task = {"listops": recs}
    fig, axes = lra_arms.loss_figure(by_task, {("listops", 1): tg})
    assert axes[0][0].get_title() == "listops" and len(axes[0][0].lines) == 2 * len(recs) + 2
    plt.close(fig)
    fig, axes = lra_arms.accuracy_figure(by_task, {("listops", 1): tg}, {"listops": 0.1})
    assert len(axes[0][0].patches) == 6
    plt.close(fig)


def test_task_config_gives_pathfinder_its_grid_control_and_masking_rate():
    from blindspots.selfpretraining import presets
    sizes = presets.PRESETS["selfpretraining/04_mini_lra_arms"]["book"]
    pf = mini_lra.task_config("pathfinder", sizes)
    assert pf["alibi_grid"] == sizes["pathfinder_size"] and pf["mlm_prob"] == sizes["pathfinder_mlm_prob"]
    assert mini_lra.model_config(pf, 1, alibi=True).alibi_grid == sizes["pathfinder_size"]
    assert mini_lra.model_config(pf, 1).alibi_grid == 0  # only the control carries the bias
    lo = mini_lra.task_config("listops", sizes)
    assert lo.get("alibi_grid", 0) == 0 and lo["mlm_prob"] == sizes["mlm_prob"]


def test_balanced_pathfinder_split_keeps_the_asked_sizes():
    sizes = {**TINY, **PF, "pathfinder_balance": True, "n_train": 24, "n_test": 9}
    d = mini_lra.task_data("pathfinder", sizes, 0)
    assert len(d["x_train"]) == 24 and len(d["x_test"]) == 9


@pytest.mark.parametrize("chapter", ["selfpretraining/04_mini_lra_arms", "selfpretraining/05_spt_length"])
@pytest.mark.parametrize("scale", ["smoke", "book", "full"])
def test_every_preset_splits_the_digits(chapter, scale):
    """The digits hold 1797 images: every preset's test split of them must leave a training split."""
    from blindspots.selfpretraining import presets
    sizes = presets.PRESETS[chapter][scale]
    d = mini_lra.task_data("image", sizes, 0)
    assert len(d["x_test"]) == sizes.get("image_n_test", sizes["n_test"]) and len(d["x_train"]) > 0


def test_offset_imbalance_reads_the_pairing():
    sizes = {**TINY, **PF, "n_train": 60, "n_test": 20}
    paired = mini_lra.task_data("pathfinder", {**sizes, "pathfinder_balance": True}, 0)
    assert lra_arms.offset_imbalance(paired) == 0
    unpaired = mini_lra.task_data("pathfinder", sizes, 0)
    assert lra_arms.offset_imbalance(unpaired) >= 2
