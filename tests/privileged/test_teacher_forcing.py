"""PIQL's annealed teacher-forcing schedule and the small detector."""

import math

import numpy as np
import pytest
import torch

from blindspots.privileged import teacher_forcing as tf
from blindspots.privileged.theory import GaussianAnomalyPrior


@pytest.mark.parametrize("progress, alpha", [
    (0.0, 1.0), (0.05, 1.0), (0.10, 1.0), (0.25, 0.5), (0.40, 0.0), (0.7, 0.0), (1.0, 0.0),
])
def test_schedule_at_its_breakpoints(progress, alpha):
    assert tf.teacher_forcing_weight(progress) == pytest.approx(alpha, abs=1e-15)


def test_schedule_is_a_cosine_between_breakpoints_and_non_increasing():
    u = 0.3
    p = 0.1 + u * 0.3
    assert tf.teacher_forcing_weight(p) == pytest.approx(0.5 * (1 + math.cos(math.pi * u)), abs=1e-15)
    vals = [tf.teacher_forcing_weight(p) for p in np.linspace(0, 1, 1001)]
    assert all(a >= b for a, b in zip(vals, vals[1:]))


@pytest.mark.parametrize("progress", [-0.01, 1.01, float("nan")])
def test_schedule_rejects_progress_outside_unit_interval(progress):
    with pytest.raises(ValueError, match=r"progress must lie in \[0, 1\]"):
        tf.teacher_forcing_weight(progress)


def test_schedule_rejects_bad_breakpoints():
    with pytest.raises(ValueError, match="warmup_end and decay_end"):
        tf.teacher_forcing_weight(0.5, warmup_end=0.5, decay_end=0.4)


def test_mix_embeddings_endpoints_and_range():
    s, t = torch.zeros(3), torch.ones(3)
    assert torch.equal(tf.mix_embeddings(s, t, 1.0), t)
    assert torch.equal(tf.mix_embeddings(s, t, 0.0), s)
    with pytest.raises(ValueError, match="alpha"):
        tf.mix_embeddings(s, t, 1.5)


def test_training_is_reproducible_from_seeds():
    prior = GaussianAnomalyPrior()
    outs = []
    for _ in range(2):
        g = torch.Generator()
        g.manual_seed(5)
        m = tf.train(prior, 4, steps=5, batch=8, hidden=8, lr=1e-2, teacher_forcing=True, embed_weight=1.0,
                     rng=np.random.default_rng(5), generator=g, device="cpu")
        batch = tf.sample_batch(prior, 16, 4, np.random.default_rng(6))
        outs.append(tf.label_logprobs(m, batch, "cpu"))
    np.testing.assert_array_equal(outs[0], outs[1])
    assert np.allclose(np.exp(outs[0]).sum(axis=1), 1.0)


def test_train_rejects_bad_sizes():
    with pytest.raises(ValueError, match="steps"):
        tf.train(GaussianAnomalyPrior(), 4, steps=0, batch=8, hidden=8, lr=1e-2, teacher_forcing=False,
                 embed_weight=0.0, rng=np.random.default_rng(0), generator=torch.Generator(), device="cpu")


def test_training_restores_the_thread_setting():
    before = torch.get_num_threads()
    g = torch.Generator()
    g.manual_seed(0)
    tf.train(GaussianAnomalyPrior(), 3, steps=2, batch=4, hidden=4, lr=1e-2, teacher_forcing=False,
             embed_weight=0.0, rng=np.random.default_rng(0), generator=g, device="cpu")
    assert torch.get_num_threads() == before


def test_program_input_uses_the_teacher_embedding():
    prior = GaussianAnomalyPrior()
    g = torch.Generator()
    g.manual_seed(1)
    m = tf.train(prior, 4, steps=3, batch=8, hidden=8, lr=1e-2, teacher_forcing=True, embed_weight=1.0,
                 rng=np.random.default_rng(1), generator=g, device="cpu")
    batch = tf.sample_batch(prior, 5, 4, np.random.default_rng(2))
    with torch.no_grad():
        t = tf.to_torch(batch, "cpu")
        z = m.logit(t["x"], t["g"]).double().numpy()
    lp = tf.label_logprobs(m, batch, "cpu", alpha=1.0)
    np.testing.assert_allclose(lp[:, 1] - lp[:, 0], z, rtol=1e-6, atol=1e-6)


def test_embed_loss_flag_switches_the_embedding_loss_only():
    """alpha = 0 throughout: default (no embedding loss) equals embed_loss=False, and embed_loss=True differs."""
    prior = GaussianAnomalyPrior()
    batch = tf.sample_batch(prior, 16, 4, np.random.default_rng(6))
    outs = {}
    for key in (None, False, True):
        g = torch.Generator()
        g.manual_seed(2)
        m = tf.train(prior, 4, steps=5, batch=8, hidden=8, lr=1e-2, teacher_forcing=False, embed_weight=1.0,
                     rng=np.random.default_rng(2), generator=g, device="cpu", embed_loss=key)
        outs[key] = tf.label_logprobs(m, batch, "cpu")
    np.testing.assert_array_equal(outs[None], outs[False])
    assert not np.allclose(outs[None], outs[True])


# ----------------------------------------------------------------------------- seeds, arms and effect claims
import json  # noqa: E402
from pathlib import Path  # noqa: E402

from blindspots import claims  # noqa: E402

TINY = dict(prior={"d": 2, "anomaly_rate": 0.1, "inflation": 5.0, "m0": 0.0, "k0": 1.0, "a0": 3.0, "b0": 2.0},
            n=10, steps=12, batch=32, hidden=8, lr=3e-3, embed_weight=1.0, test_tasks=500,
            curve_points=2, curve_tasks=100)
#: Per-seed results of chapter 02 at book scale (train_arms over the preset's seeds), written by
#: the book run; the unit-level mutants plant swapped models into them.
BOOK_SEEDS = Path(__file__).parent / "data" / "tf_book_seeds.json"


def test_train_arms_is_deterministic_and_arms_share_data_and_init():
    a = tf.train_arms(3, **TINY)
    b = tf.train_arms(3, **TINY)
    assert a["excess"] == b["excess"] and a["curves"] == b["curves"]
    # two arms with the same configuration are the same model: data and initial weights are shared
    same = tf.train_arms(3, **TINY, arms={"student": (False, False), "scratch": (False, False)})
    assert same["excess"]["student"] == same["excess"]["scratch"] == a["excess"]["scratch"]
    assert set(a["excess"]) == {"student", "scratch", "embed loss only", "schedule only", "with program",
                                "with program - R_G"}
    assert len(a["curves"]["student"]) == len(a["checkpoints"]) == 2


def test_map_seeds_gives_the_same_results_in_process_and_in_workers():
    from blindspots import runtime

    one = runtime.map_seeds(tf.train_arms, [0, 1], n_jobs=1, **TINY)
    two = runtime.map_seeds(tf.train_arms, [0, 1], n_jobs=2, **TINY)
    assert [r["excess"] for r in one] == [r["excess"] for r in two]


def test_the_arms_are_a_two_by_two_design_of_schedule_and_embedding_loss():
    assert sorted(tf.ARMS.values()) == [(False, False), (False, True), (True, False), (True, True)]
    assert tf.ARMS["schedule only"] == (True, False) and tf.ARMS["embed loss only"] == (False, True)


def test_schedule_only_arm_differs_from_scratch_and_from_the_student():
    a = tf.train_arms(3, **TINY)
    assert a["excess"]["schedule only"] != a["excess"]["scratch"]
    assert a["excess"]["schedule only"] != a["excess"]["student"]
    assert "with program" in a["curves"] and len(a["curves"]["schedule only"]) == len(a["checkpoints"])


def test_effect_samples_pairs_arms_by_seed():
    res = [{"excess": {"student": 1.0 + s, "scratch": 3.0 + 2 * s, "embed loss only": 2.0,
                       "with program": -0.5, "schedule only": 2.5}}
           for s in range(3)]
    t, c = tf.effect_samples(res, "pi-tf-schedule-only-effect")
    np.testing.assert_array_equal(t - c, [0.5, 2.5, 4.5])
    t, c = tf.effect_samples(res, "pi-tf-student-below-scratch")
    np.testing.assert_array_equal(t - c, [2.0, 3.0, 4.0])
    t, c = tf.effect_samples(res, "pi-tf-schedule-below-aux")
    np.testing.assert_array_equal(t, [1.0, 3.0, 5.0])
    np.testing.assert_array_equal(c, [1.0, 0.0, -1.0])
    t, c = tf.effect_samples(res, "pi-tf-program-below-rd")
    np.testing.assert_array_equal(t - c, [0.5, 0.5, 0.5])
    with pytest.raises(ValueError, match="cid"):
        tf.effect_samples(res, "pi-tf-nothing")


def _book_results():
    if not BOOK_SEEDS.is_file():
        pytest.skip(f"{BOOK_SEEDS} not written yet (book run of chapter 02)")
    return json.loads(BOOK_SEEDS.read_text())


def _claim(cid, results):
    return claims.claim_effect(cid, tf.TRAINING_EFFECTS[cid], *tf.effect_samples(results, cid), paired=True,
                               theorem="thm-pi-no-leakage", show=False)


@pytest.fixture()
def records(tmp_path, monkeypatch):
    monkeypatch.setenv("BLINDSPOTS_CLAIMS_DIR", str(tmp_path))


def test_book_seed_results_pass_every_training_effect_claim(records):
    res = _book_results()
    for cid in tf.TRAINING_EFFECTS:
        _claim(cid, res)


def test_book_seed_results_pass_every_speed_claim():
    res = _book_results()
    table = tf.speed_table(res)
    for cid in tf.SPEED_EFFECTS:
        assert tf.speed_claim_value(table, cid) > 1.0, cid


def _planted(results, slot, source):
    """``slot``'s per-seed results replaced by what a swapped model gives: ``source``'s, same seed."""
    out = json.loads(json.dumps(results))
    for r in out:
        r["excess"][slot] = r["excess"][source]
    return out


def test_mutant_student_is_scratch_fails_student_below_scratch(records):
    # a student trained without forcing or embedding loss IS the scratch model (same data and init)
    with pytest.raises(claims.ClaimFailed, match="pi-tf-student-below-scratch"):
        _claim("pi-tf-student-below-scratch", _planted(_book_results(), "student", "scratch"))


def test_mutant_ablation_is_scratch_fails_aux_loss_effect(records):
    with pytest.raises(claims.ClaimFailed, match="pi-tf-aux-loss-effect"):
        _claim("pi-tf-aux-loss-effect", _planted(_book_results(), "embed loss only", "scratch"))


def test_mutant_ablation_is_scratch_fails_schedule_below_aux(records):
    # with the ablation swapped for scratch, all of the gain is credited to the schedule
    with pytest.raises(claims.ClaimFailed, match="pi-tf-schedule-below-aux"):
        _claim("pi-tf-schedule-below-aux", _planted(_book_results(), "embed loss only", "scratch"))


def test_mutant_program_not_fed_fails_program_below_rd(records):
    # the head fed the student's embedding instead of the program is the deployed student
    with pytest.raises(claims.ClaimFailed, match="pi-tf-program-below-rd"):
        _claim("pi-tf-program-below-rd", _planted(_book_results(), "with program", "student"))


def test_the_program_premise_is_a_sanity_record():
    assert tf.effect_kind("pi-tf-program-below-rd") == "sanity"
    assert tf.effect_kind("pi-tf-student-below-scratch") == "verification"
    with pytest.raises(ValueError, match="cid must be one of"):
        tf.effect_kind("pi-unknown")


# ----------------------------------------------------------------------------- speed: steps to a level
def _curves(scratch, **arms):
    steps = [100 * (i + 1) for i in range(len(scratch))]
    curves = {"scratch": list(scratch), **{k: list(v) for k, v in arms.items()}}
    return {"checkpoints": steps, "curves": curves}


def test_speed_targets_are_scratchs_own_loss_at_fractions_of_its_training():
    r = _curves([0.8, 0.6, 0.5, 0.4])  # checkpoints 100..400
    assert tf.speed_targets(r, (0.5, 0.75, 1.0)) == [0.6, 0.5, 0.4]
    with pytest.raises(ValueError, match="levels must lie in"):
        tf.speed_targets(r, (0.0,))


def test_speed_samples_time_both_arms_and_keep_a_censored_arm_as_a_bound():
    fast = _curves([0.8, 0.6, 0.5, 0.4], arm=[0.5, 0.4, 0.3, 0.3])
    s = tf.speed_samples([fast], "arm", 1.0)
    assert (s["t_base"][0], s["t_arm"][0], s["low"][0], s["high"][0]) == (400, 200, 2.0, 2.0)
    # an arm that never reaches scratch's final level: censored at the budget, speedup < 400 / 400
    slow = _curves([0.8, 0.6, 0.5, 0.4], arm=[0.9, 0.7, 0.6, 0.45])
    s = tf.speed_samples([slow], "arm", 1.0)
    assert bool(s["arm_censored"][0]) and not bool(s["base_censored"][0])
    assert (s["low"][0], s["high"][0]) == (0.0, 1.0)


def test_speed_table_gives_a_median_interval_per_arm_and_level():
    results = [_curves([0.8, 0.6, 0.5, 0.4], arm=[0.5, 0.4 - 0.01 * k, 0.3, 0.3]) for k in range(6)]
    table = tf.speed_table(results, arms=("arm",), levels=(0.5, 1.0))
    _, m = table[("arm", 1.0)]
    assert (m.low, m.high, m.median_low, m.censored) == (2.0, 2.0, 2.0, 0)
    _, m = table[("arm", 0.5)]  # target 0.6: the arm reaches it at step 100, scratch at 200
    assert m.low == 2.0


def test_speed_claim_fails_when_one_seed_is_censored():
    results = [_curves([0.8, 0.6, 0.5, 0.4], **{"embed loss only": [0.5, 0.4, 0.3, 0.3]}) for _ in range(6)]
    table = tf.speed_table(results, arms=("embed loss only",), levels=tf.SPEED_LEVELS)
    assert tf.speed_claim_value(table, "pi-tf-speed-embed-loss") == 2.0
    results[0]["curves"]["embed loss only"] = [0.9, 0.8, 0.7, 0.6]  # never reaches 0.4
    table = tf.speed_table(results, arms=("embed loss only",), levels=tf.SPEED_LEVELS)
    assert tf.speed_claim_value(table, "pi-tf-speed-embed-loss") == 0.0  # a bound, not an imputed ratio
    with pytest.raises(ValueError, match="cid must be one of"):
        tf.speed_claim_value(table, "pi-tf-speed-nothing")
