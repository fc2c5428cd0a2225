"""Sphinx extension for the book (listed in ``_config.yml``).

It does five quiet jobs:

* serves MathJax from the installed ``django-static-mathjax`` package, so math
  renders with no internet (nothing vendored in the repository);
* keys the jupyter-cache on a hash of ``src/blindspots``: when the shared code
  changes, the cache is cleared so no stale output is served;
* lets ``BLINDSPOTS_EXECUTE`` (``off``, ``cache``, ``force``, ``auto``) override the
  execution mode, which ``make test-docs`` uses to render outputs that nbval has
  just checked instead of running every notebook a second time;
* generates the verification report and the status page from the claim and run
  records, reading them after every notebook has been read (and so executed);
* marks, in each chapter, the output where every claim prints (an anchor ``claim-<id>`` that the
  report links to), and puts a red banner at the top of a chapter whose claims failed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from . import runtime
from .claims import CLAIM_LINE

GENERATED = {"book/verification": "verification", "book/status": "status", "results/full/index": "appendix",
             "book/scorecard": "scorecard", "book/preface": "preface"}
#: The line of the preface that the scorecard's counts replace.
PREFACE_COUNTS_MARKER = "<!-- scorecard counts -->"
EXECUTION_MODES = ("off", "auto", "cache", "force")
SMOKE_BUDGET_S = 30.0
BOOK_BUDGET_S = 240.0
WHOLE_BOOK_BUDGET_S = 2400.0
MAKE_TEST_BUDGET_S = 4200.0
MAKE_TEST_STAGES = ("setup", "test-unit", "test-smoke", "test-nbval", "test-mutants")
MATHJAX_DIR = "mathjax"


def src_hash(root: Path | None = None) -> str:
    """SHA-256 over the package's Python sources (paths and contents)."""
    root = root or Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _mathjax_source() -> Path:
    import mathjax  # django-static-mathjax

    return Path(mathjax.__file__).resolve().parent / "static" / "mathjax" / "es5"


def _config_inited(app, config) -> None:
    mode = os.environ.get("BLINDSPOTS_EXECUTE")
    if mode:
        if mode not in EXECUTION_MODES:
            raise ValueError(f"BLINDSPOTS_EXECUTE must be one of {EXECUTION_MODES}, got {mode!r}")
        config.nb_execution_mode = mode
    config.mathjax_path = f"{MATHJAX_DIR}/tex-chtml.js"
    _launch_buttons_need_a_repository(config)
    # A first visit has no stored colour mode; without a default the theme logs a console error.
    config.html_context = {"default_mode": "auto", **(config.html_context or {})}
    if config.nb_execution_mode == "cache":
        cache = Path(app.confdir, config.nb_execution_cache_path or "_build/.jupyter_cache")
        stamp = cache.parent / (cache.name + ".src-sha256")
        current = src_hash()
        if stamp.is_file() and stamp.read_text().strip() != current:
            if cache.exists():
                shutil.rmtree(cache)
            app._blindspots_src_changed = True  # re-read (and so re-run) every notebook
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(current)


def _failed_claims(app) -> dict[str, list[str]]:
    """Failed claim ids of the last run, by chapter docname (``notebooks/<part>/<chapter>``)."""
    from .claims import load_records

    folder = _claims_dir(app)
    out: dict[str, list[str]] = {}
    for rec in load_records(folder) if folder.is_dir() else []:
        if not rec.get("passed", True):
            out.setdefault(f"notebooks/{rec.get('notebook')}", []).append(rec["id"])
    return {doc: sorted(ids) for doc, ids in out.items()}


def _launch_buttons_need_a_repository(config) -> None:
    """Launch buttons (Binder, JupyterHub, Colab) link into the repository of ``_config.yml``'s
    ``repository.url``; while that is empty the theme cannot form their links (it raises), so they
    are left out and only the download button shows."""
    options = dict(config.html_theme_options or {})
    if not options.get("repository_url"):
        options.pop("launch_buttons", None)
        config.html_theme_options = options


def _env_get_outdated(app, env, added, changed, removed):
    docs = [doc for doc in GENERATED if doc in env.found_docs]
    if getattr(app, "_blindspots_src_changed", False):
        docs += [d for d in env.found_docs if env.doc2path(d).endswith(".ipynb")]
    # A chapter whose failed claims changed since its doctree was read gets its banner redone.
    before, now = getattr(env, "blindspots_failed", {}), _failed_claims(app)
    docs += [d for d in set(before) | set(now) if before.get(d) != now.get(d) and d in env.found_docs]
    env.blindspots_failed = now
    return docs


def _env_before_read_docs(app, env, docnames: list[str]) -> None:
    # Generated pages are read last, after every notebook has executed.
    late = [d for d in docnames if d in GENERATED]
    for doc in late:
        docnames.remove(doc)
    docnames.extend(late)


def _source_read(app, docname: str, source: list[str]) -> None:
    kind = GENERATED.get(docname)
    if kind == "verification":
        source[0] = source[0] + "\n" + verification_markdown(_claims_dir(app))
    elif kind == "status":
        source[0] = source[0] + "\n" + status_markdown(_claims_dir(app))
    elif kind == "appendix":
        from .fullscale import appendix_markdown

        source[0] = source[0] + "\n" + appendix_markdown(Path(app.confdir))
    elif kind == "scorecard":
        from .scorecard import scorecard_markdown

        source[0] = source[0] + "\n" + scorecard_markdown(_claims_dir(app), Path(app.confdir),
                                                           kill_levels(_claims_dir(app)))
    elif kind == "preface" and PREFACE_COUNTS_MARKER in source[0]:
        source[0] = source[0].replace(PREFACE_COUNTS_MARKER, preface_counts(_claims_dir(app), Path(app.confdir)))


def _kill_level(runs: list[dict]) -> str | None:
    """How the planted errors aimed at one claim killed it: ``"notebook"`` (through the chapter's code),
    ``"unit"`` (only a unit test of its statistic) or ``"none"``; None when no planted error aimed at it."""
    if not runs:
        return None
    levels = {m["level"] for m in runs if m["killed"]}
    return "notebook" if "notebook" in levels else "unit" if levels else "none"


def kill_levels(claims_dir: Path) -> dict[tuple[str, str], str] | None:
    """(chapter, claim id) -> :func:`_kill_level` in the last planted-error run; None where no such run left
    records. A claim absent from the map had no planted error in that run."""
    by_claim, summary = _mutant_records(claims_dir)
    if summary is None and not by_claim:
        return None
    return {key: _kill_level(runs) for key, runs in by_claim.items()}


def preface_counts(claims_dir: Path, root: Path) -> str:
    """The preface's sentences on what holds, one per Part, from the scorecard's verdicts."""
    from .scorecard import PARTS, Sources, counts_sentence, score_all

    scored = score_all(Sources.load(claims_dir, root, kill_levels(claims_dir)))
    return "\n".join(f"- {counts_sentence(part, scored)}" for part in PARTS)


def _claims_dir(app) -> Path:
    env = os.environ.get("BLINDSPOTS_CLAIMS_DIR")
    return Path(env) if env else Path(app.confdir) / "_build" / "claims"


def _build_finished(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    target = Path(app.outdir) / "_static" / MATHJAX_DIR
    source = _mathjax_source()
    marker = target / ".source"
    if marker.is_file() and marker.read_text() == str(source):
        return
    shutil.copytree(source, target, dirs_exist_ok=True)
    marker.write_text(str(source))


# ----------------------------------------------------------------------------
# Generated pages


def _fmt(value: Any, digits: int = 4) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return str(value)
    try:
        x = float(value)
    except (TypeError, ValueError):
        return str(value)
    return "0" if x == 0 else f"{x:.{digits}g}"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _chapters_in_toc(root: Path) -> list[str]:
    chapters = []
    toc = root / "_toc.yml"
    if toc.is_file():
        for line in toc.read_text().splitlines():
            line = line.strip()
            if line.startswith("- file: notebooks/"):
                chapters.append(line.split("notebooks/", 1)[1])
    return chapters


def _chapter_title(chapter: str) -> str:
    """The first Markdown heading of the chapter's notebook, else its path."""
    path = runtime.repo_root() / "notebooks" / f"{chapter}.ipynb"
    try:
        cells = json.loads(path.read_text())["cells"]
    except (OSError, ValueError, KeyError):
        return chapter
    for cell in cells:
        if cell.get("cell_type") == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return chapter


def _mutant_records(claims_dir: Path) -> tuple[dict[tuple[str, str], list[dict]], dict | None]:
    """Outcomes of the last ``make test-mutants`` (beside the claims folder), keyed by (chapter, claim)."""
    folder = Path(claims_dir).parent / "mutants"
    by_claim: dict[tuple[str, str], list[dict]] = {}
    summary = None
    if folder.is_dir():
        for path in sorted(folder.glob("*.json")):
            rec = json.loads(path.read_text())
            if path.name == "summary.json":
                summary = rec
            else:
                for claim_id in (rec["kills"], *rec.get("also", [])):  # one run may kill several claims
                    by_claim.setdefault((rec["notebook"], claim_id), []).append(rec)
    return by_claim, summary


def _margin_text(rec: dict) -> str:
    from .claims import MARGIN_WARNING

    m = rec.get("margin")
    if m is None:
        return "–"
    text = "inf" if m == float("inf") else f"{m:.2f}"
    return f"**{text}** ⚠" if m > MARGIN_WARNING else text


def _prediction_text(r: dict) -> str:
    digits = r.get("digits", 4)
    if r["relation"] == "==":
        return f"{_fmt(r['expected'], digits)} ± {_fmt(r['tolerance'], 2)}"
    slack = f" (slack {_fmt(r['tolerance'], 2)})" if r["tolerance"] else ""
    return f"{r['relation']} {_fmt(r['expected'], digits)}{slack}"


def mutation_score_lines(records: list[dict], mutants: dict[tuple[str, str], list[dict]], n_mutants: int) -> list[str]:
    """The mutation score, in total and per Part: verifications killed at notebook level (a planted error in
    ``src`` or the data that reaches the claim through the chapter's own code) out of all verifications;
    verifications killed only by a unit test of the claim's statistic are counted apart, not in the score."""
    ver = [r for r in records if r.get("kind") == "verification"]

    def level(r: dict) -> str | None:
        return _kill_level(mutants.get((r.get("notebook"), r["id"]), []))

    def counts(rows: list[dict]) -> tuple[int, int, int]:
        return sum(level(r) == "notebook" for r in rows), sum(level(r) == "unit" for r in rows), len(rows)

    nb, unit_only, n = counts(ver)
    pct = f" ({100 * nb / n:.0f} %)" if n else ""
    lines = [f"**Mutation score: {nb} of {n} verifications killed by a planted error at notebook level{pct}**, "
             f"with {n_mutants} planted errors (`make test-mutants`, `tests/mutants/`). Each planted error "
             "changes one theory value, constant, estimator or training step in `src` or the data; with it the "
             "chapter, run through its own code, must stop on the claims named in the last column: at smoke "
             "scale, or, for a training claim that smoke scale cannot make, at book scale or at the chapter's "
             "*mutant* scale (its smallest run at which the claim holds; the same chapter run there without the "
             "error, in the same session, must make each such claim and see it hold, or the kill does not count). "
             f"Killed only by a unit test of the claim's statistic, which does not count: {unit_only}.", "",
             "| Part | killed at notebook level | of verifications | unit test only | consistency | sanity |",
             "|---|---|---|---|---|---|"]
    parts = sorted({(r.get("notebook") or "unknown").split("/")[0] for r in records},
                   key=lambda p: (_PART_ORDER.index(p) if p in _PART_ORDER else len(_PART_ORDER), p))
    for part in parts:
        in_part = [r for r in records if (r.get("notebook") or "unknown").split("/")[0] == part]
        p_nb, p_unit, p_n = counts([r for r in in_part if r.get("kind") == "verification"])
        lines.append(f"| {part} | {p_nb} | {p_n} | {p_unit} | {sum(r.get('kind') == 'consistency' for r in in_part)} | "
                     f"{sum(r.get('kind') == 'sanity' for r in in_part)} |")
    return lines + [""]


_PART_ORDER = ("masked", "selfpretraining", "privileged")


def verification_markdown(claims_dir: Path) -> str:
    """Every recorded claim, grouped by chapter in table-of-contents order, with kinds, margins and
    the planted errors that kill each verification."""
    from .claims import KINDS, MARGIN_WARNING, load_records

    from .fullscale import failed_claims, failed_claims_box

    full_box = failed_claims_box(failed_claims(runtime.repo_root()))  # committed runs: shown whatever this build ran
    records = load_records(claims_dir) if Path(claims_dir).is_dir() else []
    if not records:
        return "\n".join(full_box) + ("```{note}\nNo claim records were found in `" + str(claims_dir) +
                "`. Run `make book` (or `make test`) to execute the notebooks.\n```\n")
    mutants, summary = _mutant_records(claims_dir)
    by_chapter: dict[str, list[dict]] = {}
    for rec in records:
        if rec.get("kind") not in KINDS:
            rec["kind"] = "unlabelled"
        by_chapter.setdefault(rec.get("notebook") or "unknown", []).append(rec)
    order = _chapters_in_toc(runtime.repo_root())
    chapters = [c for c in order if c in by_chapter] + sorted(set(by_chapter) - set(order))
    passed = sum(r["passed"] for r in records)
    n_ver = sum(r["kind"] == "verification" for r in records)
    lines = [f"**{passed} of {len(records)} claims pass** ({len(chapters)} chapters; scale and device "
             f"as recorded by each run): {n_ver} verifications, "
             f"{sum(r['kind'] == 'consistency' for r in records)} consistency checks, "
             f"{sum(r['kind'] == 'sanity' for r in records)} sanity checks.", ""]
    failed = [r for r in records if not r["passed"]]
    if failed:
        lines += ["```{error}", f"{len(failed)} claim(s) FAILED in the last run:", ""]
        lines += [f"- `{r.get('notebook')}`: `{r['id']}`: {r['statement']}" for r in failed]
        lines += ["```", ""]
    lines += full_box
    unlabelled = [r for r in records if r["kind"] not in KINDS]
    if unlabelled:
        lines += ["```{error}", f"{len(unlabelled)} claim(s) carry no kind:", ""]
        lines += [f"- `{r.get('notebook')}`: `{r['id']}`" for r in unlabelled] + ["```", ""]
    if summary is None:
        lines += ["```{warning}", "The mutation tests have not run against these records: run "
                  "`make test-mutants` (part of `make test` and `make book`).", "```", ""]
    else:
        lines += mutation_score_lines(records, mutants, summary["mutants"])
        if summary["not_killed"]:
            lines += ["```{error}", "Verifications that no planted error kills:", ""]
            lines += [f"- {x}" for x in summary["not_killed"]] + ["```", ""]
    flagged = [r for r in records if r.get("margin") is not None and r["margin"] > MARGIN_WARNING]
    lines += [f"A claim's **margin** is the share of its tolerance it used: |measured − expected| / "
              f"tolerance for an equality, the excess over the bound divided by the slack for a bound "
              f"(0 when the bound holds without it; – for a bound without slack), and critical t / t for "
              f"a training effect over seeds (1 where its interval touches the threshold). Margins above "
              f"{MARGIN_WARNING} are flagged ⚠ ({len(flagged)} in this run).", "",
              "| chapter | verifications | consistency | sanity | killed | largest margin |",
              "|---|---|---|---|---|---|"]
    for chapter in chapters:
        recs = by_chapter[chapter]
        ver = [r for r in recs if r["kind"] == "verification"]
        killed = sum(any(m["killed"] for m in mutants.get((chapter, r["id"]), [])) for r in ver)
        margins = [r["margin"] for r in recs if r.get("margin") is not None]
        where = f"{{doc}}`/notebooks/{chapter}`" if chapter in order else f"`{chapter}`"
        lines.append(f"| {where} | {len(ver)} | {sum(r['kind'] == 'consistency' for r in recs)} | "
                     f"{sum(r['kind'] == 'sanity' for r in recs)} | "
                     f"{killed if summary is not None else '–'} | "
                     f"{_margin_text({'margin': max(margins)}) if margins else '–'} |")
    lines.append("")
    for chapter in chapters:
        recs = by_chapter[chapter]
        ok = sum(r["passed"] for r in recs)
        where = f"{{doc}}`/notebooks/{chapter}`" if chapter in order else f"`{chapter}`"
        lines += [f"## {_chapter_title(chapter)}", "",
                  f"{where}: {ok}/{len(recs)} pass · scale `{recs[0].get('scale')}` · "
                  f"device `{recs[0].get('device')}`", ""]
        for kind in (*KINDS, "unlabelled"):
            rows = [r for r in recs if r["kind"] == kind]
            if not rows:
                continue
            last = "killed by" if kind == "verification" else "result"
            lines += [f"**{kind.capitalize()}** ({len(rows)})", "",
                      f"| claim | statement | measured | prediction | margin | {last} |",
                      "|---|---|---|---|---|---|"]
            for r in rows:
                thm = f"<br>{{prf:ref}}`{r['theorem']}`" if r.get("theorem") else ""
                mark = "✅" if r["passed"] else "❌ FAIL"
                if kind == "verification":
                    ms = mutants.get((chapter, r["id"]), [])
                    killers = ", ".join(f"`{m['id']}`" + (" (unit)" if m["level"] == "unit" else "")
                                        for m in ms if m["killed"])
                    mark += " " + (killers or ("**none**" if summary is not None else "not run"))
                cid = f"`{r['id']}`"
                if chapter in order:  # the report is book/verification.html, chapters notebooks/<part>/...
                    cid = f'<a href="../notebooks/{chapter}.html#{claim_anchor(r["id"])}">{cid}</a>'
                lines.append(f"| {cid}{thm} | {_cell(r['statement'])} | "
                             f"{_fmt(r['measured'], r.get('digits', 4))} | {_cell(_prediction_text(r))} | "
                             f"{_margin_text(r)} | {mark} |")
            lines.append("")
    return "\n".join(lines)


def _runs(folder: Path) -> dict[str, dict]:
    out = {}
    for path in sorted(Path(folder).glob("*/_run.json")):
        rec = json.loads(path.read_text())
        out[rec["chapter"]] = rec
    return out


def committed_run_record(root: Path, chapter: str) -> dict | None:
    """The run record a committed notebook shows: the value of its last cell, ``run.report()``.

    Lets the status page list every chapter's book-scale time and machine when the build renders
    committed outputs instead of executing them (no ``_run.json`` is written then).
    """
    import ast

    import nbformat

    path = Path(root) / "notebooks" / f"{chapter}.ipynb"
    if not path.is_file():
        return None
    cells = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    if not cells or "run.report()" not in cells[-1].source:
        return None
    for out in cells[-1].get("outputs", []):
        if out.get("output_type") == "execute_result":
            try:
                rec = ast.literal_eval(out.get("data", {}).get("text/plain", ""))
            except (ValueError, SyntaxError):
                return None
            return rec if isinstance(rec, dict) and rec.get("chapter") == chapter else None
    # ``run.report();`` shows no value, only the line it prints
    for out in cells[-1].get("outputs", []):
        for m in _REPORT_LINE.finditer("".join(out.get("text", ""))):
            if m["chapter"] == chapter:
                return {"chapter": chapter, "scale": m["scale"], "device": m["device"],
                        "threads": int(m["threads"]), "elapsed_s": float(m["elapsed"])}
    return None


#: The lines ``Run.report`` prints (one line in runs committed before it broke them in two).
_REPORT_LINE = re.compile(r"^(?P<chapter>\S+): scale=(?P<scale>\w+), device=(?P<device>[^,\s]+),\s+"
                          r"threads=(?P<threads>\d+), elapsed (?P<elapsed>[0-9.]+) s$", re.MULTILINE)


def _tool_versions() -> str:
    from importlib import metadata

    out = []
    for dist in ("jupyter-book", "myst-nb", "sphinx", "sphinx-proof"):
        try:
            out.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            out.append(f"{dist} (not installed)")
    return ", ".join(out)


def status_markdown(claims_dir: Path) -> str:
    """Execution time of each notebook at book and smoke scale, against the budgets."""
    claims_dir = Path(claims_dir)
    book = _runs(claims_dir)
    smoke = _runs(claims_dir.parent / (claims_dir.name + "-smoke"))
    root = runtime.repo_root()
    chapters = _chapters_in_toc(root)
    def alone(rec: dict | None) -> bool:  # make test's workers run notebooks side by side
        return rec is not None and rec.get("notebooks_at_once", 1) == 1

    # A chapter without a record of its own time (none, or one measured beside other notebooks) is judged by
    # the record its committed notebook ends with.
    committed = {c: r for c in chapters if not alone(book.get(c)) and (r := committed_run_record(root, c))}
    lines = ["| chapter | smoke (s) | book (s) | book device | within budget | book run |",
             "|---|---|---|---|---|---|"]
    total, n_shared = 0.0, 1
    for chapter in chapters:
        s, live = smoke.get(chapter), book.get(chapter)
        b = live if alone(live) else committed.get(chapter, live)
        s_t = s["elapsed_s"] if alone(s) else None
        b_t = b["elapsed_s"] if alone(b) else None
        total += b_t or 0.0
        ok = ((s_t is None or s_t < SMOKE_BUDGET_S) and (b_t is None or b_t < BOOK_BUDGET_S))
        verdict = "–" if s_t is None and b_t is None else ("yes" if ok else "**no**")
        origin = "committed output" if chapter in committed else ("this build" if b else "–")
        book_time = _fmt(b_t, 3) if b_t is not None else "–"
        if live is not None and not alone(live):
            book_time += f" ({_fmt(live['elapsed_s'], 3)} shared)"
        smoke_time = _fmt(s_t, 3) if s_t is not None else (f"({_fmt(s['elapsed_s'], 3)} shared)" if s else "–")
        lines.append(f"| {{doc}}`/notebooks/{chapter}` | {smoke_time} | {book_time} | "
                     f"{b['device'] if b else '–'} | {verdict} | {origin} |")
        n_shared = max([n_shared, *(r.get("notebooks_at_once", 1) for r in (s, live) if r)])
    lines += ["", f"Whole book at book scale (sum of the chapters' in-notebook times, each measured alone): "
              f"**{total:.0f} s** against a budget of {WHOLE_BOOK_BUDGET_S:.0f} s.", ""]
    if n_shared > 1:
        lines += [f"A time marked *shared* was measured while `make test` ran {n_shared} notebooks at once on "
                  "these cores: it is not that notebook's time alone, so it is neither held to the budget nor "
                  "summed; the book-scale time beside it is the committed notebook's own record. `make book` "
                  "runs the chapters one at a time.", ""]
    lines += [f"Rendered with {_tool_versions()}.", ""]
    machines = sorted({(r.get("cpu") or "unknown", r.get("python") or "?", r.get("numpy") or "?",
                        r.get("torch") or "?") for r in [*book.values(), *committed.values()] if "cpu" in r})
    if machines:
        lines += ["Book-scale runs recorded on (trained results can differ in their last digits between "
                  "CPUs; the claims must not):", "",
                  "| CPU | python | numpy | torch |", "|---|---|---|---|"]
        lines += [f"| {_cell(cpu)} | {py} | {npv} | {tv} |" for cpu, py, npv, tv in machines] + [""]
    stages = {}
    for stage in MAKE_TEST_STAGES:
        path = claims_dir.parent / "timings" / f"{stage}.txt"
        if path.is_file():
            stages[stage] = float(path.read_text().split()[0])
    if stages:
        lines += ["Wall time of the last `make test` stages on this machine (the strict build that "
                  "renders this page comes after them):", "",
                  "| stage | seconds |", "|---|---|"]
        lines += [f"| `{s}` | {v:.0f} |" for s, v in stages.items()]
        lines += ["", f"Sum: **{sum(stages.values()):.0f} s** against the {MAKE_TEST_BUDGET_S:.0f} s budget "
                  "of `make test` (set-up counts only when the venv was built in that run).", ""]
    local = claims_dir.parent / "thread-check" / "summary.json"
    lines += thread_check_lines(local if local.is_file() else root / "results" / "thread-check.json",
                                committed=not local.is_file())
    return "\n".join(lines)


def thread_check_lines(path: Path, committed: bool = False) -> list[str]:
    """The last ``make thread-check``: training claims rerun with two torch threads per seed.

    ``committed``: ``path`` is the record committed with the book (``results/thread-check.json``), shown
    when this machine has not run the check itself.
    """
    path = Path(path)
    if not path.is_file():
        return ["`make thread-check` (training chapters rerun with two torch threads per seed) has not "
                "been run on this machine.", ""]
    summary = json.loads(path.read_text())
    where = ""
    if committed:
        where = (f" (the committed record `results/thread-check.json`, run on {summary.get('date', 'an unrecorded date')} "
                 f"at commit `{summary.get('commit', 'unrecorded')}`; this machine has not run `make thread-check`)")
    lines = [f"`make thread-check` reran the training chapters with two torch threads per seed on "
             f"{_cell(summary.get('cpu') or 'unknown')}{where}: **{summary['changed']} of {summary['claims']}** "
             f"claims measured a different value than with one thread, and "
             f"{'**all pass with both**' if summary['ok'] else '**some fail**'}.", "",
             "| chapter | claims | value changed | fail with 2 threads | seconds | run |",
             "|---|---|---|---|---|---|"]
    for chapter, rec in summary["chapters"].items():
        rows = rec["claims"]
        failed = [r["id"] for r in rows if not r["passed_2"]]
        run = (f"{_cell(rec.get('cpu', '?'))}, {rec.get('date', '?')}, `{rec['commit']}`" if rec.get("commit")
               else "this run")
        lines.append(f"| {{doc}}`/notebooks/{chapter}` | {len(rows)} | {sum(r['changed'] for r in rows)} | "
                     f"{', '.join(failed) or 'none'}{' (' + _cell(rec['error']) + ')' if rec.get('error') else ''} | "
                     f"{rec['seconds']} | {run} |")
    return lines + [""]


# ----------------------------------------------------------------------------
# Claims inside the chapters: anchors the report links to, and a banner for failures



def claim_anchor(cid: str) -> str:
    """The HTML id of the output where claim ``cid`` prints (``.`` is not safe in a CSS selector)."""
    return "claim-" + re.sub(r"[^a-z0-9_-]", "-", cid)


def mark_claims(doctree, known: list[str] | None = None, failed_records: list[str] | None = None,
                full_scale: bool = False) -> dict:
    """Anchor each claim at the first output that names it; banner the chapter if any failed.

    A claim's pass line (``[PASS] id ...``) is where it was made; a claim printed with ``show=False``
    has only its row in the ``run.report()`` table, which is used instead (``known``: the chapter's
    recorded ids, since tables of earlier runs cut ids at 44 characters). Failures come from ``[FAIL]`` lines
    in the outputs and from ``failed_records`` (the last run's records). ``full_scale``: a committed
    appendix page, whose claims the report (built from this build's runs) does not list. Returns what was done:
    ``{"anchors": {id: anchor}, "failed": [ids]}``.
    """
    from docutils import nodes

    from .claims import KINDS

    anchored: dict[str, str] = {}
    failed: list[str] = list(failed_records or [])
    blocks = list(doctree.findall(nodes.literal_block))  # cell sources and text outputs
    for block in blocks:
        for mark, cid in CLAIM_LINE.findall(block.astext()):
            if mark == "FAIL" and cid not in failed:
                failed.append(cid)
            if cid not in anchored:
                anchored[cid] = claim_anchor(cid)
                block["ids"].append(anchored[cid])
    # (first two words of each row of run.report()'s table) per block, split once for every claim
    table_rows = [{tuple(r[:2]) for line in b.astext().splitlines() if len(r := line.split()) > 1 and r[1] in KINDS}
                  for b in blocks]
    for cid in known or []:
        if cid in anchored:
            continue
        for block, rows in zip(blocks, table_rows):
            if any(head in (cid, cid[:44]) for head, _ in rows):
                anchored[cid] = claim_anchor(cid)
                block["ids"].append(anchored[cid])
                break
    if failed:
        banner = nodes.error()
        where = "at full scale" if full_scale else "in the last run"
        para = nodes.paragraph(text=f"{len(failed)} claim(s) of this chapter FAILED {where}: ")
        for i, cid in enumerate(failed):
            if i:
                para += nodes.Text(", ")
            ref = nodes.reference("", "", refuri=f"#{claim_anchor(cid)}") if cid in anchored else nodes.inline()
            ref += nodes.literal(text=cid)
            para += ref
        from sphinx import addnodes

        if full_scale:  # the report lists this build's runs, not the committed appendix
            para += nodes.Text(". The failing cell prints each one with its values; every cell after it still ran.")
        else:
            para += nodes.Text(". The ")
            report = addnodes.pending_xref("", refdomain="std", reftype="doc", reftarget="/book/verification",
                                           refexplicit=True, refwarn=True)
            report += nodes.inline(text="verification report")
            para += report
            para += nodes.Text(" lists them with their values.")
        banner += para
        section = next(iter(doctree.findall(nodes.section)), None)
        if section is not None and section.children and isinstance(section[0], nodes.title):
            section.insert(1, banner)
        else:
            doctree.insert(0, banner)
    return {"anchors": anchored, "failed": failed}


def _doctree_read(app, doctree) -> None:
    docname = app.env.docname
    if docname.startswith("results/full/") and docname != "results/full/index":
        mark_claims(doctree, full_scale=True)  # failures from the committed outputs' [FAIL] lines
        return
    if not docname.startswith("notebooks/"):
        return
    from .claims import load_records

    chapter = docname[len("notebooks/"):]
    folder = _claims_dir(app)
    records = load_records(folder, chapter) if folder.is_dir() else []
    mark_claims(doctree, known=[r["id"] for r in records],
                failed_records=[r["id"] for r in records if not r.get("passed", True)])


def _unique_scripts(app, pagename, templatename, context, doctree) -> None:
    """Drop repeated <script> entries: jupyter-book 1 registers sphinx-thebe's and togglebutton's inline
    setup twice, and the second ``const THEBE_JS_URL`` is a console error on every page."""
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, unique = set(), []
    for js in scripts:
        # an inline script is registered once with filename None and once with '': the same script
        key = (getattr(js, "filename", None) or "", tuple(sorted(getattr(js, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            unique.append(js)
    scripts[:] = unique


def setup(app) -> dict[str, Any]:
    app.connect("config-inited", _config_inited)
    app.connect("env-get-outdated", _env_get_outdated)
    app.connect("env-before-read-docs", _env_before_read_docs)
    app.connect("source-read", _source_read)
    app.connect("doctree-read", _doctree_read)
    app.connect("build-finished", _build_finished)
    app.connect("html-page-context", _unique_scripts, priority=100)  # before any handler that returns a template
    # MathJax on every page: generated pages (status, report, appendix) show chapter titles with math
    # through references, which Sphinx does not count as math on that page.
    app.set_html_assets_policy("always")
    return {"version": "0.1", "parallel_read_safe": False, "parallel_write_safe": True}
