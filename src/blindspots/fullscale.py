"""Full-scale runs (``make full``): every chapter at ``scale="full"``, kept as the book's appendix.

Each chapter runs through papermill into ``results/full/<part>/<chapter>.ipynb``, saved after every
cell, so an interrupted ``make full`` resumes at the first chapter not yet complete. A provenance
cell inserted after the parameters prints the device, the accelerator or CPU model, the date and the
git commit the run used, so the appendix page says where its numbers come from. The copy keeps the
code and its outputs; the prose (theorems, proofs, labels) stays in the chapter, which the page links
to, so the book never holds two copies of a label. The appendix index (``results/full/index.md``) is
filled by :func:`appendix_markdown` at build time: each chapter's run, or the command that makes it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from unittest import mock

from . import claims, runtime

RESULTS = Path("results") / "full"
PROVENANCE_TAG = "full-scale-provenance"


def chapters(root: Path | None = None) -> list[str]:
    """The book's chapters (``part/NN_name``) in table-of-contents order."""
    import yaml

    root = Path(root or runtime.repo_root())
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files = [c["file"] for part in toc.get("parts", []) for c in part.get("chapters", [])]
    return [f.removeprefix("notebooks/").removesuffix(".ipynb") for f in files if f.startswith("notebooks/")]


#: Repeats of a committed full-scale run on another floating-point path (``make full REPEAT=name``):
#: the environment each sets for the kernel and its seed workers, and what it changes, for the page.
REPEATS: dict[str, dict] = {
    # torch's own kernels without vector instructions, MKL's BLAS at SSE4.2, oneDNN at SSE4.1, numpy's
    # OpenBLAS as on a Nehalem and numpy's loops at their x86-64-v2 baseline: the arithmetic of a CPU
    # without AVX2 or FMA, on this one; same seeds, workers and threads as the run it repeats
    "sse": {"env": {"ATEN_CPU_CAPABILITY": "default", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
                    "ONEDNN_MAX_CPU_ISA": "SSE41", "OPENBLAS_CORETYPE": "Nehalem", "NPY_DISABLE_CPU_FEATURES": "X86_V3"},
            "title": "Full scale, without AVX2",
            "what": "torch, MKL, oneDNN, OpenBLAS and numpy limited to SSE4 instructions, the arithmetic of a CPU "
                    "without AVX2 or FMA: the same code, seeds, workers and threads on another floating-point path"},
    # two torch threads per seed, one seed at a time (reductions split differently)
    "threads2": {"env": {"BLINDSPOTS_THREADS": "2", "BLINDSPOTS_SEED_JOBS": "1"},
                 "title": "Full scale, 2 threads per seed",
                 "what": "two torch threads per seed and one seed at a time: the same code and seeds, reductions "
                         "split differently"},
}


def _check_repeat(repeat: str | None) -> None:
    if repeat is not None and repeat not in REPEATS:
        raise ValueError(f"repeat must be None or one of {sorted(REPEATS)}, got {repeat!r}")


def output_path(chapter: str, root: Path | None = None, repeat: str | None = None) -> Path:
    """Where a chapter's full-scale run lives; ``repeat`` (a key of :data:`REPEATS`) names a repeat of it
    on another floating-point path, ``<chapter>_<repeat>.ipynb`` beside the run it repeats."""
    _check_repeat(repeat)
    suffix = "" if repeat is None else f"_{repeat}"
    return Path(root or runtime.repo_root()) / RESULTS / f"{chapter}{suffix}.ipynb"


def run_info(path: Path) -> dict | None:
    """The ``blindspots_full`` metadata of a full-scale notebook (None if there is none)."""
    import nbformat

    if not Path(path).is_file():
        return None
    return nbformat.read(path, as_version=4).metadata.get("blindspots_full")


def is_complete(path: Path) -> bool:
    info = run_info(path)
    return bool(info and info.get("complete"))


def git_commit(root: Path | None = None) -> str:
    """``HEAD``'s short hash, with ``+dirty`` when tracked files differ from it (``unknown`` outside git)."""
    root = Path(root or runtime.repo_root())
    try:
        head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root, capture_output=True,
                              text=True, check=True).stdout.strip()
        # the full-scale notebooks being written are not the code that made them
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                ":(exclude)results"], cwd=root,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def device_model(device: str) -> str:
    """The accelerator's name for a CUDA device, else the CPU model."""
    if str(device).startswith("cuda"):
        import torch

        return torch.cuda.get_device_name(torch.device(device))
    return runtime.cpu_model()


def provenance(chapter: str, device: str = "auto") -> dict:
    """Print and return where and when this full-scale run happened (the inserted cell calls this)."""
    dev = str(runtime.resolve_device(device))
    info = {"chapter": chapter, "scale": "full", "device": dev, "model": device_model(dev),
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "commit": git_commit(),
            "python": platform.python_version()}
    # a repeat says how its arithmetic differs from the run it repeats
    keys = sorted({k for r in REPEATS.values() for k in r["env"]})
    info["environment"] = {k: os.environ[k] for k in keys if os.environ.get(k)}
    how = "".join(f", {k}={v}" for k, v in info["environment"].items())
    if "ATEN_CPU_CAPABILITY" in info["environment"]:
        import torch

        how += f" (torch CPU kernels: {torch.backends.cpu.get_cpu_capability()})"
    print(f"Full-scale run of {chapter}: device {dev} ({info['model']}), {info['date']}, "
          f"code at commit {info['commit']}{how}")
    return info


def _prepare(chapter: str, root: Path, repeat: str | None = None):
    """The chapter notebook with headings only for prose, a link back, and the provenance cell."""
    import nbformat

    nb = nbformat.read(root / "notebooks" / f"{chapter}.ipynb", as_version=4)
    cells, titled = [], False
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
            cells.append(cell)
            if "parameters" in cell.metadata.get("tags", []):
                src = f"from blindspots import fullscale\nfullscale.provenance({chapter!r}, device)"
                extra = nbformat.v4.new_code_cell(src, metadata={"tags": [PROVENANCE_TAG]})
                cells.append(extra)
            continue
        heads = [ln for ln in cell.source.splitlines() if re.match(r"#{1,4} ", ln)]
        if not heads:
            continue
        if not titled and heads[0].startswith("# "):
            title = "Full scale" if repeat is None else REPEATS[repeat]["title"]
            heads[0] = f"# {title}: {heads[0][2:].strip()}"
            heads.insert(1, f"\nOutputs of {{doc}}`/notebooks/{chapter}` rerun at `scale = \"full\"`. The "
                            "statements, derivations and proofs are in that chapter; this page keeps its code "
                            "and what the code printed and drew at full scale.")
            if repeat is not None:
                heads.insert(2, f"\nA repeat of {{doc}}`/{RESULTS.as_posix()}/{chapter}` with "
                                f"{REPEATS[repeat]['what']}.")
            titled = True
        else:  # lower headings only; a copy of the chapter's sections would repeat its table of contents
            heads = ["#" + h if h.startswith("# ") else h for h in heads]
        cells.append(nbformat.v4.new_markdown_cell("\n".join(heads)))
    nb.cells = cells
    _, nb = nbformat.validator.normalize(nb)
    return nbformat.from_dict(nb)


def run_chapter(chapter: str, root: Path | None = None, device: str = "auto", repeat: str | None = None) -> dict:
    """Run one chapter at full scale into :func:`output_path`; returns its ``blindspots_full`` record.

    ``repeat`` (a key of :data:`REPEATS`) reruns it with that entry's environment into a separate notebook,
    so a reader can see whether the verdicts survive another floating-point path.
    """
    import nbformat
    import papermill

    _check_repeat(repeat)
    root = Path(root or runtime.repo_root())
    out = output_path(chapter, root, repeat)
    out.parent.mkdir(parents=True, exist_ok=True)
    staged = out.with_suffix(".input.ipynb")
    nbformat.write(_prepare(chapter, root, repeat), staged)
    os.environ.setdefault("BLINDSPOTS_CLAIMS_DIR", str(root / "_build" / "claims-full"))
    # the code the run starts from: commits made while it runs are not what made its numbers
    commit = git_commit(root)
    start, error = time.perf_counter(), None
    # a repeat's environment reaches the kernel and its seed workers, and is undone after the run
    env = REPEATS[repeat]["env"] if repeat is not None else {}
    try:
        # allow_errors: a claim that fails at full scale must not hide the cells after it (its figure,
        # its tables); papermill still raises at the end, so the run is known to have failed
        with mock.patch.dict(os.environ, env):
            papermill.execute_notebook(str(staged), str(out), parameters={"scale": "full", "device": device},
                                       kernel_name="python3", cwd=str(root / "notebooks" / chapter.split("/")[0]),
                                       progress_bar=False, request_save_on_cell_execute=True, allow_errors=True)
    except papermill.PapermillExecutionError as err:
        error = f"{err.ename}: {str(err.evalue)[:400]}"
    except Exception as err:  # a dead kernel (out of memory) must still leave the run marked incomplete
        error = f"{type(err).__name__}: {str(err)[:400]}"
    finally:
        staged.unlink(missing_ok=True)
    nb = nbformat.read(out, as_version=4)
    # papermill's red "stopped here" markers: wrong when allow_errors ran on, and the page's banner names the claims
    nb.cells = [c for c in nb.cells if "papermill-error-cell-tag" not in c.metadata.get("tags", [])]
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    claim_errors = [claims.failed_ids(o.get("evalue", "")) for o in errors if o.get("ename") == "ClaimFailed"]
    failed_claims = [cid for ids in claim_errors for cid in ids]
    # a run whose every error is a failed claim measured everything: it is a result, not a crash
    measured = error is not None and bool(errors) and len(claim_errors) == len(errors) and all(claim_errors)
    info = {"chapter": chapter, "complete": error is None or measured, "error": error,
            "failed_claims": failed_claims,
            "elapsed_s": round(time.perf_counter() - start, 1), "commit": commit,
            "finished": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    for cell in nb.cells:  # the provenance cell's printed record
        if PROVENANCE_TAG in cell.metadata.get("tags", []):
            text = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")
            info["provenance"] = text.strip()
    nb.metadata["blindspots_full"] = info
    nbformat.write(nb, out)
    return info


def failed_claims(root: Path | None = None) -> list[tuple[str, list[str]]]:
    """``(chapter, claim ids)`` for every committed full-scale run in which claims failed, in book order."""
    root = Path(root or runtime.repo_root())
    out = []
    for chapter in chapters(root):
        info = run_info(output_path(chapter, root)) or {}
        if info.get("failed_claims"):
            out.append((chapter, list(info["failed_claims"])))
    return out


def failed_claims_box(failing: list[tuple[str, list[str]]]) -> list[str]:
    """A red MyST box naming the claims of :func:`failed_claims` (no lines when none failed)."""
    if not failing:
        return []
    named = "; ".join(f"{{doc}}`/{RESULTS.as_posix()}/{ch}`: " + ", ".join(f"`{c}`" for c in ids) for ch, ids in failing)
    return ["```{error}", f"Claims that FAILED at full scale: {named}. Each page shows the failing cell and every "
            "cell after it; the chapter's prose says what the failure means.", "```", ""]


def appendix_markdown(root: Path | None = None) -> str:
    """The appendix index: each chapter's full-scale run, or the command that makes it."""
    root = Path(root or runtime.repo_root())
    lines = ["| chapter | full-scale run | device and date | time (s) | commit |", "|---|---|---|---|---|"]
    waiting, failing = [], []
    for chapter in chapters(root):
        info, extra = run_info(output_path(chapter, root)), []
        for repeat in repeats(chapter, root):
            rinfo = run_info(output_path(chapter, root, repeat)) or {}
            if rinfo.get("complete"):
                agree = "same verdicts" if verdicts_agree(chapter, repeat, root) else "**verdicts differ**"
                extra.append(f"| {{doc}}`/notebooks/{chapter}` | {{doc}}`/{RESULTS.as_posix()}/{chapter}_{repeat}` "
                             f"(repeat `{repeat}`; {agree}) | "
                             f"{_cell(rinfo.get('provenance', '').split(': ', 1)[-1])} | {rinfo['elapsed_s']:.0f} | "
                             f"`{rinfo['commit']}` |")
        if info and info.get("complete"):
            fails = info.get("failed_claims") or []
            if fails:
                failing.append((chapter, list(fails)))
            mark = " **claim failed:** " + ", ".join(f"`{c}`" for c in fails) if fails else ""
            lines.append(f"| {{doc}}`/notebooks/{chapter}` | {{doc}}`/{RESULTS.as_posix()}/{chapter}`{mark} | "
                         f"{_cell(info.get('provenance', '').split(': ', 1)[-1])} | {info['elapsed_s']:.0f} | "
                         f"`{info['commit']}` |")
        else:
            why = f"failed: {_cell(info['error'])}" if info and info.get("error") else "not run yet"
            lines.append(f"| {{doc}}`/notebooks/{chapter}` | {why} | – | – | – |")
            waiting.append(chapter)
        lines += extra
    lines = failed_claims_box(failing) + lines  # above the table, in red
    if waiting:
        lines += ["", "Waiting for a run (paper scale is meant for a GPU; `make full` resumes where it stopped):",
                  "", "```bash"] + [f"make full CHAPTERS={c}" for c in waiting] + ["```"]
    return "\n".join(lines) + "\n"


def repeats(chapter: str, root: Path | None = None) -> list[str]:
    """The :data:`REPEATS` of a chapter's full-scale run that are committed beside it."""
    return [r for r in REPEATS if output_path(chapter, root, r).is_file()]


def claim_verdicts(path: Path) -> dict[str, str]:
    """``claim id -> "PASS" | "FAIL"`` from the ``[PASS]``/``[FAIL]`` lines a run printed (a claim that failed
    anywhere counts as failed)."""
    import nbformat

    out: dict[str, str] = {}
    for cell in nbformat.read(path, as_version=4).cells:
        for o in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if o.get("output_type") == "error":  # a ClaimFailed names its claims in its own format
                found = [("FAIL", cid) for cid in claims.failed_ids(o.get("evalue", ""))]
            else:
                text = o.get("text", "") if o.get("output_type") == "stream" else o.get("data", {}).get("text/plain", "")
                found = claims.CLAIM_LINE.findall("".join(text))
            for mark, cid in found:
                out[cid] = "FAIL" if out.get(cid) == "FAIL" else mark
    return out


def compare_repeat(chapter: str, repeat: str, root: Path | None = None) -> list[dict]:
    """One row per claim of a chapter's full-scale run and its ``repeat``: the verdict in each, and whether
    they agree (a claim missing from one run disagrees)."""
    first = claim_verdicts(output_path(chapter, root))
    second = claim_verdicts(output_path(chapter, root, repeat))
    ids = list(first) + [c for c in second if c not in first]
    return [{"id": c, "first": first.get(c, "missing"), "repeat": second.get(c, "missing"),
             "agree": first.get(c) is not None and first.get(c) == second.get(c)} for c in ids]


def glue_pairs(chapter: str, repeat: str, root: Path | None = None) -> dict[str, tuple]:
    """``name -> (first run's value, repeat's value)`` for every value both runs glued."""
    from .scorecard import notebook_glue

    a, b = notebook_glue(output_path(chapter, root)), notebook_glue(output_path(chapter, root, repeat))
    return {name: (a[name], b[name]) for name in sorted(set(a) & set(b))}


def glue_differences(chapter: str, repeat: str, root: Path | None = None) -> dict[str, float]:
    """The values of :func:`glue_pairs` that differ: ``name -> |first - repeat|`` (NaN when not numbers)."""
    import math

    out = {}
    for name, (x, y) in glue_pairs(chapter, repeat, root).items():
        numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (x, y))
        if numbers and not (x == y or (math.isnan(x) and math.isnan(y))):
            out[name] = abs(float(x) - float(y))
        elif not numbers and x != y:
            out[name] = math.nan
    return out


def verdicts_agree(chapter: str, repeat: str, root: Path | None = None) -> bool:
    rows = compare_repeat(chapter, repeat, root)
    return bool(rows) and all(r["agree"] for r in rows)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run chapters at scale='full' into results/full/ (resumable).")
    parser.add_argument("chapters", nargs="*", help="part/NN_name (default: every chapter in _toc.yml)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--force", action="store_true", help="rerun chapters that already completed")
    parser.add_argument("--repeat", choices=sorted(REPEATS), default=None,
                        help="repeat a run on another floating-point path, into <chapter>_<repeat>.ipynb")
    args = parser.parse_args(argv)
    root = runtime.repo_root()
    known = chapters(root)
    todo = args.chapters or known
    unknown = [c for c in todo if c not in known]
    if unknown:
        parser.error(f"chapters must be among {known}, got {unknown}")
    failed = []
    for chapter in todo:
        if not args.force and is_complete(output_path(chapter, root, args.repeat)):
            print(f"{chapter}: complete, skipped (--force reruns it)")
            continue
        print(f"{chapter}: running at full scale ...", flush=True)
        info = run_chapter(chapter, root, args.device, args.repeat)
        if not info["complete"]:
            what = "FAILED " + info["error"]
        elif info["failed_claims"]:
            what = f"done, claims FAILED: {info['failed_claims']}"
        else:
            what = "done"
        print(f"{chapter}: {what} in {info['elapsed_s']:.0f} s", flush=True)
        if not info["complete"] or info["failed_claims"]:  # a failed claim fails `make full` too
            failed.append(chapter)
    print(json.dumps({"failed": failed}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
