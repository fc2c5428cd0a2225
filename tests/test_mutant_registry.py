"""The planted-error registry (tests/mutants) is well formed; running it is ``make test-mutants``."""

import ast

import pytest

from conftest import ROOT, toc_notebooks
from mutants.registry import Mutant, all_mutants, planted_patch

MUTANTS = all_mutants()
CHAPTERS = {nb.removeprefix("notebooks/").removesuffix(".ipynb") for nb in toc_notebooks()}


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.id for m in MUTANTS])
def test_mutant_names_a_chapter_and_a_runnable_error(mutant):
    assert mutant.notebook in CHAPTERS, f"{mutant.id}: {mutant.notebook} is not a chapter in _toc.yml"
    assert mutant.id.split("-")[0] in ("masked", "sp", "pi"), "mutant ids start with their Part"
    assert mutant.what.strip(), "say which wrong theory or bug the mutant plants"
    if mutant.level == "notebook":
        ast.parse(mutant.patch)
        ast.parse(planted_patch(mutant))
        assert "blindspots.claims" not in mutant.patch and "runtime" not in mutant.patch, \
            "plant errors in the theory or the estimator, never in the claim machinery"
    else:
        path, _, name = mutant.unit.partition("::")
        tree = ast.parse((ROOT / path).read_text())
        names = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        assert name.split("[")[0] in names, f"{mutant.id}: no test {name} in {path}"


def test_a_mutant_has_exactly_one_level():
    with pytest.raises(ValueError, match="exactly one of patch"):
        Mutant("masked-x", "masked/01_setup", "c", "w")
    with pytest.raises(ValueError, match="exactly one of patch"):
        Mutant("masked-x", "masked/01_setup", "c", "w", patch="x = 1", unit="tests/a.py::t")
    with pytest.raises(ValueError, match="mutant id must be"):
        Mutant("Bad Id", "masked/01_setup", "c", "w", patch="x = 1")


def test_a_worker_patch_reaches_seed_workers():
    """A ``workers=True`` patch runs in the kernel and in every worker process before its seed."""
    import subprocess
    import sys

    m = Mutant("sp-x", "selfpretraining/02_training_mechanism", "c", "w", workers=True,
               patch="import blindspots.selfpretraining.gates as _g\n_g.PLATEAU_MARGIN = 7.0\n")
    code = planted_patch(m) + (
        "import os\nfrom blindspots import runtime\n"
        "from tests.mutants.probe import plateau_margin_and_pid\n"
        "out = runtime.map_seeds(plateau_margin_and_pid, [0, 1], n_jobs=2)\n"
        "assert [o[0] for o in out] == [7.0, 7.0] and all(o[1] != os.getpid() for o in out), out\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]



@pytest.mark.parametrize("mutant", [m for m in MUTANTS if m.scale == "mutant"], ids=lambda m: m.id)
def test_a_mutant_scale_mutant_names_a_chapter_with_that_scale(mutant):
    from blindspots import runtime

    assert runtime.MUTANT_SCALE in runtime.all_presets()[mutant.notebook], (
        f"{mutant.id}: {mutant.notebook} defines no {runtime.MUTANT_SCALE!r} sizes in its presets")


def test_a_kill_at_mutant_scale_needs_its_control_to_hold():
    from mutants.test_mutants import _killed, controls_for

    m = Mutant("pi-x", "privileged/05_piql_depth", "c1", "w", patch="x = 1", scale="mutant", also=("c2",))
    book = Mutant("pi-y", "privileged/03_piql_training", "c3", "w", patch="x = 1", scale="book")
    (control,) = controls_for([m, book])
    assert control.notebook == m.notebook and control.targets == ("c1", "c2")
    stopped = {"ename": "ClaimFailed", "evalue": "claim 'c1' failed: ...\nclaim 'c2' failed: ..."}
    assert _killed(m, {**stopped, "control": {"c1": True, "c2": True}})
    assert not _killed(m, {**stopped, "control": {"c1": True, "c2": False}})  # c2 fails unpatched: shows nothing
    assert not _killed(m, {**stopped, "control": {"c1": True, "c2": None}})  # c2 never made unpatched
    assert not _killed(m, {**stopped, "control": None})
    assert not _killed(m, stopped)
    assert _killed(book, {"ename": "ClaimFailed", "evalue": "claim 'c3' failed"}), "book scale: nbval is its control"
