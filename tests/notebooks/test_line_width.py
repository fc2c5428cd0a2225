"""Code and printed results fit the page: no line of a chapter's code cells, and no line of what a cell
prints, is wider than the book's 90 characters, so a reader never scrolls sideways through them. Wide
results are shown as rendered tables (``plotting.html_table``), whose text is not fixed-width."""

import json

import pytest

from conftest import ROOT, toc_notebooks

WIDTH = 90


def _wide_lines(nb: str) -> list[str]:
    out = []
    for i, cell in enumerate(json.loads((ROOT / nb).read_text())["cells"]):
        if cell["cell_type"] != "code":
            continue
        texts = [("code", "".join(cell["source"]))]
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            if o.get("output_type") == "stream" and o.get("name") == "stdout":
                texts.append(("printed", "".join(o.get("text", ""))))
            elif "text/plain" in data and not ({"text/html", "image/png", "text/markdown"} & set(data)):
                texts.append(("printed", "".join(data["text/plain"])))
        out += [f"cell {i} {kind} ({len(line)} chars): {line[:70]}..."
                for kind, text in texts for line in text.splitlines() if len(line) > WIDTH]
    return out


@pytest.mark.parametrize("nb", toc_notebooks())
def test_code_and_printed_lines_fit_the_page(nb):
    wide = _wide_lines(nb)
    assert not wide, f"{nb}: {len(wide)} lines wider than {WIDTH} characters:\n" + "\n".join(wide[:10])


def test_the_width_check_sees_code_and_stdout(tmp_path, monkeypatch):
    nb = {"cells": [{"cell_type": "code", "source": ["x = 1  # " + "a" * 90], "outputs": [
        {"output_type": "stream", "name": "stdout", "text": ["b" * 91 + "\n", "short\n"]},
        {"output_type": "display_data", "data": {"text/html": "<table/>", "text/plain": "c" * 200}}]}]}
    (tmp_path / "n.ipynb").write_text(json.dumps(nb))
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    wide = _wide_lines("n.ipynb")
    assert len(wide) == 2 and "code" in wide[0] and "printed" in wide[1]
