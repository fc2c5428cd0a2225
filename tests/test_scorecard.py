"""The reproduction scorecard (blindspots.scorecard): verdicts computed from records, never typed."""

import json
import re
from pathlib import Path

import pytest

from blindspots import runtime, scorecard, sphinxext

ROOT = runtime.repo_root()


def _entry(**kw):
    base = dict(key="k", part="masked", paper="cai2026masked", section="Thm 1", statement="s", kind="theorem",
                chapters=["masked/02_mode_blindness"], claims=["c1"])
    return {**base, **kw}


def _records(folder: Path, chapter: str, recs: dict, glue: dict | None = None) -> None:
    d = runtime.chapter_records_dir(chapter, folder)
    d.mkdir(parents=True, exist_ok=True)
    for cid, (kind, passed) in recs.items():
        (d / f"{cid}.json").write_text(json.dumps({"id": cid, "kind": kind, "passed": passed, "notebook": chapter}))
    if glue is not None:
        (d / runtime.GLUE_RECORD).write_text(json.dumps(glue))


@pytest.fixture
def registry(monkeypatch):
    """Replace the registry's entries for one test."""
    from blindspots import scorecard_registry

    def use(entries):
        monkeypatch.setattr(scorecard_registry, "PAPER_CLAIMS", entries)
    return use


def test_a_theorem_is_verified_only_when_its_verifications_pass(tmp_path, registry):
    ch = "masked/02_mode_blindness"
    registry([_entry(claims=["c1", "c2"])])
    _records(tmp_path, ch, {"c1": ("verification", True), "c2": ("verification", True)})
    s = scorecard.score_all(scorecard.Sources.load(tmp_path, ROOT))[0]
    assert s.book == "verified (2 verifications)" and not s.problems
    _records(tmp_path, ch, {"c2": ("verification", False)})
    s = scorecard.score_all(scorecard.Sources.load(tmp_path, ROOT))[0]
    assert s.book == scorecard.FAILED and "claim `c2` FAILED" in s.problems
    # a planted-error run: c2 killed through the chapter, c1 by no planted error
    _records(tmp_path, ch, {"c2": ("verification", True)})
    killed = {(ch, "c1"): "none", (ch, "c2"): "notebook"}
    s = scorecard.score_all(scorecard.Sources.load(tmp_path, ROOT, killed))[0]
    assert s.problems == ["claim `c1` survived every planted error aimed at it"]
    killed[(ch, "c1")] = "unit"  # killed only by a unit test of its statistic: verified, and the count says so
    s = scorecard.score_all(scorecard.Sources.load(tmp_path, ROOT, killed))[0]
    assert s.book == "verified (2 verifications, 1 killed by planted errors through the chapter)"


def test_a_consistency_check_cannot_carry_a_theorem(tmp_path, registry):
    registry([_entry(claims=["c1"])])
    _records(tmp_path, "masked/02_mode_blindness", {"c1": ("consistency", True)})
    s = scorecard.score_all(scorecard.Sources.load(tmp_path, ROOT))[0]
    assert any("not a verification" in p for p in s.problems)


def test_an_empirical_verdict_is_the_chapter_s_glued_one(tmp_path, registry):
    ch = "selfpretraining/05_spt_length"
    book = {"verdict": f"{ch}::listops-primary-verdict", "effect": f"{ch}::listops-primary-gain",
            "lo": f"{ch}::listops-primary-lo", "hi": f"{ch}::listops-primary-hi"}
    registry([_entry(kind="empirical", part="selfpretraining", paper="coser2026selfpretraining", claims=[],
                     chapters=[ch], book=book, full=book)])
    # without a record of this build the committed notebook's glue stands in
    book_glue = scorecard.notebook_glue(ROOT / "notebooks" / f"{ch}.ipynb")
    s = scorecard.score_all(scorecard.Sources.load(tmp_path, ROOT))[0]
    assert s.book.startswith(scorecard.comparison_word(book_glue["listops-primary-verdict"]))
    _records(tmp_path, ch, {}, {"listops-primary-verdict": "not resolved (could have detected ≥ 0.027)",
                                "listops-primary-gain": 0.011, "listops-primary-lo": -0.003,
                                "listops-primary-hi": 0.026})
    s = scorecard.score_all(scorecard.Sources.load(tmp_path, ROOT))[0]
    assert s.book == "not resolved (could have detected ≥ 0.027)" and s.book_effect == "+0.011 [-0.003, +0.026]"
    # the committed full-scale run of chapter 05 carries its own verdict
    full = scorecard.notebook_glue(ROOT / "results" / "full" / f"{ch}.ipynb")
    assert s.full == full["listops-primary-verdict"] and not s.problems
    assert scorecard.word(scorecard.headline(s)) == scorecard.comparison_word(full["listops-primary-verdict"])


def test_missing_evidence_and_a_failed_record_turn_the_row_red(tmp_path, registry):
    ch = "selfpretraining/05_spt_length"
    registry([_entry(kind="empirical", part="selfpretraining", paper="coser2026selfpretraining", claims=[],
                     chapters=[ch], book={"verdict": f"{ch}::absent-key"}),
              _entry(key="k2", claims=["gone"])])
    md = scorecard.scorecard_markdown(tmp_path, ROOT)
    box = md.split("```", 2)[1]
    assert md.startswith("```{error}") and "**k**: book-scale value `absent-key`" in box
    assert "**k2**: claim `gone` has no record in this build" in box
    assert md.count("(see the box above)") == 2


def test_not_attempted_needs_a_reason_and_no_evidence(registry):
    with pytest.raises(ValueError, match="not attempted or not tested carries no evidence"):
        scorecard.PaperClaim.from_dict(_entry(not_attempted="no data"))
    with pytest.raises(ValueError, match="say why it is not tested"):
        scorecard.PaperClaim.from_dict(_entry(claims=[]))
    with pytest.raises(ValueError, match="kind must be one of"):
        scorecard.PaperClaim.from_dict(_entry(kind="lemma"))
    with pytest.raises(ValueError, match="part/NN_name::key"):
        scorecard.PaperClaim.from_dict(_entry(kind="empirical", book={"verdict": "no-separator"}))
    e = scorecard.PaperClaim.from_dict(_entry(claims=[], not_attempted="the corpus cannot be downloaded"))
    s = scorecard.score(e, scorecard.Sources([], {}, {}, {}))
    assert s.book == "not attempted (the corpus cannot be downloaded)" and not s.problems


def test_glued_values_are_recorded_per_chapter(tmp_path, monkeypatch):
    monkeypatch.setenv("BLINDSPOTS_CLAIMS_DIR", str(tmp_path))
    runtime.setup("smoke", "cpu", 0, chapter="selfpretraining/05_spt_length")
    runtime.glue("a-verdict", "reproduces")
    runtime.glue("n", 3)
    assert runtime.glued_values("selfpretraining/05_spt_length", tmp_path) == {"a-verdict": "reproduces", "n": 3}
    runtime.setup("smoke", "cpu", 0, chapter="selfpretraining/05_spt_length")  # a rerun starts afresh
    assert runtime.glued_values("selfpretraining/05_spt_length", tmp_path) == {}


def _committed_claim_ids(chapter: str) -> set[str]:
    """Claim ids in the committed notebook's printed outputs (its closing table lists every claim)."""
    nb = json.loads((ROOT / "notebooks" / f"{chapter}.ipynb").read_text())
    text = "".join("".join(o.get("text", "")) for c in nb["cells"] for o in c.get("outputs", []))
    return set(re.findall(r"^([a-z0-9][a-z0-9.\-_]*[a-z0-9])\s+(?:verification|consistency|sanity)\s", text, re.M))


def test_every_registry_entry_points_to_claims_and_glue_that_exist():
    entries = scorecard.registry()
    assert {e.part for e in entries} == set(scorecard.PARTS)
    chapters = set(sphinxext._chapters_in_toc(ROOT))
    for e in entries:
        assert e.chapters or e.not_attempted, e.key
        assert set(e.chapters) <= {c.removesuffix(".ipynb") for c in chapters}, e.key
        known = set().union(*(_committed_claim_ids(ch) for ch in e.chapters)) if e.chapters else set()
        assert set(e.claims) <= known, (e.key, sorted(set(e.claims) - known))
        for scale, ev in (("book", e.book), ("full", e.full)):
            for ref in (ev.refs() if ev else []):
                path = ROOT / ("notebooks" if scale == "book" else "results/full") / f"{ref.chapter}.ipynb"
                if scale == "full" and not path.is_file():
                    continue  # no run committed yet: the page says so
                assert ref.key in scorecard.notebook_glue(path), (e.key, scale, ref)


def test_part_three_verdicts_take_their_direction_from_the_effect():
    word = scorecard.comparison_word
    assert word("resolved: the interval excludes 0", 0.004) == "reproduces"
    assert word("resolved: the interval excludes 0", -0.004) == "opposite"
    assert word("resolved: the interval excludes 1", 0.8, "above one") == "opposite"
    assert word("excludes", 1.6, "above one") == "reproduces"
    assert word("resolved: the interval excludes 0", 0.01, "no difference") == "opposite"
    assert word("not resolved: the interval includes 0", 0.01, "no difference") == "not resolved"
    assert word("not tested (gate failed: x)") == "not tested"
    with pytest.raises(ValueError, match="needs its effect"):
        word("resolved: the interval excludes 0")
    with pytest.raises(ValueError, match="must start with"):
        word("looks fine")


TYPED_VERDICT = re.compile(r"\b(reproduce[sd]?|not resolved|not tested|opposite)\b", re.I)


def _takeaway(chapter: str) -> str:
    nb = json.loads((ROOT / "notebooks" / f"{chapter}.ipynb").read_text())
    text = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    if "## What to take away" not in text:
        return ""
    return text.split("## What to take away", 1)[1].split("\n## ", 1)[0]


def test_takeaways_state_verdicts_only_through_the_glued_ones():
    """A chapter's takeaway says reproduces, opposite, not resolved or not tested only by quoting the verdict its
    code glued, the value the scorecard reads too, so the two cannot disagree."""
    chapters = sorted({ch for e in scorecard.registry() for ch in e.chapters})
    typed = {}
    for ch in chapters:
        prose = re.sub(r"\{glue:text\}`[^`]*`", "", _takeaway(ch))
        found = TYPED_VERDICT.findall(prose)
        if found:
            typed[ch] = found
    assert not typed, typed
