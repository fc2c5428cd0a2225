"""Planted errors: every verification claim must be killed by at least one.

A :class:`Mutant` plants one error from the test side: ``patch`` is Python run in the notebook's
kernel right after the ``parameters`` cell, before the chapter imports anything, so a monkeypatched
function in ``blindspots`` is what the chapter then uses. With the patch, the notebook at smoke scale
must stop with ``ClaimFailed`` naming ``kills``; without it, it passes (``make test-smoke``).

A training claim that smoke scale cannot make is covered at unit level instead: ``unit`` names a
pytest node that plants the error in the claim's statistic and checks that the claim fails. The
verification report says which level covers each claim.

Each Part lists its mutants in ``tests/mutants/<part>.py`` as ``MUTANTS``.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass

PARTS = ("masked", "selfpretraining", "privileged")
_ID = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


@dataclass(frozen=True)
class Mutant:
    """One planted error and the verification claim it must make fail.

    id: short name of the error, unique across the book.
    notebook: chapter, e.g. ``"masked/04_schedules"``.
    kills: id of the claim that must fail (the first ``ClaimFailed`` the notebook raises).
    what: one sentence saying which wrong theory or bug this plants.
    patch: code run after the parameters cell (notebook level), or ``None`` with ``unit``.
    unit: a pytest node id (``tests/...py::test_name``) that plants the error at unit level.
    """

    id: str
    notebook: str
    kills: str
    what: str
    patch: str | None = None
    unit: str | None = None

    def __post_init__(self):
        if not _ID.match(self.id):
            raise ValueError(f"mutant id must be lower-case letters, digits, '_', '-' or '.', got {self.id!r}")
        if (self.patch is None) == (self.unit is None):
            raise ValueError(f"mutant {self.id!r}: give exactly one of patch (notebook level) or unit")

    @property
    def level(self) -> str:
        return "notebook" if self.patch is not None else "unit"


def all_mutants() -> list[Mutant]:
    """Every Part's mutants; ids must be unique."""
    out: list[Mutant] = []
    for part in PARTS:
        try:
            module = importlib.import_module(f"mutants.{part}")
        except ModuleNotFoundError as err:
            if err.name != f"mutants.{part}":
                raise
            continue
        out.extend(module.MUTANTS)
    ids = [m.id for m in out]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ValueError(f"mutant ids must be unique, repeated: {dup}")
    return out
