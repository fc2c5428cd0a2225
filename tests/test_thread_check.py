"""The thread-count comparison (tests/thread_check.py) finds the training chapters and flags changes."""

import json

from thread_check import _records, compare, training_chapters


def test_training_chapters_are_the_ones_that_map_seeds():
    chapters = training_chapters()
    assert "selfpretraining/03_ablations" in chapters and "privileged/02_teacher_forcing" in chapters
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


def test_record_keeps_chapters_not_rerun_and_recounts(tmp_path):
    from thread_check import record

    row = {"id": "g", "changed": True, "passed_1": True, "passed_2": True}
    path = tmp_path / "thread-check.json"
    first = {"threads_per_seed": [1, 2], "cpu": "cpu A", "date": "2026-12-01 10:00 UTC", "commit": "aaa",
             "chapters": {"part/01": {"seconds": 5, "error": None, "claims": [row, {**row, "changed": False}]}}}
    record(first, path)
    second = {**first, "cpu": "cpu B", "date": "2026-12-01 11:00 UTC", "commit": "bbb",
              "chapters": {"part/02": {"seconds": 7, "error": None, "claims": [{**row, "passed_2": False}]}}}
    merged = record(second, path)
    assert json.loads(path.read_text()) == merged
    assert set(merged["chapters"]) == {"part/01", "part/02"}
    assert merged["chapters"]["part/01"]["commit"] == "aaa" and merged["chapters"]["part/02"]["cpu"] == "cpu B"
    assert merged["claims"] == 3 and merged["changed"] == 2 and merged["ok"] is False
    assert merged["cpu"] == "cpu A, cpu B" and merged["date"] == "2026-12-01 11:00 UTC"
