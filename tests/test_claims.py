import json

import pytest

from blindspots import claims, runtime


@pytest.fixture
def records(tmp_path, monkeypatch, fake_chapter):
    monkeypatch.setenv("BLINDSPOTS_CLAIMS_DIR", str(tmp_path))
    chapter = fake_chapter
    runtime.setup("smoke", "cpu", 0, chapter=chapter)
    return tmp_path / chapter.replace("/", "__"), chapter


def test_passing_claim_records_every_field(records, capsys):
    folder, chapter = records
    c = claims.claim("answer", "the answer is 42", 42.0000001, 42, 1e-6, theorem="thm-x")
    rec = json.loads((folder / "answer.json").read_text())
    assert rec["passed"] is True and c.passed
    for key in ("id", "statement", "measured", "expected", "tolerance", "passed", "scale", "device", "notebook"):
        assert key in rec
    assert rec["notebook"] == chapter and rec["scale"] == "smoke" and rec["device"] == "cpu"
    assert capsys.readouterr().out.strip() == "[PASS] answer: measured 42, expected 42 ± 1e-06"


def test_failing_claim_raises_readably_and_is_recorded(records):
    folder, _ = records
    with pytest.raises(claims.ClaimFailed, match="claim 'wrong' failed: one equals two"):
        claims.claim("wrong", "one equals two", 1.0, 2.0, 0.5)
    assert json.loads((folder / "wrong.json").read_text())["passed"] is False


def test_relative_tolerance(records):
    claims.claim("rel", "relative", 1.0 + 1e-9, 1.0, 1e-8, rel=True)
    with pytest.raises(claims.ClaimFailed):
        claims.claim("rel2", "relative", 1e-300 * (1 + 1e-6), 1e-300, 1e-8, rel=True)


def test_zero_tolerance_is_refused(records):
    with pytest.raises(ValueError, match="tol must be > 0"):
        claims.claim("z", "exact", 1.0, 1.0, 0.0)


@pytest.mark.parametrize("relation,measured,bound,ok", [
    ("<=", 1.0, 1.0, True), ("<", 1.0, 1.0, False), (">=", 0.5, 1.0, False), (">", 2.0, 1.0, True)])
def test_bounds(records, relation, measured, bound, ok):
    if ok:
        assert claims.claim_bound("b", "bound", measured, relation, bound).passed
    else:
        with pytest.raises(claims.ClaimFailed):
            claims.claim_bound("b", "bound", measured, relation, bound)


def test_slack_loosens_a_bound(records):
    claims.claim_bound("s", "within slack", 1.05, "<=", 1.0, slack=0.1)
    with pytest.raises(ValueError, match="slack must be >= 0"):
        claims.claim_bound("s", "negative slack", 1.0, "<=", 1.0, slack=-1)


def test_bad_inputs_name_the_parameter(records):
    with pytest.raises(ValueError, match="relation must be one of"):
        claims.claim_bound("r", "x", 1, "!=", 2)
    with pytest.raises(ValueError, match="measured must not be NaN"):
        claims.claim("n", "x", float("nan"), 1, 1)
    with pytest.raises(ValueError, match="id must be"):
        claims.claim("Bad Id", "x", 1, 1, 1)


def test_printed_line_is_rounded_and_folds_negative_zero(records, capsys):
    claims.claim("r", "rounding", 0.123456789, 0.1234568, 1e-6, digits=3)
    claims.claim("z", "zero", -0.0, 0.0, 1e-12)
    out = capsys.readouterr().out.splitlines()
    assert out == ["[PASS] r: measured 0.123, expected 0.123 ± 1e-06",
                   "[PASS] z: measured 0, expected 0 ± 1e-12"]


def test_load_records_skips_run_records(records):
    folder, _ = records
    claims.claim("a", "a", 1, 1, 1)
    (folder / "_run.json").write_text("{}")
    assert [r["id"] for r in claims.load_records(folder.parent)] == ["a"]


def test_load_records_of_one_chapter(records):
    folder, chapter = records
    claims.claim("mine", "mine", 1, 1, 1)
    other = folder.parent / "other__chapter"
    other.mkdir()
    (other / "theirs.json").write_text(json.dumps({"id": "theirs"}))
    assert [r["id"] for r in claims.load_records(folder.parent, chapter=chapter)] == ["mine"]
    assert {r["id"] for r in claims.load_records(folder.parent)} == {"mine", "theirs"}
