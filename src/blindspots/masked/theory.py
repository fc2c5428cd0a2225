"""Theory values of Part I: rates, constants, closed forms and bounds.

Every prediction that a chapter of Part I checks comes from a function here (or, for
chapters 4 and 5, from :mod:`blindspots.masked.identifiability`), never from a formula
typed in a notebook, so that a planted error in the theory reaches the claim that tests it
(``make test-mutants``). The measured side of each claim comes from the exact engine
(:mod:`blindspots.masked.exact`) or from brute force; nothing here calls the engine except
:func:`sensitivity_bounds`, which uses its cancellation-free binary-KL kernel for ``g(w, t)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "product_rate",
    "product_fitted_rate_interval",
    "ProductConstants",
    "product_constants",
    "log_pinning_failure_bound",
    "log_residual_upper_bound",
    "blindness_constant",
    "log_blindness_bound",
    "log_residual_lower_bound",
    "low_visibility_hoeffding_bound",
    "low_visibility_onset",
    "log_low_visibility_floor",
    "prefactor_slope_bias",
    "spin_entropy",
    "cw_barrier",
    "fixed_fraction_rate",
    "cw_null_residual_limit",
    "cw_log_partition_bounds",
    "cw_log_wedge_bounds",
    "cw_barrier_offset_interval",
    "g0",
    "g1",
    "sensitivity_bounds",
    "sensitivity_constants",
    "log_curvature_at_truth",
]


def _check_theta(theta: float) -> float:
    theta = float(theta)
    if not 0.0 < theta < 1.0:
        raise ValueError(f"theta must lie in (0, 1), got {theta!r}")
    return theta


def _check_w(w: float) -> float:
    w = float(w)
    if not 0.0 < w < 1.0:
        raise ValueError(f"w must lie in (0, 1), got {w!r}")
    return w


# --------------------------------------------------------------------------
# Chapter 2: mode blindness
# --------------------------------------------------------------------------


def product_rate(theta: float) -> float:
    """``r_* = -1/2 log(1 - theta^2)``: the Bhattacharyya rate of one coordinate of law P.

    Implements {prf:ref}`prop-masked-product-rate`.
    """
    return -0.5 * math.log1p(-_check_theta(theta) ** 2)


@dataclass(frozen=True)
class ProductConstants:
    """The explicit constants of {prf:ref}`lem-masked-product-constants` for law P."""

    theta: float
    L0: float
    c1: float
    gamma: float
    c: float
    s_pin: int


def product_constants(theta: float) -> ProductConstants:
    """``L0 = log((1+theta)/(1-theta))``, ``c1 = theta^2/16``, ``gamma = L0 theta / 2``,
    ``c = min(c1, gamma)`` and ``s_pin = ceil(16 ln 2 / theta^2)``.

    Implements {prf:ref}`lem-masked-product-constants`.
    """
    theta = _check_theta(theta)
    L0 = math.log((1.0 + theta) / (1.0 - theta))
    c1, gamma = theta**2 / 16.0, L0 * theta / 2.0
    return ProductConstants(theta=theta, L0=L0, c1=c1, gamma=gamma, c=min(c1, gamma),
                            s_pin=math.ceil(16.0 * math.log(2.0) / theta**2))


def log_pinning_failure_bound(theta: float, m: int) -> float:
    """``log`` of the bound ``e^{-c1 m}`` on the probability that pinning fails (``m >= s_pin``)."""
    return -product_constants(theta).c1 * m


def log_residual_upper_bound(theta: float, w: float, m: int) -> float:
    """``log[(1/4 + e^{|logit w|}) e^{-c m}]``: the upper bound on ``U_{N,m}`` for ``m >= s_pin``."""
    lw = abs(math.log(_check_w(w) / (1.0 - w)))
    return math.log(0.25 + math.exp(lw)) - product_constants(theta).c * m


def blindness_constant(w: float) -> float:
    """``G_J = max_{lam in J} max(g0(t), g1(t))``, ``J = [c0/2, 1 - c0/2]``, ``t = logit lam - logit w``.

    ``g0`` and ``g1`` are convex with minimum 0 at ``t = 0`` and ``t`` is increasing
    in ``lam``, so the maximum sits at an end of ``J``. Implements the constant of
    {prf:ref}`thm-masked-mode-blindness`.
    """
    w = _check_w(w)
    c0 = min(w, 1.0 - w)
    ends = np.array([c0 / 2.0, 1.0 - c0 / 2.0])
    d = np.log(ends / (1.0 - ends)) - math.log(w / (1.0 - w))
    return float(np.max(np.maximum(g0(d), g1(d))))


def log_blindness_bound(theta: float, w: float, m: int) -> float:
    """``log[G_J (1/4 + e^{|logit w|}) e^{-c m}]``: the bound on ``sup_{lam in J} D_{N,m}``."""
    return math.log(blindness_constant(w)) + log_residual_upper_bound(theta, w, m)


def log_residual_lower_bound(theta: float, N: int, s: int, w: float) -> float:
    """``log[1/4 exp(-|logit w| - s L0) (1 - g_{N,s})]`` with ``g_{N,s} = P(Bin(N-s, (1+theta)/2) <= (N-1)/2)``.

    The low-visibility lower bound on ``U_{N,s}`` of {prf:ref}`lem-masked-product-constants`.
    """
    from scipy.stats import binom

    theta, w = _check_theta(theta), _check_w(w)
    k = product_constants(theta)
    g = binom.cdf((N - 1) // 2, N - s, (1.0 + theta) / 2.0)
    return math.log(0.25) - abs(math.log(w / (1.0 - w))) - s * k.L0 + math.log1p(-g)


def low_visibility_hoeffding_bound(theta: float, N: int, s: int) -> float:
    """Hoeffding's bound ``exp(-(theta n - s + 1)^2 / (2 n))``, ``n = N - s``, on
    ``g_{N,s} = P(Bin(n, (1+theta)/2) <= (N-1)/2)``; ``1.0`` (no information) unless ``theta n > s - 1``.

    The step of {prf:ref}`lem-masked-product-constants` that makes its low-visibility bound uniform in ``N``.
    """
    theta = _check_theta(theta)
    N, s = int(N), int(s)
    if s < 0 or N <= s:
        raise ValueError(f"need 0 <= s < N, got s={s}, N={N}")
    n = N - s
    gap = theta * n - s + 1.0
    if gap <= 0.0:
        return 1.0
    return min(1.0, math.exp(-gap * gap / (2.0 * n)))


def low_visibility_onset(theta: float, s: int) -> int:
    """``N_0(s)``: the smallest odd ``N`` from which on Hoeffding's bound on ``g_{N,s}`` is at most ``1/2``.

    With ``n = N - s`` the bound ``exp(-(theta n - s + 1)^2/(2n))`` is valid once ``theta n > s - 1`` and
    non-increasing in ``n`` once also ``theta n >= |s - 1|`` (the derivative of ``(theta n - s + 1)^2 / n`` is
    ``theta^2 - (s-1)^2/n^2``); ``N_0(s)`` is the first odd ``N`` where both hold and the bound is ``<= 1/2``,
    so ``g_{N,s} <= 1/2`` for every odd ``N >= N_0(s)``. Implements the ``N_0(s)`` of
    {prf:ref}`lem-masked-product-constants` (and of {prf:ref}`asm-masked-residual` for law P).
    """
    theta = _check_theta(theta)
    s = int(s)
    if s < 0:
        raise ValueError(f"s must be a non-negative visible size, got {s}")
    n = max(1, math.floor(abs(s - 1) / theta))  # below this the bound is not yet monotone
    N = n + s
    N += 1 - N % 2
    while True:
        n = N - s
        if theta * n > s - 1 and theta * n >= abs(s - 1) and low_visibility_hoeffding_bound(theta, N, s) <= 0.5:
            return N
        N += 2


def log_low_visibility_floor(theta: float, s: int, w: float) -> float:
    """``log u_s`` with ``u_s = 1/8 exp(-|logit w| - s L0)``: the lower bound on ``U_{N,s}`` for every
    ``N >= N_0(s)`` (:func:`low_visibility_onset`) of {prf:ref}`lem-masked-product-constants`.
    """
    theta, w = _check_theta(theta), _check_w(w)
    if int(s) < 0:
        raise ValueError(f"s must be a non-negative visible size, got {s}")
    return math.log(0.125) - abs(math.log(w / (1.0 - w))) - int(s) * product_constants(theta).L0


def prefactor_slope_bias(m1: float, m2: float, power: float = 0.5) -> float:
    """Excess of a least-squares slope of ``-log(m^-power e^{-r m})`` over ``r`` on ``[m1, m2]``,
    to leading order: ``power log(m2/m1) / (m2 - m1)`` (the secant slope of ``power log m``).

    The ``m^{-1/2}`` prefactor of {prf:ref}`prop-masked-product-rate` biases a fitted rate upward by this.
    """
    if not 0 < m1 < m2:
        raise ValueError(f"need 0 < m1 < m2, got m1={m1!r}, m2={m2!r}")
    return power * math.log(m2 / m1) / (m2 - m1)


def spin_entropy(x: float) -> float:
    """Entropy per spin at magnetisation ``x``: ``-[(1+x)/2 log((1+x)/2) + (1-x)/2 log((1-x)/2)]``."""
    if not -1.0 <= x <= 1.0:
        raise ValueError(f"x must lie in [-1, 1], got {x!r}")
    a, b = (1.0 + x) / 2.0, (1.0 - x) / 2.0
    return -sum(v * math.log(v) for v in (a, b) if v > 0.0)


def cw_barrier(beta: float) -> float:
    """``Delta F(beta) = H(m*) + beta m*^2 / 2 - log 2`` with ``m* = tanh(beta m*)``.

    The free-energy barrier per coordinate of {prf:ref}`prop-masked-cw-barrier` (``beta > 1``).
    """
    from .laws import curie_weiss_magnetisation

    if not beta > 1.0:
        raise ValueError(f"beta must be > 1 for a barrier, got {beta!r}")
    ms = curie_weiss_magnetisation(beta)
    return spin_entropy(ms) + beta * ms**2 / 2.0 - math.log(2.0)


def fixed_fraction_rate(law, f: float) -> float:
    """Predicted ``-d log sup_lam D_{N, fN} / dN`` at a fixed visible fraction ``f``.

    Law P: ``f r_*`` ({prf:ref}`prop-masked-product-rate`); law C with ``beta > 1`` and
    ``f >= 1 - 1/beta``: the barrier ``Delta F(beta)`` ({prf:ref}`prop-masked-cw-barrier`).
    """
    from .laws import CurieWeissLaw, ProductLaw

    if not 0.0 < f < 1.0:
        raise ValueError(f"f must lie in (0, 1), got {f!r}")
    if isinstance(law, ProductLaw):
        return f * product_rate(law.theta)
    if isinstance(law, CurieWeissLaw):
        if f < 1.0 - 1.0 / law.beta:
            raise ValueError(f"f must be >= 1 - 1/beta = {1 - 1 / law.beta:.4f} for the barrier rate, got {f!r}")
        return cw_barrier(law.beta)
    raise ValueError(f"law must be a ProductLaw or CurieWeissLaw, got {law!r}")


def cw_null_residual_limit(beta: float, f: float, w: float) -> float:
    """``lim_N U_{N, fN}`` for the unimodal Curie-Weiss law (``beta < 1``): a Gaussian integral.

    With ``X = r / sqrt(N)`` and ``Y = (S - r) / sqrt(N)`` jointly Gaussian (precision
    ``[[1/f - beta, -beta], [-beta, 1/(1-f) - beta]]``), ``omega_V -> w Phi(kX) / (w Phi(kX) + (1-w) Phi(-kX))``.
    """
    from scipy.integrate import quad
    from scipy.stats import norm

    if not 0.0 < beta < 1.0:
        raise ValueError(f"beta must lie in (0, 1), got {beta!r}")
    if not 0.0 < f < 1.0:
        raise ValueError(f"f must lie in (0, 1), got {f!r}")
    w = _check_w(w)
    q11, q22, q12 = 1.0 / f - beta, 1.0 / (1.0 - f) - beta, -beta
    var_x = q22 / (q11 * q22 - q12**2)
    k = (1.0 - q12 / q22) * math.sqrt(q22)

    def integrand(z: float) -> float:
        x = math.sqrt(var_x) * z
        a, b = w * norm.cdf(k * x), (1.0 - w) * norm.cdf(-k * x)
        return norm.pdf(z) * 2.0 * (a + b) * (a / (a + b)) * (b / (a + b))

    return quad(integrand, -12.0, 12.0, epsabs=1e-14, epsrel=1e-13)[0]


def _cw_checks(beta: float, N: int, m: int) -> tuple[float, int, int, int]:
    from .laws import check_m, check_N

    beta = float(beta)
    if not beta > 1.0:
        raise ValueError(f"beta must be > 1 for a barrier, got {beta!r}")
    N = check_N(N)
    m = check_m(m, N)
    n = N - m
    if not 1 <= m <= N - 1:
        raise ValueError(f"m must lie in [1, N-1={N - 1}], got {m}")
    if not beta * n < N:
        raise ValueError(f"need beta (N-m)/N < 1 (the hidden block paramagnetic), got {beta * n / N!r}")
    return beta, N, m, n


def cw_log_partition_bounds(beta: float, N: int) -> tuple[float, float]:
    """``(lo, hi)`` with ``lo <= log Z_N - N phi* <= hi`` for the Curie-Weiss normaliser
    ``Z_N = sum_k C(N,k) e^{beta (2k-N)^2 / (2N)}``, ``phi* = H(m*) + beta m*^2 / 2`` (``= Delta F + log 2``).

    Upper: ``C(N,k) <= e^{N H((2k-N)/N)}`` and ``H(x) + beta x^2/2 <= phi*``, ``N + 1`` terms.
    Lower: the two terms ``k*`` and ``N - k*``, ``k* = round(N(1+m*)/2)``, ``x = (2k*-N)/N``, ``|x - m*| <= 1/N``;
    Robbins' bounds give ``C(N,k) >= sqrt(2/(pi N (1-x^2))) e^{N H(x) - 1/(12k) - 1/(12(N-k))}`` and Taylor's
    theorem ``phi(x) >= phi* - M/(2N^2)`` with ``M = 1/(1-(m*+1/N)^2) - beta >= -phi''`` between ``x`` and ``m*``.
    Part of {prf:ref}`prop-masked-cw-barrier`'s finite-size sandwich (:func:`cw_barrier_offset_interval`).
    """
    from .laws import check_N, curie_weiss_magnetisation

    N = check_N(N)
    beta = float(beta)
    if not beta > 1.0:
        raise ValueError(f"beta must be > 1 for a barrier, got {beta!r}")
    ms = curie_weiss_magnetisation(beta)
    ks = int(round(N * (1.0 + ms) / 2.0))
    if not (1 <= ks <= N - 1 and ms + 1.0 / N < 1.0):
        raise ValueError(f"N={N} too small for beta={beta!r}: need 1 <= k* <= N-1 and m* + 1/N < 1")
    M = 1.0 / (1.0 - (ms + 1.0 / N) ** 2) - beta
    x_lo = max(ms - 1.0 / N, 0.0)
    lo = (math.log(2.0) - 0.5 * math.log(math.pi * N * (1.0 - x_lo**2) / 2.0)
          - 1.0 / (12.0 * ks) - 1.0 / (12.0 * (N - ks)) - M / (2.0 * N))
    return lo, math.log(N + 1.0)


def cw_log_wedge_bounds(beta: float, N: int, m: int, y0s=(0.5, 0.6, 0.7, 0.8, 0.9, 0.95)) -> tuple[float, float]:
    """``(lo, hi)`` with ``lo <= log Z_W - N log 2 <= hi``, ``Z_W = sum C(m,a) C(N-m,b) e^{beta S^2/(2N)}`` over the
    wedge ``a <= m/2``, ``S = 2(a+b) - N > 0`` (visible magnetisation ``r = 2a - m <= 0 < S``).

    Lower: the single term ``a = floor(m/2)``, ``S = 1`` (exact log-binomials). Upper: with ``u = -r >= 0``,
    ``v = S > 0``, ``s = 2b - n = u + v``, the exponent ``r^2/2m + s^2/2n - beta S^2/2N >= u^2/2m + c_v v^2``,
    ``c_v = (1/n - beta/N)/2 > 0``. For ``|r| <= y0 m`` and ``|s| <= y0 n`` Robbins and Pinsker give
    ``C(k,j)/2^k <= sqrt(2/(pi k (1-y0^2))) e^{1/(12k)} e^{-(2j-k)^2/(2k)}``; elsewhere Hoeffding gives the same
    without the prefactor, and ``u >= y0 m``, ``u >= y0 n/2`` or ``v >= y0 n/2``. Lattice sums (step 2) of the
    decreasing Gaussians are at most the first term plus half the integral; a tail sum from ``t`` is at most
    ``e^{-t^2 ...}`` times the full sum. Each ``y0`` gives a valid bound; the smallest is returned.
    """
    beta, N, m, n = _cw_checks(beta, N, m)
    from scipy.special import gammaln

    def lb(k, j):
        return gammaln(k + 1.0) - gammaln(j + 1.0) - gammaln(k - j + 1.0)

    a0 = m // 2
    b0 = (N + 1) // 2 - a0
    lo = float(lb(m, a0) + lb(n, b0)) + beta / (2.0 * N) - N * math.log(2.0)
    cv = (1.0 / n - beta / N) / 2.0
    su = 1.0 + 0.5 * math.sqrt(math.pi * m / 2.0)          # sum over u >= 0 (step 2) of e^{-u^2/2m}
    sv = 0.5 + 0.25 * math.sqrt(math.pi / cv)              # sum over odd v >= 1 of e^{-c_v v^2}
    sv_tail = 1.0 + 0.25 * math.sqrt(math.pi / cv)         # the same from any start, shifted to 0
    best = math.inf
    for y0 in y0s:
        pref = 2.0 / (math.pi * (1.0 - y0**2) * math.sqrt(m * n)) * math.exp(1.0 / (12.0 * m) + 1.0 / (12.0 * n))
        t = y0 * n / 2.0
        tail = su * sv_tail * (math.exp(-(y0 * m) ** 2 / (2.0 * m)) + math.exp(-t * t / (2.0 * m))
                               + math.exp(-cv * t * t))
        best = min(best, math.log(pref * su * sv + tail))
    return lo, best


def cw_barrier_offset_interval(beta: float, N: int, m: int, w: float) -> tuple[float, float]:
    """A-priori interval ``(lo, hi)`` for ``-log U_{N,m} - N Delta F(beta)`` (Curie-Weiss, ``beta > 1``,
    ``beta (N-m)/N < 1``): the finite-size sandwich of {prf:ref}`prop-masked-cw-barrier`.

    Exact reduction: with ``h^+-`` the per-configuration mode weights of a visible block and ``c0 = min(w, 1-w)``,
    ``h^+ h^- / (w h^+ + (1-w) h^-)`` lies in ``[min(h^+,h^-), min(h^+,h^-)/c0]``; the hidden sum is
    non-decreasing in the number of visible plus-ones, so ``U = w(1-w) (2/Z) Z_W theta'`` with
    ``theta' in [1, 2/c0]``, ``Z_W`` the wedge sum of :func:`cw_log_wedge_bounds`, ``Z`` the normaliser of
    :func:`cw_log_partition_bounds`. With ``phi* = Delta F + log 2``:
    ``lo = Z_lo - K_hi - log 4 - log(w(1-w)) + log c0``, ``hi = Z_hi - K_lo - log 2 - log(w(1-w))``, each widened
    by :func:`log_roundoff_bound`. ``Delta F`` enters only through ``N Delta F``, which the caller subtracts;
    the interval itself depends on ``beta`` through ``m*`` and ``c_v`` only. Never calls the engine.
    """
    beta, N, m, n = _cw_checks(beta, N, m)
    w = _check_w(w)
    c0 = min(w, 1.0 - w)
    z_lo, z_hi = cw_log_partition_bounds(beta, N)
    k_lo, k_hi = cw_log_wedge_bounds(beta, N, m)
    lww = math.log(w * (1.0 - w))
    eps = log_roundoff_bound(N)
    lo = z_lo - k_hi - math.log(4.0) - lww + math.log(c0) - eps
    hi = z_hi - k_lo - math.log(2.0) - lww + eps
    return lo, hi


# --------------------------------------------------------------------------
# Chapter 3: information decomposition and sensitivity
# --------------------------------------------------------------------------


def g0(d):
    """``g0(t) = e^t - 1 - t``: the limit of ``g(omega, t)`` as the posterior ``omega -> 0``."""
    d = np.asarray(d, dtype=float)
    return np.expm1(d) - d


def g1(d):
    """``g1(t) = e^-t - 1 + t``: the limit of ``g(omega, t)`` as the posterior ``omega -> 1``."""
    d = np.asarray(d, dtype=float)
    return np.expm1(-d) + d


def sensitivity_bounds(w: float, lams) -> tuple[np.ndarray, np.ndarray]:
    """Pointwise bounds ``min(g0, g1) / (w(1-w) g(w, t))`` and ``max(g0, g1) / (w(1-w) g(w, t))``
    on ``D_{N,m}(lam) / (U_{N,m} kl(w || lam))``, one pair per ``lam`` (``lam != w``).

    Implements {prf:ref}`thm-masked-sensitivity`; ``g(w, t) = kl(w || lam) / (w(1-w))``, ``t = logit lam - logit w``.
    """
    from . import exact

    w = _check_w(w)
    lams = np.atleast_1d(np.asarray(lams, dtype=float))
    d = np.log(lams) - np.log1p(-lams) - math.log(w / (1.0 - w))
    if np.any(d == 0.0):
        raise ValueError("lams must differ from w")
    gw = np.exp(exact._log_g(np.array([math.log(w) - math.log1p(-w)]), d))[0]
    a, b = g0(d), g1(d)
    scale = w * (1.0 - w) * gw
    return np.minimum(a, b) / scale, np.maximum(a, b) / scale


def sensitivity_constants(w: float, n: int = 20001) -> tuple[float, float]:
    """``(c_J, C_J)``: the extremes over ``lam in J`` of :func:`sensitivity_bounds`, on ``n`` grid points of ``I``."""
    w = _check_w(w)
    c0 = min(w, 1.0 - w)
    lam = np.linspace(c0 / 2.0, 1.0 - c0 / 2.0, n)
    lam = lam[np.abs(lam - w) > 1e-9]
    lo, hi = sensitivity_bounds(w, lam)
    return float(lo.min()), float(hi.max())


def log_recovery_weight_bound(log_eps, log_pi_u, w: float, n: int = 20001):
    """``log sqrt(eps / (2 pi_s c_J U_{N,s}))``: the non-asymptotic bound on ``|lam - w|`` of
    {prf:ref}`thm-masked-recovery-bound`, for every ``lam`` in ``J`` with ``D_mu(lam) <= eps``.

    ``log_pi_u`` is ``log(pi_s U_{N,s})`` for one visible size ``s`` of the schedule, or
    ``log U_mu`` (the sum of ``mu(m) U_{N,m}`` over all sizes), which gives the sharper form.
    ``c_J`` is the lower sensitivity constant of {prf:ref}`thm-masked-sensitivity`
    (:func:`sensitivity_constants`). Works in the log domain, so ``eps`` and ``U`` far below the
    float64 range are fine.
    """
    w = _check_w(w)
    c_J = sensitivity_constants(w, n)[0]
    return 0.5 * (np.asarray(log_eps, dtype=float) - math.log(2.0 * c_J) - np.asarray(log_pi_u, dtype=float))


def recovery_weight_bound(eps, pi_s: float, u_s: float, w: float, n: int = 20001):
    """``sqrt(eps / (2 pi_s c_J U_{N,s}))`` ({prf:ref}`thm-masked-recovery-bound`); see
    :func:`log_recovery_weight_bound`."""
    if not pi_s > 0 or not u_s > 0:
        raise ValueError(f"pi_s and u_s must be positive, got pi_s={pi_s!r}, u_s={u_s!r}")
    return np.exp(log_recovery_weight_bound(np.log(np.asarray(eps, dtype=float)), math.log(pi_s * u_s), w, n))


def log_curvature_at_truth(log_u, w: float):
    """``log D''_{N,m}(w) = log U_{N,m} - 2 log(w(1-w))`` ({prf:ref}`thm-masked-curvature`)."""
    w = _check_w(w)
    return np.asarray(log_u, dtype=float) - 2.0 * math.log(w * (1.0 - w))


# --------------------------------------------------------------------------
# Chapter 5: a-priori remainder bounds for law P's residual uncertainty
# --------------------------------------------------------------------------
#
# Without the conditioning on S > 0, the visible block of law P is i.i.d. under each mode and
#   U^nu_m = (1 - theta^2)^{m/2} E_{a ~ Bin(m, 1/2)} h(a - m/2),
#   h(j) = w(1-w) / (w e^{j L0} + (1-w) e^{-j L0}),
# so log U^nu_m = -r_* m - 1/2 log m + 1/2 log(2/pi) + log H0(m mod 2) + Z_m with
# H0(parity) = sum_{j in Z + parity/2} h(j). The functions below bound the remainder Z_m and the
# effect of the conditioning from inequalities alone (central binomial bounds, ratio bounds of the
# binomial pmf, a binomial tail); they never call the engine, so they can serve as tolerances for
# claims about the engine's values ({prf:ref}`cor-masked-at-exponential`).


def _h_terms(theta: float, w: float, j: np.ndarray) -> np.ndarray:
    L0 = product_constants(theta).L0
    # w(1-w) / (w e^{jL} + (1-w) e^{-jL}), written with a log-sum-exp to stay finite at large |j|
    a = np.log(w) + j * L0
    b = np.log1p(-w) - j * L0
    return np.exp(np.log(w) + np.log1p(-w) - np.logaddexp(a, b))


def product_h_sum(theta: float, w: float, parity: int) -> float:
    """``H0 = sum_{j in Z + parity/2} h(j)``: the limit of ``sqrt(pi m / 2) E h(a - m/2)`` for ``m`` of that parity.

    ``h`` decays like ``e^{-|j| L0}``; the sum is truncated where the terms fall below ``1e-300``.
    """
    theta, w = _check_theta(theta), _check_w(w)
    if parity not in (0, 1):
        raise ValueError(f"parity must be 0 or 1, got {parity!r}")
    L0 = product_constants(theta).L0
    jmax = int(math.ceil(700.0 / L0 + abs(math.log(w / (1.0 - w))) / L0)) + 2
    j = np.arange(-jmax, jmax + 1) + 0.5 * parity
    return float(_h_terms(theta, w, j).sum())


def _central_and_ratio_exponent(m: int) -> tuple[float, float, np.ndarray, np.ndarray]:
    """Bounds on ``sqrt(m) P(a = mode)`` and, for each ``j``, ``e_j`` with ``R(j) >= e^{-e_j}`` (``R <= 1``).

    ``m = 2n``: ``1/sqrt(pi(n+1/2)) <= C(2n,n)/4^n <= 1/sqrt(pi(n+1/4))`` and, for ``|j| <= n``,
    ``R(j) = P(a = n+j)/P(a = n) >= exp(-j^2/(n-|j|+1))`` (each factor ``(n-l)/(n+l+1) = 1 - x``
    with ``-log(1-x) <= x/(1-x)``). ``m = 2n+1``: ``P(a = n) = C(2n,n)/4^n (2n+1)/(2n+2)`` and, for
    ``j = +-(i + 1/2)``, ``R >= exp(-i(i+1)/(n+1-i))``.
    """
    n = m // 2
    if m % 2 == 0:
        c_lo, c_hi = 1.0 / math.sqrt(math.pi * (n + 0.5)), 1.0 / math.sqrt(math.pi * (n + 0.25))
        j = np.arange(-n, n + 1, dtype=float)
        e = j**2 / (n - np.abs(j) + 1.0)
    else:
        f = (2.0 * n + 1.0) / (2.0 * n + 2.0)
        c_lo, c_hi = f / math.sqrt(math.pi * (n + 0.5)), f / math.sqrt(math.pi * (n + 0.25))
        i = np.arange(0, n + 1, dtype=float)
        j = np.concatenate([-(i[::-1] + 0.5), i + 0.5])
        ii = np.abs(j) - 0.5
        e = ii * (ii + 1.0) / (n + 1.0 - ii)
    return math.sqrt(m) * c_lo, math.sqrt(m) * c_hi, j, e


def product_unconditioned_remainder(theta: float, w: float, m: int) -> tuple[float, float]:
    """``(lo, hi)`` with ``lo <= Z_m <= hi``, where
    ``log U^nu_m = -r_* m - 1/2 log m + 1/2 log(2/pi) + log H0(m mod 2) + Z_m``.

    ``U^nu_m`` is law P's residual uncertainty at ``m`` visible coordinates without the conditioning
    on ``S > 0``. From ``U^nu_m = (1-theta^2)^{m/2} P(a=mode) sum_j h(j) R(j)`` with the bounds of
    :func:`_central_and_ratio_exponent` and ``0 <= R <= 1``; ``lo`` and ``hi`` are ``O(1/m)``:
    the next term of the expansion in {prf:ref}`cor-masked-at-exponential`, bounded a priori.
    """
    theta, w = _check_theta(theta), _check_w(w)
    if isinstance(m, bool) or int(m) != m or m < 1:
        raise ValueError(f"m must be an integer >= 1, got {m!r}")
    m = int(m)
    s_lo, s_hi, j, e = _central_and_ratio_exponent(m)
    h = _h_terms(theta, w, j)
    H0 = product_h_sum(theta, w, m % 2)
    half_log = 0.5 * math.log(2.0 / math.pi)
    lo = math.log(s_lo) - half_log + math.log(float((h * np.exp(-e)).sum()) / H0)
    hi = math.log(s_hi) - half_log + math.log(min(1.0, float(h.sum()) / H0))
    return lo, hi


def product_conditioning_bounds(theta: float, w: float, N: int, m: int) -> tuple[float, float]:
    """``(lo, hi)`` with ``lo <= log U_{N,m} - log U^nu_m <= hi`` for law P (``p^+ = nu_+(. | S > 0)``).

    Upper: ``p^+_V <= nu_+(x_V) / Z_+`` with ``Z_+ = nu_+(S > 0)``, and ``ab/(a+b)`` is increasing and
    homogeneous, so ``U_{N,m} <= U^nu_m / Z_+``. Lower: for a visible block with ``|j| <= J``,
    ``J = floor((N-m) theta / 4)``, both modes keep their half-space with probability at least
    ``1 - G``, ``G = P(Bin(N-m, (1+theta)/2) <= (N-m)/2 + J)``, so those blocks keep at least
    ``(1-G)`` of their unconditioned share; the blocks with ``|j| > J`` carry at most
    ``sum_{|j|>J} h / sum_j h e^{-e_j}`` of ``U^nu_m``.
    """
    from scipy.stats import binom

    theta, w = _check_theta(theta), _check_w(w)
    N, m = int(N), int(m)
    if not 1 <= m <= N:
        raise ValueError(f"m must lie in [1, N={N}], got {m}")
    a = (1.0 + theta) / 2.0
    log_zp = math.log1p(-binom.cdf((N - 1) // 2, N, a))
    hi = -log_zp
    _, _, j, e = _central_and_ratio_exponent(m)
    h = _h_terms(theta, w, j)
    J = math.floor((N - m) * theta / 4.0)
    outside = float(h[np.abs(j) > J].sum()) / float((h * np.exp(-e)).sum())
    G = float(binom.cdf(math.floor((N - m) / 2.0 + J), N - m, a)) if N > m else 1.0
    if G >= 1.0 or outside >= 1.0:
        return -math.inf, hi
    return math.log1p(-G) + math.log1p(-outside), hi


def log_roundoff_bound(N: int) -> float:
    """``16 eps (N + log N!)``: a bound on the absolute float64 error of the engine's ``log U`` at size ``N``.

    Its terms are log-binomials ``log n! - log j! - log (n-j)!``, each within a few ``eps`` of relative error of
    log-factorials of magnitude at most ``log N!`` (about ``N log N``: the subtraction cancels digits, it does not
    remove their rounding), and log-weights of magnitude about ``N``; a log-sum-exp adds ``O(eps)``.
    """
    from scipy.special import gammaln

    return 16.0 * float(np.finfo(float).eps) * (int(N) + float(gammaln(int(N) + 1.0)))


def product_rate_pair_tolerance(theta: float, w: float, rho: float, N1: int, m1: int,
                                N2: int, m2: int) -> float:
    """A-priori bound on ``|s - rho r_*|``, ``s`` the pair slope in ``N`` of
    ``log(w(1-w)) - log U_{N,m} - 1/2 log m`` between ``(N1, m1)`` and ``(N2, m2)`` (law P).

    ``s - rho r_* = [r_*(m2 - m1 - rho (N2 - N1)) - (Z_{m2} - Z_{m1}) - (c_2 - c_1)
    + log H0 differences] / (N2 - N1)`` with ``Z`` bracketed by
    :func:`product_unconditioned_remainder`, the conditioning ``c`` by
    :func:`product_conditioning_bounds`, plus the round-off of both points. Never looks at
    the engine's values. Supports {prf:ref}`cor-masked-at-exponential`.
    """
    theta, w = _check_theta(theta), _check_w(w)
    if not N2 > N1:
        raise ValueError(f"need N2 > N1, got N1={N1!r}, N2={N2!r}")
    z1, z2 = product_unconditioned_remainder(theta, w, m1), product_unconditioned_remainder(theta, w, m2)
    c1, c2 = product_conditioning_bounds(theta, w, N1, m1), product_conditioning_bounds(theta, w, N2, m2)
    parity = abs(math.log(product_h_sum(theta, w, m2 % 2)) - math.log(product_h_sum(theta, w, m1 % 2)))
    dz = max(z2[1] - z1[0], z1[1] - z2[0])
    dc = max(c2[1] - c1[0], c1[1] - c2[0])
    lattice = product_rate(theta) * abs(m2 - m1 - rho * (N2 - N1))
    return (lattice + dz + dc + parity + log_roundoff_bound(N1) + log_roundoff_bound(N2)) / (N2 - N1)


def _log_uniform_sum_bounds(theta: float, w: float, N: int, M: int) -> tuple[float, float, float]:
    """For ``S_N = 1 + sum_{m=1}^N U_{N,m} / (w(1-w))`` (law P): ``(log phi_lo, log phi_hi, tail)`` with
    ``phi_lo <= U_{N,m} / U^nu_m <= phi_hi`` for every ``1 <= m <= M`` and ``tail`` bounding
    ``sum_{m > M} U_{N,m} / (w(1-w))``."""
    lo = min(product_conditioning_bounds(theta, w, N, m)[0] for m in range(1, M + 1))
    hi = product_conditioning_bounds(theta, w, N, 1)[1]
    # U_{N,m} <= U^nu_m / Z_+ <= (1 - theta^2)^{m/2} P(a = mode) H0 / Z_+ and P(a = mode) <= 1
    H = max(product_h_sum(theta, w, 0), product_h_sum(theta, w, 1))
    q = math.sqrt(1.0 - theta**2)
    tail = math.exp(hi) * H / (w * (1.0 - w)) * q ** (M + 1) / (1.0 - q)
    return lo, hi, tail


def product_uniform_growth_tolerance(theta: float, w: float, N1: int, N2: int) -> float:
    """A-priori bound on ``|s - 1|``, ``s`` the pair slope in ``log(N+1)`` of the limit bound
    ``log C = log(N+1) - log S_N`` between ``N1 < N2`` under the uniform-ratio schedule (law P).

    ``S_N = 1 + sum_{m=1}^N U_{N,m}/(w(1-w))`` and ``U^nu_m`` does not depend on ``N``: with
    ``M = N1 // 2``, ``phi`` and ``tail`` from the conditioning bounds,
    ``log S_{N2} - log S_{N1} <= log(phi_hi(N2) / phi_lo(N1) + phi_hi(N2)-weighted tail)`` and the same with
    ``N1, N2`` exchanged. Plus round-off; divided by ``log((N2+1)/(N1+1))``. Supports
    {prf:ref}`thm-masked-tensorization-lower-bound` (the growth of the uniform-ratio bound like ``N``).
    """
    theta, w = _check_theta(theta), _check_w(w)
    if not N2 > N1:
        raise ValueError(f"need N2 > N1, got N1={N1!r}, N2={N2!r}")
    M = N1 // 2
    lo1, hi1, t1 = _log_uniform_sum_bounds(theta, w, N1, M)
    lo2, hi2, t2 = _log_uniform_sum_bounds(theta, w, N2, M)
    up = math.log(math.exp(hi2 - lo1) + t2)
    down = math.log(math.exp(hi1 - lo2) + t1)
    d = max(up, down) + log_roundoff_bound(N1) + log_roundoff_bound(N2)
    return d / math.log((N2 + 1.0) / (N1 + 1.0))


def product_fitted_rate_interval(theta: float, w: float, N: int, ms) -> tuple[float, float]:
    """A-priori interval ``(lo, hi)`` for the least-squares rate ``-slope`` of ``log U_{N,m}`` against
    ``m`` over the visible sizes ``ms`` (law P, ``N`` odd).

    ``log U_{N,m} = -r_* m + e_m`` with ``e_m = -1/2 log m + 1/2 log(2/pi) + log H0(m mod 2) + Z_m + c_{N,m}``;
    each ``e_m`` is bracketed a priori: ``Z_m`` by :func:`product_unconditioned_remainder` (the next term
    of the expansion), the conditioning ``c_{N,m}`` by :func:`product_conditioning_bounds`, plus
    :func:`log_roundoff_bound`. An OLS slope is linear in ``y``, so ``-slope(e)`` lies within
    ``sum |x - mean| halfwidth_i / Sxx`` (the OLS perturbation bound of
    :mod:`blindspots.masked.identifiability`) of ``-slope`` of the brackets' midpoints, and the fitted
    rate within that of ``r_*`` minus it. The ``m^{-1/2}`` prefactor is carried exactly, not as a
    leading-order bias. Never looks at the engine's values. Supports {prf:ref}`prop-masked-product-rate`.
    """
    from .identifiability import _ols_weighted_bound, ols

    theta, w = _check_theta(theta), _check_w(w)
    ms = np.asarray(ms)
    if ms.ndim != 1 or ms.size < 2 or np.any(ms < 1) or np.any(ms != np.round(ms)):
        raise ValueError(f"ms must be at least two integers >= 1, got {ms!r}")
    ms = ms.astype(int)
    lo, hi = np.empty(ms.size), np.empty(ms.size)
    half_log = 0.5 * math.log(2.0 / math.pi)
    h0 = {p: math.log(product_h_sum(theta, w, p)) for p in (0, 1)}
    eps = log_roundoff_bound(N)
    for i, m in enumerate(ms):
        z = product_unconditioned_remainder(theta, w, int(m))
        c = product_conditioning_bounds(theta, w, N, int(m))
        base = -0.5 * math.log(m) + half_log + h0[int(m) % 2]
        lo[i], hi[i] = base + z[0] + c[0] - eps, base + z[1] + c[1] + eps
    if not np.all(np.isfinite(lo)):
        raise ValueError("the conditioning bound is vacuous at some m: choose m <= N/2 with N larger")
    x = ms.astype(float)
    centre = product_rate(theta) - ols(x, 0.5 * (lo + hi))[0]
    half = _ols_weighted_bound(x, 0.5 * (hi - lo))
    return centre - half, centre + half
