"""``make thread-check``: rerun the training chapters with two torch threads per seed and compare claims.

The book runs each seed in its own worker with one torch thread. A different thread count runs other
kernels (reductions split differently), so trained models differ in their last digits, and a claim
that only holds for one floating-point path would flip. This script reruns every chapter that trains
through ``runtime.map_seeds`` at book scale with ``BLINDSPOTS_THREADS=2 BLINDSPOTS_SEED_JOBS=1``
(two threads per seed, one seed at a time: no oversubscription on two cores) and compares each claim
with the one-thread record that ``make book`` or ``make test-nbval`` wrote to ``_build/claims``.

It prints one row per claim (measured with 1 and 2 threads, whether it changed, whether both pass),
writes ``_build/thread-check/summary.json`` (the status page shows it; with ``--record`` also the
committed ``results/thread-check.json``, which the page shows on builds that did not run it) and exits
non-zero if a claim fails or is missing. Run it after ``make book``; it takes about as long as the training chapters.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The committed record of the last full run (``--record``), shown by the status page on any build.
COMMITTED = ROOT / "results" / "thread-check.json"


def training_chapters() -> list[str]:
    """Chapters whose code cells train through ``runtime.map_seeds`` (``part/NN_name``)."""
    import nbformat

    out = []
    for path in sorted((ROOT / "notebooks").glob("*/*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        if any(c.cell_type == "code" and "map_seeds" in c.source for c in nb.cells):
            out.append(f"{path.parent.name}/{path.stem}")
    return out


def _records(folder: Path) -> dict[str, dict]:
    """Claim records only: a chapter may keep other JSON beside them (run record, per-seed data)."""
    out = {}
    for path in sorted(folder.glob("*.json")):
        rec = json.loads(path.read_text())
        if isinstance(rec, dict) and "measured" in rec and "passed" in rec:
            out[path.stem] = rec
    return out


def _run(chapter: str, claims_dir: Path, out_dir: Path) -> tuple[float, str | None]:
    import papermill

    os.environ.update(BLINDSPOTS_THREADS="2", BLINDSPOTS_SEED_JOBS="1", BLINDSPOTS_CLAIMS_DIR=str(claims_dir))
    start = time.perf_counter()
    error = None
    try:
        papermill.execute_notebook(str(ROOT / "notebooks" / f"{chapter}.ipynb"),
                                   str(out_dir / f"{chapter.replace('/', '__')}.ipynb"),
                                   parameters={"scale": "book"}, kernel_name="python3",
                                   cwd=str(ROOT / "notebooks" / chapter.split("/")[0]), progress_bar=False)
    except papermill.PapermillExecutionError as err:
        error = f"{err.ename}: {str(err.evalue)[:300]}"
    return time.perf_counter() - start, error


def compare(reference: dict[str, dict], rerun: dict[str, dict]) -> list[dict]:
    """One row per claim of the reference run: values with 1 and 2 threads, changed, both passed."""
    rows = []
    for cid, ref in reference.items():
        new = rerun.get(cid)
        rows.append({
            "id": cid, "kind": ref["kind"], "measured_1": ref["measured"],
            "measured_2": None if new is None else new["measured"],
            "changed": new is None or new["measured"] != ref["measured"],
            "passed_1": ref["passed"], "passed_2": bool(new and new["passed"]),
            "pass_line_same": bool(new) and new["statement"] == ref["statement"] and new["passed"] == ref["passed"],
        })
    return rows


def record(summary: dict, path: Path) -> dict:
    """Write ``summary`` to the committed record at ``path``; chapters of an earlier record that this
    run did not rerun are kept (each with its own date, commit and CPU), and the totals recounted."""
    merged = {"threads_per_seed": summary["threads_per_seed"], "chapters": {}}
    if path.is_file():
        merged["chapters"].update(json.loads(path.read_text()).get("chapters", {}))
    for chapter, rec in summary["chapters"].items():
        merged["chapters"][chapter] = {**rec, "cpu": summary["cpu"], "date": summary["date"],
                                       "commit": summary["commit"]}
    rows = [r for c in merged["chapters"].values() for r in c["claims"]]
    runs = list(merged["chapters"].values())
    merged.update(
        cpu=", ".join(sorted({c.get("cpu", "unknown") for c in runs})),
        date=max(c.get("date", "") for c in runs), commit=summary["commit"], claims=len(rows),
        changed=sum(r["changed"] for r in rows),
        ok=all(c.get("error") is None for c in runs) and all(r["passed_1"] and r["passed_2"] for r in rows))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(merged, indent=1) + "\n")
    return merged


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("chapters", nargs="*", help="part/NN_name (default: every chapter that calls map_seeds)")
    parser.add_argument("--reference", default=str(ROOT / "_build" / "claims"),
                        help="one-thread claim records (default _build/claims, written by make book)")
    parser.add_argument("--out", default=str(ROOT / "_build" / "thread-check"))
    parser.add_argument("--record", action="store_true",
                        help=f"also write the summary into {COMMITTED.relative_to(ROOT)} (committed; the status "
                             "page shows it where no local run exists), keeping chapters this run did not rerun")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(ROOT / "src"))
    from blindspots import runtime

    chapters = args.chapters or training_chapters()
    reference_root, out = Path(args.reference), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from datetime import datetime, timezone

    from blindspots.fullscale import git_commit

    summary = {"threads_per_seed": [1, 2], "cpu": runtime.cpu_model(), "commit": git_commit(ROOT),
               "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "chapters": {}}
    ok = True
    for chapter in chapters:
        reference = _records(runtime.chapter_records_dir(chapter, reference_root))
        if not reference:
            print(f"{chapter}: no one-thread records in {reference_root}; run `make book` first")
            return 2
        seconds, error = _run(chapter, out / "claims", out)
        rows = compare(reference, _records(runtime.chapter_records_dir(chapter, out / "claims")))
        summary["chapters"][chapter] = {"seconds": round(seconds), "error": error, "claims": rows}
        print(f"\n{chapter} ({seconds:.0f} s with 2 threads per seed){'  ERROR ' + error if error else ''}")
        print(f"  {'claim':<44} {'kind':<12} {'1 thread':>12} {'2 threads':>12}  changed  passes")
        for r in rows:
            m2 = "missing" if r["measured_2"] is None else f"{r['measured_2']:.6g}"
            print(f"  {r['id'][:44]:<44} {r['kind']:<12} {r['measured_1']:>12.6g} {m2:>12}  "
                  f"{'yes' if r['changed'] else 'no':>7}  {'both' if r['passed_1'] and r['passed_2'] else 'NO'}")
        ok &= error is None and all(r["passed_1"] and r["passed_2"] for r in rows)
    n = sum(len(c["claims"]) for c in summary["chapters"].values())
    n_changed = sum(r["changed"] for c in summary["chapters"].values() for r in c["claims"])
    summary.update(claims=n, changed=n_changed, ok=ok)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    if args.record:
        record(summary, COMMITTED)
    print(f"\n{n} claims; measured value changed with 2 threads: {n_changed}; all pass with both: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
