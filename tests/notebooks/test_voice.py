"""Reader pages speak of the mathematics, never of how the book was made: no issue numbers, no referees, no
"the issue". Checked on what a chapter renders (its Markdown, its code and its outputs) and on the prose pages."""

import json
import re

import pytest

from conftest import ROOT, toc_notebooks

PROCESS_WORDS = re.compile(r"\breferee|\bissues?\b|\breview rounds?\b|#\d+\b", re.IGNORECASE)


def _rendered_text(nb: str) -> list[tuple[str, str]]:
    """(where, text) for every cell's source and every text output of a notebook."""
    out = []
    for i, cell in enumerate(json.loads((ROOT / nb).read_text())["cells"]):
        out.append((f"cell {i}", "".join(cell["source"])))
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            for text in (o.get("text", ""), data.get("text/plain", ""), data.get("text/html", ""),
                         data.get("text/markdown", "")):
                out.append((f"cell {i} output", "".join(text)))
    return out


@pytest.mark.parametrize("nb", toc_notebooks())
def test_chapter_has_no_process_words(nb):
    hits = [f"{where}: ...{t[max(0, m.start() - 40): m.end() + 40]!r}..."
            for where, t in _rendered_text(nb) for m in PROCESS_WORDS.finditer(t)]
    assert not hits, f"{nb} speaks of how the book was made:\n" + "\n".join(hits[:10])


@pytest.mark.parametrize("page", sorted(p.name for p in (ROOT / "book").glob("*.md")))
def test_prose_page_has_no_process_words(page):
    text = (ROOT / "book" / page).read_text()
    hits = [text[max(0, m.start() - 40): m.end() + 40] for m in PROCESS_WORDS.finditer(text)]
    assert not hits, f"book/{page} speaks of how the book was made: {hits[:5]}"


def test_the_pattern_catches_what_it_should():
    for bad in ("Referee revision (issue 14):", "the issue's criterion", "see #36", "two review rounds"):
        assert PROCESS_WORDS.search(bad), bad
    for fine in ("a tissue of lies", "the issuer", "reviewed by the theorem"):
        assert not PROCESS_WORDS.search(fine), fine
