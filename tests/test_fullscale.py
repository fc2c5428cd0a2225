"""make full: chapters at full scale into results/full/, resumable, rendered as the book's appendix."""

import nbformat
import pytest

from blindspots import fullscale


def test_the_full_scale_copy_keeps_code_drops_labels_and_records_provenance():
    nb = fullscale._prepare("masked/02_mode_blindness", fullscale.runtime.repo_root())
    md = [c.source for c in nb.cells if c.cell_type == "markdown"]
    assert md[0].startswith("# Full scale: ") and "{doc}`/notebooks/masked/02_mode_blindness`" in md[0]
    assert not any(":label:" in s or "prf:" in s or "{glue" in s for s in md)  # one copy of each label
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "parameters" in code[0].metadata["tags"]
    assert fullscale.PROVENANCE_TAG in code[1].metadata["tags"] and "provenance(" in code[1].source
    assert all(c.outputs == [] for c in code)


def _fake_book(root):
    (root / "notebooks" / "demo").mkdir(parents=True)
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/preface\nparts:\n  - caption: Demo\n    chapters:\n"
                                   "      - file: notebooks/demo/01_a\n      - file: notebooks/demo/02_b\n")
    for name in ("01_a", "02_b"):
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nb.cells = [nbformat.v4.new_markdown_cell(f"# Chapter {name}\n\n(lbl)=\nProse with a label."),
                    nbformat.v4.new_code_cell('scale = "book"\ndevice = "auto"\nseed = 0',
                                              metadata={"tags": ["parameters"]}),
                    nbformat.v4.new_code_cell("print('ran at', scale)")]
        nbformat.write(nb, root / "notebooks" / "demo" / f"{name}.ipynb")


def _demo(tmp_path, monkeypatch, last_cell: str | None = None, chapter: str = "01_a", then=()):
    """The fake book as the repository, with ``chapter``'s last cell replaced and cells ``then`` appended."""
    _fake_book(tmp_path)
    if last_cell is not None:
        path = tmp_path / "notebooks" / "demo" / f"{chapter}.ipynb"
        nb = nbformat.read(path, as_version=4)
        nb.cells[-1].source = last_cell
        nb.cells += [nbformat.v4.new_code_cell(src) for src in then]
        nbformat.write(nb, path)
    monkeypatch.setattr(fullscale.runtime, "repo_root", lambda: tmp_path)
    monkeypatch.setenv("BLINDSPOTS_CLAIMS_DIR", str(tmp_path / "claims"))


def test_run_resume_and_appendix_index(tmp_path, monkeypatch, capsys):
    _demo(tmp_path, monkeypatch)
    assert fullscale.chapters() == ["demo/01_a", "demo/02_b"]
    assert fullscale.main(["demo/01_a"]) == 0
    out = fullscale.output_path("demo/01_a")
    assert fullscale.is_complete(out)
    nb = nbformat.read(out, as_version=4)
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "ran at full" in printed and "Full-scale run of demo/01_a: device cpu" in printed
    assert fullscale.main(["demo/01_a"]) == 0 and "complete, skipped" in capsys.readouterr().out  # resumes
    index = fullscale.appendix_markdown()
    assert "{doc}`/results/full/demo/01_a`" in index
    assert "| {doc}`/notebooks/demo/02_b` | not run yet |" in index and "make full CHAPTERS=demo/02_b" in index


def test_a_failed_run_is_kept_incomplete_and_rerun(tmp_path, monkeypatch):
    _demo(tmp_path, monkeypatch, "raise RuntimeError('out of memory')", chapter="02_b")
    assert fullscale.main(["demo/02_b"]) == 1
    info = fullscale.run_info(fullscale.output_path("demo/02_b"))
    assert info["complete"] is False and "out of memory" in info["error"]
    assert "failed: RuntimeError" in fullscale.appendix_markdown()


def test_unknown_chapter_is_refused_by_name(tmp_path, monkeypatch):
    _demo(tmp_path, monkeypatch)
    with pytest.raises(SystemExit):
        fullscale.main(["demo/99_missing"])


def test_committed_full_scale_runs_are_excluded_from_execution_and_chapters_are_not():
    # myst-nb skips a notebook when PurePosixPath(absolute path).match(pattern) for a pattern of
    # execute.exclude_patterns; "results/*" never matched results/full/<part>/<chapter>.ipynb, so
    # `make book` re-ran every full-scale appendix page at full scale.
    from pathlib import Path, PurePosixPath

    import yaml

    root = Path(__file__).resolve().parents[1]
    patterns = yaml.safe_load((root / "_config.yml").read_text())["execute"]["exclude_patterns"]
    excluded = lambda p: any(PurePosixPath(p.resolve().as_posix()).match(pat) for pat in patterns)  # noqa: E731
    full = sorted((root / "results" / "full").glob("*/*.ipynb"))
    assert full and all(excluded(p) for p in full)
    assert not any(excluded(p) for p in (root / "notebooks").glob("*/*.ipynb"))


def test_a_failed_claim_still_runs_every_cell_and_is_named_in_the_index(tmp_path, monkeypatch):
    # a full-scale result that contradicts its claim is a result: the cells after it must run, the
    # run counts as complete (not rerun on resume), and the index names the claim in a red box
    _demo(tmp_path, monkeypatch, ("from blindspots import claims\n"
                                  "claims.claim_bound('demo-gain', 'the gain is positive', -3.0, '>', 0.0, "
                                  "kind='verification')"), then=["print('after the failure')"])
    assert fullscale.main(["demo/01_a"]) == 1  # make full still reports it
    out = fullscale.output_path("demo/01_a")
    info = fullscale.run_info(out)
    assert info["complete"] is True and info["failed_claims"] == ["demo-gain"] and "ClaimFailed" in info["error"]
    printed = "".join(o.get("text", "") for c in nbformat.read(out, as_version=4).cells
                      if c.cell_type == "code" for o in c.outputs)
    assert "after the failure" in printed
    assert not any("papermill-error" in str(c.metadata) for c in nbformat.read(out, as_version=4).cells)
    index = fullscale.appendix_markdown()
    assert index.startswith("```{error}") and "`demo-gain`" in index.split("```", 2)[1]
    assert "{doc}`/results/full/demo/01_a` **claim failed:** `demo-gain`" in index
    assert "make full CHAPTERS=demo/01_a" not in index


def test_every_claim_of_an_all_hold_block_that_failed_is_recorded(tmp_path, monkeypatch):
    _demo(tmp_path, monkeypatch, ("from blindspots import claims\n"
                                  "with claims.all_hold():\n"
                                  "    for cid in ('demo-a', 'demo-b'):\n"
                                  "        claims.claim_bound(cid, 'the gain is positive', -3.0, '>', 0.0, "
                                  "kind='verification')"))
    assert fullscale.main(["demo/01_a"]) == 1
    info = fullscale.run_info(fullscale.output_path("demo/01_a"))
    assert info["complete"] is True and info["failed_claims"] == ["demo-a", "demo-b"]


def test_the_recorded_commit_is_the_one_the_run_started_from(tmp_path, monkeypatch):
    # a commit made while a long run executes must not be credited with its numbers
    import papermill

    _demo(tmp_path, monkeypatch)
    head = {"commit": "aaaa111"}
    monkeypatch.setattr(fullscale, "git_commit", lambda root=None: head["commit"])
    execute = papermill.execute_notebook

    def execute_then_commit(*args, **kwargs):
        out = execute(*args, **kwargs)
        head["commit"] = "bbbb222+dirty"  # someone commits while the run goes on
        return out

    monkeypatch.setattr(papermill, "execute_notebook", execute_then_commit)
    assert fullscale.main(["demo/01_a"]) == 0
    assert fullscale.run_info(fullscale.output_path("demo/01_a"))["commit"] == "aaaa111"


def test_a_repeat_on_another_floating_point_path_is_its_own_page_compared_claim_by_claim(tmp_path, monkeypatch):
    _demo(tmp_path, monkeypatch, (
        "import os\nfrom blindspots import claims\nfrom myst_nb import glue\n"
        "print('threads', os.environ.get('BLINDSPOTS_THREADS'), os.environ.get('BLINDSPOTS_SEED_JOBS'))\n"
        "glue('gain', 3.0 if os.environ.get('BLINDSPOTS_THREADS') else 2.0, display=False)\n"
        "claims.claim_bound('demo-gain', 'the gain is positive', 3.0, '>', 0.0, kind='verification')"))
    for key in {k for r in fullscale.REPEATS.values() for k in r["env"]}:
        monkeypatch.delenv(key, raising=False)
    assert fullscale.main(["demo/01_a"]) == 0
    assert fullscale.repeats("demo/01_a") == []
    assert fullscale.main(["--repeat", "threads2", "demo/01_a"]) == 0
    assert "BLINDSPOTS_THREADS" not in fullscale.os.environ  # the test process is left as it was
    out = fullscale.output_path("demo/01_a", repeat="threads2")
    assert out.name == "01_a_threads2.ipynb" and fullscale.repeats("demo/01_a") == ["threads2"]
    cells = nbformat.read(out, as_version=4).cells
    printed = "".join(o.get("text", "") for c in cells if c.cell_type == "code" for o in c.outputs)
    assert "threads 2 1" in printed and "BLINDSPOTS_SEED_JOBS=1, BLINDSPOTS_THREADS=2" in printed
    assert cells[0].source.startswith("# Full scale, 2 threads per seed: Chapter 01_a")
    assert fullscale.compare_repeat("demo/01_a", "threads2") == [
        {"id": "demo-gain", "first": "PASS", "repeat": "PASS", "agree": True}]
    assert fullscale.glue_differences("demo/01_a", "threads2") == {"gain": 1.0}
    assert fullscale.glue_pairs("demo/01_a", "threads2") == {"gain": (2.0, 3.0)}
    index = fullscale.appendix_markdown()
    assert "{doc}`/results/full/demo/01_a_threads2` (repeat `threads2`; same verdicts)" in index
    with pytest.raises(SystemExit):
        fullscale.main(["--repeat", "avx9", "demo/01_a"])
    with pytest.raises(ValueError, match="repeat must be None or one of"):
        fullscale.run_chapter("demo/01_a", repeat="avx9")


def test_the_sse_repeat_takes_torch_off_its_vector_kernels(tmp_path):
    # the environment of REPEATS["sse"] must reach torch in a fresh process, or the repeat is the same path
    import subprocess
    import sys

    env = {**fullscale.os.environ, **fullscale.REPEATS["sse"]["env"]}
    code = "import torch, numpy; print(torch.backends.cpu.get_cpu_capability())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "DEFAULT"


def test_claim_verdicts_read_pass_and_fail_lines_and_a_claim_failed_anywhere_fails(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x", outputs=[
        nbformat.v4.new_output("stream", name="stdout", text="[PASS] a-1 (verification): fine\n[FAIL] b.2: no\n"),
        nbformat.v4.new_output("stream", name="stdout", text="[FAIL] a-1 (verification): later\n"),
        nbformat.v4.new_output("stream", name="stdout", text="not a claim [PASS] c\n"),
        nbformat.v4.new_output("error", ename="ClaimFailed", evalue="claim 'd-3' failed: unprinted\n  [FAIL] d-3: x",
                               traceback=[])])]
    nbformat.write(nb, tmp_path / "x.ipynb")
    assert fullscale.claim_verdicts(tmp_path / "x.ipynb") == {"a-1": "FAIL", "b.2": "FAIL", "d-3": "FAIL"}
