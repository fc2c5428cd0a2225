"""The launch buttons end to end: a small book built with this repository's ``_config.yml``, its
``repository.url`` set, must link its chapter to Binder and Colab (and offer the .ipynb download);
with the URL empty, as committed, only the download remains."""

import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
URL = "https://github.com/example/blindspots"


def _build(tmp_path: Path, url: str) -> str:
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["repository"]["url"] = url
    config["execute"] = {"execute_notebooks": "off"}
    config["exclude_patterns"] = ["_build/*"]
    (tmp_path / "_config.yml").write_text(yaml.safe_dump(config))
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n  - file: notebooks/demo\n")
    (tmp_path / "intro.md").write_text("# Intro\n")
    shutil.copytree(ROOT / "book", tmp_path / "book", ignore=shutil.ignore_patterns("*.md"))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Demo"), nbformat.v4.new_code_cell("1 + 1")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    (tmp_path / "notebooks").mkdir()
    nbformat.write(nb, tmp_path / "notebooks" / "demo.ipynb")
    jb = Path(sys.executable).with_name("jupyter-book")
    done = subprocess.run([str(jb), "build", str(tmp_path), "--builder", "html"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return (tmp_path / "_build" / "html" / "notebooks" / "demo.html").read_text()


def test_a_repository_url_puts_binder_and_colab_buttons_on_a_chapter(tmp_path):
    page = _build(tmp_path, URL)
    assert "https://mybinder.org/v2/gh/example/blindspots/main?urlpath=lab/tree/notebooks/demo.ipynb" in page
    assert "https://colab.research.google.com/github/example/blindspots/blob/main/notebooks/demo.ipynb" in page
    assert "demo.ipynb" in page and "Download source file" in page


def test_without_a_repository_url_only_the_download_shows(tmp_path):
    page = _build(tmp_path, "")
    assert "mybinder.org" not in page and "colab.research.google.com" not in page
    assert "Download source file" in page
