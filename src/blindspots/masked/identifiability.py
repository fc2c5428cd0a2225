"""Identifiability of the joint law under mask schedules.

Three groups of tools, one per question of chapters 4 and 5:

* **Recovery on the witness family.** :func:`recovery_radius` solves
  ``r(eps) = max{|w - lam| : lam in J, D_mu(lam) <= eps}`` by root finding on
  ``log D_mu`` in the log-distance variable, so discrepancies far below the
  float64 range of ``D`` itself stay resolvable. It marks a side *censored* when
  the edge of ``I`` already has ``D_mu <= eps``. Implements the witness-family
  modulus of {prf:ref}`def-masked-recovery-radius`.
* **Coercivity for every model.** :func:`masked_discrepancy_all` computes the
  excess masked risk ``D_m(p || q)`` of arbitrary joint laws ``q`` on
  ``{-1, +1}^N`` by exact enumeration (each term in a form with non-negative
  summands, so no cancellation), and :func:`random_joint_laws` draws laws near
  ``p``. Checks {prf:ref}`thm-masked-full-mask-coercivity`.
* **Approximate tensorization.** :func:`log_tensorization_lower_bound` gives
  ``log C_AT >= log kl(lam || w) - log D_mu(q_lam || p)``, the bound of
  {prf:ref}`thm-masked-tensorization-lower-bound`.

The witness-family discrepancies come from the exact engine
(:mod:`blindspots.masked.exact`) and its schedules
(:mod:`blindspots.masked.schedules`); ``m`` is always the number of visible
coordinates.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np
from scipy.optimize import brentq
from scipy.special import logsumexp

__all__ = [
    "mode_weight_interval",
    "schedule_curvature",
    "RecoveryRadius",
    "recovery_radius",
    "recovery_radii",
    "two_point_radii",
    "RecoveryGrid",
    "recovery_grid",
    "SlopeFit",
    "fit_kappa_vs_pi",
    "fit_radius_vs_pi",
    "fit_radius_vs_eps",
    "grid_fits",
    "recovery_slope",
    "cubic_ratio_bound",
    "log_elasticity",
    "curvature_richardson",
    "log_curvature_richardson",
    "ols",
    "pair_slopes",
    "total_variation",
    "kl_divergence",
    "masked_discrepancy_all",
    "excess_masked_risk",
    "random_joint_laws",
    "coercivity_radius",
    "CoercivityDraws",
    "coercivity_draws",
    "log_tensorization_lower_bound",
    "log_tensorization_limit_bound",
    "visible_overlap_rate",
    "uniform_ratio_growth_exponent",
    "TensorizationRow",
    "tensorization_row",
]


# --------------------------------------------------------------------------
# Schedules as (m, mass) components
# --------------------------------------------------------------------------


def mode_weight_interval(w: float) -> tuple[float, float]:
    """``J = [c0/2, 1 - c0/2]`` with ``c0 = min(w, 1 - w)``: the witness interval."""
    if not 0.0 < w < 1.0:
        raise ValueError(f"w must lie in (0, 1), got {w!r}")
    c0 = min(w, 1.0 - w)
    return c0 / 2.0, 1.0 - c0 / 2.0


def schedule_curvature(log_u_mu: float, w: float) -> float:
    """``D_mu''(w) = U_mu / (w (1 - w))^2`` (linearity plus the curvature identity)."""
    return math.exp(log_u_mu - 2.0 * math.log(w * (1.0 - w)))


# --------------------------------------------------------------------------
# Recovery radius
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class RecoveryRadius:
    """``r(eps)`` and where it is attained.

    ``censored`` is True when the side attaining the maximum reaches the edge of
    ``I`` with ``D <= eps`` there: the true radius is cut off by the interval.
    ``radii`` and ``censored_sides`` give both sides as ``(left, right)``.
    """

    eps: float
    radius: float
    censored: bool
    side: str
    radii: tuple[float, float]
    censored_sides: tuple[bool, bool]


def _side_radius(log_D: Callable[[float], float], w: float, edge: float, log_eps: float,
                 xtol: float) -> tuple[float, bool]:
    """Largest ``d`` with ``log D(w +- d) <= log_eps`` on one side; ``D`` is monotone there."""
    span = abs(edge - w)
    sign = 1.0 if edge > w else -1.0
    if log_D(edge) <= log_eps:
        return span, True

    def g(u: float) -> float:
        return log_D(w + sign * math.exp(u)) - log_eps

    hi = math.log(span)
    lo = hi - 1.0
    # D ~ (kappa/2) d^2 near w, so g falls by about 2 per unit of u; step down until inside.
    for _ in range(400):
        if g(lo) <= 0.0:
            break
        lo -= 2.0
    else:
        raise RuntimeError("could not bracket the recovery radius: D does not vanish at w")
    u = brentq(g, lo, hi, xtol=xtol, rtol=4 * np.finfo(float).eps, maxiter=200)
    return math.exp(u), False


def recovery_radius(log_D: Callable[[float], float], w: float, eps: float,
                    interval: tuple[float, float] | None = None,
                    xtol: float = 1e-13) -> RecoveryRadius:
    """``r(eps) = max{|w - lam| : lam in J, D(lam) <= eps}`` for a discrepancy that
    vanishes only at ``w`` and increases away from it on each side.

    Root finding (``scipy.optimize.brentq``) is on ``log D(w +- e^u) - log eps`` in
    ``u = log |lam - w|``, so both tiny radii and discrepancies below ``1e-300``
    are resolved; ``xtol`` is the tolerance on ``u``, i.e. a relative tolerance on ``r``.
    Implements {prf:ref}`def-masked-recovery-radius`.
    """
    if not eps > 0.0:
        raise ValueError(f"eps must be > 0, got {eps!r}")
    a, b = mode_weight_interval(w) if interval is None else interval
    if not a < w < b:
        raise ValueError(f"w must lie inside the interval ({a}, {b}), got {w!r}")
    log_eps = math.log(eps)
    r_left, c_left = _side_radius(log_D, w, a, log_eps, xtol)
    r_right, c_right = _side_radius(log_D, w, b, log_eps, xtol)
    if r_left >= r_right:
        return RecoveryRadius(eps, r_left, c_left, "left", (r_left, r_right), (c_left, c_right))
    return RecoveryRadius(eps, r_right, c_right, "right", (r_left, r_right), (c_left, c_right))


def recovery_radii(log_D_cells: Callable[[np.ndarray], np.ndarray], w: float, eps: np.ndarray,
                   interval: tuple[float, float] | None = None, iterations: int = 64
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vectorised :func:`recovery_radius` for many cells at once.

    ``log_D_cells(lam)`` takes an array ``lam`` with one entry per cell and returns
    ``log D_cell(lam[cell])`` for every cell (e.g. the cells of a grid of schedule
    masses ``pi``). Each side is solved by bisection in ``u = log |lam - w|`` on
    ``[log(span) - 60, log(span)]``, ``iterations`` halvings (64 reach float64
    resolution). Returns ``(radius, censored, side)`` arrays, ``side`` being
    ``-1`` (left) or ``+1`` (right).
    """
    eps = np.asarray(eps, dtype=float)
    if np.any(~(eps > 0.0)):
        raise ValueError("eps must be > 0")
    a, b = mode_weight_interval(w) if interval is None else interval
    if not a < w < b:
        raise ValueError(f"w must lie inside the interval ({a}, {b}), got {w!r}")
    log_eps = np.log(eps)
    out_r, out_c = [], []
    for edge in (a, b):
        span = abs(edge - w)
        sign = 1.0 if edge > w else -1.0
        hi = np.full(eps.shape, math.log(span))
        censored = log_D_cells(np.full(eps.shape, edge)) <= log_eps
        lo = hi - 60.0
        if np.any(log_D_cells(w + sign * np.exp(lo)) > log_eps):
            raise RuntimeError("could not bracket the recovery radius: D does not vanish at w")
        for _ in range(iterations):
            mid = 0.5 * (lo + hi)
            inside = log_D_cells(w + sign * np.exp(mid)) <= log_eps
            lo = np.where(inside, mid, lo)
            hi = np.where(inside, hi, mid)
        r = np.where(censored, span, np.exp(lo))
        out_r.append(r)
        out_c.append(censored)
    right = out_r[1] > out_r[0]
    radius = np.where(right, out_r[1], out_r[0])
    cens = np.where(right, out_c[1], out_c[0])
    return radius, cens, np.where(right, 1, -1)


def two_point_radii(law, N: int, m_base: int, s: int, w: float, pis: np.ndarray,
                    eps: np.ndarray, interval: tuple[float, float] | None = None,
                    iterations: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """``r(eps)`` for ``mu = (1 - pi) delta_{m_base} + pi delta_s`` at cells ``(pis[i], eps[i])``.

    ``D_mu = (1 - pi) D_{m_base} + pi D_s`` exactly, so each bisection step needs one
    vectorised engine call per component. Returns ``(radius, censored)``.
    """
    from . import exact

    pis = np.asarray(pis, dtype=float)
    eps = np.asarray(eps, dtype=float)
    if pis.shape != eps.shape:
        raise ValueError("pis and eps must have the same shape")
    if np.any((pis < 0.0) | (pis > 1.0)):
        raise ValueError("pi must lie in [0, 1]")
    with np.errstate(divide="ignore"):
        l_base, l_s = np.log1p(-pis), np.log(pis)

    def cells(lam: np.ndarray) -> np.ndarray:
        lam = np.clip(lam, np.nextafter(0.0, 1.0), np.nextafter(1.0, 0.0))
        db = np.asarray(exact.log_masked_discrepancy(law, N, m_base, w, lam), float)
        ds = np.asarray(exact.log_masked_discrepancy(law, N, s, w, lam), float)
        return np.logaddexp(l_base + db, l_s + ds)

    r, c, _ = recovery_radii(cells, w, eps, interval, iterations)
    return r, c


def log_elasticity(f: Callable[[float], float], x: float, h: float = 1e-3) -> float:
    """``d log f / d log x`` at ``x > 0`` by a central difference of step ``h`` in ``log x``.

    Error ``O(h^2)``; used for the local slopes that bound a fitted slope.
    """
    if not x > 0.0:
        raise ValueError(f"x must be > 0, got {x!r}")
    up, down = f(x * math.exp(h)), f(x * math.exp(-h))
    return (math.log(up) - math.log(down)) / (2.0 * h)


def log_curvature_richardson(log_D: Callable[[float], float], w: float,
                             h: float | None = None) -> tuple[float, float]:
    """Richardson estimate of ``log D''(w)`` from ``D(w +- h)`` and ``D(w +- h/2)``, in the log domain.

    As ``D(w) = D'(w) = 0``, ``(D(w+h) + D(w-h)) / h^2 = kappa + O(h^2)``; combining
    ``h`` and ``h/2`` leaves ``O(h^4)``. Returns ``(log kappa, relative error estimate)``,
    the estimate being the relative change that the extrapolation made. Curvatures far
    below the float64 range (``1e-900`` at ``N = 4095``) stay exact; ``-inf`` only when
    ``D`` vanishes identically near ``w``.
    """
    h = 0.01 * min(w, 1.0 - w) if h is None else h

    def log_k(step: float) -> float:
        return float(np.logaddexp(log_D(w + step), log_D(w - step))) - 2.0 * math.log(step)

    l_h, l_h2 = log_k(h), log_k(h / 2.0)
    if not math.isfinite(l_h2):
        return -math.inf, 0.0
    ratio = (4.0 - math.exp(l_h - l_h2)) / 3.0   # k_rich / k_{h/2}
    return l_h2 + math.log(ratio), abs(1.0 - 1.0 / ratio)


def curvature_richardson(log_D: Callable[[float], float], w: float,
                         h: float | None = None) -> tuple[float, float]:
    """``(D''(w), absolute error estimate)``: :func:`log_curvature_richardson` exponentiated."""
    log_k, rel = log_curvature_richardson(log_D, w, h)
    kappa = math.exp(log_k)
    return kappa, rel * kappa


@dataclass(frozen=True)
class RecoveryGrid:
    """Recovery on the witness family for ``mu = (1 - pi) delta_{m_base} + pi delta_s``.

    Rows index ``pis``, columns ``eps``. ``e_pi`` and ``e_eps`` are the local slopes
    ``d log r / d log pi`` and ``d log r / d log eps`` (central differences of the
    exact radius, step ``h`` in the logarithm; NaN where undefined or censored);
    ``e_pi_mid[i, j]`` is ``e_pi`` at the geometric midpoint of ``pis[i], pis[i+1]``
    (NaN where ``pis[i] = 0``) and ``e_eps_mid[i, j]`` ``e_eps`` between ``eps[j], eps[j+1]``.
    ``log_kappa_theory = log U_mu - 2 log(w(1-w))``; ``log_kappa_fd`` its
    finite-difference measurement from ``D_mu`` with relative error estimate
    ``kappa_rel_err``. Everything about ``U`` is kept in the log domain.
    """

    law: object
    N: int
    w: float
    m_base: int
    s: int
    pis: np.ndarray
    eps: np.ndarray
    radius: np.ndarray
    censored: np.ndarray
    e_pi: np.ndarray
    e_eps: np.ndarray
    e_pi_mid: np.ndarray
    e_eps_mid: np.ndarray
    log_U_base: float
    log_U_s: float
    log_kappa_theory: np.ndarray
    log_kappa_fd: np.ndarray
    kappa_rel_err: np.ndarray

    @property
    def log_U_mu(self) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.logaddexp(np.log1p(-self.pis) + self.log_U_base, np.log(self.pis) + self.log_U_s)

    @property
    def kappa_theory(self) -> np.ndarray:
        return np.exp(self.log_kappa_theory)

    @property
    def kappa_fd(self) -> np.ndarray:
        return np.exp(self.log_kappa_fd)

    @property
    def boost_share(self) -> np.ndarray:
        """``pi U_s / U_mu``: the share of the residual uncertainty carried by the boost."""
        with np.errstate(divide="ignore"):
            return np.exp(np.log(self.pis) + self.log_U_s - self.log_U_mu)

    @property
    def kappa_elasticity(self) -> np.ndarray:
        """Exact ``d log kappa / d log pi = pi (U_s - U_base) / U_mu``."""
        with np.errstate(divide="ignore"):
            return self.boost_share - np.exp(np.log(self.pis) + self.log_U_base - self.log_U_mu)


def recovery_grid(law, N: int, w: float, m_base: int, s: int, pis: Sequence[float],
                  eps: Sequence[float], h: float = 1e-3, iterations: int = 52) -> RecoveryGrid:
    """Radii, local slopes and curvatures on a ``pis x eps`` grid (one law, N, w, m_base, s).

    Implements the measurements of {prf:ref}`thm-masked-schedule-recovery`.
    """
    from . import exact, schedules, theory

    pis = np.asarray(pis, dtype=float)
    eps = np.asarray(eps, dtype=float)
    if np.any(np.diff(pis) <= 0) or np.any(np.diff(eps) <= 0):
        raise ValueError("pis and eps must be strictly increasing")
    with np.errstate(invalid="ignore"):
        pi_mid = np.sqrt(pis[:-1] * pis[1:])
    eps_mid = np.sqrt(eps[:-1] * eps[1:])
    up, down = math.exp(h), math.exp(-h)
    blocks_in = []  # (pi cells, eps cells) of every block, all raveled

    def add(pp: np.ndarray, ee: np.ndarray) -> None:
        P_, E_ = np.meshgrid(pp, ee, indexing="ij")
        blocks_in.append((P_.ravel(), E_.ravel()))

    add(pis, eps)                                            # 0: radius
    add(np.minimum(pis * up, 1.0), eps); add(pis * down, eps)  # 1, 2: d/d log pi
    add(pis, eps * up); add(pis, eps * down)                 # 3, 4: d/d log eps
    add(np.minimum(pi_mid * up, 1.0), eps); add(pi_mid * down, eps)  # 5, 6: midpoints in pi
    add(pis, eps_mid * up); add(pis, eps_mid * down)         # 7, 8: midpoints in eps
    cell_pi = np.concatenate([b[0] for b in blocks_in])
    cell_eps = np.concatenate([b[1] for b in blocks_in])
    r_all, c_all = two_point_radii(law, N, m_base, s, w, np.nan_to_num(cell_pi), cell_eps,
                                   iterations=iterations)
    bounds = np.cumsum([0] + [b[0].size for b in blocks_in])
    blocks = [r_all[bounds[k]:bounds[k + 1]] for k in range(len(blocks_in))]
    cens = [c_all[bounds[k]:bounds[k + 1]] for k in range(len(blocks_in))]

    def slope(k_up: int, k_down: int, x_up: np.ndarray, x_down: np.ndarray, bad: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            e = (np.log(blocks[k_up]) - np.log(blocks[k_down])) / np.log(x_up / x_down)
        return np.where(cens[k_up] | cens[k_down] | bad, np.nan, e)

    P0, E0 = blocks_in[0]
    e_pi = slope(1, 2, blocks_in[1][0], blocks_in[2][0], (P0 == 0.0) | cens[0])
    e_eps = slope(3, 4, blocks_in[3][1], blocks_in[4][1], cens[0])
    e_pi_mid = slope(5, 6, blocks_in[5][0], blocks_in[6][0], ~(blocks_in[5][0] > 0))
    e_eps_mid = slope(7, 8, blocks_in[7][1], blocks_in[8][1], np.zeros(blocks[7].shape, bool))
    shape = (pis.size, eps.size)
    log_u_b = exact.log_residual_uncertainty(law, N, m_base, w)
    log_u_s = exact.log_residual_uncertainty(law, N, s, w)
    with np.errstate(divide="ignore"):
        log_u_mu = np.logaddexp(np.log1p(-pis) + log_u_b, np.log(pis) + log_u_s)
    log_k_th = theory.log_curvature_at_truth(log_u_mu, w)
    log_k_fd, k_err = np.empty(pis.size), np.empty(pis.size)
    for i, pi in enumerate(pis):
        sched = schedules.TwoPoint(m_base, s, float(pi))
        log_k_fd[i], k_err[i] = log_curvature_richardson(
            lambda lam: schedules.log_schedule_discrepancy(law, N, sched, w, lam), w)
    return RecoveryGrid(law=law, N=N, w=w, m_base=m_base, s=s, pis=pis, eps=eps,
                        radius=blocks[0].reshape(shape), censored=cens[0].reshape(shape),
                        e_pi=e_pi.reshape(shape), e_eps=e_eps.reshape(shape),
                        e_pi_mid=e_pi_mid.reshape(pis.size - 1, eps.size),
                        e_eps_mid=e_eps_mid.reshape(pis.size, eps.size - 1),
                        log_U_base=log_u_b, log_U_s=log_u_s, log_kappa_theory=log_k_th,
                        log_kappa_fd=log_k_fd, kappa_rel_err=k_err)


# --------------------------------------------------------------------------
# Fits
# --------------------------------------------------------------------------


def ols(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """Ordinary least squares ``y = intercept + slope x``; returns ``(slope, intercept)``.

    The slope is a weighted mean of the pairwise secant slopes, with weights
    ``(x_j - x_i)^2 >= 0``: it lies between the smallest and largest local slope
    of any continuous, piecewise smooth curve through the points.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.size < 2 or x.size != y.size:
        raise ValueError(f"x and y must have equal length >= 2, got {x.size} and {y.size}")
    xc = x - x.mean()
    sxx = float(xc @ xc)
    if sxx == 0.0:
        raise ValueError("x must not be constant")
    slope = float(xc @ (y - y.mean())) / sxx
    return slope, float(y.mean() - slope * x.mean())


def _ols_perturbation_bound(x: np.ndarray) -> float:
    """``sum |x - mean| / Sxx``: a perturbation ``|dy_i| <= d`` moves an OLS slope by at most ``d`` times this."""
    xc = x - x.mean()
    return float(np.abs(xc).sum() / (xc @ xc))


@dataclass(frozen=True)
class SlopeFit:
    """A fitted log-log slope, its prediction, and the tolerance the numerics justify.

    ``tol`` bounds how far the fitted slope may sit from ``predicted``: the next term of the
    asymptotic expansion at each fitted point, bounded a priori, through the OLS perturbation
    bound (see the fit functions). It never looks at the slopes being judged. ``local`` holds
    the exact local slopes over the window, for display.
    """

    slope: float
    predicted: float
    tol: float
    n: int
    x: np.ndarray
    y: np.ndarray
    local: np.ndarray

    @property
    def deviation(self) -> float:
        """``|slope - predicted| / tol``: at most 1 when the claim holds."""
        return abs(self.slope - self.predicted) / self.tol


def recovery_slope(kind: str) -> float:
    """Leading slope predicted by {prf:ref}`thm-masked-schedule-recovery` where the boost dominates.

    ``"kappa_pi"``: ``d log kappa_mu / d log pi = +1``; ``"r_pi"``: ``d log r / d log pi = -1/2``;
    ``"r_eps"``: ``d log r / d log eps = +1/2`` (from ``r = sqrt(2 eps / kappa_mu)``, ``kappa_mu ~ pi``).
    """
    slopes = {"kappa_pi": 1.0, "r_pi": -0.5, "r_eps": 0.5}
    if kind not in slopes:
        raise ValueError(f"kind must be one of {sorted(slopes)}, got {kind!r}")
    return slopes[kind]


def cubic_ratio_bound(w: float) -> float:
    """A priori bound ``B(w) = (1 + 3|1 - 2w|) / (w(1-w))`` on ``|D_mu^(3)(w) / D_mu^(2)(w)|``.

    With ``delta(lam) = logit lam - logit w``, the third derivative at ``lam = w`` is
    ``(E[beta(1-beta)(1-2 beta)] - 3(1-2w) U) / (w(1-w))^3`` and the second ``U / (w(1-w))^2``,
    for every schedule (both are linear in it), and ``|1 - 2 beta| <= 1``. So the recovery radius
    is ``r = sqrt(2 eps / kappa) (1 + rho)`` with ``|rho| <= A r / 6`` to first order: the next
    term of the expansion in {prf:ref}`thm-masked-schedule-recovery` (3).
    """
    if not 0.0 < w < 1.0:
        raise ValueError(f"w must lie in (0, 1), got {w!r}")
    return (1.0 + 3.0 * abs(1.0 - 2.0 * w)) / (w * (1.0 - w))


def _ols_weighted_bound(x: np.ndarray, d) -> float:
    """``sum |x - mean| E_i / Sxx``: perturbations ``|dy_i| <= E_i`` move an OLS slope by at most this."""
    xc = x - x.mean()
    return float(np.abs(xc) @ np.asarray(d, dtype=float) / (xc @ xc))


def fit_kappa_vs_pi(grid: RecoveryGrid, min_share: float = 10.0 / 11.0) -> SlopeFit | None:
    """Slope of ``log kappa_fd`` against ``log pi`` where the boost carries ``>= min_share``
    of ``U_mu`` (predicted ``recovery_slope("kappa_pi")``). ``None`` with fewer than three such ``pi``.

    Tolerance, fixed before the fit: ``log kappa_mu = log pi + const - log(share)`` with
    ``share = pi U_s / U_mu`` in ``[min_share, 1]``, so after a constant shift each point sits
    within ``-1/2 log(min_share)`` of a line of slope 1; add the Richardson error of
    ``kappa_fd``, and the OLS perturbation bound turns both into a slope tolerance.
    """
    sel = (grid.pis > 0) & (grid.boost_share >= min_share)
    if sel.sum() < 3:
        return None
    x, y = np.log(grid.pis[sel]), grid.log_kappa_fd[sel]
    slope, _ = ols(x, y)
    d = -0.5 * math.log(min_share) + grid.kappa_rel_err[sel]
    tol = _ols_weighted_bound(x, d) + 1e-12
    return SlopeFit(slope, recovery_slope("kappa_pi"), tol, int(sel.sum()), x, y, grid.kappa_elasticity[sel])


def _with_midpoints(at_points: np.ndarray, at_mids: np.ndarray, sel: np.ndarray) -> np.ndarray:
    """Local slopes at the selected grid points and at the midpoints between neighbours that are both selected."""
    mids = at_mids[sel[:-1] & sel[1:]]
    out = np.concatenate([at_points[sel], mids])
    if np.any(~np.isfinite(out)):
        raise RuntimeError("a local slope inside a fit window is undefined")
    return out


def _radius_mask(grid: RecoveryGrid, r_max: float) -> np.ndarray:
    return (~grid.censored) & (grid.radius <= r_max)


def fit_radius_vs_pi(grid: RecoveryGrid, j: int, r_max: float,
                     min_share: float = 10.0 / 11.0) -> SlopeFit | None:
    """Slope of ``log r`` against ``log pi`` at ``eps = grid.eps[j]`` (predicted
    ``recovery_slope("r_pi")``), over uncensored, boost-dominated cells with ``r <= r_max``.

    Tolerance, fixed before the fit: ``log r = 1/2 log(2 eps) - 1/2 log kappa_mu + rho`` where
    ``-1/2 log kappa_mu`` lies within ``-1/4 log(min_share)`` of a line of slope ``-1/2`` (after a
    constant shift, see :func:`fit_kappa_vs_pi`) and ``|rho| <= B r / 3`` (:func:`cubic_ratio_bound`:
    the first correction ``A r / 6``, doubled for the remainder); the OLS perturbation bound turns
    these into a slope tolerance. ``local`` keeps the exact local slopes for display.
    """
    sel = (grid.pis > 0) & (grid.boost_share >= min_share) & _radius_mask(grid, r_max)[:, j]
    sel &= np.isfinite(grid.e_pi[:, j])
    if sel.sum() < 3:
        return None
    x, y = np.log(grid.pis[sel]), np.log(grid.radius[sel, j])
    slope, _ = ols(x, y)
    local = _with_midpoints(grid.e_pi[:, j], grid.e_pi_mid[:, j], sel)
    d = -0.25 * math.log(min_share) + cubic_ratio_bound(grid.w) * grid.radius[sel, j] / 3.0
    return SlopeFit(slope, recovery_slope("r_pi"), _ols_weighted_bound(x, d) + 1e-9, int(sel.sum()), x, y, local)


def fit_radius_vs_eps(grid: RecoveryGrid, i: int, r_max: float) -> SlopeFit | None:
    """Slope of ``log r`` against ``log eps`` at ``pi = grid.pis[i]`` (predicted
    ``recovery_slope("r_eps")``), over uncensored cells with ``r <= r_max``.

    Tolerance, fixed before the fit: at fixed ``pi``, ``log r = 1/2 log(2 eps / kappa_mu) + rho``
    with ``|rho| <= B r / 3`` (:func:`cubic_ratio_bound`), through the OLS perturbation bound.
    """
    sel = _radius_mask(grid, r_max)[i] & np.isfinite(grid.e_eps[i])
    if sel.sum() < 3:
        return None
    x, y = np.log(grid.eps[sel]), np.log(grid.radius[i, sel])
    slope, _ = ols(x, y)
    local = _with_midpoints(grid.e_eps[i], grid.e_eps_mid[i], sel)
    d = cubic_ratio_bound(grid.w) * grid.radius[i, sel] / 3.0
    return SlopeFit(slope, recovery_slope("r_eps"), _ols_weighted_bound(x, d) + 1e-9, int(sel.sum()), x, y, local)


def pair_slopes(x: Sequence[float], y: Sequence[float]) -> np.ndarray:
    """Slopes between consecutive points, ``(y[k+1] - y[k]) / (x[k+1] - x[k])``."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    return np.diff(y) / np.diff(x)


def grid_fits(grid: RecoveryGrid, r_max: float | None = None,
              min_share: float = 10.0 / 11.0) -> dict[str, list[SlopeFit]]:
    """Every slope fit of one grid: ``kappa_pi`` (+1), ``r_pi`` (-1/2, one per eps),
    ``r_eps`` (+1/2, one per pi). ``r_max`` defaults to ``min(w, 1-w) / 10``."""
    r_max = min(grid.w, 1.0 - grid.w) / 10.0 if r_max is None else r_max
    fk = fit_kappa_vs_pi(grid, min_share)
    out = {"kappa_pi": [fk] if fk else [],
           "r_pi": [f for j in range(grid.eps.size) if (f := fit_radius_vs_pi(grid, j, r_max, min_share))],
           "r_eps": [f for i in range(grid.pis.size) if (f := fit_radius_vs_eps(grid, i, r_max))]}
    return out


# --------------------------------------------------------------------------
# Arbitrary joint laws on {-1, +1}^N by enumeration
# --------------------------------------------------------------------------


def total_variation(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``TV(p, q) = 1/2 sum |p - q|`` over the last axes of ``q`` (batched over leading ones)."""
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    diff = np.abs(q - p).reshape(q.shape[: q.ndim - p.ndim] + (-1,))
    return 0.5 * diff.sum(axis=-1)


def _rho_term(ratio: np.ndarray) -> np.ndarray:
    """``rho - 1 - log rho >= 0``, accurate for ``rho`` near 1."""
    d = np.log(ratio)
    return np.expm1(d) - d


def kl_divergence(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``KL(p || q)`` as ``sum_x p (rho - 1 - log rho)``, ``rho = q/p`` (non-negative terms).

    Requires ``p > 0`` and ``q > 0`` everywhere; batched over leading axes of ``q``.
    """
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    terms = p * _rho_term(q / p)
    return terms.reshape(q.shape[: q.ndim - p.ndim] + (-1,)).sum(axis=-1)


def _as_cube(p: np.ndarray, N: int) -> np.ndarray:
    p = np.asarray(p, dtype=float)
    if p.shape[-1] == 2**N and p.ndim >= 1 and p.shape[-1] != 2:
        p = p.reshape(p.shape[:-1] + (2,) * N)
    if p.shape[p.ndim - N:] != (2,) * N:
        raise ValueError(f"laws must have 2**N = {2**N} states (last axis or (2,)*N), got {p.shape}")
    return p


def masked_discrepancy_all(p: np.ndarray, q: np.ndarray, N: int, m: int) -> np.ndarray:
    """``D_m(p || q) = E_{|V| = m} E_{x_V ~ p} KL(p(. | x_V) || q(. | x_V))``, exact.

    ``V`` is uniform over the ``C(N, m)`` visible sets of size ``m``. Each term is
    evaluated as ``sum_x p(x) (rho - 1 - log rho)`` with
    ``rho = q(x_M | x_V) / p(x_M | x_V)``; these summands are non-negative, so the
    result is accurate even when ``D`` is far smaller than ``KL(p || q)``.
    ``p`` has ``2**N`` strictly positive states; ``q`` may carry leading batch axes.
    Equals ``KL(p || q) - E_V KL(p_V || q_V)`` (chain rule).
    """
    if N < 1:
        raise ValueError(f"N must be >= 1, got {N}")
    if not 0 <= m <= N:
        raise ValueError(f"m must lie in [0, {N}], got {m}")
    pc = _as_cube(p, N)
    qc = _as_cube(q, N)
    if np.any(pc <= 0) or np.any(qc <= 0):
        raise ValueError("p and q must be strictly positive on every state")
    lead = qc.ndim - N
    total = np.zeros(qc.shape[:lead])
    subsets = list(itertools.combinations(range(N), m))
    for V in subsets:
        masked = tuple(i for i in range(N) if i not in V)
        if masked:
            pv = pc.sum(axis=masked, keepdims=True)
            qv = qc.sum(axis=tuple(lead + i for i in masked), keepdims=True)
            ratio = (qc / qv) / (pc / pv)
        else:  # everything visible: the conditional is a point mass, nothing to predict
            ratio = np.ones_like(qc)
        terms = pc * _rho_term(ratio)
        total = total + terms.reshape(qc.shape[:lead] + (-1,)).sum(axis=-1)
    return total / len(subsets)


def excess_masked_risk(p: np.ndarray, q: np.ndarray, N: int, schedule) -> np.ndarray:
    """``eps(q) = R_mu(q) - R_mu(p) = sum_m mu(m) D_m(p || q)`` for arbitrary joint ``q``.

    ``schedule`` is a :class:`blindspots.masked.schedules.Schedule`.
    """
    ms, wt = schedule.support(N)
    return sum(float(mass) * masked_discrepancy_all(p, q, N, int(m)) for m, mass in zip(ms, wt))


def random_joint_laws(p: np.ndarray, mode: np.ndarray, rng: np.random.Generator, n: int,
                      noise: tuple[float, float], tilt: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` joint laws ``q ∝ p exp(a tau(x) + sigma G(x))`` near ``p`` (the book writes ``a = t/2``,
    ``G`` as ``\\mathcal G`` and ``sigma`` as ``zeta``).

    ``tau = mode`` (+1 / -1, the mode of each state), ``a ~ U[-tilt, tilt]`` moves mass
    between the modes (the witness direction; without noise ``q`` is the witness with logit
    shift ``t = 2a``), ``G`` is i.i.d. standard normal over
    states and ``sigma`` is log-uniform on ``noise = (sigma_min, sigma_max)``: a
    generic perturbation inside and across the modes. Returns ``(q, a, sigma)``
    with ``q`` of shape ``(n, 2**N)``.
    """
    p = np.asarray(p, dtype=float).ravel()
    mode = np.asarray(mode, dtype=float).ravel()
    if p.shape != mode.shape:
        raise ValueError("p and mode must have the same number of states")
    lo, hi = noise
    if not 0.0 < lo <= hi:
        raise ValueError(f"noise must satisfy 0 < sigma_min <= sigma_max, got {noise!r}")
    if tilt < 0.0:
        raise ValueError(f"tilt must be >= 0, got {tilt!r}")
    a = rng.uniform(-tilt, tilt, size=n)
    sigma = np.exp(rng.uniform(math.log(lo), math.log(hi), size=n))
    g = rng.standard_normal((n, p.size))
    logq = np.log(p)[None, :] + a[:, None] * mode[None, :] + sigma[:, None] * g
    logq -= logsumexp(logq, axis=1, keepdims=True)
    return np.exp(logq), a, sigma


@dataclass(frozen=True)
class CoercivityDraws:
    """Random joint laws ``q`` near ``p`` and the two terms of their excess masked risk.

    For ``mu = (1 - pi0) delta_{m_base} + pi0 delta_0`` the excess risk is
    ``eps = pi0 KL(p || q) + (1 - pi0) D_{m_base}(p || q)`` (linear in ``pi0``), so
    one enumeration serves every ``pi0``.
    """

    N: int
    w: float
    m_base: int
    tv: np.ndarray
    kl: np.ndarray
    d_base: np.ndarray
    tilt: np.ndarray
    sigma: np.ndarray

    def excess_risk(self, pi0: float) -> np.ndarray:
        return pi0 * self.kl + (1.0 - pi0) * self.d_base

    def bound_ratio(self, pi0: float) -> np.ndarray:
        """``TV / sqrt(eps / (2 pi0))``: at most 1 by {prf:ref}`thm-masked-full-mask-coercivity`."""
        return self.tv / coercivity_radius(self.excess_risk(pi0), pi0)


def coercivity_draws(law, N: int, w: float, m_base: int, n: int, rng: np.random.Generator,
                     noise: tuple[float, float], tilt: float) -> CoercivityDraws:
    """Draw ``n`` laws with :func:`random_joint_laws` around ``p = w p^+ + (1-w) p^-``
    (enumerated with :mod:`blindspots.masked.enumeration`) and evaluate TV, KL and
    ``D_{m_base}`` for each."""
    from . import enumeration

    p = enumeration.mixture_table(law, N, w)
    mode = np.sign(enumeration.states(N).sum(axis=1))
    q, a, sigma = random_joint_laws(p, mode, rng, n, noise, tilt)
    return CoercivityDraws(N=N, w=w, m_base=m_base, tv=total_variation(p, q),
                           kl=masked_discrepancy_all(p, q, N, 0),
                           d_base=masked_discrepancy_all(p, q, N, m_base), tilt=a, sigma=sigma)


def coercivity_radius(eps, pi0: float):
    """``sqrt(eps / (2 pi0))``: the TV radius that full-mask mass ``pi0`` guarantees."""
    if not pi0 > 0.0:
        raise ValueError(f"pi0 must be > 0, got {pi0!r}")
    return np.sqrt(np.asarray(eps, dtype=float) / (2.0 * pi0))


# --------------------------------------------------------------------------
# Approximate tensorization
# --------------------------------------------------------------------------


def log_tensorization_lower_bound(law, N: int, schedule, w: float,
                                  lams: Iterable[float]) -> tuple[float, float]:
    """``max_lam [log kl(lam || w) - log D_mu(q_lam || p)]`` over ``lams``, and its argmax.

    ``D_mu(q_lam || p)`` is the schedule's masked discrepancy with true weight ``lam``
    and model weight ``w``; ``KL(q_lam || p) = kl(lam || w)`` because the modes have
    disjoint supports. Implements {prf:ref}`thm-masked-tensorization-lower-bound`.
    """
    from . import exact, schedules

    best, arg = -math.inf, math.nan
    for lam in lams:
        lam = float(lam)
        if lam == w:
            continue
        val = exact.log_binary_kl(lam, w) - schedules.log_schedule_discrepancy(law, N, schedule, lam, w)
        if val > best:
            best, arg = val, lam
    return best, arg


def log_tensorization_limit_bound(log_u_mu: float, w: float) -> float:
    """``log [w (1 - w) / U_mu]``: the lower bound in the limit ``lam -> w``."""
    return math.log(w * (1.0 - w)) - log_u_mu


def uniform_ratio_growth_exponent() -> float:
    """Predicted ``d log C_lower / d log(N + 1)`` under the uniform-ratio schedule: ``1``.

    The schedule puts mass ``1/(N+1)`` on every visible size, so ``pi0 = 1/(N+1)`` caps
    ``C_AT <= N + 1``, and the limit bound ``w(1-w)/U_mu = (N+1) / (1 + sum_{m>=1} U_{N,m} / (w(1-w)))``
    grows like ``N`` while ``sum_m U_{N,m}`` stays bounded ({prf:ref}`thm-masked-tensorization-lower-bound`).
    """
    return 1.0


def _binary_entropy_spin(z: np.ndarray) -> np.ndarray:
    """Entropy per spin of magnetisation ``z``: ``-[(1+z)/2 log((1+z)/2) + (1-z)/2 log((1-z)/2)]``."""
    z = np.asarray(z, dtype=float)
    a, b = (1.0 + z) / 2.0, (1.0 - z) / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        out = -(np.where(a > 0, a * np.log(a), 0.0) + np.where(b > 0, b * np.log(b), 0.0))
    return out


def visible_overlap_rate(law, f: float, grid: int = 200_001) -> float:
    """Predicted exponential rate, per coordinate of ``N``, of ``U_{N, f N}``.

    * Law P: ``f * (-1/2) log(1 - theta^2)`` (Bhattacharyya coefficient of the two
      coordinate laws, one factor per visible coordinate).
    * Law C: ``phi(m*) - max_{z in [0,1]} [beta (1-f)^2 z^2 / 2 + f log 2 + (1-f) H(z)]``
      with ``phi(m) = beta m^2/2 + H(m)``: the Laplace-principle cost, under the ``+``
      mode, of a balanced visible block (visible magnetisation 0) while the hidden
      block keeps magnetisation ``z``. It equals the barrier ``phi(m*) - log 2`` once
      the optimum is ``z = 0``, which holds exactly when the hidden block is paramagnetic,
      ``beta (1 - f) <= 1``, i.e. ``f >= 1 - 1/beta`` (``= 1/3`` at ``beta = 1.5``).

    Used for {prf:ref}`cor-masked-at-exponential`; for ``f >= 1 - 1/beta`` law C's
    rate is the barrier of {prf:ref}`prop-masked-cw-barrier`, the rest is derived in
    chapter 5, not in the paper.
    """
    from .laws import CurieWeissLaw, ProductLaw

    if not 0.0 <= f <= 1.0:
        raise ValueError(f"f must lie in [0, 1], got {f!r}")
    if isinstance(law, ProductLaw):
        return -0.5 * f * math.log1p(-law.theta**2)
    if isinstance(law, CurieWeissLaw):
        ms = law.m_star
        phi_star = law.beta * ms**2 / 2.0 + float(_binary_entropy_spin(ms))
        z = np.linspace(0.0, 1.0, grid)
        inner = law.beta * (1.0 - f) ** 2 * z**2 / 2.0 + f * math.log(2.0) + (1.0 - f) * _binary_entropy_spin(z)
        return float(phi_star - inner.max())
    raise ValueError(f"law must be a ProductLaw or CurieWeissLaw, got {law!r}")


@dataclass(frozen=True)
class TensorizationRow:
    """Lower bounds on ``log C_AT`` for one schedule at one ``N``.

    ``log_c`` = max of the witness-grid bound and the ``lam -> w`` limit bound
    (both valid lower bounds); ``log_c_limit`` the limit alone; ``log_c_grid`` the witness
    grid alone (``nan`` when no grid was evaluated); ``m`` the bulk
    visible size; ``pi0`` the full-mask mass (``log C_AT <= -log pi0`` when positive).
    """

    N: int
    m: int
    pi0: float
    log_c: float
    log_c_limit: float
    lam_star: float
    log_c_grid: float = math.nan


def tensorization_row(law, N: int, schedule, w: float, lams: Sequence[float] | None) -> TensorizationRow:
    """Evaluate the bounds of {prf:ref}`thm-masked-tensorization-lower-bound` for one schedule.

    ``lams=None`` skips the witness grid (for schedules with support on every ``m``,
    where the limit bound alone is cheap).
    """
    from . import schedules

    log_u = schedules.log_schedule_residual_uncertainty(law, N, schedule, w)
    limit = log_tensorization_limit_bound(log_u, w)
    best, arg = (limit, w)
    grid_best = math.nan
    if lams is not None:
        grid_best, grid_arg = log_tensorization_lower_bound(law, N, schedule, w, lams)
        if grid_best > best:
            best, arg = grid_best, grid_arg
    ms, wt = schedule.support(N)
    return TensorizationRow(N=N, m=int(ms.max()), pi0=schedules.full_mask_mass(schedule, N),
                            log_c=float(best), log_c_limit=float(limit), lam_star=float(arg),
                            log_c_grid=float(grid_best))

