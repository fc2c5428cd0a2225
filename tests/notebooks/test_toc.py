"""The table of contents and the notebooks agree, and every notebook follows the chapter layout."""

import json

import pytest

from conftest import ROOT, toc_notebooks


def _notebooks_on_disk() -> set[str]:
    return {str(p.relative_to(ROOT)) for p in (ROOT / "notebooks").rglob("*.ipynb")
            if ".ipynb_checkpoints" not in p.parts}


def test_every_notebook_is_in_the_toc():
    missing = _notebooks_on_disk() - set(toc_notebooks())
    assert not missing, f"notebooks missing from _toc.yml: {sorted(missing)}"


def test_every_toc_entry_exists():
    missing = set(toc_notebooks()) - _notebooks_on_disk()
    assert not missing, f"_toc.yml names notebooks that do not exist: {sorted(missing)}"


def test_toc_has_preface_notation_three_parts_report_and_status():
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    captions = [p["caption"] for p in toc["parts"]]
    assert [c for c in captions if c.startswith("Part")] == [
        "Part I: Masked prediction", "Part II: Self-pretraining", "Part III: Privileged information"]
    files = [c["file"] for p in toc["parts"] for c in p["chapters"]]
    assert toc["root"] == "book/preface"
    for page in ("book/notation", "book/verification", "book/status"):
        assert page in files


@pytest.mark.parametrize("nb", toc_notebooks())
def test_notebook_layout(nb):
    cells = json.loads((ROOT / nb).read_text())["cells"]
    code = [c for c in cells if c["cell_type"] == "code"]
    first = code[0]
    assert "parameters" in first.get("metadata", {}).get("tags", []), "first code cell must be tagged parameters"
    names = {line.split("=")[0].strip() for line in "".join(first["source"]).splitlines()
             if "=" in line and not line.lstrip().startswith("#")}
    assert names == {"scale", "device", "seed"}, f"parameters cell defines {names}"
    src = "".join(first["source"])
    assert 'scale = "book"' in src and 'device = "auto"' in src and "seed = 0" in src
    assert all(c.get("execution_count") is not None for c in code), "commit notebooks executed"
    checked = [c for c in code if "".join(c["source"]).startswith("# NBVAL_CHECK_OUTPUT")]
    assert checked, "at least one claims cell carries # NBVAL_CHECK_OUTPUT"
    assert any("run.report()" in "".join(c["source"]) for c in code[-2:]), "end with run.report()"


@pytest.mark.parametrize("nb", toc_notebooks())
def test_chapter_title_is_plain_text(nb):
    """A chapter's title appears as plain text in the sidebar and in every {doc} reference (the verification
    report, the status page), where TeX would show raw: no $ or backslash in the first heading."""
    cells = json.loads((ROOT / nb).read_text())["cells"]
    title = next(line for c in cells if c["cell_type"] == "markdown"
                 for line in "".join(c["source"]).splitlines() if line.startswith("# "))
    assert "$" not in title and "\\" not in title, f"{nb}: title {title!r} holds TeX"


@pytest.mark.parametrize("nb", sorted(str(p.relative_to(ROOT)) for p in (ROOT / "results" / "full").glob("*/*.ipynb")))
def test_full_scale_title_is_plain_text(nb):
    """The appendix copies carry their chapter's title ('Full scale: ...'), shown in the appendix table."""
    cells = json.loads((ROOT / nb).read_text())["cells"]
    titles = [line for c in cells if c["cell_type"] == "markdown"
              for line in "".join(c["source"]).splitlines() if line.startswith("# ")]
    assert titles and "$" not in titles[0] and "\\" not in titles[0], f"{nb}: title {titles[:1]!r} holds TeX"


@pytest.mark.parametrize("nb", toc_notebooks())
def test_checked_cells_do_not_rely_on_a_trailing_semicolon(nb):
    """nbval runs cells without storing them in IPython's history, and IPython looks for a cell's trailing
    semicolon there: under nbval the semicolon does not hide the last value, so a checked cell shows an
    output its committed copy lacks. Assign the value to ``_`` instead."""
    cells = json.loads((ROOT / nb).read_text())["cells"]
    bad = [i for i, c in enumerate(cells) if c["cell_type"] == "code"
           and "".join(c["source"]).startswith("# NBVAL_CHECK_OUTPUT")
           and "".join(c["source"]).rstrip().endswith(";")]
    assert not bad, f"{nb}: checked cells {bad} end in ';' (nbval would see their value)"
