"""Every notebook in the table of contents runs at smoke scale, and its claims pass."""

import json

import pytest

from blindspots import claims, runtime
from conftest import ROOT, toc_notebooks


@pytest.mark.parametrize("nb", toc_notebooks())
def test_notebook_runs_at_smoke_scale(nb, tmp_path, monkeypatch):
    import papermill

    claims_dir = ROOT / "_build" / "claims-smoke"  # kept: the status page lists smoke timings
    monkeypatch.setenv("BLINDSPOTS_CLAIMS_DIR", str(claims_dir))
    path = ROOT / nb
    papermill.execute_notebook(str(path), str(tmp_path / path.name), parameters={"scale": "smoke"},
                               cwd=str(path.parent), kernel_name="python3", progress_bar=False)
    chapter = nb.removeprefix("notebooks/").removesuffix(".ipynb")
    folder = runtime.chapter_records_dir(chapter, claims_dir)
    records = claims.load_records(claims_dir, chapter=chapter)
    assert records, f"{nb} recorded no claim"
    failed = [r["id"] for r in records if not r["passed"]]
    assert not failed, f"{nb}: claims failed: {failed}"
    assert all(r["scale"] == "smoke" for r in records)
    unlabelled = [r["id"] for r in records if r.get("kind") not in claims.KINDS]
    assert not unlabelled, f"{nb}: claims without a kind: {unlabelled}"
    run = json.loads((folder / "_run.json").read_text())
    assert run["scale"] == "smoke"
