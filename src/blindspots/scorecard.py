"""The reproduction scorecard: every claim of the three papers, its verdict in this build, and where to read it.

The registry (:data:`blindspots.scorecard_registry.PAPER_CLAIMS`) lists one entry per claim a paper makes:
its statement, its kind (a theorem or an empirical result), the chapters that test it, the book's claim
ids and glued values that carry the evidence. This module computes each entry's verdict from the records
of this build, never from typed text:

- a **theorem** is *verified* when every verification claim it lists passed in this build; where the
  planted-error run left records, the verdict says how many were killed through the chapter's code, and a
  claim that a planted error did not kill is a problem;
- an **empirical** result takes the verdict its chapter computed and glued (*reproduces*, *opposite*,
  *not resolved (could have detected ≥ x)*, *not tested (...)*), at book scale from the chapter's records
  and at full scale from the committed run in ``results/full/``; where it lists verification claims
  instead, it *reproduces* when they all pass;
- a result the book measures without a criterion that decides it reads *not tested*, with the reason;
- a result the book does not rebuild reads *not attempted*, with the reason.

Part III's chapters glue *resolved* or *not resolved* without a direction; the direction is the sign of the
effect against what the paper expects (:data:`EXPECTS`).

Evidence that is missing from this build, or a claim that failed, is a problem: the page names it in red.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from . import claims, runtime

PARTS: dict[str, str] = {"masked": "Part I, masked prediction", "selfpretraining": "Part II, self-pretraining",
                         "privileged": "Part III, privileged information"}
KINDS = ("theorem", "empirical")
#: Verdict words of a comparison, as the chapters' tables compute them (``gates.VERDICTS``).
COMPARISON_WORDS = ("reproduces", "opposite", "not resolved", "not tested")
VERIFIED, FAILED, MISSING, NOT_ATTEMPTED = "verified", "failed", "evidence missing", "not attempted"
#: What the paper expects of a glued effect: above 0 (a gain), above 1 (a speedup), or no difference.
EXPECTS = ("positive", "above one", "no difference")


@dataclass(frozen=True)
class GlueRef:
    """A glued value of a chapter: ``part/NN_name::key``."""

    chapter: str
    key: str

    @classmethod
    def parse(cls, text: str) -> "GlueRef":
        chapter, sep, key = str(text).partition("::")
        if not sep or "/" not in chapter or not key:
            raise ValueError(f"a glue reference must read 'part/NN_name::key', got {text!r}")
        return cls(chapter, key)


@dataclass(frozen=True)
class Evidence:
    """Where a comparison's verdict, effect and interval are glued (any may be absent)."""

    verdict: GlueRef | None = None
    effect: GlueRef | None = None
    lo: GlueRef | None = None
    hi: GlueRef | None = None

    @classmethod
    def parse(cls, spec: Mapping[str, str] | None) -> "Evidence | None":
        if spec is None:
            return None
        unknown = set(spec) - {"verdict", "effect", "lo", "hi"}
        if unknown:
            raise ValueError(f"evidence keys must be among verdict, effect, lo, hi; got {sorted(unknown)}")
        return cls(**{k: GlueRef.parse(v) for k, v in spec.items() if v})

    def refs(self) -> list[GlueRef]:
        return [r for r in (self.verdict, self.effect, self.lo, self.hi) if r is not None]


@dataclass(frozen=True)
class PaperClaim:
    """One claim of a paper and the book's evidence for it (see the module docstring)."""

    key: str
    part: str
    paper: str
    section: str
    statement: str
    kind: str
    chapters: tuple[str, ...]
    claims: tuple[str, ...] = ()
    book: Evidence | None = None
    full: Evidence | None = None
    not_attempted: str | None = None
    untested: str | None = None
    expects: str = "positive"

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "PaperClaim":
        entry = cls(key=d["key"], part=d["part"], paper=d["paper"], section=d["section"],
                    statement=d["statement"], kind=d["kind"], chapters=tuple(d.get("chapters", ())),
                    claims=tuple(d.get("claims", ())), book=Evidence.parse(d.get("book")),
                    full=Evidence.parse(d.get("full")), not_attempted=d.get("not_attempted"),
                    untested=d.get("untested"), expects=d.get("expects", "positive"))
        entry.check()
        return entry

    def check(self) -> None:
        if self.part not in PARTS:
            raise ValueError(f"{self.key}: part must be one of {tuple(PARTS)}, got {self.part!r}")
        if self.kind not in KINDS:
            raise ValueError(f"{self.key}: kind must be one of {KINDS}, got {self.kind!r}")
        if self.expects not in EXPECTS:
            raise ValueError(f"{self.key}: expects must be one of {EXPECTS}, got {self.expects!r}")
        has_evidence = bool(self.claims or self.book or self.full)
        if (self.not_attempted or self.untested) and has_evidence:
            raise ValueError(f"{self.key}: an entry not attempted or not tested carries no evidence")
        if self.not_attempted and self.untested:
            raise ValueError(f"{self.key}: an entry is either not attempted or not tested, not both")
        if not (self.not_attempted or self.untested or has_evidence):
            raise ValueError(f"{self.key}: give claim ids or glued verdicts, or say why it is not tested "
                             "or not attempted")
        if self.kind == "theorem" and (self.book or self.full):
            raise ValueError(f"{self.key}: a theorem's evidence is its verification claims, not glued verdicts")


def registry() -> list[PaperClaim]:
    """Every entry of :data:`blindspots.scorecard_registry.PAPER_CLAIMS`, checked; keys are unique."""
    from .scorecard_registry import PAPER_CLAIMS

    entries = [PaperClaim.from_dict(d) for d in PAPER_CLAIMS]
    keys = [e.key for e in entries]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise ValueError(f"registry keys must be unique, repeated: {dup}")
    return entries


def comparison_word(verdict: str, effect: float | None = None, expects: str = "positive") -> str:
    """The verdict word (one of :data:`COMPARISON_WORDS`) of a chapter's glued verdict.

    Part II glues the word itself. Part III glues whether the interval excludes the null (*resolved*,
    *excludes*) or not (*not resolved*); a resolved result *reproduces* when ``effect`` lies on the side the
    paper expects (above 0, or above 1 for a speedup) and is *opposite* otherwise, and where the paper expects
    no difference any resolved difference is *opposite*.
    """
    text = str(verdict).strip()
    for word in COMPARISON_WORDS:
        if text.startswith(word):
            return word
    if text.startswith(("resolved", "excludes")):
        if not isinstance(effect, (int, float)):
            raise ValueError(f"a resolved verdict needs its effect to give a direction, got {effect!r}")
        if expects == "no difference":
            return COMPARISON_WORDS[1]
        ahead = effect > (1.0 if expects == "above one" else 0.0)
        return COMPARISON_WORDS[0] if ahead else COMPARISON_WORDS[1]
    raise ValueError(f"a glued verdict must start with one of {COMPARISON_WORDS}, 'resolved' or 'excludes', "
                     f"got {verdict!r}")


def notebook_glue(path: Path) -> dict[str, Any]:
    """The values glued in an executed notebook (myst-nb's scrapbook outputs), e.g. a committed full-scale run."""
    path = Path(path)
    if not path.is_file():
        return {}
    out = {}
    for cell in json.loads(path.read_text()).get("cells", []):
        for o in cell.get("outputs", []):
            name = o.get("metadata", {}).get("scrapbook", {}).get("name")
            data = o.get("data", {})
            text = data.get("application/papermill.record/text/plain", data.get("text/plain"))
            if name is None or text is None:
                continue
            try:
                out[name] = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                out[name] = text
    return out


@dataclass
class Sources:
    """What this build knows: claim records and glued values by chapter, committed full-scale glue, and the
    planted-error outcomes ((chapter, claim id) -> ``"notebook"``, ``"unit"`` or ``"none"``, the level that
    killed it) where a planted-error run left records.

    A chapter's glued values come from its records when this build ran it, else from the committed notebook,
    whose outputs the page then shows."""

    entries: list[PaperClaim]
    records: dict[str, dict[str, Any]]
    glue: dict[str, dict[str, Any]]
    full_glue: dict[str, dict[str, Any]]
    killed: dict[tuple[str, str], str] | None = None

    @classmethod
    def load(cls, claims_dir: Path, root: Path | None = None,
             killed: Mapping[tuple[str, str], str] | None = None) -> "Sources":
        root = Path(root or runtime.repo_root())
        entries = registry()
        recs = {r["id"]: r for r in claims.load_records(claims_dir)}
        chapters = {ch for e in entries for ch in e.chapters}
        chapters |= {r.chapter for e in entries if e.book for r in e.book.refs()}
        glue = {ch: runtime.glued_values(ch, Path(claims_dir))
                or notebook_glue(root / "notebooks" / f"{ch}.ipynb") for ch in chapters}
        # committed full-scale runs, read only for the chapters whose full-scale evidence is named
        full_chapters = {r.chapter for e in entries if e.full for r in e.full.refs()}
        full = {ch: notebook_glue(root / "results" / "full" / f"{ch}.ipynb") for ch in full_chapters}
        return cls(entries, recs, glue, full, None if killed is None else dict(killed))


@dataclass
class Scored:
    """An entry with its verdicts and effects at book and full scale, and the problems that turn it red."""

    entry: PaperClaim
    book: str
    book_effect: str = ""
    full: str = ""
    full_effect: str = ""
    problems: list[str] = field(default_factory=list)


def _glued(ref: GlueRef | None, values: Mapping[str, Mapping[str, Any]], problems: list[str],
           where: str) -> Any:
    if ref is None:
        return None
    chapter_values = values.get(ref.chapter, {})
    if ref.key not in chapter_values:
        problems.append(f"{where} value `{ref.key}` of {ref.chapter} is not in this build")
        return None
    return chapter_values[ref.key]


def _effect_text(effect: Any, lo: Any, hi: Any) -> str:
    if not isinstance(effect, (int, float)):
        return ""
    text = f"{effect:+.3f}"
    if isinstance(lo, (int, float)) and isinstance(hi, (int, float)):
        text += f" [{lo:+.3f}, {hi:+.3f}]"
    return text


def _comparison(ev: Evidence, values, problems: list[str], where: str, expects: str) -> tuple[str, str]:
    verdict, effect, lo, hi = (_glued(r, values, problems, where) for r in (ev.verdict, ev.effect, ev.lo, ev.hi))
    text = _effect_text(effect, lo, hi)
    if ev.verdict is None:
        return "", text
    if verdict is None:
        return MISSING, text
    try:
        w = comparison_word(verdict, effect, expects)
    except ValueError as err:
        problems.append(str(err))
        return MISSING, text
    verdict = str(verdict)
    return (verdict if verdict.startswith(w) else f"{w} ({verdict})"), text


def score(entry: PaperClaim, sources: Sources) -> Scored:
    """``entry``'s verdicts from ``sources`` (see the module docstring)."""
    if entry.not_attempted:
        return Scored(entry, f"{NOT_ATTEMPTED} ({entry.not_attempted})")
    if entry.untested:
        return Scored(entry, f"{COMPARISON_WORDS[3]} ({entry.untested})")
    problems: list[str] = []
    state = []
    at_notebook = 0
    for cid in entry.claims:
        rec = sources.records.get(cid)
        if rec is None:
            problems.append(f"claim `{cid}` has no record in this build")
            state.append(MISSING)
            continue
        if entry.kind == "theorem" and rec.get("kind") != "verification":
            problems.append(f"claim `{cid}` is a {rec.get('kind')} check, not a verification")
        if not rec.get("passed"):
            problems.append(f"claim `{cid}` FAILED")
            state.append(FAILED)
            continue
        if sources.killed is not None and entry.kind == "theorem":
            level = sources.killed.get((rec.get("notebook", ""), cid))
            at_notebook += level == "notebook"
            if level == "none":
                problems.append(f"claim `{cid}` survived every planted error aimed at it")
        state.append("passed")
    claimed = FAILED if FAILED in state else MISSING if MISSING in state else None
    if entry.kind == "theorem":
        verdict = claimed or VERIFIED
        if verdict == VERIFIED:
            n = len(entry.claims)
            killed = "" if sources.killed is None else f", {at_notebook} killed by planted errors through the chapter"
            verdict += f" ({n} verification{'s' if n != 1 else ''}{killed})"
        return Scored(entry, verdict, problems=problems)
    book, book_effect = (_comparison(entry.book, sources.glue, problems, "book-scale", entry.expects)
                         if entry.book else ("", ""))
    if not book and entry.claims:
        book = claimed or COMPARISON_WORDS[0]
    elif claimed:
        book = claimed
    if not book:  # evidence at full scale only, or an effect shown that no criterion decides
        book = "–" if entry.full and not entry.book else f"{COMPARISON_WORDS[3]} (shown; no criterion decides it)"
    full, full_effect = "", ""
    if entry.full:
        committed = any(sources.full_glue.get(r.chapter) for r in entry.full.refs())
        if committed:
            full, full_effect = _comparison(entry.full, sources.full_glue, problems, "full-scale", entry.expects)
        else:
            full = "no full-scale run committed"
    return Scored(entry, book, book_effect, full, full_effect, problems)


def score_all(sources: Sources) -> list[Scored]:
    return [score(e, sources) for e in sources.entries]


def headline(scored: Scored) -> str:
    """The verdict a count uses: the full-scale one where a run is committed, else the book's."""
    full = scored.full
    if full and full not in (MISSING, "no full-scale run committed"):
        return full
    return scored.book


def word(verdict: str) -> str:
    """A verdict's leading word(s), for counts."""
    for w in (VERIFIED, NOT_ATTEMPTED, FAILED, MISSING, *COMPARISON_WORDS):
        if verdict.startswith(w):
            return w
    return verdict


def counts_sentence(part: str, scored: Sequence[Scored]) -> str:
    """One sentence for the preface: how many of a Part's paper claims have each verdict."""
    mine = [s for s in scored if s.entry.part == part]
    order = (VERIFIED, *COMPARISON_WORDS, NOT_ATTEMPTED, FAILED, MISSING)
    tally = {w: sum(word(headline(s)) == w for s in mine) for w in order}
    parts = [f"{n} {w}" for w, n in tally.items() if n]
    return f"{PARTS[part]}: {len(mine)} claims of the paper, " + ", ".join(parts) + "."


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _links(chapters: Sequence[str], full_glue: Mapping[str, Mapping[str, Any]]) -> str:
    """Each chapter, and its committed full-scale run where the entry names one (``full_glue`` holds it)."""
    docs = [f"{{doc}}`/notebooks/{ch}`" for ch in chapters]
    docs += [f"{{doc}}`full scale </results/full/{ch}>`" for ch in chapters if full_glue.get(ch)]
    return ", ".join(docs)


def scorecard_markdown(claims_dir: Path, root: Path | None = None,
                       killed: Mapping[tuple[str, str], str] | None = None) -> str:
    """The scorecard page's generated part: a red box naming every problem, then one table per Part."""
    sources = Sources.load(claims_dir, root, killed)
    scored = score_all(sources)
    lines: list[str] = []
    red = [s for s in scored if s.problems]
    if red:
        lines += ["```{error}", "Evidence missing or failed in this build: "
                  + "; ".join(f"**{s.entry.key}**: " + ", ".join(s.problems) for s in red), "```", ""]
    for part, title in PARTS.items():
        mine = [s for s in scored if s.entry.part == part]
        if not mine:
            continue
        lines += [f"## {title}", "", counts_sentence(part, scored), "",
                  "| | the paper's claim | kind | verdict (book scale) | effect [95% CI] | full scale | read it in |",
                  "|---|---|---|---|---|---|---|"]
        for i, s in enumerate(mine, 1):
            e = s.entry
            verdict = f"**{s.book}** (see the box above)" if s.problems else s.book
            full = f"{s.full} {s.full_effect}".strip()
            lines.append(f"| {i} | {_cell(e.statement)} ({_cell(e.section)}, {{cite}}`{e.paper}`) | {e.kind} | "
                         f"{_cell(verdict)} | {_cell(s.book_effect)} | {_cell(full)} | "
                         f"{_links(e.chapters, sources.full_glue if e.full else {})} |")
        lines.append("")
    return "\n".join(lines)
