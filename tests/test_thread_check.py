"""The thread-count comparison (tests/thread_check.py) finds the training chapters and flags changes."""

import json

from thread_check import _records, compare, training_chapters


def test_training_chapters_are_the_ones_that_map_seeds():
    chapters = training_chapters()
    assert "selfpretraining/04_depth" in chapters and "privileged/02_teacher_forcing" in chapters
    assert "masked/06_training" in chapters and "masked/02_mode_blindness" not in chapters


def _rec(measured, passed=True):
    return {"kind": "verification", "measured": measured, "passed": passed, "statement": "s"}


def test_compare_flags_changed_failed_and_missing_claims():
    rows = {r["id"]: r for r in compare({"a": _rec(1.0), "b": _rec(2.0), "c": _rec(3.0)},
                                        {"a": _rec(1.0), "b": _rec(2.5, passed=False)})}
    assert not rows["a"]["changed"] and rows["a"]["passed_2"] and rows["a"]["pass_line_same"]
    assert rows["b"]["changed"] and not rows["b"]["passed_2"] and not rows["b"]["pass_line_same"]
    assert rows["c"]["changed"] and rows["c"]["measured_2"] is None and not rows["c"]["passed_2"]


def test_records_skip_run_and_per_seed_files(tmp_path):
    (tmp_path / "gain.json").write_text(json.dumps(_rec(1.0)))
    (tmp_path / "_run.json").write_text(json.dumps({"chapter": "x", "elapsed_s": 1.0}))
    (tmp_path / "_seeds.json").write_text(json.dumps([{"seed": 0}]))
    assert list(_records(tmp_path)) == ["gain"]
