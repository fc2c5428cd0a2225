import json

import numpy as np
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
    c = claims.claim("answer", "the answer is 42", 42.0000001, 42, 1e-6, theorem="thm-x", kind="verification")
    rec = json.loads((folder / "answer.json").read_text())
    assert rec["passed"] is True and c.passed
    for key in ("id", "statement", "measured", "expected", "tolerance", "passed", "scale", "device", "notebook"):
        assert key in rec
    assert rec["notebook"] == chapter and rec["scale"] == "smoke" and rec["device"] == "cpu"
    assert capsys.readouterr().out.strip() == "[PASS] answer: measured 42, expected 42 ± 1e-06"


def test_failing_claim_raises_readably_and_is_recorded(records):
    folder, _ = records
    with pytest.raises(claims.ClaimFailed, match="claim 'wrong' failed: one equals two"):
        claims.claim("wrong", "one equals two", 1.0, 2.0, 0.5, kind="verification")
    assert json.loads((folder / "wrong.json").read_text())["passed"] is False


def test_all_hold_makes_every_claim_then_raises_once_naming_each_failure(records, capsys):
    # a loop of claims must not hide the claims after its first failure
    folder, _ = records
    with pytest.raises(claims.ClaimFailed) as err:
        with claims.all_hold():
            claims.claim("first-wrong", "one equals two", 1.0, 2.0, 0.5, kind="verification")
            claims.claim("holds", "two equals two", 2.0, 2.0, 0.5, kind="verification")
            claims.claim_bound("second-wrong", "three is below one", 3.0, "<", 1.0, kind="verification")
    assert err.value.ids == ["first-wrong", "second-wrong"]
    assert claims.failed_ids(str(err.value)) == ["first-wrong", "second-wrong"]
    assert [json.loads((folder / f"{c}.json").read_text())["passed"] for c in ("first-wrong", "holds", "second-wrong")] \
        == [False, True, False]
    out = capsys.readouterr().out
    assert "first-wrong" in out and "[PASS] holds" in out and "second-wrong" in out
    claims.claim("after", "outside the block a failure raises at once", 1.0, 1.0, 0.5, kind="verification")
    with pytest.raises(claims.ClaimFailed, match="claim 'late' failed"):
        claims.claim("late", "one equals two", 1.0, 2.0, 0.5, kind="verification")


def test_all_hold_passes_silently_nests_once_and_lets_other_errors_through(records):
    with claims.all_hold():
        claims.claim("ok", "fine", 1.0, 1.0, 0.5, kind="verification")
    with pytest.raises(claims.ClaimFailed) as err:
        with claims.all_hold():
            with claims.all_hold():  # nested: the outer block raises, once, for both
                claims.claim("inner", "one equals two", 1.0, 2.0, 0.5, kind="verification")
            claims.claim("outer", "one equals two", 1.0, 2.0, 0.5, kind="verification")
    assert err.value.ids == ["inner", "outer"]
    with pytest.raises(ZeroDivisionError):
        with claims.all_hold():
            claims.claim("before", "one equals two", 1.0, 2.0, 0.5, kind="verification")
            1 / 0
    with pytest.raises(claims.ClaimFailed):  # the block closed: no failure is left waiting
        claims.claim("fresh", "one equals two", 1.0, 2.0, 0.5, kind="verification")


def test_failed_ids_reads_the_ids_back_from_message_text():
    assert claims.failed_ids("claim 'a-1' failed: x\n  [FAIL] ...\nclaim 'b.2' failed: y") == ["a-1", "b.2"]
    assert claims.failed_ids("") == [] and claims.failed_ids("ValueError: claim nothing") == []
    assert claims.ClaimFailed("claim 'z' failed: w").ids == ["z"]


def test_relative_tolerance(records):
    claims.claim("rel", "relative", 1.0 + 1e-9, 1.0, 1e-8, rel=True, kind="verification")
    with pytest.raises(claims.ClaimFailed):
        claims.claim("rel2", "relative", 1e-300 * (1 + 1e-6), 1e-300, 1e-8, rel=True, kind="verification")


def test_zero_tolerance_is_refused(records):
    with pytest.raises(ValueError, match="tol must be > 0"):
        claims.claim("z", "exact", 1.0, 1.0, 0.0, kind="verification")


@pytest.mark.parametrize("relation,measured,bound,ok", [
    ("<=", 1.0, 1.0, True), ("<", 1.0, 1.0, False), (">=", 0.5, 1.0, False), (">", 2.0, 1.0, True)])
def test_bounds(records, relation, measured, bound, ok):
    if ok:
        assert claims.claim_bound("b", "bound", measured, relation, bound, kind="verification").passed
    else:
        with pytest.raises(claims.ClaimFailed):
            claims.claim_bound("b", "bound", measured, relation, bound, kind="verification")


def test_slack_loosens_a_bound(records):
    claims.claim_bound("s", "within slack", 1.05, "<=", 1.0, slack=0.1, kind="verification")
    with pytest.raises(ValueError, match="slack must be >= 0"):
        claims.claim_bound("s", "negative slack", 1.0, "<=", 1.0, slack=-1, kind="verification")


def test_bad_inputs_name_the_parameter(records):
    with pytest.raises(ValueError, match="relation must be one of"):
        claims.claim_bound("r", "x", 1, "!=", 2, kind="verification")
    with pytest.raises(ValueError, match="measured must not be NaN"):
        claims.claim("n", "x", float("nan"), 1, 1, kind="verification")
    with pytest.raises(ValueError, match="id must be"):
        claims.claim("Bad Id", "x", 1, 1, 1, kind="verification")


def test_printed_line_is_rounded_and_folds_negative_zero(records, capsys):
    claims.claim("r", "rounding", 0.123456789, 0.1234568, 1e-6, digits=3, kind="verification")
    claims.claim("z", "zero", -0.0, 0.0, 1e-12, kind="verification")
    out = capsys.readouterr().out.splitlines()
    assert out == ["[PASS] r: measured 0.123, expected 0.123 ± 1e-06",
                   "[PASS] z: measured 0, expected 0 ± 1e-12"]


def test_load_records_skips_run_records(records):
    folder, _ = records
    claims.claim("a", "a", 1, 1, 1, kind="verification")
    (folder / "_run.json").write_text("{}")
    assert [r["id"] for r in claims.load_records(folder.parent)] == ["a"]


def test_load_records_of_one_chapter(records):
    folder, chapter = records
    claims.claim("mine", "mine", 1, 1, 1, kind="verification")
    other = folder.parent / "other__chapter"
    other.mkdir()
    (other / "theirs.json").write_text(json.dumps({"id": "theirs"}))
    assert [r["id"] for r in claims.load_records(folder.parent, chapter=chapter)] == ["mine"]
    assert {r["id"] for r in claims.load_records(folder.parent)} == {"mine", "theirs"}


def test_kind_is_required_and_checked(records):
    with pytest.raises(TypeError, match="kind"):
        claims.claim("k", "no kind", 1, 1, 1)
    with pytest.raises(ValueError, match="kind must be one of"):
        claims.claim("k", "bad kind", 1, 1, 1, kind="proof")
    with pytest.raises(ValueError, match="show must be one of"):
        claims.claim("k", "bad show", 1, 1, 1, kind="sanity", show="loud")


def test_kind_and_margin_are_recorded(records):
    folder, _ = records
    claims.claim("eq", "equality", 1.3, 1.0, 0.5, kind="consistency")
    rec = json.loads((folder / "eq.json").read_text())
    assert rec["kind"] == "consistency"
    assert rec["margin"] == pytest.approx(0.6)


@pytest.mark.parametrize("measured,relation,bound,slack,expected", [
    (1.05, "<=", 1.0, 0.1, 0.5), (0.5, "<=", 1.0, 0.1, 0.0), (0.95, ">=", 1.0, 0.1, 0.5),
    (0.5, "<", 1.0, 0.0, None), (2.0, ">", 1.0, 0.0, None)])
def test_margin_of_a_bound_is_the_share_of_slack_used(measured, relation, bound, slack, expected):
    m = claims.margin(measured, bound, slack, relation)
    assert m == (pytest.approx(expected) if expected is not None else None)


def test_margin_of_a_failed_bound_without_slack_is_infinite():
    assert claims.margin(2.0, 1.0, 0.0, "<=") == float("inf")


def test_pass_line_shows_id_kind_and_criterion_only(records, capsys):
    claims.claim_bound("acc", "mean accuracy gain exceeds 0.1", 0.3141592, ">", 0.1, kind="verification", show="pass")
    assert capsys.readouterr().out.strip() == "[PASS] acc (verification): mean accuracy gain exceeds 0.1"


def test_table_lists_this_runs_claims_with_margins(records, capsys):
    claims.claim("t1", "one", 1.9, 1.0, 1.0, kind="verification", show=False)
    claims.claim("t1", "one, re-run", 1.0, 1.0, 1.0, kind="verification", show=False)
    claims.claim_bound("t2", "two", 0.5, "<=", 1.0, kind="sanity", show=False)
    text = claims.table()
    rows = [ln for ln in text.splitlines() if ln.startswith("t")]
    assert [r.split()[0] for r in rows] == ["t1", "t2"]  # a re-run replaces, not repeats
    assert rows[0].split()[-1] == "0.00" and rows[1].split()[-1] == "-"
    assert "2 claims: 1 verifications, 0 consistency, 1 sanity" in text


def test_table_flags_margins_near_the_edge(records):
    claims.claim("edge", "close call", 1.9, 1.0, 1.0, kind="verification", show=False)
    assert claims.table().splitlines()[2].endswith("0.90 !")


def test_seed_effect_matches_scipy_welch_and_paired_intervals():
    from scipy import stats

    a, b = [0.81, 0.77, 0.85, 0.79, 0.90], [0.52, 0.49, 0.55, 0.50, 0.51]
    eff = claims.seed_effect(a, b)
    ref = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert (eff.low, eff.high) == (pytest.approx(ref.low), pytest.approx(ref.high))
    assert eff.t() == pytest.approx(stats.ttest_ind(a, b, equal_var=False).statistic)
    paired = claims.seed_effect(a, b, paired=True)
    ref = stats.ttest_rel(a, b).confidence_interval(0.95)
    assert (paired.low, paired.high) == (pytest.approx(ref.low), pytest.approx(ref.high))


def test_claim_effect_passes_when_the_interval_clears_the_threshold(records):
    a, b = [0.81, 0.77, 0.85, 0.79, 0.90], [0.52, 0.49, 0.55, 0.50, 0.51]
    eff = claims.claim_effect("gain", "gain above 0.2", a, b, exceeds=0.2)
    assert eff.low > 0.2
    rec = json.loads((records[0] / "gain.json").read_text())
    assert rec["margin"] == pytest.approx(eff.critical_t() / eff.t(0.2)) and 0 < rec["margin"] < 1
    with pytest.raises(claims.ClaimFailed):  # the interval reaches below 0.3
        claims.claim_effect("gain2", "gain above 0.3", a, b, exceeds=0.3)


def test_claim_effect_counts_the_seed_spread(records):
    # One lucky seed: the means differ, but the spread over seeds leaves the interval across zero.
    with pytest.raises(claims.ClaimFailed):
        claims.claim_effect("lucky", "one lucky seed is not an effect", [0.5, 0.5, 0.5, 0.5, 0.95],
                            [0.5, 0.51, 0.49, 0.5, 0.5])


@pytest.mark.parametrize("kwargs,match", [({"treated": [1.0], "control": [1.0, 2.0]}, "at least 2 seeds"),
                                          ({"treated": [1, 2], "control": [1, 2, 3], "paired": True}, "same seeds"),
                                          ({"treated": [1, 2], "control": [1, 2], "confidence": 1.0}, "confidence must")])
def test_seed_effect_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        claims.seed_effect(**kwargs)


def test_printed_claims_and_table_fit_the_page(records, capsys):
    long_id = "a-claim-id-much-longer-than-the-table-column"
    claims.claim_bound(long_id, "a criterion " * 12, 0.5, "<=", 1.0, kind="sanity", show="pass")
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 1 and all(len(ln) <= claims.LINE_WIDTH for ln in lines)
    assert lines[0].startswith(f"[PASS] {long_id} (sanity):")
    assert all(ln.startswith("    ") and not ln.startswith("     ") for ln in lines[1:])
    rows = claims.table().splitlines()
    assert all(len(r) <= claims.LINE_WIDTH for r in rows)
    i = next(k for k, r in enumerate(rows) if r.startswith(long_id))
    assert rows[i].split() == [long_id, "sanity"] and rows[i + 1].split()[:2] == ["0.5", "<="]


def test_holm_matches_the_step_down_rule():
    from blindspots.claims import holm

    assert holm([0.01, 0.03, 0.02, 0.005]) == pytest.approx([0.03, 0.04, 0.04, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])  # monotone in the sorted order
    with pytest.raises(ValueError, match="pvalues must lie in"):
        holm([0.1, 1.5])


def test_seed_effect_p_value_is_the_paired_t_test():
    from scipy import stats

    rng = np.random.default_rng(4)
    a, b = rng.normal(0.3, 0.1, 8), rng.normal(0.2, 0.1, 8)
    assert claims.seed_effect(a, b, paired=True).p_value() == pytest.approx(stats.ttest_rel(a, b).pvalue)
    assert claims.seed_effect([1.0, 1.0], [1.0, 1.0], paired=True).p_value() == 1.0
    assert claims.seed_effect([2.0, 2.0], [1.0, 1.0], paired=True).p_value() == 0.0


def test_family_verdicts_correct_for_the_family_and_name_the_direction():
    # paired effects: p about 0.002, 0.028 and 0.044 (positive) and a clear negative one
    base = np.zeros(6)
    rows = [
        claims.seed_effect(np.array([0.9, 1.1, 0.4, 1.6, 0.7, 1.3]), base, paired=True),
        claims.seed_effect(np.array([0.4, 1.5, 0.1, 1.8, 0.3, 1.2]), base, paired=True),
        claims.seed_effect(np.array([0.3, 1.5, 0.0, 1.8, 0.2, 1.2]), base, paired=True),
        claims.seed_effect(-np.array([2.0, 2.1, 1.9, 2.2, 1.8, 2.0]), base, paired=True),
    ]
    family = claims.family_verdicts(rows, words=("up", "down", "open"), digits=2)
    assert [v.p_holm for v in family] == pytest.approx(claims.holm([r.p_value() for r in rows]))
    assert [v.resolved for v in family] == [v.p_holm < 0.05 for v in family]
    assert [v.verdict.split(" (")[0] for v in family] == ["up", "open", "open", "down"]
    for row, v in zip(rows, family):
        sd = row.se * np.sqrt(row.n_treated)
        assert v.detectable == pytest.approx(claims.detectable_effect(sd, 6, 0.05 / 4, 0.8))
        if not v.resolved:
            assert v.verdict == f"open (could have detected ≥ {v.detectable:.2f})"
    # alone, the second effect is tested at the full level and resolves; in the family it does not
    alone = claims.family_verdicts(rows[1:2])[0]
    assert alone.p_holm == pytest.approx(rows[1].p_value())
    assert alone.verdict == "reproduces"
    with pytest.raises(ValueError, match="words must name 3 verdicts"):
        claims.family_verdicts(rows, words=("up", "down"))
