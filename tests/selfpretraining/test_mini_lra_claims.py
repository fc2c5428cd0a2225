"""Unit-level planted errors for chapter 05's training claims (tests/mutants), and the chapter's protocol.

Each claim is fed, with the notebook's criterion (``mini_lra.LEARNS_MIN``), per-seed accuracies of the size
the book-scale run gives (the unplanted results must pass) and those of a model that learned nothing: the
majority label's accuracy plus the test set's binomial noise (what label shuffling or a broken input
pipeline would leave). The planted results must fail.
"""

import numpy as np
import pytest

from blindspots import claims
from blindspots.claims import ClaimFailed
from blindspots.selfpretraining import mini_lra

N_TEST = 297
# Book-scale one-layer SPT + fine-tune accuracies (seeds 0-4) and the majority-label accuracy of each task.
BOOK = {"listops": (np.array([0.253, 0.266, 0.236, 0.259, 0.232]), 0.125),
        "image": (np.array([0.609, 0.431, 0.633, 0.684, 0.687]), 0.091)}
# Two layers, every arm: SPT + fine-tune accuracies of chapters 10 (ListOps) and 11 (digits), seeds 0-4.
BOOK_DEEP = {"listops": (np.array([0.263, 0.269, 0.253, 0.242, 0.226]), 0.125),
             "image": (np.array([0.758, 0.758, 0.704, 0.791, 0.687]), 0.091)}


@pytest.fixture(autouse=True)
def _records(tmp_path, monkeypatch):
    monkeypatch.setenv("BLINDSPOTS_CLAIMS_DIR", str(tmp_path))


def learns_claim(task, acc, majority, name="spt-learns"):
    return claims.claim_effect(f"{task}-{name}", "c", acc, np.full(len(acc), majority),
                               exceeds=mini_lra.LEARNS_MIN[task], paired=True, show=False)


def test_learns_claim_fails_for_a_model_at_the_majority_label():
    rng = np.random.default_rng(0)
    for task, (acc, majority) in BOOK.items():
        learns_claim(task, acc, majority)  # the unplanted results pass
        nothing = rng.binomial(N_TEST, majority, size=len(acc)) / N_TEST
        with pytest.raises(ClaimFailed):
            learns_claim(task, nothing, majority)


@pytest.mark.parametrize("task", sorted(BOOK_DEEP))
def test_deep_learns_claim_fails_for_a_model_at_the_majority_label(task):
    acc, majority = BOOK_DEEP[task]
    learns_claim(task, acc, majority, "spt-learns-deep")  # the unplanted results pass
    nothing = np.random.default_rng(1).binomial(N_TEST, majority, size=len(acc)) / N_TEST
    with pytest.raises(ClaimFailed):
        learns_claim(task, nothing, majority, "spt-learns-deep")


def test_every_claimed_task_is_a_task():
    assert set(mini_lra.LEARNS_MIN) <= set(mini_lra.TASKS)
    assert set(mini_lra.OTHER_SOURCE) == set(mini_lra.TASKS)
    assert all(src != task for task, src in mini_lra.OTHER_SOURCE.items())


def test_lra_seed_pairs_arms_and_copies_only_qk():
    sizes = dict(d_model=8, n_heads=2, max_len=64, batch_size=8, lr=3e-3, mlm_prob=0.5, n_train=24, n_test=10,
                 listops_min_length=10, listops_max_length=30, listops_max_depth=4, listops_max_args=4,
                 spt_epochs=1, label_steps=2, data_seed=0)
    data = mini_lra.task_data("listops", sizes, 0)
    other = mini_lra.task_data("image", sizes, 0)
    r = mini_lra.lra_seed(101, sizes, data, other)
    assert set(r["rows"]) == set(mini_lra.ARMS) and r["seed"] == 1 and r["layers"] == 1
    assert sorted(r["copied_qk"]) == sorted(f"blocks.0.attn.{p}.{w}" for p in ("q_proj", "k_proj") for w in ("weight", "bias"))
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
    sizes = dict(d_model=8, n_heads=2, max_len=64, batch_size=8, lr=3e-3, mlm_prob=0.5, n_train=24, n_test=10,
                 listops_min_length=10, listops_max_length=30, listops_max_depth=4, listops_max_args=4,
                 spt_epochs=2, label_steps=2, data_seed=0, spt_checkpoints=[1])
    data = mini_lra.task_data("listops", sizes, 0)
    other = mini_lra.task_data("image", sizes, 0)
    whole = [mini_lra.lra_seed(t, sizes, data, other) for t in mini_lra.lra_job_ids([1, 2], [0, 1], split=False)]
    jobs = mini_lra.lra_job_ids([1, 2], [0, 1])
    assert len(jobs) == 2 * len(whole) and {j // 1000 for j in jobs} == {1, 2}
    merged = mini_lra.merge_lra_jobs([mini_lra.lra_seed(t, sizes, data, other) for t in jobs])
    assert [(m["layers"], m["seed"]) for m in merged] == [(w["layers"], w["seed"]) for w in whole]
    for m, w in zip(merged, whole):
        assert list(m["rows"]) == list(w["rows"]) and m["rows"] == w["rows"]  # same arms, same order, same numbers
        assert m["diag"] == w["diag"] and m["spt_loss"] == w["spt_loss"] and m["copied_qk"] == w["copied_qk"]
        assert all(np.array_equal(m["positional_maps"][k], w["positional_maps"][k]) for k in w["positional_maps"])
    assert "spt_1ep" in merged[0]["rows"]


def test_lra_job_ids_reject_bad_input():
    with pytest.raises(ValueError, match="depths"):
        mini_lra.lra_job_ids([0], [0])
    with pytest.raises(ValueError, match="seeds"):
        mini_lra.lra_job_ids([1], [100])
    with pytest.raises(ValueError, match="task"):
        mini_lra.lra_seed(3101, {"data_seed": 0}, {}, {})


def test_checkpoint_gap_is_zero_and_sees_an_aliased_checkpoint(monkeypatch):
    sizes = dict(d_model=8, n_heads=2, max_len=64, batch_size=8, lr=3e-3, mlm_prob=0.5, n_train=24, n_test=10,
                 spt_epochs=3, data_seed=0)
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
    with pytest.raises(ValueError, match="epochs"):
        mini_lra.checkpoint_gap(sizes, data, 1, 1, 3)


def test_verdict_reads_the_interval():
    up, down, across = (claims.seed_effect(a, b, paired=True) for a, b in
                        (([3, 4, 5], [1, 1, 1]), ([1, 1, 1], [3, 4, 5]), ([1, 3, 2], [2, 2, 2])))
    assert [mini_lra.verdict(e) for e in (up, down, across)] == ["reproduces", "opposite", "not resolved at this scale"]
    assert [mini_lra.verdict(e, mini_lra.SCRATCH_VERDICTS) for e in (up, down, across)] == list(mini_lra.SCRATCH_VERDICTS)
    with pytest.raises(ValueError, match="labels must name 3 cases"):
        mini_lra.verdict(up, ("better", "worse"))


def test_sweep_rows_and_accuracies_follow_the_seeds():
    config = {"spt_epochs": 10, "spt_checkpoints": [3, 1]}
    assert mini_lra.sweep_points(config) == {0: "scratch", 1: "spt_1ep", 3: "spt_3ep", 10: "spt"}
    rows = lambda s: {"scratch": 0.1 + s, "spt_1ep": 0.2 + s, "spt_3ep": 0.3 + s, "spt": 0.4 + s}  # noqa: E731
    results = [{"layers": L, "seed": s, "rows": rows(s + 10 * L)} for L in (2, 1) for s in (1, 0)]
    acc = mini_lra.sweep_accuracies(results, config, [1, 2], [0, 1])
    assert list(acc) == [(L, e) for L in (1, 2) for e in (0, 1, 3, 10)]
    assert np.allclose(acc[(1, 3)], [10.3, 11.3]) and np.allclose(acc[(2, 0)], [20.1, 21.1])
    with pytest.raises(ValueError, match=r"\(depth, seed\)"):
        mini_lra.sweep_accuracies(results, config, [1, 4], [0])
    for bad in ({"spt_epochs": 3, "spt_checkpoints": [3]}, {"spt_epochs": 3, "spt_checkpoints": [0]},
                {"spt_epochs": 0}):
        with pytest.raises(ValueError, match="spt_checkpoints"):
            mini_lra.sweep_points(bad)
