"""Numerical claims: a measured value, what theory predicts, and a tolerance.

Every verification in the book goes through :func:`claim` (equality within a
tolerance) or :func:`claim_bound` (an inequality). A claim

* asserts: it raises :class:`ClaimFailed` with a readable message when it fails;
* records itself as JSON in ``$BLINDSPOTS_CLAIMS_DIR/<chapter>/<id>.json``
  (default ``_build/claims``), which the verification report lists;
* prints one line with values rounded to ``digits`` significant figures, so the
  text is the same on any CPU, thread count or GPU and nbval can compare it
  (``show="pass"`` prints the id and the criterion only, for results such as
  trained accuracies whose digits legitimately differ between machines);
* has a ``kind``: a **verification** is a claim that a wrong theory or a bug would
  make fail (each one is killed by a planted error in ``make test-mutants``); a
  **consistency** check holds by construction (an identity, a copy, Gibbs'
  inequality); a **sanity** check guards a premise or a size. Only verifications
  count as verified results;
* records its *margin*, how much of its tolerance it used (see :func:`margin`);
  :func:`table` prints every claim of the run with it.

Inside ``with all_hold():`` a failing claim does not raise at once: every claim of the
block is made, and one :class:`ClaimFailed` naming each that failed is raised at the
end, so a loop of claims does not hide the claims after its first failure.
"""

from __future__ import annotations

import json
import math
import re
import textwrap
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

from . import runtime

RELATIONS = ("==", "<=", ">=", "<", ">")
KINDS = ("verification", "consistency", "sanity")
SHOW = (True, False, "value", "pass")
LINE_WIDTH = 90  # printed claims and tables fit a page of the book without scrolling
MARGIN_WARNING = 0.8  # the report flags claims that used more than this share of their tolerance
_ID = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


_FAILED = re.compile("claim '(" + _ID.pattern.strip("^$") + ")' failed")  # the same id syntax as _ID
#: A printed claim line, ``[PASS] id ...`` or ``[FAIL] id ...``: the mark and the id.
CLAIM_LINE = re.compile(r"^\[(PASS|FAIL)\] (" + _ID.pattern.strip("^$") + r")(?=[ :(]|$)", re.MULTILINE)


class ClaimFailed(AssertionError):
    """A numerical claim did not hold. ``ids`` names the claims that failed (several after :func:`all_hold`)."""

    def __init__(self, message: str, ids: list[str] | None = None):
        super().__init__(message)
        self.ids = list(ids) if ids is not None else failed_ids(message)


def failed_ids(message: str) -> list[str]:
    """The ids of the failed claims that a :class:`ClaimFailed` message names, in order.

    For a failure read back from a notebook's error output, where only the message text survives.
    """
    return _FAILED.findall(message or "")


_deferred: list[list["Claim"]] = []  # one list per open all_hold block; failures wait there


@contextmanager
def all_hold() -> Iterator[None]:
    """Make every claim in the block, then raise one :class:`ClaimFailed` naming each that failed.

    Nested blocks share the outermost one, which raises once. An exception other than a failed claim
    propagates unchanged; the claims that failed before it are recorded (JSON) and printed as usual.
    """
    if _deferred:  # nested: the outer block collects and raises
        yield
        return
    _deferred.append([])
    try:
        yield
    finally:
        failed = _deferred.pop()
    if failed:
        raise ClaimFailed("\n".join(_failure_message(c) for c in failed), [c.id for c in failed])


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
    kind: str = "verification"
    margin: float | None = None

    def pass_line(self) -> str:
        """The id, kind and criterion, without values: identical on any machine while it passes."""
        mark = "PASS" if self.passed else "FAIL"
        return _wrap(f"[{mark}] {self.id} ({self.kind}): {self.statement}")

    def line(self) -> str:
        mark = "PASS" if self.passed else "FAIL"
        m, e = _round(self.measured, self.digits), _round(self.expected, self.digits)
        if self.relation == "==":
            return _wrap(f"[{mark}] {self.id}: measured {m}, expected {e} ± {_round(self.tolerance, 2)}")
        slack = f" (slack {_round(self.tolerance, 2)})" if self.tolerance else ""
        return _wrap(f"[{mark}] {self.id}: measured {m} {self.relation} {e}{slack}")

    __str__ = line

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _wrap(text: str) -> str:
    """A printed claim in lines of at most ``LINE_WIDTH`` characters, continuation lines indented."""
    return textwrap.fill(text, LINE_WIDTH, subsequent_indent="    ", break_long_words=False,
                         break_on_hyphens=False)


def _check_number(name: str, value: Any) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number, got {value!r}") from None
    if math.isnan(out):
        raise ValueError(f"{name} must not be NaN")
    return out


def margin(measured: float, expected: float, tolerance: float, relation: str) -> float | None:
    """Share of the tolerance a claim used: 0 is dead centre (or deep inside a bound), 1 is the edge.

    For ``==`` it is ``|measured - expected| / tolerance``. For a bound with slack ``s`` it is the
    signed excess over the bound divided by ``s`` (negative when the bound holds without the slack),
    clipped at 0. A bound without slack has no scale to measure against: ``None`` while it holds,
    ``inf`` when it fails.
    """
    if relation == "==":
        return abs(measured - expected) / tolerance if tolerance > 0 else math.inf
    excess = measured - expected if relation in ("<=", "<") else expected - measured
    if tolerance > 0:
        return max(0.0, excess / tolerance)
    holds = excess <= 0 if relation in ("<=", ">=") else excess < 0
    return None if holds else math.inf


def session_claims() -> list[Claim]:
    """The claims made since the latest ``runtime.setup`` (in order; a re-run claim replaces the old)."""
    run = runtime.current()
    latest = {c.id: c for c in (run.claims if run else [])}
    return list(latest.values())


_ID_COLUMN = 32  # ids longer than this print on a line of their own


def table(claims: list[Claim] | None = None) -> str:
    """A plain-text table of claims (default: this run's) with their margins; printed and returned.

    Meant for a cell that nbval does not compare: measured values of training runs differ in their
    last digits between machines, the pass lines that nbval checks do not.
    """
    rows = session_claims() if claims is None else claims
    head = (f"{'claim':<{_ID_COLUMN}} {'kind':<12} {'measured':>10} {'rel':>3} {'expected':>10} "
            f"{'tol/slack':>9} {'margin':>6}")
    lines = [head, "-" * len(head)]
    for c in rows:
        m = "-" if c.margin is None else ("inf" if math.isinf(c.margin) else f"{c.margin:.2f}")
        flag = " !" if (c.margin is not None and c.margin > MARGIN_WARNING) else ""
        values = (f"{_round(c.measured, 5):>10} {c.relation:>3} {_round(c.expected, 5):>10} "
                  f"{_round(c.tolerance, 2):>9} {m:>6}{flag}")
        if len(c.id) <= _ID_COLUMN:
            lines.append(f"{c.id:<{_ID_COLUMN}} {c.kind:<12} {values}")
        else:  # a long id keeps its row's first two words (id, kind); the values go below
            lines.append(f"{c.id} {c.kind}")
            lines.append(f"{'':<{_ID_COLUMN}} {'':<12} {values}")
    n_ver = sum(c.kind == "verification" for c in rows)
    lines.append(f"{len(rows)} claims: {n_ver} verifications, "
                 f"{sum(c.kind == 'consistency' for c in rows)} consistency, "
                 f"{sum(c.kind == 'sanity' for c in rows)} sanity;")
    lines.append(f"margin = share of the tolerance used ('!' above {MARGIN_WARNING})")
    text = "\n".join(lines)
    print(text)
    return text


def _record(c: Claim) -> None:
    folder = runtime.chapter_records_dir(c.notebook or "unknown")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{c.id}.json").write_text(json.dumps(c.to_json(), indent=1))


def _make(cid: str, statement: str, measured: Any, expected: Any, tolerance: float,
          relation: str, theorem: str | None, digits: int, passed: bool, kind: str) -> Claim:
    run = runtime.current()
    return Claim(id=cid, statement=statement, measured=measured, expected=expected,
                 tolerance=tolerance, relation=relation, passed=bool(passed),
                 scale=run.scale if run else None, device=str(run.device) if run else None,
                 notebook=run.chapter if run else None, theorem=theorem, digits=digits, kind=kind,
                 margin=margin(measured, expected, tolerance, relation))


def _finish(c: Claim, show: bool | str) -> Claim:
    _record(c)
    run = runtime.current()
    if run is not None:
        run.claims.append(c)
    if show is True or show == "value":
        print(c.line())
    elif show == "pass":
        print(c.pass_line())
    if not c.passed:
        if _deferred:
            _deferred[-1].append(c)
        else:
            raise ClaimFailed(_failure_message(c), [c.id])
    return c


def _failure_message(c: Claim) -> str:
    return f"claim {c.id!r} failed: {c.statement}\n  {c.line()}"


def _validate(cid: str, statement: str, digits: int, kind: str = "verification",
              show: bool | str = True) -> None:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if not any(show is v for v in (True, False)) and show not in ("value", "pass"):
        raise ValueError(f"show must be one of {SHOW}, got {show!r}")
    if not isinstance(cid, str) or not _ID.match(cid):
        raise ValueError(f"id must be lower-case letters, digits, '_', '-' or '.', got {cid!r}")
    if not statement:
        raise ValueError("statement must say what is claimed")
    if not 1 <= digits <= 15:
        raise ValueError(f"digits must lie in [1, 15], got {digits}")


def claim(cid: str, statement: str, measured: Any, expected: Any, tol: float, *,
          kind: str, rel: bool = False, theorem: str | None = None, digits: int = 4,
          show: bool | str = True) -> Claim:
    """Claim ``|measured - expected| <= tol`` (or ``<= tol * |expected|`` with ``rel``).

    ``tol`` must be positive: a claim with no tolerance could only pass by luck
    of rounding. ``kind`` is one of :data:`KINDS` and has no default: say what the
    claim is. ``theorem`` is the label the claim checks, e.g. ``thm-mode-blindness``.
    ``show``: ``True``/``"value"`` prints rounded values, ``"pass"`` the id and
    criterion only, ``False`` nothing (the margin table still lists it).
    """
    _validate(cid, statement, digits, kind, show)
    m = _check_number("measured", measured)
    e = _check_number("expected", expected)
    t = _check_number("tol", tol)
    if not t > 0:
        raise ValueError(f"tol must be > 0, got {tol!r}")
    bound = t * abs(e) if rel else t
    passed = abs(m - e) <= bound
    c = _make(cid, statement, m, e, t if not rel else t * abs(e), "==", theorem, digits, passed, kind)
    return _finish(c, show)


def claim_bound(cid: str, statement: str, measured: Any, relation: str, bound: Any, *,
                kind: str, slack: float = 0.0, theorem: str | None = None, digits: int = 4,
                show: bool | str = True) -> Claim:
    """Claim ``measured <relation> bound``, with ``relation`` one of ``<=, >=, <, >``.

    ``slack`` (>= 0) loosens the bound by an amount the statement must justify,
    such as a Monte Carlo standard error times a z-value. ``kind`` and ``show`` as in :func:`claim`.
    """
    _validate(cid, statement, digits, kind, show)
    if relation not in RELATIONS[1:]:
        raise ValueError(f"relation must be one of {RELATIONS[1:]}, got {relation!r}")
    m = _check_number("measured", measured)
    b = _check_number("bound", bound)
    s = _check_number("slack", slack)
    if s < 0:
        raise ValueError(f"slack must be >= 0, got {slack!r}")
    passed = {"<=": m <= b + s, ">=": m >= b - s, "<": m < b + s, ">": m > b - s}[relation]
    c = _make(cid, statement, m, b, s, relation, theorem, digits, passed, kind)
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


# ----------------------------------------------------------------------------
# Training effects: statistics over seeds


@dataclass
class SeedEffect:
    """Mean difference between two arms of per-seed results, with the seed spread in its error.

    ``difference`` is mean(treated) - mean(control) (paired: the mean of per-seed differences);
    ``se`` its standard error from the seed-to-seed spread (Welch for two samples); ``low`` and
    ``high`` the two-sided ``confidence`` interval from Student's t with ``df`` degrees of freedom.
    """

    difference: float
    se: float
    df: float
    low: float
    high: float
    confidence: float
    n_treated: int
    n_control: int
    paired: bool

    def t(self, exceeds: float = 0.0) -> float:
        """Student's t of ``difference - exceeds``."""
        if self.se == 0:
            return math.copysign(math.inf, self.difference - exceeds) if self.difference != exceeds else 0.0
        return (self.difference - exceeds) / self.se

    def p_value(self) -> float:
        """Two-sided p-value of Student's t test of ``difference == 0`` (0 or 1 when there is no spread)."""
        from scipy import stats

        if self.se == 0:
            return 1.0 if self.difference == 0 else 0.0
        return float(2 * stats.t.sf(abs(self.difference / self.se), self.df))

    def critical_t(self) -> float:
        """The t that the lower end of the interval clears exactly (one-sided level (1-confidence)/2)."""
        from scipy import stats

        return float(stats.t.ppf(0.5 + self.confidence / 2, self.df))

    def __str__(self) -> str:
        return (f"{self.difference:+.4f} (s.e. {self.se:.4f} over seeds; {100 * self.confidence:.0f}% CI "
                f"[{self.low:+.4f}, {self.high:+.4f}], n = {self.n_treated} vs {self.n_control}"
                f"{', paired' if self.paired else ''})")


def seed_effect(treated: Any, control: Any, *, paired: bool = False, confidence: float = 0.95) -> SeedEffect:
    """Effect of ``treated`` over ``control`` from one value per seed and arm (at least 2 each)."""
    import numpy as np
    from scipy import stats

    a = np.asarray(treated, dtype=float).ravel()
    b = np.asarray(control, dtype=float).ravel()
    if a.size < 2 or b.size < 2:
        raise ValueError(f"treated and control need at least 2 seeds each, got {a.size} and {b.size}")
    if not np.all(np.isfinite(a)) or not np.all(np.isfinite(b)):
        raise ValueError("treated and control must be finite")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    if paired:
        if a.size != b.size:
            raise ValueError(f"paired arms need the same seeds, got {a.size} and {b.size} values")
        d = a - b
        diff, se, df = float(d.mean()), float(d.std(ddof=1) / math.sqrt(d.size)), float(d.size - 1)
    else:
        va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
        diff, se = float(a.mean() - b.mean()), float(math.sqrt(va + vb))
        # Welch-Satterthwaite; with no spread at all the t test has n_a + n_b - 2 degrees of freedom.
        df = float((va + vb) ** 2 / (va ** 2 / (a.size - 1) + vb ** 2 / (b.size - 1))) if va + vb > 0 \
            else float(a.size + b.size - 2)
    half = float(stats.t.ppf(0.5 + confidence / 2, df)) * se
    return SeedEffect(diff, se, df, diff - half, diff + half, confidence, int(a.size), int(b.size), paired)


def holm(pvalues: Any) -> "np.ndarray":
    """Holm's step-down adjusted p-values of a family of tests (family-wise error control, any dependence)."""
    import numpy as np

    p = np.asarray(pvalues, dtype=float).ravel()
    if p.size == 0:
        return p
    if not np.all(np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise ValueError(f"pvalues must lie in [0, 1], got {pvalues!r}")
    order = np.argsort(p, kind="stable")
    adjusted = np.maximum.accumulate((p.size - np.arange(p.size)) * p[order])
    out = np.empty(p.size)
    out[order] = np.minimum(adjusted, 1.0)
    return out


def detectable_effect(sd: float, n: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest mean paired difference a two-sided paired t test on ``n`` seeds at level ``alpha`` detects
    with probability ``power``, when the per-seed differences have standard deviation ``sd`` (noncentral t)."""
    from scipy import optimize, stats

    if n < 2:
        raise ValueError(f"n must be >= 2 seeds, got {n}")
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"alpha and power must lie in (0, 1), got {alpha} and {power}")
    if sd < 0 or not math.isfinite(sd):
        raise ValueError(f"sd must be finite and >= 0, got {sd}")
    if sd == 0:
        return 0.0
    df, crit = n - 1, float(stats.t.ppf(1 - alpha / 2, n - 1))

    def shortfall(delta: float) -> float:
        nc = delta * math.sqrt(n) / sd
        lower = float(stats.nct.cdf(-crit, df, nc))  # NaN from scipy at 1-3 df and large nc, where it is ~0
        return float(stats.nct.sf(crit, df, nc)) + (0.0 if math.isnan(lower) else lower) - power

    hi = sd
    while shortfall(hi) < 0:
        hi *= 2
    return float(optimize.brentq(shortfall, 0.0, hi, xtol=1e-10 * sd))


@dataclass
class FamilyVerdict:
    """One row of a family of paired comparisons: Holm's adjusted p, the detectable effect and the verdict."""

    p_holm: float
    detectable: float
    resolved: bool
    verdict: str


def family_verdicts(effects: Sequence[SeedEffect], *, alpha: float = 0.05, power: float = 0.8,
                    words: tuple[str, str, str] = ("reproduces", "opposite", "not resolved"),
                    digits: int = 3) -> list[FamilyVerdict]:
    """Verdicts of paired seed effects tested as one family (Holm at ``alpha``).

    A row whose adjusted p is below ``alpha`` reads ``words[0]`` (effect > 0) or ``words[1]`` (effect < 0);
    otherwise ``words[2]`` with the smallest effect its design could have detected: a paired t test at level
    ``alpha / m`` (Holm's first, strictest step; ``m`` rows) with probability ``power`` at the row's seed
    spread (:func:`detectable_effect`), printed with ``digits`` decimals.
    """
    if len(words) != 3:
        raise ValueError(f"words must name 3 verdicts (positive, negative, unresolved), got {words!r}")
    effects = list(effects)
    out = []
    for eff, q in zip(effects, holm([e.p_value() for e in effects])):
        detectable = detectable_effect(eff.se * math.sqrt(eff.n_treated), eff.n_treated, alpha / len(effects),
                                       power)
        resolved = bool(q < alpha)
        if resolved:
            verdict = words[0] if eff.difference > 0 else words[1]
        else:
            verdict = f"{words[2]} (could have detected ≥ {detectable:.{digits}f})"
        out.append(FamilyVerdict(float(q), detectable, resolved, verdict))
    return out


def claim_effect(cid: str, statement: str, treated: Any, control: Any, *, exceeds: float = 0.0,
                 paired: bool = False, confidence: float = 0.95, kind: str = "verification",
                 theorem: str | None = None, show: bool | str = "pass") -> SeedEffect:
    """Claim that the effect of ``treated`` over ``control`` exceeds ``exceeds`` with the seed spread
    counted: the lower end of the ``confidence`` interval lies above ``exceeds``.

    Recorded as a bound on Student's t of ``difference - exceeds`` against the critical t; its margin
    is critical t / t (1 at the edge, smaller the further the interval clears the threshold). ``statement`` must state the
    criterion, fixed before the run. Prints the pass line by default: trained results differ in their
    last digits between machines, whether the interval clears the threshold should not.
    """
    _validate(cid, statement, 3, kind, show)
    eff = seed_effect(treated, control, paired=paired, confidence=confidence)
    t, t_crit = eff.t(exceeds), eff.critical_t()
    c = _make(cid, statement, t, t_crit, 0.0, ">", theorem, 3, t > t_crit, kind)
    # Margin: critical t over measured t, 1 where the interval's end touches the threshold, 1/2 where
    # the difference clears it by twice the needed number of standard errors.
    c.margin = t_crit / t if t > 0 else math.inf
    _finish(c, show)
    return eff
