"""The pretraining-length sweep of chapter 05 (blindspots.selfpretraining.spt_length)."""

import math

import numpy as np
import pytest
from scipy import stats

from blindspots import claims
from blindspots.selfpretraining import gates, mini_lra, spt_length, train
from blindspots.selfpretraining.presets import PRESETS

CHAPTER = "selfpretraining/05_spt_length"
CONFIG = {"spt_steps": 1000, "spt_checkpoints": [100, 300], "label_steps": 150}


def _sweep(acc, *, loss=None, n_pred=None, entropy=2.0, shortcut=0.3, task="listops"):
    """A Sweep from per-point arrays, no training: ``acc`` maps SPT steps (0 = scratch) to accuracies."""
    steps = sorted(acc)
    n = len(acc[0])
    loss = loss or {s: np.full(n, entropy - 0.5) for s in steps if s}
    n_pred = n_pred or {s: np.full(n, 10) for s in steps}
    return spt_length.Sweep(task=task, seeds=list(range(n)), steps=steps,
                            accuracy={s: np.asarray(a, float) for s, a in acc.items()},
                            n_predicted={s: np.asarray(v, int) for s, v in n_pred.items()},
                            masked_loss={s: np.asarray(v, float) for s, v in loss.items()},
                            spt_loss=np.zeros((n, max(steps))), entropy=entropy, shortcut=shortcut,
                            majority=0.1)


def test_the_primary_comparison_is_the_longest_spt_against_scratch():
    for task in mini_lra.TASKS:
        assert spt_length.PRIMARY[task] == "spt"
        for scale, sizes in PRESETS[CHAPTER].items():
            own = mini_lra.task_config(task, sizes)
            longest = max(spt_length.task_sweep(task, sizes))
            assert spt_length.primary_steps(task, sizes) == own["spt_steps"] == longest
    with pytest.raises(ValueError, match="task must be one of"):
        spt_length.primary_steps("text", CONFIG)


def test_full_preset_sweeps_the_issue_s_points_and_pathfinder_longer():
    full = PRESETS[CHAPTER]["full"]
    for task in ("listops", "image"):
        assert list(spt_length.task_sweep(task, full)) == [0, 100, 300, 1000, 3000]
    assert list(spt_length.task_sweep("pathfinder", full)) == [0, 300, 1000, 3000, 10000]
    assert full["tasks"] == list(mini_lra.TASKS) and full["seeds"] >= 8 and full["n_test"] >= 2000
    assert PRESETS[CHAPTER]["book"]["seeds"] >= 5


def test_a_task_s_own_spt_length_replaces_the_common_one_for_that_task_only():
    sizes = {**CONFIG, "mlm_prob": 0.5, "pathfinder_size": 12, "pathfinder_path_length": 5,
             "pathfinder_distractors": 3, "pathfinder_distractor_length": 4,
             "pathfinder_spt_steps": 5000, "pathfinder_spt_checkpoints": [2000]}
    assert spt_length.task_sweep("pathfinder", sizes) == {0: "scratch", 2000: "spt_2000st", 5000: "spt"}
    assert spt_length.task_sweep("listops", sizes) == mini_lra.sweep_points(CONFIG)
    assert mini_lra.task_config("listops", sizes)["spt_steps"] == 1000
    with pytest.raises(ValueError, match="task must be one of"):
        mini_lra.task_config("text", sizes)
    # the job order counts each task's own SPT: PathFinder's SPT jobs first even at shorter sequences
    data = {"listops": {"x_train": np.zeros((4, 120))}, "pathfinder": {"x_train": np.zeros((4, 100))}}
    jobs = spt_length.sweep_job_ids(["listops", "pathfinder"], [0], data, sizes)
    assert jobs[0] == 11100


def test_sweep_job_ids_cover_every_task_and_seed_costliest_first():
    data = {"listops": {"x_train": np.zeros((4, 120))}, "image": {"x_train": np.zeros((4, 64))}}
    jobs = spt_length.sweep_job_ids(["listops", "image"], [0, 1], data, CONFIG)
    expected = {10_000 * i + j for i in (0, 1) for j in mini_lra.lra_job_ids([1], [0, 1])}
    assert sorted(jobs) == sorted(expected) and len(jobs) == len(expected)
    # SPT jobs (group 1) of the longer sequences first, scratch jobs of the shorter ones last
    assert jobs[:2] == [1100, 1101] and jobs[-2:] == [12100, 12101]
    with pytest.raises(ValueError, match="tasks must be distinct"):
        spt_length.sweep_job_ids(["listops", "listops"], [0], data, CONFIG)


def test_sweep_job_runs_lra_seed_on_the_task_its_id_names(monkeypatch):
    seen = []
    monkeypatch.setattr(mini_lra, "lra_seed", lambda job, cfg, data, other: seen.append((job, data)) or {})
    data = {"listops": {"x": 1}, "image": {"x": 2}}
    out = spt_length.sweep_job(12_103, {"tasks": ["listops", "image"]}, data)
    assert out["task"] == "image" and seen == [(2103, {"x": 2})]
    with pytest.raises(ValueError, match="task index"):
        spt_length.sweep_job(22_103, {"tasks": ["listops", "image"]}, data)


def test_sweep_table_reads_every_point_in_seed_order():
    points = mini_lra.sweep_points(CONFIG)  # {0: scratch, 100: spt_100st, 300: spt_300st, 1000: spt}
    records = []
    for seed in (1, 0):  # out of order on purpose
        rows = {row: 0.1 * seed + s / 10_000 for s, row in points.items()}
        records.append({"seed": seed, "layers": 1, "rows": rows, "n_predicted": {row: 3 for row in rows},
                        "masked_loss": {row: 2.0 - s / 1000 for s, row in points.items() if s},
                        "spt_loss": [3.0] * 1000})
    x = np.array([[0, 1, 2, 3]] * 10)
    data = {"x_train": x, "y_train": np.arange(10) % 2, "x_test": x, "y_test": np.zeros(10, int)}
    sw = spt_length.sweep_table("listops", records, CONFIG, data, [0, 1], shortcut=0.25)
    assert sw.steps == [0, 100, 300, 1000] and sw.lengths == [100, 300, 1000]
    assert sw.accuracy[300] == pytest.approx([0.03, 0.13])
    assert sw.masked_loss[1000] == pytest.approx([1.0, 1.0])
    assert sw.entropy == pytest.approx(math.log(4)) and sw.shortcut == 0.25 and sw.spt_loss.shape == (2, 1000)
    assert sw.best == 1000
    with pytest.raises(ValueError, match="lack seeds"):
        spt_length.sweep_table("listops", records, CONFIG, data, [0, 2], shortcut=0.25)
    del records[0]["rows"]["spt_100st"]
    with pytest.raises(ValueError, match="spt_100st"):
        spt_length.sweep_table("listops", records, CONFIG, data, [0, 1], shortcut=0.25)


def test_point_gates_judge_each_length_on_its_own_checkpoint():
    acc = {0: [0.40, 0.42, 0.41], 100: [0.50, 0.52, 0.51], 300: [0.60, 0.61, 0.62]}
    loss = {100: [1.95, 1.85, 1.85], 300: [1.8, 1.8, 1.85]}  # entropy 2.0: 100 steps fails on its worst seed
    n_pred = {0: [5, 5, 5], 100: [1, 5, 5], 300: [5, 5, 5]}
    g = spt_length.point_gates(_sweep(acc, loss=loss, n_pred=n_pred))
    assert [x.name for x in g[100]] == [gates.PLATEAU, gates.SHORTCUT, gates.CONSTANT]
    assert not g[100][0].passed and g[300][0].passed
    assert g[100][0].measured == pytest.approx(0.05)
    assert not g[100][2].passed and g[300][2].passed  # the constant run belongs to the 100-step row only
    assert g[100][1] is g[300][1] and g[300][1].passed  # one shortcut gate, judged on the best point (300)
    low_best = _sweep(acc, shortcut=0.65)
    assert not spt_length.point_gates(low_best)[100][1].passed
    assert spt_length.gate_summary([_sweep(acc, loss=loss, n_pred=n_pred), low_best]) == (
        "SPT left its plateau at 3 of 4 SPT lengths; the best sweep point beat the shortcut on 1 of 2 tasks; "
        "no run predicted a constant at 3 of 4 lengths")


def test_a_scratch_run_at_one_label_fails_every_row_of_its_task():
    acc = {0: [0.40, 0.42, 0.41], 100: [0.50, 0.52, 0.51], 300: [0.60, 0.61, 0.62]}
    g = spt_length.point_gates(_sweep(acc, n_pred={0: [5, 1, 5], 100: [5] * 3, 300: [5] * 3}))
    assert not g[100][2].passed and not g[300][2].passed


def test_comparison_rows_test_only_gated_lengths_with_holm_across_the_task():
    rng = np.random.default_rng(0)
    scratch = 0.40 + 0.01 * rng.standard_normal(6)
    acc = {0: scratch, 100: scratch + 0.002 * rng.standard_normal(6), 300: scratch + 0.2, 1000: scratch + 0.3}
    loss = {100: [1.5] * 6, 300: [1.95] * 6, 1000: [1.5] * 6}  # 300 steps still on the plateau
    rows = spt_length.comparison_rows(_sweep(acc, loss=loss), where="at book scale")
    assert [r.name for r in rows] == [spt_length.row_name("listops", s) for s in (100, 300, 1000)]
    assert rows[1].verdict == f"not tested at book scale (gate failed: {gates.PLATEAU})"
    assert rows[2].verdict == "reproduces"
    assert gates.verdict_word(rows[0]) == "not resolved" and "could have detected" in rows[0].verdict
    # the family is the two tested rows: Holm multiplies the smaller p-value by 2
    assert rows[2].p_holm == pytest.approx(min(1.0, 2 * rows[2].p)) and rows[1].p_holm is None
    wrong_way = spt_length.comparison_rows(_sweep({0: acc[1000], 100: acc[0]}), where="")
    assert wrong_way[0].verdict == "opposite"


def test_design_detectable_uses_holm_s_first_level_and_the_row_s_spread():
    rng = np.random.default_rng(1)
    acc = {0: rng.random(5), 100: rng.random(5), 300: rng.random(5)}
    sw = _sweep(acc)
    got = spt_length.design_detectable(sw)
    for s in (100, 300):
        d = acc[s] - acc[0]
        assert got[s] == pytest.approx(gates.detectable_effect(d.std(ddof=1), 5, gates.ALPHA / 2))


def test_detectable_effect_has_its_power_at_two_and_three_seeds():
    """scipy's noncentral t gives NaN in its far lower tail at 1-2 degrees of freedom; the effect is still
    the one a paired t test detects 80 % of the time (smoke scale runs 2 seeds)."""
    rng = np.random.default_rng(4)
    for n, alpha in ((2, 0.05), (2, 0.025), (3, 0.025)):
        delta = gates.detectable_effect(0.1, n, alpha)
        assert math.isfinite(delta) and delta > 0
        d = rng.normal(delta, 0.1, size=(40_000, n))
        t = d.mean(1) / (d.std(1, ddof=1) / math.sqrt(n))
        assert np.mean(np.abs(t) > stats.t.ppf(1 - alpha / 2, n - 1)) == pytest.approx(0.8, abs=0.01)


def test_claim_gates_make_every_gate_a_claim_and_name_those_that_failed(tmp_path, monkeypatch):
    monkeypatch.setenv("BLINDSPOTS_CLAIMS_DIR", str(tmp_path))
    acc = {0: [0.40, 0.42, 0.41], 100: [0.50, 0.52, 0.51], 300: [0.60, 0.61, 0.62]}
    good = _sweep(acc)
    spt_length.claim_gates([good])  # every gate passes: no error
    bad = _sweep(acc, loss={100: [1.95] * 3, 300: [1.5] * 3},
                 n_pred={0: [5] * 3, 100: [5] * 3, 300: [1, 5, 5]}, task="image")
    with pytest.raises(claims.ClaimFailed) as err:
        spt_length.claim_gates([good, bad])
    assert err.value.ids == ["image-100st-left-plateau", "image-300st-no-constant-run"]
    ids = {c["id"]: c["kind"] for c in claims.load_records(tmp_path)}
    assert "listops-beats-shortcut" in ids and "listops-300st-left-plateau" in ids
    assert set(ids.values()) == {"sanity"}
    assert len(ids) == 2 * (2 + 2 + 1)  # per task: 2 plateau, 2 constant and 1 shortcut gate


def test_records():
    acc = {0: [0.40, 0.42, 0.41], 100: [0.50, 0.52, 0.51], 1000: [0.60, 0.61, 0.62]}
    sw = _sweep(acc)
    tables = {"listops": spt_length.comparison_rows(sw)}
    rec = spt_length.comparison_records([sw], tables, {"spt_steps": 1000, "spt_checkpoints": [100]})
    assert [r["SPT steps"] for r in rec] == [100, 1000] and [r["primary"] for r in rec] == ["", "yes"]
    assert rec[1]["effect over scratch"] == pytest.approx(0.2)
    assert rec[1]["verdict"] == tables["listops"][1].verdict
    assert [r["plateau"] for r in spt_length.gate_records([sw])] == ["pass", "pass"]


def test_log_axis_puts_scratch_a_decade_below_the_first_checkpoint():
    assert spt_length.log_axis([0, 100, 300, 1000]) == pytest.approx([1, 2, math.log10(300), 3])
    with pytest.raises(ValueError, match="steps must be"):
        spt_length.log_axis([-1, 10])


def test_a_late_checkpoint_is_not_a_shorter_run(monkeypatch):
    """The chapter's verification sees a checkpoint stored one step late (a wrong step count)."""
    sizes = dict(PRESETS[CHAPTER]["smoke"], spt_steps=6, spt_checkpoints=[2], data_seed=0, device="cpu")
    data = mini_lra.task_data("image", sizes, 0)
    assert mini_lra.checkpoint_gap(sizes, data, 0, 1, 2) <= 1e-7
    orig = train.pretrain

    def late(model, tokens, **kw):
        cks, saved = kw.get("checkpoints", ()), kw.get("saved")
        if not cks:
            return orig(model, tokens, **kw)
        shifted = {c: c + 1 if 0 < c < kw["steps"] else c for c in cks}
        tmp: dict = {}
        out = orig(model, tokens, **{**kw, "checkpoints": tuple(shifted.values()), "saved": tmp})
        saved.update({c: tmp[s] for c, s in shifted.items()})
        return out

    monkeypatch.setattr(train, "pretrain", late)
    assert mini_lra.checkpoint_gap(sizes, data, 0, 1, 2) > 1e-4


def test_a_smoke_sweep_runs_end_to_end_and_draws_its_figures():
    import matplotlib

    matplotlib.use("Agg")
    from blindspots import plotting

    sizes = dict(PRESETS[CHAPTER]["smoke"], tasks=["image"], data_seed=0, device="cpu")
    data = {"image": mini_lra.task_data("image", sizes, 0)}
    seeds = list(range(sizes["seeds"]))
    records = spt_length.run_sweep(sizes, data, seeds, n_jobs=1)
    sw = spt_length.sweep_table("image", records["image"], sizes, data["image"], seeds)
    assert sw.steps == [0, 2, 6] and sw.spt_loss.shape == (len(seeds), 6)
    assert set(sw.masked_loss) == {2, 6} and all(np.isfinite(v).all() for v in sw.masked_loss.values())
    # the sweep is reproducible from its seeds
    again = spt_length.run_sweep(sizes, data, seeds, n_jobs=1)
    assert again["image"][0]["rows"] == records["image"][0]["rows"]
    for draw in (spt_length.plot_losses, spt_length.plot_accuracy):
        fig, axes = plotting.figure(ncols=1, squeeze=False)
        draw([sw], axes[0])
        assert axes[0][0].get_title() == spt_length.TASK_LABELS["image"]
        matplotlib.pyplot.close(fig)


def test_budget_limited_needs_a_failed_longest_plateau_and_a_reference_that_passes():
    acc = {0: [0.5, 0.52, 0.48], 300: [0.55, 0.57, 0.5], 1000: [0.6, 0.58, 0.52]}
    stuck = {300: np.full(3, 1.99), 1000: np.full(3, 1.95)}  # entropy 2.0: 0.05 below at most
    sw = _sweep(acc, loss=stuck, task="pathfinder")
    assert not spt_length.budget_limited(sw)  # no reference: nothing shows the gate can be passed
    sw.reference = 1.85
    assert spt_length.budget_limited(sw)
    rows = spt_length.comparison_rows(sw, where="")
    assert all(r.verdict.startswith("not tested (budget; gate failed: SPT left its plateau") for r in rows)
    sw.reference = 1.95  # the reference is on the plateau too: the gate is not shown reachable
    assert not spt_length.budget_limited(sw)
    assert all(r.verdict.startswith("not tested (gate failed") for r in spt_length.comparison_rows(sw, where=""))
    left = _sweep(acc, loss={300: np.full(3, 1.99), 1000: np.full(3, 1.8)}, task="pathfinder")
    left.reference = 1.5  # the longest SPT left its plateau: a failed row there is not the budget's
    assert not spt_length.budget_limited(left)