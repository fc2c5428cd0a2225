"""Numerical claims: a measured value, what theory predicts, and a tolerance.

Every verification in the book goes through :func:`claim` (equality within a
tolerance) or :func:`claim_bound` (an inequality). A claim

* asserts: it raises :class:`ClaimFailed` with a readable message when it fails;
* records itself as JSON in ``$BLINDSPOTS_CLAIMS_DIR/<chapter>/<id>.json``
  (default ``_build/claims``), which the verification report lists;
* prints one line with values rounded to ``digits`` significant figures, so the
  text is the same on any CPU, thread count or GPU and nbval can compare it.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass
from typing import Any

from . import runtime

RELATIONS = ("==", "<=", ">=", "<", ">")
_ID = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


class ClaimFailed(AssertionError):
    """A numerical claim did not hold."""


def _round(value: float, digits: int) -> str:
    if value is None:
        return "None"
    if isinstance(value, bool):
        return str(value)
    value = float(value)
    if math.isnan(value) or math.isinf(value):
        return str(value)
    if value == 0.0:
        return "0"  # also folds -0.0
    return f"{value:.{digits}g}"


@dataclass
class Claim:
    """One recorded claim. ``expected`` is the prediction (or the bound)."""

    id: str
    statement: str
    measured: float
    expected: float
    tolerance: float
    relation: str
    passed: bool
    scale: str | None
    device: str | None
    notebook: str | None
    theorem: str | None
    digits: int

    def line(self) -> str:
        mark = "PASS" if self.passed else "FAIL"
        m, e = _round(self.measured, self.digits), _round(self.expected, self.digits)
        if self.relation == "==":
            return f"[{mark}] {self.id}: measured {m}, expected {e} ± {_round(self.tolerance, 2)}"
        slack = f" (slack {_round(self.tolerance, 2)})" if self.tolerance else ""
        return f"[{mark}] {self.id}: measured {m} {self.relation} {e}{slack}"

    __str__ = line

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _check_number(name: str, value: Any) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number, got {value!r}") from None
    if math.isnan(out):
        raise ValueError(f"{name} must not be NaN")
    return out


def _record(c: Claim) -> None:
    folder = runtime.chapter_records_dir(c.notebook or "unknown")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{c.id}.json").write_text(json.dumps(c.to_json(), indent=1))


def _make(cid: str, statement: str, measured: Any, expected: Any, tolerance: float,
          relation: str, theorem: str | None, digits: int, passed: bool) -> Claim:
    run = runtime.current()
    return Claim(id=cid, statement=statement, measured=measured, expected=expected,
                 tolerance=tolerance, relation=relation, passed=bool(passed),
                 scale=run.scale if run else None, device=str(run.device) if run else None,
                 notebook=run.chapter if run else None, theorem=theorem, digits=digits)


def _finish(c: Claim, show: bool) -> Claim:
    _record(c)
    if show:
        print(c.line())
    if not c.passed:
        raise ClaimFailed(f"claim {c.id!r} failed: {c.statement}\n  {c.line()}")
    return c


def _validate(cid: str, statement: str, digits: int) -> None:
    if not isinstance(cid, str) or not _ID.match(cid):
        raise ValueError(f"id must be lower-case letters, digits, '_', '-' or '.', got {cid!r}")
    if not statement:
        raise ValueError("statement must say what is claimed")
    if not 1 <= digits <= 15:
        raise ValueError(f"digits must lie in [1, 15], got {digits}")


def claim(cid: str, statement: str, measured: Any, expected: Any, tol: float, *,
          rel: bool = False, theorem: str | None = None, digits: int = 4,
          show: bool = True) -> Claim:
    """Claim ``|measured - expected| <= tol`` (or ``<= tol * |expected|`` with ``rel``).

    ``tol`` must be positive: a claim with no tolerance could only pass by luck
    of rounding. ``theorem`` is the label the claim checks, e.g. ``thm-mode-blindness``.
    """
    _validate(cid, statement, digits)
    m = _check_number("measured", measured)
    e = _check_number("expected", expected)
    t = _check_number("tol", tol)
    if not t > 0:
        raise ValueError(f"tol must be > 0, got {tol!r}")
    bound = t * abs(e) if rel else t
    passed = abs(m - e) <= bound
    c = _make(cid, statement, m, e, t if not rel else t * abs(e), "==", theorem, digits, passed)
    return _finish(c, show)


def claim_bound(cid: str, statement: str, measured: Any, relation: str, bound: Any, *,
                slack: float = 0.0, theorem: str | None = None, digits: int = 4,
                show: bool = True) -> Claim:
    """Claim ``measured <relation> bound``, with ``relation`` one of ``<=, >=, <, >``.

    ``slack`` (>= 0) loosens the bound by an amount the statement must justify,
    such as a Monte Carlo standard error times a z-value.
    """
    _validate(cid, statement, digits)
    if relation not in RELATIONS[1:]:
        raise ValueError(f"relation must be one of {RELATIONS[1:]}, got {relation!r}")
    m = _check_number("measured", measured)
    b = _check_number("bound", bound)
    s = _check_number("slack", slack)
    if s < 0:
        raise ValueError(f"slack must be >= 0, got {slack!r}")
    passed = {"<=": m <= b + s, ">=": m >= b - s, "<": m < b + s, ">": m > b - s}[relation]
    c = _make(cid, statement, m, b, s, relation, theorem, digits, passed)
    return _finish(c, show)


def load_records(folder=None, chapter: str | None = None) -> list[dict[str, Any]]:
    """Every claim record below ``folder`` (default: :func:`runtime.records_dir`), or only ``chapter``'s.

    Run records (``_run.json``) are not claims and are skipped.
    """
    from pathlib import Path

    root = Path(folder) if folder else runtime.records_dir()
    pattern = f"{runtime.chapter_records_dir(chapter, root).name}/*.json" if chapter else "*/*.json"
    out = []
    for path in sorted(root.glob(pattern)):
        if path.name.startswith("_"):
            continue
        out.append(json.loads(path.read_text()))
    return out
