"""Mask schedules over visible sizes ``m = |V|``.

A schedule ``mu`` is a law over visible sets; all laws here are exchangeable, so
only the law of ``|V|`` matters (the set is uniform given its size). Each schedule
exposes :meth:`Schedule.support` ``(N) -> (ms, weights)`` and the schedule
averages ``D_mu = E_{V~mu} D_V`` of {prf:ref}`def-masked-discrepancy`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from . import exact
from .laws import Law, check_N

__all__ = ["Schedule", "PointMass", "Mixture", "TwoPoint", "FixedFraction", "UniformRatio",
           "schedule_discrepancy", "log_schedule_discrepancy", "schedule_residual_uncertainty",
           "log_schedule_residual_uncertainty", "log_schedule_discrepancy_bracket", "full_mask_mass",
           "min_visible"]

_MASS_TOL = 1e-12


def _check_size(name: str, m) -> int:
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 0:
        raise ValueError(f"{name} must be an integer >= 0, got {m!r}")
    return int(m)


class Schedule:
    """Base class: a law over visible sizes."""

    def support(self, N: int) -> tuple[np.ndarray, np.ndarray]:
        """``(ms, weights)``: visible sizes with positive mass and their masses (sum 1)."""
        raise NotImplementedError

    def mass_at(self, N: int, m: int) -> float:
        ms, wt = self.support(N)
        return float(wt[ms == m].sum())


def _finish(N: int, ms, wt) -> tuple[np.ndarray, np.ndarray]:
    ms = np.asarray(ms, dtype=int)
    wt = np.asarray(wt, dtype=float)
    if np.any(ms > N):
        raise ValueError(f"visible sizes must lie in [0, N={N}], got {int(ms.max())}")
    uniq, inv = np.unique(ms, return_inverse=True)
    tot = np.zeros(uniq.size)
    np.add.at(tot, inv, wt)
    pos = tot > 0
    return uniq[pos], tot[pos]


@dataclass(frozen=True)
class Mixture(Schedule):
    """A finite mixture ``sum_k masses[k] delta_{sizes[k]}``.

    Masses must be >= 0 and sum to 1 (``ValueError`` otherwise).
    """

    sizes: tuple
    masses: tuple

    def __post_init__(self):
        sizes = tuple(_check_size("sizes", m) for m in self.sizes)
        masses = tuple(float(x) for x in self.masses)
        if len(sizes) != len(masses) or not sizes:
            raise ValueError("sizes and masses must be non-empty and of equal length")
        if any(not math.isfinite(x) or x < 0 for x in masses):
            raise ValueError(f"masses must be >= 0, got {masses}")
        if abs(sum(masses) - 1.0) > _MASS_TOL:
            raise ValueError(f"masses must sum to 1, got sum {sum(masses)!r}")
        object.__setattr__(self, "sizes", sizes)
        object.__setattr__(self, "masses", masses)

    def support(self, N: int):
        N = check_N(N)
        return _finish(N, self.sizes, self.masses)


@dataclass(frozen=True)
class PointMass(Schedule):
    """``delta_m``: always ``m`` visible coordinates."""

    m: int

    def __post_init__(self):
        object.__setattr__(self, "m", _check_size("m", self.m))

    def support(self, N: int):
        N = check_N(N)
        return _finish(N, [self.m], [1.0])


@dataclass(frozen=True)
class TwoPoint(Schedule):
    """``(1 - pi) delta_{m_base} + pi delta_s`` (low-visibility intervention).

    Parameters
    ----------
    m_base : bulk visible size; s : boosted (small) visible size; pi : mass in [0, 1].
    """

    m_base: int
    s: int
    pi: float

    def __post_init__(self):
        object.__setattr__(self, "m_base", _check_size("m_base", self.m_base))
        object.__setattr__(self, "s", _check_size("s", self.s))
        pi = float(self.pi)
        if not (0.0 <= pi <= 1.0):
            raise ValueError(f"pi must lie in [0, 1], got {self.pi!r}")
        object.__setattr__(self, "pi", pi)

    def support(self, N: int):
        N = check_N(N)
        return _finish(N, [self.m_base, self.s], [1.0 - self.pi, self.pi])


@dataclass(frozen=True)
class FixedFraction(Schedule):
    """Visible fraction ``rho``: ``delta_{round(rho N)}`` (ties to even, clipped to [0, N])."""

    rho: float

    def __post_init__(self):
        rho = float(self.rho)
        if not (0.0 <= rho <= 1.0):
            raise ValueError(f"rho must lie in [0, 1], got {self.rho!r}")
        object.__setattr__(self, "rho", rho)

    def support(self, N: int):
        N = check_N(N)
        return _finish(N, [int(min(N, max(0, round(self.rho * N))))], [1.0])


@dataclass(frozen=True)
class UniformRatio(Schedule):
    """Masked diffusion: mask ratio ``t ~ U(0, 1)``, tokens masked i.i.d.

    The visible size is ``Bin(N, 1 - t)`` given ``t``; integrating ``t`` out gives
    ``P(|V| = m) = int C(N, m) u^m (1-u)^(N-m) du = 1 / (N + 1)``: uniform on ``{0..N}``.
    """

    def support(self, N: int):
        N = check_N(N)
        return np.arange(N + 1), np.full(N + 1, 1.0 / (N + 1))


def full_mask_mass(schedule: Schedule, N: int) -> float:
    """``pi_0(mu) = mu(|V| = 0)``."""
    return schedule.mass_at(N, 0)


def min_visible(schedule: Schedule, N: int) -> int:
    """``v_min(mu)``: the smallest visible size with positive mass."""
    ms, _ = schedule.support(N)
    return int(ms.min())


def _check_schedule(schedule) -> Schedule:
    if not isinstance(schedule, Schedule):
        raise ValueError(f"schedule must be a Schedule, got {schedule!r}")
    return schedule


def log_schedule_discrepancy(law: Law, N: int, schedule: Schedule, w: float, lam,
                             method: str = "auto"):
    """``log D_mu(lam) = log sum_m mu(m) D_{N,m}(lam)`` (exact, log domain)."""
    _check_schedule(schedule)
    ms, wt = schedule.support(N)
    lam_arr = np.atleast_1d(np.asarray(lam, dtype=float))
    prof = exact.discrepancy_profile(law, N, ms, w, lam_arr, method)
    vals = logsumexp(prof.log_D + np.log(wt)[:, None], axis=0)
    return float(vals[0]) if np.ndim(lam) == 0 else vals.reshape(np.shape(lam))


def schedule_discrepancy(law: Law, N: int, schedule: Schedule, w: float, lam,
                         method: str = "auto"):
    """``D_mu(lam) = E_{V~mu} D_V(p || q_lam)``; ``lam`` scalar or array."""
    return np.exp(log_schedule_discrepancy(law, N, schedule, w, lam, method))


def log_schedule_residual_uncertainty(law: Law, N: int, schedule: Schedule, w: float,
                                      method: str = "auto") -> float:
    """``log U_mu = log sum_m mu(m) U_{N,m}``."""
    _check_schedule(schedule)
    ms, wt = schedule.support(N)
    lu = np.array([exact.log_residual_uncertainty(law, N, int(m), w, method) for m in ms])
    return float(logsumexp(lu + np.log(wt)))


def schedule_residual_uncertainty(law: Law, N: int, schedule: Schedule, w: float,
                                  method: str = "auto") -> float:
    """``U_mu = E_{V~mu} E[omega_V (1 - omega_V)]``."""
    return float(np.exp(log_schedule_residual_uncertainty(law, N, schedule, w, method)))


def log_schedule_discrepancy_bracket(schedule: Schedule, profile: "exact.Profile") -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)`` with ``lo <= log D_mu(lam) <= hi`` for each ``lam`` of ``profile``, from ``D_{N,m}`` on the
    profile's visible sizes only (:func:`exact.discrepancy_profile`).

    ``D_{N,m}`` is non-increasing in ``m`` ({prf:ref}`cor-masked-monotone`), so the schedule mass on
    ``g_k <= m < g_{k+1}`` (consecutive grid sizes) weighs at least ``D_{N,g_{k+1}}`` and at most
    ``D_{N,g_k}``. The grid must contain 0 (``D_{N,0} = kl(w || lam)``); ``D_{N,N} = 0`` closes it.
    With every size of the support on the grid, ``lo = hi = log D_mu``. For schedules whose support is
    too large to sum exactly (the uniform ratio at ``N ~ 10^6``).
    """
    _check_schedule(schedule)
    if not isinstance(profile, exact.Profile):
        raise ValueError(f"profile must be an exact.Profile, got {profile!r}")
    N = profile.N
    grid = np.asarray(profile.ms, dtype=int)
    if grid.size == 0 or grid.min() != 0 or np.any(np.diff(grid) <= 0):
        raise ValueError(f"profile.ms must be increasing and include 0 (the full mask), got {grid!r}")
    logD = profile.log_D[grid < N]
    grid = grid[grid < N]
    logD = np.vstack([logD, np.full((1, logD.shape[1]), -np.inf)])  # D_{N,N} = 0
    sup, wt = schedule.support(N)
    k = np.searchsorted(grid, sup, side="right") - 1  # g_k <= m < g_{k+1}
    on_grid = grid[k] == sup
    # schedule mass on each grid size exactly, and strictly between it and the next size
    w_on = np.bincount(k[on_grid], weights=wt[on_grid], minlength=grid.size)
    w_between = np.bincount(k[~on_grid], weights=wt[~on_grid], minlength=grid.size)
    with np.errstate(divide="ignore"):
        l_on, l_between, l_all = np.log(w_on), np.log(w_between), np.log(w_on + w_between)
    rows = np.arange(grid.size)
    lo = logsumexp(np.vstack([l_on[:, None] + logD[rows], l_between[:, None] + logD[rows + 1]]), axis=0)
    hi = logsumexp(l_all[:, None] + logD[rows], axis=0)
    return lo, hi
