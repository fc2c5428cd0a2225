"""``make test-mutants``: every verification claim is killed by a planted error (registry.py).

Notebook-level mutants run their chapter at smoke scale (or, for a training claim only a book-scale run
makes, at book scale: ``Mutant.scale``) through papermill with the patch cell
inserted after the parameters cell, two at a time (one per core); each must stop with
``ClaimFailed`` naming its claim. Unit-level mutants run their pytest node. The outcomes and the
mutation score (verifications killed / verifications, over the book-scale claim records that
``make test-nbval`` or ``make book`` just wrote) go to ``_build/mutants/`` for the report.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from blindspots import claims, runtime
from conftest import ROOT
from mutants.registry import all_mutants, planted_patch

MUTANTS = all_mutants()
OUT = ROOT / "_build" / "mutants"


def _with_patch(mutant, folder: Path) -> Path:
    nb = nbformat.read(ROOT / "notebooks" / f"{mutant.notebook}.ipynb", as_version=4)
    at = next(i for i, c in enumerate(nb.cells)
              if c.cell_type == "code" and "parameters" in c.metadata.get("tags", []))
    # each planted run records its claims in a folder of its own, set in its kernel (the runs share this
    # process's environment from several threads, and two runs of one chapter must not share its records)
    records = folder / "claims" / mutant.id
    cell = nbformat.v4.new_code_cell("# planted error: " + mutant.what.replace("\n", " ") + "\n"
                                     + f"import os as _os\n_os.environ['BLINDSPOTS_CLAIMS_DIR'] = {str(records)!r}\n"
                                     + planted_patch(mutant))
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


def _run_unit_mutant(mutant) -> dict:
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", mutant.unit],
                          cwd=ROOT, capture_output=True, text=True)
    return {"ename": "unit-pass" if proc.returncode == 0 else "unit-fail",
            "evalue": proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-300:]}


def _run_mutant(mutant, folder: Path) -> dict:
    """Either level: each runs in a process of its own (a kernel, or pytest), so both share one pool."""
    return _run_notebook_mutant(mutant, folder) if mutant.level == "notebook" else _run_unit_mutant(mutant)


def _killed(mutant, outcome: dict) -> bool:
    if mutant.level == "unit":
        return outcome["ename"] == "unit-pass"
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
    # the long book-scale runs first, so that they do not end the pool alone
    order = sorted(range(len(chosen)), key=lambda i: chosen[i].scale != "book")
    ran = Parallel(n_jobs=runtime.physical_cores(), backend="threading")(
        delayed(_run_mutant)(chosen[i], folder) for i in order)
    results = [None] * len(chosen)
    for i, r in zip(order, ran):
        results[i] = r
    out = {m.id: r for m, r in zip(chosen, results)}
    for m in chosen:
        rec = {"id": m.id, "notebook": m.notebook, "kills": m.kills, "also": list(m.also), "what": m.what,
               "level": m.level,
               "unit": m.unit, "scale": m.scale, "killed": _killed(m, out[m.id]), **out[m.id]}
        (OUT / f"{m.id}.json").write_text(json.dumps(rec, indent=1))
    return out


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
