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


def test_run_resume_and_appendix_index(tmp_path, monkeypatch, capsys):
    _fake_book(tmp_path)
    monkeypatch.setattr(fullscale.runtime, "repo_root", lambda: tmp_path)
    monkeypatch.setenv("BLINDSPOTS_CLAIMS_DIR", str(tmp_path / "claims"))
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
    _fake_book(tmp_path)
    nb = nbformat.read(tmp_path / "notebooks/demo/02_b.ipynb", as_version=4)
    nb.cells[-1].source = "raise RuntimeError('out of memory')"
    nbformat.write(nb, tmp_path / "notebooks/demo/02_b.ipynb")
    monkeypatch.setattr(fullscale.runtime, "repo_root", lambda: tmp_path)
    monkeypatch.setenv("BLINDSPOTS_CLAIMS_DIR", str(tmp_path / "claims"))
    assert fullscale.main(["demo/02_b"]) == 1
    info = fullscale.run_info(fullscale.output_path("demo/02_b"))
    assert info["complete"] is False and "out of memory" in info["error"]
    assert "failed: RuntimeError" in fullscale.appendix_markdown()


def test_unknown_chapter_is_refused_by_name(tmp_path, monkeypatch):
    _fake_book(tmp_path)
    monkeypatch.setattr(fullscale.runtime, "repo_root", lambda: tmp_path)
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
    _fake_book(tmp_path)
    nb = nbformat.read(tmp_path / "notebooks/demo/01_a.ipynb", as_version=4)
    nb.cells[-1].source = ("from blindspots import claims\n"
                           "claims.claim_bound('demo-gain', 'the gain is positive', -3.0, '>', 0.0, kind='verification')")
    nb.cells.append(nbformat.v4.new_code_cell("print('after the failure')"))
    nbformat.write(nb, tmp_path / "notebooks/demo/01_a.ipynb")
    monkeypatch.setattr(fullscale.runtime, "repo_root", lambda: tmp_path)
    monkeypatch.setenv("BLINDSPOTS_CLAIMS_DIR", str(tmp_path / "claims"))
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
    _fake_book(tmp_path)
    nb = nbformat.read(tmp_path / "notebooks/demo/01_a.ipynb", as_version=4)
    nb.cells[-1].source = ("from blindspots import claims\n"
                           "with claims.all_hold():\n"
                           "    for cid in ('demo-a', 'demo-b'):\n"
                           "        claims.claim_bound(cid, 'the gain is positive', -3.0, '>', 0.0, kind='verification')")
    nbformat.write(nb, tmp_path / "notebooks/demo/01_a.ipynb")
    monkeypatch.setattr(fullscale.runtime, "repo_root", lambda: tmp_path)
    monkeypatch.setenv("BLINDSPOTS_CLAIMS_DIR", str(tmp_path / "claims"))
    assert fullscale.main(["demo/01_a"]) == 1
    info = fullscale.run_info(fullscale.output_path("demo/01_a"))
    assert info["complete"] is True and info["failed_claims"] == ["demo-a", "demo-b"]


def test_the_recorded_commit_is_the_one_the_run_started_from(tmp_path, monkeypatch):
    # a commit made while a long run executes must not be credited with its numbers
    import papermill

    _fake_book(tmp_path)
    monkeypatch.setattr(fullscale.runtime, "repo_root", lambda: tmp_path)
    monkeypatch.setenv("BLINDSPOTS_CLAIMS_DIR", str(tmp_path / "claims"))
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
