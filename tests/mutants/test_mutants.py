"""``make test-mutants``: every verification claim is killed by a planted error (registry.py).

Notebook-level mutants run their chapter at smoke scale (or, for a training claim that smoke scale cannot
make, at the chapter's ``mutant`` scale or at book scale: ``Mutant.scale``) through papermill with the patch
cell inserted after the parameters cell, two at a time (one per core); each must stop with
``ClaimFailed`` naming its claim. A kill at ``mutant`` scale counts only if the same chapter, run unpatched
at that scale in the same session (its control), makes every claim its mutants target and each holds.
Unit-level mutants run their pytest node. The outcomes and the
mutation score (verifications killed / verifications, over the book-scale claim records that
``make test-nbval`` or ``make book`` just wrote) go to ``_build/mutants/`` for the report.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from blindspots import claims, runtime
from blindspots.runtime import MUTANT_SCALE
from conftest import ROOT
from mutants.registry import all_mutants, planted_patch

MUTANTS = all_mutants()
OUT = ROOT / "_build" / "mutants"


def _with_patch(mutant, folder: Path) -> Path:
    """The chapter with the patch cell after its parameters cell (``mutant.patch`` None: the control's cell,
    which only sends the claim records to a folder of their own)."""
    nb = nbformat.read(ROOT / "notebooks" / f"{mutant.notebook}.ipynb", as_version=4)
    at = next(i for i, c in enumerate(nb.cells)
              if c.cell_type == "code" and "parameters" in c.metadata.get("tags", []))
    # each planted run records its claims in a folder of its own, set in its kernel (the runs share this
    # process's environment from several threads, and two runs of one chapter must not share its records)
    records = folder / "claims" / mutant.id
    cell = nbformat.v4.new_code_cell("# planted error: " + mutant.what.replace("\n", " ") + "\n"
                                     + f"import os as _os\n_os.environ['BLINDSPOTS_CLAIMS_DIR'] = {str(records)!r}\n"
                                     + (planted_patch(mutant) if mutant.patch else ""))
    nb.cells.insert(at + 1, cell)
    _, nb = nbformat.validator.normalize(nb)  # older notebooks carry no cell ids
    nb = nbformat.from_dict(nb)
    path = folder / f"{mutant.id}.ipynb"
    nbformat.write(nb, path)
    return path


def _run_notebook_mutant(mutant, folder: Path) -> dict:
    import papermill

    path = _with_patch(mutant, folder)  # its claims go to a folder of its own, not the book's records
    try:
        papermill.execute_notebook(str(path), str(folder / f"{mutant.id}.out.ipynb"),
                                   parameters={"scale": mutant.scale}, kernel_name="python3",
                                   cwd=str(ROOT / "notebooks" / Path(mutant.notebook).parent),
                                   progress_bar=False)
    except papermill.PapermillExecutionError as err:
        return {"ename": err.ename, "evalue": str(err.evalue)}
    return {"ename": None, "evalue": "the notebook ran to the end"}


@dataclass(frozen=True)
class Control:
    """A chapter run unpatched at ``mutant`` scale: the claims its mutants target must be made and hold."""

    notebook: str
    targets: tuple[str, ...]
    scale: str = MUTANT_SCALE
    patch: None = None
    what: str = "control: no planted error"
    level: str = "notebook"

    @property
    def id(self) -> str:
        return control_id(self.notebook)


def control_id(notebook: str) -> str:
    return "control-" + notebook.replace("/", "-")


def controls_for(mutants) -> list[Control]:
    """One control per chapter that has mutants at ``mutant`` scale."""
    chapters = sorted({m.notebook for m in mutants if m.scale == MUTANT_SCALE})
    return [Control(nb, tuple(sorted({c for m in mutants if m.notebook == nb and m.scale == MUTANT_SCALE
                                      for c in m.targets}))) for nb in chapters]


def _control_holds(control: Control, folder: Path) -> dict:
    """Each target claim recorded by the unpatched run, and whether it held."""
    root = folder / "claims" / control.id
    records = claims.load_records(root, chapter=control.notebook) if root.is_dir() else []
    found = {r["id"]: r["passed"] for r in records}
    return {c: found.get(c) for c in control.targets}


def _run_unit_mutant(mutant) -> dict:
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", mutant.unit],
                          cwd=ROOT, capture_output=True, text=True)
    return {"ename": "unit-pass" if proc.returncode == 0 else "unit-fail",
            "evalue": proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-300:]}


def _run_mutant(mutant, folder: Path) -> dict:
    """Either level: each runs in a process of its own (a kernel, or pytest), so both share one pool."""
    return _run_notebook_mutant(mutant, folder) if mutant.level == "notebook" else _run_unit_mutant(mutant)


def _killed(mutant, outcome: dict) -> bool:
    """Stopped on every target claim; at ``mutant`` scale, also each target held in the unpatched control
    (``outcome["control"]``: claim id -> held, None when not made)."""
    if mutant.level == "unit":
        return outcome["ename"] == "unit-pass"
    control = outcome.get("control")
    if mutant.scale == MUTANT_SCALE and not (control and all(control.get(c) is True for c in mutant.targets)):
        return False
    return outcome["ename"] == "ClaimFailed" and all(f"claim {c!r} failed" in outcome["evalue"]
                                                     for c in mutant.targets)


def _selected(session) -> list:
    """The mutants this pytest session runs: those selected (``-k``), or all when the score is asked for."""
    names = {item.name for item in session.items}
    if any(name.startswith("test_every_verification_is_killed") for name in names):
        return MUTANTS
    ids = {item.callspec.params["mutant"].id for item in session.items
           if hasattr(item, "callspec") and "mutant" in item.callspec.params}
    return [m for m in MUTANTS if m.id in ids]


@pytest.fixture(scope="session")
def outcomes(request, tmp_path_factory) -> dict:
    """Run the selected mutants once (notebook-level ones in parallel, a thread per kernel)."""
    from joblib import Parallel, delayed

    folder = tmp_path_factory.mktemp("mutants")
    chosen = _selected(request.session)
    OUT.mkdir(parents=True, exist_ok=True)
    if len(chosen) == len(MUTANTS):
        for old_record in OUT.glob("*.json"):  # the report must not list mutants of an earlier registry
            old_record.unlink()
    jobs = [*chosen, *controls_for(chosen)]
    # the long runs first, so that they do not end the pool alone
    order = sorted(range(len(jobs)), key=lambda i: {"book": 0, MUTANT_SCALE: 1}.get(jobs[i].scale, 2))
    ran = Parallel(n_jobs=runtime.physical_cores(), backend="threading")(
        delayed(_run_mutant)(jobs[i], folder) for i in order)
    results = [None] * len(jobs)
    for i, r in zip(order, ran):
        results[i] = r
    out = {m.id: r for m, r in zip(jobs, results)}
    for c in jobs[len(chosen):]:
        out[c.id] = {**out[c.id], "holds": _control_holds(c, folder)}
    for m in chosen:
        if m.scale == MUTANT_SCALE:
            out[m.id]["control"] = out.get(control_id(m.notebook), {}).get("holds")
        rec = {"id": m.id, "notebook": m.notebook, "kills": m.kills, "also": list(m.also), "what": m.what,
               "level": m.level, "unit": m.unit, "scale": m.scale,
               "killed": _killed(m, out[m.id]), **out[m.id]}
        (OUT / f"{m.id}.json").write_text(json.dumps(rec, indent=1))
    return out


@pytest.mark.parametrize("control", controls_for(MUTANTS), ids=lambda c: c.id)
def test_mutant_scale_makes_the_claims_unpatched(control, outcomes):
    """Without a planted error, the chapter at ``mutant`` scale makes each claim its mutants target, and each
    holds: a claim that failed there anyway would be killed by any patch."""
    if control.id not in outcomes:
        pytest.skip("no mutant of this chapter selected")
    holds = outcomes[control.id]["holds"]
    assert all(v is True for v in holds.values()), (
        f"{control.notebook} at mutant scale, unpatched: target claims not made (None) or failed (False): "
        f"{holds}; the run ended with {outcomes[control.id]['ename']}: {outcomes[control.id]['evalue'][:400]}")


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.id for m in MUTANTS])
def test_planted_error_kills_its_claim(mutant, outcomes):
    outcome = outcomes[mutant.id]
    assert _killed(mutant, outcome), (
        f"planted error {mutant.id!r} ({mutant.what}) should make claim {mutant.kills!r} of "
        f"{mutant.notebook} fail first; got {outcome['ename']}: {outcome['evalue'][:400]}")


def test_every_verification_is_killed(outcomes):
    """Mutation score 100 %: each verification claim at book scale has a mutant that killed it."""
    book = runtime.repo_root() / "_build" / "claims"
    if os.environ.get("BLINDSPOTS_CLAIMS_DIR"):
        book = Path(os.environ["BLINDSPOTS_CLAIMS_DIR"])
    records = claims.load_records(book) if book.is_dir() else []
    assert records, f"no book-scale claim records in {book}: run make test-nbval (or make book) first"
    verifications = sorted({(r["notebook"], r["id"]) for r in records if r.get("kind") == "verification"})
    killed = {(m.notebook, c) for m in MUTANTS if _killed(m, outcomes[m.id]) for c in m.targets}
    survivors = [f"{nb}: {cid}" for nb, cid in verifications if (nb, cid) not in killed]
    summary = {"verifications": len(verifications), "killed": len(verifications) - len(survivors),
               "score": (len(verifications) - len(survivors)) / len(verifications) if verifications else None,
               "not_killed": survivors, "mutants": len(MUTANTS)}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "summary.json").write_text(json.dumps(summary, indent=1))
    assert not survivors, f"verification claims no planted error kills: {survivors}"
