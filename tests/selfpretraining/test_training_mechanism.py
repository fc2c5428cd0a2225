"""Chapter 02's protocol: scratch, SPT + fine-tune, and the compute-matched scratch run."""

import numpy as np
import pytest

from blindspots import claims
from blindspots.claims import ClaimFailed
from blindspots.selfpretraining import presets, protocols

CHAPTER = "selfpretraining/02_training_mechanism"
TINY = {**presets.PRESETS[CHAPTER]["smoke"], "length": 20, "max_len": 32, "n_train": 64, "n_test": 40,
        "spt_steps": 6, "label_steps": 4, "eval_every": 2, "n_maps": 8, "zoom": 10, "max_offset": 3,
        "data_seed": 0, "device": "cpu"}


@pytest.fixture(autouse=True)
def _records(tmp_path, monkeypatch):
    monkeypatch.setenv("BLINDSPOTS_CLAIMS_DIR", str(tmp_path))


@pytest.fixture(scope="module")
def one_seed():
    return protocols.scratch_vs_spt(1, TINY)


def test_matched_run_takes_spt_plus_label_steps(one_seed):
    total = TINY["spt_steps"] + TINY["label_steps"]
    assert one_seed["steps_matched"] == list(range(0, total + 1, TINY["eval_every"]))
    assert one_seed["acc_matched"] == one_seed["matched"][-1]
    assert one_seed["steps"] == list(range(0, TINY["label_steps"] + 1, TINY["eval_every"]))


def test_matched_run_is_the_scratch_run_continued(one_seed):
    """Same initial weights, same mini-batches, constant learning rate: the first label_steps are scratch's."""
    head = one_seed["matched"][: len(one_seed["scratch"])]
    assert head == one_seed["scratch"]
    assert one_seed["matched"][one_seed["steps_matched"].index(TINY["label_steps"])] == one_seed["acc_scratch"]


def test_matched_model_is_measured_like_the_others(one_seed):
    stages = ("scratch, init", "scratch, trained", "after SPT", "SPT + fine-tune", "scratch, matched")
    assert tuple(one_seed["proximity"]) == stages
    assert set(one_seed["maps"]) == set(stages) and set(one_seed["offset_profile"]) == set(stages)
    assert one_seed["maps"]["scratch, matched"].shape == (TINY["zoom"], TINY["zoom"])


def test_eval_every_must_divide_label_steps():
    with pytest.raises(ValueError, match="eval_every"):
        protocols.scratch_vs_spt(0, {**TINY, "eval_every": 3})


def test_every_scale_reads_the_matched_curve_at_label_steps():
    scales = presets.PRESETS[CHAPTER]
    assert len({frozenset(s) for s in scales.values()}) == 1, "every scale sets the same keys"
    for name, s in scales.items():
        assert s["label_steps"] % s["eval_every"] == 0, name


def test_matched_criterion_is_the_sign_and_a_second_scratch_run_fails_it():
    """Statistic only: the compute-matched claim's criterion, fed a scratch-like arm in place of SPT."""
    assert protocols.MATCHED_GAIN_MIN == 0.0
    matched = np.array([0.50, 0.62, 0.48, 0.55, 0.51, 0.58])
    spt = np.array([0.85, 0.90, 0.76, 0.80, 0.91, 0.80])
    kw = dict(exceeds=protocols.MATCHED_GAIN_MIN, paired=True, show=False)
    claims.claim_effect("spt-beats-compute-matched-scratch", "c", spt, matched, **kw)
    with pytest.raises(ClaimFailed):
        claims.claim_effect("spt-beats-compute-matched-scratch", "c", matched[::-1].copy(), matched, **kw)
