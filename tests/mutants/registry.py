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
    scale: the scale a notebook-level mutant runs its chapter at: ``smoke``; for a training claim that smoke
    scale cannot make, ``mutant`` (the chapter's preset for these tests: the smallest run at which the claim
    holds, checked by an unpatched control run of the chapter in the same session) or ``book`` where the chapter
    has no smaller run at which the claim holds. The planted bug must still reach the claim through the chapter's
    code.
    also: further claims that the same run must name as failed (claims made together in one
    ``claims.all_hold`` block); each counts as killed by this mutant.
    workers: plant ``patch`` in every seed worker too (:func:`planted_patch`), for a chapter whose
    ``runtime.map_seeds`` runs seeds in worker processes (book scale), which a kernel-only patch misses.
    """

    id: str
    notebook: str
    kills: str
    what: str
    patch: str | None = None
    unit: str | None = None
    scale: str = "smoke"
    also: tuple[str, ...] = ()
    workers: bool = False

    def __post_init__(self):
        if not _ID.match(self.id):
            raise ValueError(f"mutant id must be lower-case letters, digits, '_', '-' or '.', got {self.id!r}")
        if (self.patch is None) == (self.unit is None):
            raise ValueError(f"mutant {self.id!r}: give exactly one of patch (notebook level) or unit")
        if (self.also or self.workers) and self.unit is not None:
            raise ValueError(f"mutant {self.id!r}: also and workers apply to notebook-level mutants only")
        if self.scale not in ("smoke", "mutant", "book") or (self.unit is not None and self.scale != "smoke"):
            raise ValueError(f"mutant {self.id!r}: scale must be 'smoke', 'mutant' or 'book' (the last two at "
                             f"notebook level only), got {self.scale!r}")

    @property
    def targets(self) -> tuple[str, ...]:
        """Every claim this mutant must make fail: ``kills`` and ``also``."""
        return (self.kills, *self.also)

    @property
    def level(self) -> str:
        return "notebook" if self.patch is not None else "unit"


def planted_patch(mutant: Mutant) -> str:
    """The code the mutant runner inserts after the parameters cell.

    With ``workers``, the patch also runs in every seed worker before its seed: ``runtime.map_seeds`` is
    wrapped by a closure of the kernel's ``__main__``, which joblib's loky workers receive by value
    (cloudpickle). The wrapper only delivers the planted code; the error itself is ``mutant.patch``.
    """
    if not mutant.workers:
        return mutant.patch
    return f"""_PLANT = {mutant.patch!r}
exec(_PLANT)
import blindspots.runtime as _R
_map_seeds = _R.map_seeds
def _planted_map_seeds(fn, seeds, **kw):
    def planted(seed, **kwargs):
        exec(_PLANT, {{}})
        return fn(seed, **kwargs)
    return _map_seeds(planted, seeds, **kw)
_R.map_seeds = _planted_map_seeds
"""


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
