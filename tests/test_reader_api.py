"""A reader's API: each Part exports its public names lazily, with a help() overview naming chapters."""

import importlib
import subprocess
import sys

import pytest

from blindspots._exports import lazy_exports

PARTS = ["masked", "selfpretraining", "privileged"]


@pytest.mark.parametrize("part", PARTS)
def test_every_exported_name_resolves_to_a_public_object_of_its_module(part):
    pkg = importlib.import_module(f"blindspots.{part}")
    assert pkg.__all__ == sorted(set(pkg.__all__)) and len(pkg.__all__) >= 10
    for name in pkg.__all__:
        obj = getattr(pkg, name)
        assert obj.__module__.startswith(f"blindspots.{part}."), name
        assert obj.__doc__, f"{part}.{name} has no docstring"
    assert set(pkg.__all__) <= set(dir(pkg))
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        getattr(pkg, "not_a_name")


@pytest.mark.parametrize("part", PARTS)
def test_help_overview_fits_a_screen_and_names_the_chapters(part):
    doc = importlib.import_module(f"blindspots.{part}").__doc__
    assert len(doc.splitlines()) <= 50
    assert f"chapters {part}/" in doc


def test_importing_a_part_loads_neither_torch_nor_matplotlib():
    code = ("import sys, blindspots.masked, blindspots.selfpretraining, blindspots.privileged;"
            "from blindspots.masked import masked_discrepancy, ProductLaw;"
            "print('torch' in sys.modules, 'matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


def test_star_import_and_a_name_exported_twice_is_refused():
    namespace = {}
    exec("from blindspots.masked import *", namespace)
    assert "masked_discrepancy" in namespace and "laws" not in namespace
    with pytest.raises(ValueError, match="exported from both"):
        lazy_exports("x", "t", [("a", "1", "w", ("f",)), ("b", "1", "w", ("f",))])
