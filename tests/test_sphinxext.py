import json

from blindspots import sphinxext


def _write(folder, chapter, cid, passed=True, theorem=None):
    d = folder / chapter.replace("/", "__")
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{cid}.json").write_text(json.dumps(dict(
        id=cid, statement="a | b", measured=1.0, expected=1.0, tolerance=1e-9, relation="==",
        passed=passed, scale="book", device="cpu", notebook=chapter, theorem=theorem, digits=4)))


def test_verification_page_lists_every_claim_grouped_by_chapter(tmp_path):
    _write(tmp_path, "masked/01_setup", "one", theorem="thm-masked-decomposition")
    _write(tmp_path, "masked/01_setup", "two", passed=False)
    text = sphinxext.verification_markdown(tmp_path)
    assert "**1 of 2 claims pass**" in text
    assert "## Masked prediction as a family of conditional problems" in text
    assert "{doc}`/notebooks/masked/01_setup`: 1/2 pass" in text
    assert "| 1 ± 1e-09 |" in text
    assert "{prf:ref}`thm-masked-decomposition`" in text
    assert "❌ FAIL" in text and "✅ pass" in text
    assert "a \\| b" in text  # pipes escaped inside table cells


def test_verification_page_without_records_says_how_to_make_them(tmp_path):
    assert "make book" in sphinxext.verification_markdown(tmp_path / "none")


def test_status_page_compares_timings_with_budgets(tmp_path):
    book, smoke = tmp_path / "claims", tmp_path / "claims-smoke"
    for folder, t in ((book, 300.0), (smoke, 5.0)):
        d = folder / "masked__01_setup"
        d.mkdir(parents=True)
        (d / "_run.json").write_text(json.dumps(dict(chapter="masked/01_setup", scale="x", device="cpu", elapsed_s=t)))
    text = sphinxext.status_markdown(book)
    row = next(line for line in text.splitlines() if "masked/01_setup" in line)
    assert "| 5 | 300 | cpu | **no** |" in row


def test_src_hash_changes_with_the_sources(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    h1 = sphinxext.src_hash(tmp_path)
    (tmp_path / "a.py").write_text("x = 2\n")
    assert sphinxext.src_hash(tmp_path) != h1
