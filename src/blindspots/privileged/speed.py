"""Speed as steps to a loss level, with runs that never reach it kept as bounds.

A training arm's *time to target* is the first evaluated step at which its held-out loss is at or
below a target level. A run that never gets there within its budget is **censored**: its time is only
known to exceed the budget. The speedup of an arm over a baseline on one seed is
``t_base / t_arm``; with censoring it is an interval ``[low, high]`` (a censored arm gives
``[0, t_base / budget]``, a censored baseline ``[budget / t_arm, inf]``). Nothing is imputed.

Over seeds, :func:`median_interval` gives a distribution-free interval for the median speedup from
order statistics (the inversion of the sign test): the ``k``-th smallest lower end and the ``k``-th
largest upper end, with ``k`` chosen so that the binomial coverage is at least the confidence asked
for. It needs only the order of each seed's speedup relative to others, so a censored seed enters as
the bound it is. A median that falls on a censored seed is reported as a bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .pfn import steps_to_reach


def target_index(steps, fraction: float) -> int:
    """Index of the last evaluation at or before ``fraction`` of the run (its last step): where a speed target
    is read off the baseline's own curve, in chapter 02 and chapter 03 alike."""
    steps = np.asarray(steps, dtype=float)
    if isinstance(fraction, bool) or not 0.0 < float(fraction) <= 1.0:
        raise ValueError(f"fraction must be in (0, 1], got {fraction!r}")
    if steps.size == 0:
        raise ValueError("steps must hold at least one evaluation")
    hit = np.flatnonzero(steps <= fraction * steps[-1] + 1e-9)
    return int(hit[-1]) if hit.size else 0


def steps_to_target(curve, checkpoints, target: float) -> tuple[int, bool]:
    """First checkpoint at which ``curve <= target``, and whether the run is censored.

    Parameters
    ----------
    curve, checkpoints
        Held-out loss at each evaluated step (same length, steps increasing).
    target
        The loss level to reach.

    Returns
    -------
    (steps, censored)
        ``steps`` is the first checkpoint with ``curve <= target``; if none, the last checkpoint
        (the budget) with ``censored = True``: the true time exceeds it.
    """
    c = np.asarray(curve, dtype=float).ravel()
    s = np.asarray(checkpoints).ravel()
    if c.size == 0 or c.size != s.size:
        raise ValueError(f"curve and checkpoints must be non-empty and of equal length, "
                         f"got {c.size} and {s.size}")
    if np.any(np.diff(s) <= 0) or s[0] <= 0:
        raise ValueError("checkpoints must be positive and strictly increasing")
    if not math.isfinite(float(target)):
        raise ValueError(f"target must be finite, got {target!r}")
    t = steps_to_reach(c, float(target), s)  # the first-crossing rule of chapter 03's speedups
    return (int(s[-1]), True) if math.isinf(t) else (int(t), False)


def speedup_bounds(t_base: float, base_censored: bool, t_arm: float,
                   arm_censored: bool) -> tuple[float, float]:
    """Interval ``[low, high]`` that holds the speedup ``t_base / t_arm`` of one seed.

    A censored time is only known to exceed the value given (the budget): a censored arm gives
    ``[0, t_base / t_arm]``, a censored baseline ``[t_base / t_arm, inf]``, both censored ``[0, inf]``.
    """
    if not (t_base > 0 and t_arm > 0):
        raise ValueError(f"t_base and t_arm must be > 0, got {t_base!r}, {t_arm!r}")
    r = float(t_base) / float(t_arm)
    return (0.0 if arm_censored else r), (math.inf if base_censored else r)


@dataclass(frozen=True)
class MedianInterval:
    """Median over seeds of per-seed intervals, with a distribution-free confidence interval.

    ``median_low``/``median_high``: bounds on the sample median (equal unless censoring reaches it);
    ``low``/``high``: the interval for the population median, coverage at least ``coverage``;
    ``k``: the order statistic used; ``censored``: how many seeds are bounds, not values.
    """

    median_low: float
    median_high: float
    low: float
    high: float
    coverage: float
    k: int
    n: int
    censored: int

    @property
    def median_is_bound(self) -> bool:
        return self.median_low != self.median_high


def order_statistic_rank(n: int, confidence: float = 0.95) -> tuple[int, float]:
    """Largest ``k`` with ``P(X_(k) <= median <= X_(n+1-k)) >= confidence``, and that coverage.

    The coverage is ``1 - 2 P(Bin(n, 1/2) <= k - 1)``. Raises if even ``k = 1`` (the range) falls
    short, i.e. for ``n`` with ``1 - 2^(1-n) < confidence``.
    """
    from scipy.stats import binom

    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    best = None
    for k in range(1, n // 2 + 1):
        cov = float(1.0 - 2.0 * binom.cdf(k - 1, n, 0.5))
        if cov >= confidence:
            best = (k, cov)
    if best is None:
        raise ValueError(f"n = {n} seeds cannot give a {confidence:.0%} interval for a median "
                         f"(the range covers {1 - 2.0 ** (1 - n):.3f}); use more seeds")
    return best


def median_interval(low, high, confidence: float = 0.95) -> MedianInterval:
    """Median of per-seed values known only as intervals ``[low_i, high_i]``, with a sign-test interval.

    The interval for the population median is ``[low_(k), high_(n+1-k)]`` (order statistics of the
    lower and of the upper ends), which covers it with probability at least ``coverage`` whatever the
    censored values are, since ``low_(k) <= x_(k)`` and ``high_(n+1-k) >= x_(n+1-k)``. With too few
    seeds for ``confidence`` (fewer than 6 at 95 %) the interval is the whole line, ``k = 0``.
    """
    lo = np.asarray(low, dtype=float).ravel()
    hi = np.asarray(high, dtype=float).ravel()
    if lo.size != hi.size or lo.size == 0:
        raise ValueError(f"low and high must be non-empty and of equal length, got {lo.size} and {hi.size}")
    if np.any(np.isnan(lo)) or np.any(np.isnan(hi)) or np.any(lo > hi):
        raise ValueError("each seed needs low <= high (no NaN)")
    n = lo.size
    slo, shi = np.sort(lo), np.sort(hi)
    med = dict(median_low=float(np.median(lo)), median_high=float(np.median(hi)), n=n,
               censored=int(np.sum(lo != hi)))
    if 1.0 - 2.0 ** (1 - n) < confidence:  # too few seeds: only the whole line has the coverage asked
        return MedianInterval(low=-math.inf, high=math.inf, coverage=1.0, k=0, **med)
    k, cov = order_statistic_rank(n, confidence)
    return MedianInterval(low=float(slo[k - 1]), high=float(shi[n - k]), coverage=cov, k=k, **med)


def format_bound(low: float, high: float, digits: int = 2) -> str:
    """``"1.50"`` for a value, ``"< 1.50"`` / ``"> 1.50"`` for a one-sided bound, ``"any"`` if unbounded."""
    if low == high:
        return f"{low:.{digits}f}"
    if low <= 0 and math.isinf(high):
        return "any"
    if low <= 0:
        return f"< {high:.{digits}f}"
    if math.isinf(high):
        return f"> {low:.{digits}f}"
    return f"{low:.{digits}f} to {high:.{digits}f}"
