"""The mini LRA's per-seed protocol (mini_lra.lra_seed) and its records: paired arms, the compute-matched arm,
split jobs, the held-out masked losses and the labels each run predicts."""

import numpy as np
import pytest

from blindspots.selfpretraining import gates, mini_lra

SIZES = dict(d_model=8, n_heads=2, max_len=64, batch_size=8, lr=3e-3, mlm_prob=0.5, n_train=24, n_test=10,
             listops_min_length=10, listops_max_length=30, listops_max_depth=4, listops_max_args=4,
             spt_steps=2, label_steps=2, data_seed=0)


def test_every_task_has_another_source():
    assert set(mini_lra.OTHER_SOURCE) == set(mini_lra.TASKS)
    assert all(src != task for task, src in mini_lra.OTHER_SOURCE.items())


def test_lra_seed_pairs_arms_and_copies_only_qk():
    sizes = SIZES
    data = mini_lra.task_data("listops", sizes, 0)
    other = mini_lra.task_data("image", sizes, 0)
    r = mini_lra.lra_seed(101, sizes, data, other)
    assert set(r["rows"]) == set(mini_lra.ARMS) and r["seed"] == 1 and r["layers"] == 1
    assert sorted(r["copied_qk"]) == sorted(f"blocks.0.attn.{p}.{w}" for p in ("q_proj", "k_proj")
                                            for w in ("weight", "bias"))
    deep = mini_lra.lra_seed(201, sizes, data, other)
    assert set(deep["rows"]) == {"scratch", "spt"} and deep["layers"] == 2
    every = mini_lra.lra_seed(201, {**sizes, "deep_arms": list(mini_lra.ARMS)}, data, other)
    assert set(every["rows"]) == set(mini_lra.ARMS)
    assert sorted(every["copied_qk"]) == sorted(f"blocks.{i}.attn.{p}.{w}" for i in (0, 1)
                                                for p in ("q_proj", "k_proj") for w in ("weight", "bias"))
    assert every["rows"]["scratch"] == deep["rows"]["scratch"] and every["rows"]["spt"] == deep["rows"]["spt"]
    again = mini_lra.lra_seed(101, sizes, data, other)
    assert again["rows"] == r["rows"]  # seeded


def test_split_jobs_give_the_numbers_of_whole_seeds():
    sizes = {**SIZES, "spt_checkpoints": [1]}
    data = mini_lra.task_data("listops", sizes, 0)
    other = mini_lra.task_data("image", sizes, 0)
    whole = [mini_lra.lra_seed(t, sizes, data, other)
             for t in mini_lra.lra_job_ids([1, 2], [0, 1], split=False)]
    jobs = mini_lra.lra_job_ids([1, 2], [0, 1])
    assert len(jobs) == 2 * len(whole) and {j // 1000 for j in jobs} == {1, 2}
    merged = mini_lra.merge_lra_jobs([mini_lra.lra_seed(t, sizes, data, other) for t in jobs])
    assert [(m["layers"], m["seed"]) for m in merged] == [(w["layers"], w["seed"]) for w in whole]
    for m, w in zip(merged, whole):
        assert list(m["rows"]) == list(w["rows"]) and m["rows"] == w["rows"]  # same arms, order and numbers
        assert m["diag"] == w["diag"] and m["spt_loss"] == w["spt_loss"] and m["copied_qk"] == w["copied_qk"]
        assert m["n_predicted"] == w["n_predicted"] and m["masked_loss"] == w["masked_loss"]
        assert all(np.array_equal(m["positional_maps"][k], v) for k, v in w["positional_maps"].items())
    assert "spt_1st" in merged[0]["rows"] and "spt_1st" in merged[0]["masked_loss"]


def test_lra_job_ids_reject_bad_input():
    with pytest.raises(ValueError, match="depths"):
        mini_lra.lra_job_ids([0], [0])
    with pytest.raises(ValueError, match="seeds"):
        mini_lra.lra_job_ids([1], [100])
    with pytest.raises(ValueError, match="task"):
        mini_lra.lra_seed(3101, {"data_seed": 0}, {}, {})


def test_checkpoint_gap_is_zero_and_sees_an_aliased_checkpoint(monkeypatch):
    sizes = {**SIZES, "spt_steps": 3}
    data = mini_lra.task_data("image", sizes, 0)
    assert mini_lra.checkpoint_gap(sizes, data, 1, 1, 1) <= 1e-7
    from blindspots.selfpretraining import train
    real = train.pretrain

    def aliased(model, tokens, **kw):  # checkpoints that point at the live weights
        out = real(model, tokens, **kw)
        for c in kw.get("checkpoints", ()):
            if c:
                kw["saved"][c] = model.state_dict()
        return out
    monkeypatch.setattr(train, "pretrain", aliased)
    assert mini_lra.checkpoint_gap(sizes, data, 1, 1, 1) > 1e-3
    with pytest.raises(ValueError, match="steps must lie"):
        mini_lra.checkpoint_gap(sizes, data, 1, 1, 3)


def test_sweep_rows_and_accuracies_follow_the_seeds():
    config = {"spt_steps": 10, "spt_checkpoints": [3, 1]}
    assert mini_lra.sweep_points(config) == {0: "scratch", 1: "spt_1st", 3: "spt_3st", 10: "spt"}
    names = ("spt_1st", "spt_30st", "spt", "spt_xst", "scratch")
    assert [mini_lra.stopped_steps(r) for r in names] == [1, 30, None, None, None]
    rows = lambda s: {"scratch": 0.1 + s, "spt_1st": 0.2 + s, "spt_3st": 0.3 + s,  # noqa: E731
                      "spt": 0.4 + s}
    results = [{"layers": L, "seed": s, "rows": rows(s + 10 * L)} for L in (2, 1) for s in (1, 0)]
    acc = mini_lra.sweep_accuracies(results, config, [1, 2], [0, 1])
    assert list(acc) == [(L, e) for L in (1, 2) for e in (0, 1, 3, 10)]
    assert np.allclose(acc[(1, 3)], [10.3, 11.3]) and np.allclose(acc[(2, 0)], [20.1, 21.1])
    with pytest.raises(ValueError, match=r"\(depth, seed\)"):
        mini_lra.sweep_accuracies(results, config, [1, 4], [0])
    for bad in ({"spt_steps": 3, "spt_checkpoints": [3]}, {"spt_steps": 3, "spt_checkpoints": [0]},
                {"spt_steps": 0}):
        with pytest.raises(ValueError, match="spt_checkpoints"):
            mini_lra.sweep_points(bad)


def test_records_hold_predicted_labels_and_held_out_losses():
    data, other = mini_lra.task_data("listops", SIZES, 0), mini_lra.task_data("image", SIZES, 0)
    r = mini_lra.lra_seed(101, SIZES, data, other)
    assert set(r["n_predicted"]) == set(r["rows"]) and all(1 <= n <= 10 for n in r["n_predicted"].values())
    assert set(r["masked_loss"]) == {"spt", "other_source"}
    # the other source's loss is judged on the other task's held-out inputs, with the chapter's fixed masks
    other_model, _ = mini_lra.spt_run(SIZES, mini_lra._tensors({"x": other["x_train"]}, "cpu")["x"], 1, 1,
                                      SIZES["spt_steps"])
    held = mini_lra._tensors({"x": other["x_test"]}, "cpu")["x"]
    expected = mini_lra.held_out_loss(other_model, held, SIZES)
    assert r["masked_loss"]["other_source"] == pytest.approx(expected, abs=1e-6)
    assert len(r["spt_loss"]) == SIZES["spt_steps"]


def test_scratch_matched_is_scratch_given_spt_steps_too():
    """The compute-matched arm is the scratch run (same weights and batches) given label_steps + spt_steps."""
    data, other = mini_lra.task_data("image", SIZES, 0), mini_lra.task_data("listops", SIZES, 0)
    matched = mini_lra.lra_seed(2101, SIZES, data, other)["rows"]["scratch_matched"]
    longer = {**SIZES, "label_steps": SIZES["label_steps"] + SIZES["spt_steps"], "arms": ["scratch"]}
    assert mini_lra.lra_seed(2101, longer, data, other)["rows"]["scratch"] == matched


def test_masked_entropy_leaves_padding_out():
    x = np.array([[0, 1, mini_lra.PAD], [2, 3, mini_lra.PAD]])
    assert mini_lra.masked_entropy({"x_test": x}) == pytest.approx(np.log(4))
    wrong = 4 / 6 * np.log(6) + np.log(3) / 3  # padding counted as a token
    assert gates.unigram_entropy(x) == pytest.approx(wrong)
