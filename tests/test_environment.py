"""environment.yml and pyproject.toml must list the same pinned dependencies."""

import tomllib

import yaml

from conftest import ROOT


def _norm(req: str) -> str:
    return req.replace(" ", "").lower()


def test_environment_yml_matches_pyproject():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    deps = {_norm(d) for d in pyproject["project"]["dependencies"]}
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    listed = {_norm(d) for d in pip if not d.startswith("-e")}
    assert listed == deps, f"only in environment.yml: {listed - deps}; only in pyproject: {deps - listed}"


def test_every_dependency_is_pinned():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    for dep in pyproject["project"]["dependencies"]:
        assert "==" in dep, f"{dep} is not pinned"


def test_ci_runs_make_test():
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_test_files_have_unique_basenames():
    """pytest's default import mode cannot collect two test modules with one basename."""
    names = [p.name for p in ROOT.joinpath("tests").rglob("test_*.py")]
    assert len(names) == len(set(names)), sorted({n for n in names if names.count(n) > 1})
