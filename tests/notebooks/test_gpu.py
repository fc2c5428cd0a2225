"""Full-scale runs on CUDA (`make test-gpu`); skipped cleanly without CUDA."""

import pytest

from blindspots import claims
from conftest import ROOT, cuda_available, toc_notebooks

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not cuda_available(), reason="CUDA is not available")]


@pytest.mark.parametrize("nb", toc_notebooks())
def test_notebook_runs_at_full_scale_on_cuda(nb, tmp_path, monkeypatch):
    import papermill

    claims_dir = ROOT / "_build" / "claims-full"
    monkeypatch.setenv("BLINDSPOTS_CLAIMS_DIR", str(claims_dir))
    path = ROOT / nb
    papermill.execute_notebook(str(path), str(tmp_path / path.name),
                               parameters={"scale": "full", "device": "cuda"},
                               cwd=str(path.parent), kernel_name="python3", progress_bar=False)
    chapter = nb.removeprefix("notebooks/").removesuffix(".ipynb")
    records = claims.load_records(claims_dir, chapter=chapter)
    assert records and all(r["passed"] for r in records)
    assert all(r["device"].startswith("cuda") for r in records)
