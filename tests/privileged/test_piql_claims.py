"""Unit-level planted errors for the training claims of chapters 03-04 (tests/mutants).

Each claim of ``piql.TRAINING_CLAIMS`` / ``piql.PROBE_CLAIMS`` is fed the per-seed results of the book run
(``tests/privileged/data/piql0{3,4}_book_seeds.json``, written by ``scripts/trim_piql_seeds.py``): they must
pass. Then one arm is replaced by what the planted error gives, and the claim must fail:

* the baseline learned nothing (labels not tied to the points): per-task AUROC at chance, with the spread of a
  mean over the 128 test tasks;
* meta-features shuffled across tasks in training: the model learns to ignore its meta prefix, so another task's
  meta-PI leaves its loss where it was, and its final loss is the baseline's;
* a student that predicts nothing (fed another task's context): R^2 at or below 0;
* probe labels shuffled: accuracy at chance, with the binomial spread of 200 test tasks;
* meta prefix shuffled across tasks: its probes, the input's included, read what the baseline's do.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from blindspots import claims
from blindspots.claims import ClaimFailed
from blindspots.privileged import piql

DATA = Path(__file__).parent / "data"


def load(name):
    return json.loads((DATA / name).read_text())


@pytest.fixture(autouse=True)
def _records(tmp_path, monkeypatch):
    monkeypatch.setenv("BLINDSPOTS_CLAIMS_DIR", str(tmp_path))


@pytest.fixture(scope="module")
def book03():
    return load("piql03_book_seeds.json")


@pytest.fixture(scope="module")
def book04():
    return load("piql04_book_seeds.json")


def make(results, cid):
    treated, control, exceeds = piql.claim_samples(results, cid)
    return claims.claim_effect(cid, "c", treated, control, exceeds=exceeds, paired=True, show=False)


def edit(results, variant, fn):
    """A deep copy of ``results`` with ``fn(seed_index, variant_result)`` applied to one variant."""
    out = json.loads(json.dumps(results))
    for i, r in enumerate(out):
        fn(i, r["variants"][variant])
    return out


def test_book_results_pass_every_claim(book03, book04):
    for cid in piql.TRAINING_CLAIMS:
        make(book03, cid)
    for cid in piql.PROBE_CLAIMS:
        make(book04, cid)


def test_learns_claim_fails_for_a_baseline_at_chance(book03):
    rng = np.random.default_rng(0)

    def chance(i, res):
        res["test"]["gmm"]["auroc"] = 0.5 + rng.normal(0, 0.3 / np.sqrt(128))
    with pytest.raises(ClaimFailed):
        make(edit(book03, "baseline", chance), "pi-piql-baseline-learns")


def test_meta_used_claim_fails_when_meta_was_shuffled_in_training(book03):
    rng = np.random.default_rng(1)

    def ignored(i, res):
        res["meta_shuffled_bce"] = res["curve"]["bce"][-1] + rng.normal(0, 1e-4)
    with pytest.raises(ClaimFailed):
        make(edit(book03, "meta", ignored), "pi-piql-meta-used")


def test_meta_lowers_loss_claim_fails_when_meta_carries_nothing(book03):
    rng = np.random.default_rng(2)
    base = [r["variants"]["baseline"]["curve"]["bce"][-1] for r in book03]

    def as_baseline(i, res):
        res["curve"]["bce"][-1] = base[i] + rng.normal(0, 1e-3)
    with pytest.raises(ClaimFailed):
        make(edit(book03, "meta", as_baseline), "pi-piql-meta-lowers-loss")


def test_student_claim_fails_for_a_student_that_predicts_nothing(book03):
    rng = np.random.default_rng(3)

    def blind(i, res):
        res["student_r2"] = -abs(rng.normal(0, 0.01))
    with pytest.raises(ClaimFailed):
        make(edit(book03, "program", blind), "pi-piql-student-learns")


def test_family_probe_claim_fails_with_shuffled_probe_labels(book04):
    rng = np.random.default_rng(4)

    def shuffled(i, res):
        res["probes"]["family"][-1] = rng.binomial(200, 1 / 3) / 200
    with pytest.raises(ClaimFailed):
        make(edit(book04, "baseline", shuffled), "pi-probe-family-decodable")


def test_meta_gain_claim_fails_when_meta_was_shuffled_across_tasks(book04):
    rng = np.random.default_rng(5)
    base = [r["variants"]["baseline"]["probes"]["family"][:2] for r in book04]

    def as_baseline(i, res):  # another task's meta prefix: input and layer 1 read what the baseline's do
        for layer in (0, 1):
            res["probes"]["family"][layer] = base[i][layer] + rng.normal(0, 0.005)
    with pytest.raises(ClaimFailed):
        make(edit(book04, "meta", as_baseline), "pi-probe-meta-gain-below-baseline")


def test_claim_samples_rejects_unknown_claims(book03):
    with pytest.raises(ValueError, match="cid"):
        piql.claim_samples(book03, "pi-piql-oracle")


@pytest.mark.parametrize("cid, arm, ends_at", [
    # meta-features shuffled across tasks in training: meta-PI ends at the baseline's loss
    ("pi-depth-meta-lowers-loss-at-one-layer", "meta", "baseline"),
    # the widened baseline fed the task's own meta-features: it ends at meta-PI's loss
    ("pi-depth-meta-beats-zeros-at-one-layer", "meta (zeros)", "meta"),
], ids=["meta-misaligned", "zeros-arm-is-meta"])
def test_one_layer_claims_fail_when_an_arm_ends_at_the_other(cid, arm, ends_at):
    book05 = load("piql05_book_seeds.json")
    make(book05, cid)  # the unplanted results pass
    rng = np.random.default_rng(6)
    planted = json.loads(json.dumps(book05))
    for r in planted:
        d = r["depths"]["1"]
        d[arm]["curve"]["bce"][-1] = d[ends_at]["curve"]["bce"][-1] + rng.normal(0, 1e-3)
    with pytest.raises(ClaimFailed):
        make(planted, cid)


def test_premises_are_sanity_records_and_the_comparisons_verifications():
    assert piql.claim_kind("pi-piql-baseline-learns") == "sanity"
    assert piql.claim_kind("pi-probe-family-decodable") == "sanity"
    assert piql.claim_kind("pi-piql-meta-lowers-loss") == "verification"
    assert piql.claim_kind("pi-depth-meta-lowers-loss-at-one-layer") == "verification"
    assert piql.claim_kind("pi-depth-meta-beats-zeros-at-one-layer") == "verification"
    with pytest.raises(ValueError, match="cid must be one of"):
        piql.claim_kind("pi-unknown")


def test_control_claim_fails_when_the_shuffled_arm_gets_its_own_meta_features():
    book05 = load("piql05_book_seeds.json")
    cid = "pi-depth-meta-beats-shuffled-at-one-layer"
    make(book05, cid)  # the unplanted results pass
    planted = json.loads(json.dumps(book05))
    for r in planted:  # fed its own meta-features, the control is meta-PI: same stream, weights, losses
        d = r["depths"]["1"]
        d["meta (shuffled)"]["curve"]["bce"][-1] = d["meta"]["curve"]["bce"][-1]
    with pytest.raises(ClaimFailed):
        make(planted, cid)
