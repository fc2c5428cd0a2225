"""environment.yml and pyproject.toml must list the same pinned dependencies (optional extras included)."""

import tomllib

import yaml

from conftest import ROOT


def _norm(req: str) -> str:
    return req.replace(" ", "").lower()


def _pinned(pyproject: dict) -> list[str]:
    """The main dependencies and those of every optional extra (``cluster``: dask for map_seeds)."""
    extras = pyproject["project"].get("optional-dependencies", {})
    return [*pyproject["project"]["dependencies"], *(d for reqs in extras.values() for d in reqs)]


def test_environment_yml_matches_pyproject():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    deps = {_norm(d) for d in _pinned(pyproject)}
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    listed = {_norm(d) for d in pip if not d.startswith("-e")}
    assert listed == deps, f"only in environment.yml: {listed - deps}; only in pyproject: {deps - listed}"


def test_every_dependency_is_pinned():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    for dep in _pinned(pyproject):
        assert "==" in dep, f"{dep} is not pinned"


def test_setup_installs_the_cluster_extra():
    """make setup installs dask too, so make test runs tests/test_cluster.py instead of skipping it."""
    assert "-e '.[cluster]'" in (ROOT / "Makefile").read_text()


def test_ci_runs_make_test():
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_test_files_have_unique_basenames():
    """pytest's default import mode cannot collect two test modules with one basename."""
    names = [p.name for p in ROOT.joinpath("tests").rglob("test_*.py")]
    assert len(names) == len(set(names)), sorted({n for n in names if names.count(n) > 1})
