import json

from blindspots import sphinxext


def _write(folder, chapter, cid, passed=True, theorem=None, kind="verification", margin=0.0):
    d = folder / chapter.replace("/", "__")
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{cid}.json").write_text(json.dumps(dict(
        id=cid, statement="a | b", measured=1.0, expected=1.0, tolerance=1e-9, relation="==",
        passed=passed, scale="book", device="cpu", notebook=chapter, theorem=theorem, digits=4,
        kind=kind, margin=margin)))


def _mutant(folder, mid, chapter, kills, killed=True, level="notebook"):
    d = folder.parent / "mutants"
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{mid}.json").write_text(json.dumps(dict(id=mid, notebook=chapter, kills=kills, what="w",
                                                   level=level, killed=killed)))


def test_verification_page_lists_every_claim_grouped_by_chapter(tmp_path):
    _write(tmp_path, "masked/01_setup", "one", theorem="thm-masked-decomposition")
    _write(tmp_path, "masked/01_setup", "two", passed=False)
    text = sphinxext.verification_markdown(tmp_path)
    assert "**1 of 2 claims pass**" in text
    assert "## Masked prediction as a family of conditional problems" in text
    assert "{doc}`/notebooks/masked/01_setup`: 1/2 pass" in text
    assert "| 1 ± 1e-09 |" in text
    assert "{prf:ref}`thm-masked-decomposition`" in text
    assert "❌ FAIL" in text and "✅" in text
    assert "a \\| b" in text  # pipes escaped inside table cells
    assert "1 claim(s) FAILED" in text and "`two`" in text  # a failure is listed, not only counted


def test_verification_page_separates_kinds_flags_margins_and_shows_mutation_score(tmp_path):
    claims_dir = tmp_path / "claims"
    _write(claims_dir, "masked/01_setup", "v1", margin=0.95)
    _write(claims_dir, "masked/01_setup", "v2")
    _write(claims_dir, "masked/01_setup", "c1", kind="consistency")
    _write(claims_dir, "masked/01_setup", "s1", kind="sanity")
    _mutant(claims_dir, "masked-wrong-rate", "masked/01_setup", "v1")
    _mutant(claims_dir, "masked-unit", "masked/01_setup", "v2", level="unit")
    (claims_dir.parent / "mutants" / "summary.json").write_text(json.dumps(
        dict(verifications=2, killed=2, score=1.0, not_killed=[], mutants=2)))
    text = sphinxext.verification_markdown(claims_dir)
    assert "2 verifications, 1 consistency checks, 1 sanity checks" in text
    assert "**Mutation score: 1 of 2 verifications killed by a planted error at notebook level (50 %)**" in text
    assert "Killed only by a unit test of the claim's statistic, which does not count: 1." in text
    assert "| masked | 1 | 2 | 1 |" in text
    assert "| {doc}`/notebooks/masked/01_setup` | 2 | 1 | 1 | 2 | **0.95** ⚠ |" in text
    assert "**Verification** (2)" in text and "**Consistency** (1)" in text and "**Sanity** (1)" in text
    assert "`masked-wrong-rate`" in text and "`masked-unit` (unit)" in text
    assert "1 in this run" in text  # one margin above 0.8


def test_one_planted_run_kills_every_claim_it_names(tmp_path):
    claims_dir = tmp_path / "claims"
    for cid in ("gain", "gain-matched", "other"):
        _write(claims_dir, "selfpretraining/02_training_mechanism", cid)
    d = claims_dir.parent / "mutants"
    d.mkdir(parents=True)
    (d / "sp-x.json").write_text(json.dumps(dict(id="sp-x", notebook="selfpretraining/02_training_mechanism",
                                                 kills="gain", also=["gain-matched"], what="w",
                                                 level="notebook", killed=True)))
    (d / "summary.json").write_text(json.dumps(dict(verifications=3, killed=2, score=2 / 3, not_killed=[],
                                                    mutants=1)))
    text = sphinxext.verification_markdown(claims_dir)
    assert "**Mutation score: 2 of 3 verifications killed by a planted error at notebook level (67 %)**" in text
    assert "| selfpretraining | 2 | 3 | 0 | 0 | 0 |" in text


def test_verification_page_says_when_mutants_have_not_run_and_names_unlabelled_claims(tmp_path):
    _write(tmp_path, "masked/01_setup", "old", kind=None)
    text = sphinxext.verification_markdown(tmp_path)
    assert "mutation tests have not run" in text
    assert "1 claim(s) carry no kind" in text
    assert "**Unlabelled** (1)" in text and "`old`</a> |" in text


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
    assert "| 5 | 300 | cpu | **no** | this build |" in row


def test_status_page_does_not_hold_shared_timings_to_the_budget(tmp_path):
    book = tmp_path / "claims"
    d = book / "masked__01_setup"
    d.mkdir(parents=True)
    (d / "_run.json").write_text(json.dumps(dict(chapter="masked/01_setup", scale="book", device="cpu",
                                                 elapsed_s=300.0, notebooks_at_once=2)))
    text = sphinxext.status_markdown(book)
    row = next(line for line in text.splitlines() if "masked/01_setup" in line)
    committed = sphinxext.committed_run_record(sphinxext.runtime.repo_root(), "masked/01_setup")
    assert f"| {sphinxext._fmt(committed['elapsed_s'], 3)} (300 shared) | cpu |" in row  # judged by its solo time
    assert row.endswith("| committed output |")
    assert "ran 2 notebooks at once" in text


def test_committed_run_record_reads_the_printed_line_when_report_shows_no_value(tmp_path):
    import nbformat

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("run.report();")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=(
        "claim  kind\nmasked/01_setup: scale=book, device=cpu, threads=1, elapsed 149.1 s\n"))]
    nb.cells = [cell]
    (tmp_path / "notebooks" / "masked").mkdir(parents=True)
    nbformat.write(nb, tmp_path / "notebooks" / "masked" / "01_setup.ipynb")
    rec = sphinxext.committed_run_record(tmp_path, "masked/01_setup")
    assert rec == {"chapter": "masked/01_setup", "scale": "book", "device": "cpu", "threads": 1, "elapsed_s": 149.1}
    assert sphinxext.committed_run_record(tmp_path, "masked/02_mode_blindness") is None


def test_committed_run_record_parses_the_line_run_report_prints(tmp_path, monkeypatch, capsys, fake_chapter):
    """_REPORT_LINE and Run.report's print are twins: this fails if either changes alone."""
    import nbformat

    from blindspots import runtime

    monkeypatch.setenv("BLINDSPOTS_CLAIMS_DIR", str(tmp_path / "claims"))
    record = runtime.setup("smoke", "cpu", 0, chapter=fake_chapter).report()
    cell = nbformat.v4.new_code_cell("run.report();")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=capsys.readouterr().out)]
    nb = nbformat.v4.new_notebook()
    nb.cells = [cell]
    path = tmp_path / "notebooks" / f"{fake_chapter}.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(nb, path)
    rec = sphinxext.committed_run_record(tmp_path, fake_chapter)
    assert rec is not None and rec["chapter"] == fake_chapter and rec["scale"] == "smoke" and rec["device"] == "cpu"
    assert rec["threads"] == record["threads"] and rec["elapsed_s"] == round(record["elapsed_s"], 1)


def test_src_hash_changes_with_the_sources(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    h1 = sphinxext.src_hash(tmp_path)
    (tmp_path / "a.py").write_text("x = 2\n")
    assert sphinxext.src_hash(tmp_path) != h1


def test_status_page_names_the_machine_of_the_book_runs(tmp_path):
    d = tmp_path / "claims" / "masked__01_setup"
    d.mkdir(parents=True)
    (d / "_run.json").write_text(json.dumps(dict(chapter="masked/01_setup", scale="book", device="cpu", elapsed_s=3.0,
                                                 python="3.11.7", numpy="2.4.6", torch="2.13.0", cpu="Some CPU")))
    text = sphinxext.status_markdown(tmp_path / "claims")
    assert "| Some CPU | 3.11.7 | 2.4.6 | 2.13.0 |" in text


def test_status_page_shows_the_thread_check(tmp_path):
    import json

    from blindspots.sphinxext import thread_check_lines

    assert "has not been run" in thread_check_lines(tmp_path / "none.json")[0]
    rows = [{"id": "gain", "passed_2": True, "changed": True}, {"id": "at-chance", "passed_2": False, "changed": True}]
    path = tmp_path / "summary.json"
    path.write_text(json.dumps({"cpu": "x", "changed": 2, "claims": 2, "ok": False,
                                "chapters": {"selfpretraining/03_ablations": {"seconds": 9, "error": None, "claims": rows}}}))
    text = "\n".join(thread_check_lines(path))
    assert "**2 of 2**" in text and "**some fail**" in text and "| at-chance |" in text
    assert "committed record" not in text
    committed = "\n".join(thread_check_lines(path, committed=True))
    assert "committed record `results/thread-check.json`" in committed and "has not run" in committed


def test_status_page_reads_committed_run_records_when_nothing_was_executed(tmp_path):
    rec = sphinxext.committed_run_record(sphinxext.runtime.repo_root(), "masked/01_setup")
    assert rec["chapter"] == "masked/01_setup" and rec["scale"] == "book" and rec["elapsed_s"] > 0
    text = sphinxext.status_markdown(tmp_path / "claims")  # no records at all
    row = next(line for line in text.splitlines() if "masked/01_setup" in line)
    assert row.endswith("| committed output |") and "| cpu |" in row
    assert "jupyter-book 1." in text


def test_verification_page_links_each_claim_to_the_output_that_makes_it(tmp_path):
    _write(tmp_path, "masked/01_setup", "rate.p")
    text = sphinxext.verification_markdown(tmp_path)
    assert '<a href="../notebooks/masked/01_setup.html#claim-rate-p">`rate.p`</a>' in text


def _chapter_doctree(*outputs):
    from docutils import nodes
    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser
    from docutils.utils import new_document

    doc = new_document("chapter", get_default_settings(Parser))
    section = nodes.section(ids=["title"])
    section += nodes.title(text="A chapter")
    for text in outputs:
        section += nodes.literal_block(text, text)
    doc += section
    return doc


def test_mark_claims_anchors_the_first_output_naming_each_claim():
    from docutils import nodes

    doc = _chapter_doctree("claim('a', ...)",  # a cell's source never starts a line with the mark
                           "[PASS] one: measured 1, expected 1 ± 1e-09\n[PASS] two.b (verification): x",
                           "[PASS] one: again",
                           "claim                  kind\nhidden       consistency        1 == 1")
    done = sphinxext.mark_claims(doc, known=["one", "two.b", "hidden", "absent"])
    blocks = list(doc.findall(nodes.literal_block))
    assert done == {"anchors": {"one": "claim-one", "two.b": "claim-two-b", "hidden": "claim-hidden"},
                    "failed": []}
    assert blocks[1]["ids"] == ["claim-one", "claim-two-b"] and blocks[2]["ids"] == []
    assert blocks[3]["ids"] == ["claim-hidden"]  # show=False: its row in run.report()'s table
    assert not list(doc.findall(nodes.error))


def test_mark_claims_puts_a_red_banner_naming_failed_claims_under_the_title():
    from docutils import nodes

    doc = _chapter_doctree("[PASS] fine: ok", "[FAIL] broken: measured 2, expected 1 ± 0.1")
    done = sphinxext.mark_claims(doc, failed_records=["stale-record"])
    assert done["failed"] == ["stale-record", "broken"]
    section = next(iter(doc.findall(nodes.section)))
    banner = section[1]
    assert isinstance(banner, nodes.error)
    text = banner.astext()
    assert "2 claim(s) of this chapter FAILED" in text and "broken" in text and "stale-record" in text
    refs = [r["refuri"] for r in banner.findall(nodes.reference)]
    assert refs == ["#claim-broken"]  # the record without an output has no anchor to link to


def test_a_full_scale_page_gets_its_banner_without_a_link_to_the_report():
    from docutils import nodes

    doc = _chapter_doctree("[PASS] fine (verification): ok", "[FAIL] gain (verification): the gain is positive")
    done = sphinxext.mark_claims(doc, full_scale=True)
    assert done["failed"] == ["gain"]
    banner = next(iter(doc.findall(nodes.section)))[1]
    assert isinstance(banner, nodes.error) and "FAILED at full scale" in banner.astext()
    assert "verification report" not in banner.astext()  # the report lists this build's runs only
    assert [r["refuri"] for r in banner.findall(nodes.reference)] == ["#claim-gain"]


def test_launch_buttons_are_left_out_until_a_repository_url_is_set():
    from types import SimpleNamespace

    buttons = {"binderhub_url": "https://mybinder.org", "colab_url": "https://colab.research.google.com"}
    config = SimpleNamespace(html_theme_options={"repository_url": "", "launch_buttons": dict(buttons)})
    sphinxext._launch_buttons_need_a_repository(config)
    assert "launch_buttons" not in config.html_theme_options  # the theme raises on an empty URL
    url = "https://github.com/example/blindspots"
    config = SimpleNamespace(html_theme_options={"repository_url": url, "launch_buttons": dict(buttons)})
    sphinxext._launch_buttons_need_a_repository(config)
    assert config.html_theme_options["launch_buttons"] == buttons


def test_the_report_names_claims_that_failed_at_full_scale(tmp_path, monkeypatch):
    from blindspots import fullscale

    monkeypatch.setattr(fullscale, "failed_claims", lambda root=None: [("demo/01_a", ["demo-gain"])])
    _write(tmp_path / "records", "masked/01_setup", "ok")
    for folder in (tmp_path / "none", tmp_path / "records"):  # without and with this build's records
        text = sphinxext.verification_markdown(folder)
        box = text.split("```{error}", 1)[1].split("```", 1)[0]
        assert "FAILED at full scale" in box and "{doc}`/results/full/demo/01_a`: `demo-gain`" in box
