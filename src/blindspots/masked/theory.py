"""Theory values of Part I: rates, constants, closed forms and bounds.

Every prediction that a chapter of Part I checks comes from a function here (or, for
chapters 4 and 5, from :mod:`blindspots.masked.identifiability`), never from a formula
typed in a notebook, so that a planted error in the theory reaches the claim that tests it
(``make test-mutants``). The measured side of each claim comes from the exact engine
(:mod:`blindspots.masked.exact`) or from brute force; nothing here calls the engine except
:func:`sensitivity_bounds`, which uses its cancellation-free binary-KL kernel for ``g(w, delta)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "product_rate",
    "ProductConstants",
    "product_constants",
    "log_pinning_failure_bound",
    "log_residual_upper_bound",
    "blindness_constant",
    "log_blindness_bound",
    "log_residual_lower_bound",
    "prefactor_slope_bias",
    "spin_entropy",
    "cw_barrier",
    "fixed_fraction_rate",
    "cw_null_residual_limit",
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
    kappa: float
    c: float
    s_pin: int


def product_constants(theta: float) -> ProductConstants:
    """``L0 = log((1+theta)/(1-theta))``, ``c1 = theta^2/16``, ``kappa = L0 theta / 2``,
    ``c = min(c1, kappa)`` and ``s_pin = ceil(16 ln 2 / theta^2)``.

    Implements {prf:ref}`lem-masked-product-constants`.
    """
    theta = _check_theta(theta)
    L0 = math.log((1.0 + theta) / (1.0 - theta))
    c1, kappa = theta**2 / 16.0, L0 * theta / 2.0
    return ProductConstants(theta=theta, L0=L0, c1=c1, kappa=kappa, c=min(c1, kappa),
                            s_pin=math.ceil(16.0 * math.log(2.0) / theta**2))


def log_pinning_failure_bound(theta: float, m: int) -> float:
    """``log`` of the bound ``e^{-c1 m}`` on the probability that pinning fails (``m >= s_pin``)."""
    return -product_constants(theta).c1 * m


def log_residual_upper_bound(theta: float, w: float, m: int) -> float:
    """``log[(1/4 + e^{|logit w|}) e^{-c m}]``: the upper bound on ``U_{N,m}`` for ``m >= s_pin``."""
    lw = abs(math.log(_check_w(w) / (1.0 - w)))
    return math.log(0.25 + math.exp(lw)) - product_constants(theta).c * m


def blindness_constant(w: float) -> float:
    """``G_I = max_{lam in I} max(g0(delta), g1(delta))``, ``I = [c0/2, 1 - c0/2]``.

    ``g0`` and ``g1`` are convex with minimum 0 at ``delta = 0`` and ``delta`` is increasing
    in ``lam``, so the maximum sits at an end of ``I``. Implements the constant of
    {prf:ref}`thm-masked-mode-blindness`.
    """
    w = _check_w(w)
    c0 = min(w, 1.0 - w)
    ends = np.array([c0 / 2.0, 1.0 - c0 / 2.0])
    d = np.log(ends / (1.0 - ends)) - math.log(w / (1.0 - w))
    return float(np.max(np.maximum(g0(d), g1(d))))


def log_blindness_bound(theta: float, w: float, m: int) -> float:
    """``log[G_I (1/4 + e^{|logit w|}) e^{-c m}]``: the bound on ``sup_{lam in I} D_{N,m}``."""
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
    ``[[1/f - beta, -beta], [-beta, 1/(1-f) - beta]]``), ``beta_V -> w Phi(kX) / (w Phi(kX) + (1-w) Phi(-kX))``.
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


# --------------------------------------------------------------------------
# Chapter 3: information decomposition and sensitivity
# --------------------------------------------------------------------------


def g0(d):
    """``g0(delta) = e^delta - 1 - delta``: the limit of ``g(beta, delta)`` as ``beta -> 0``."""
    d = np.asarray(d, dtype=float)
    return np.expm1(d) - d


def g1(d):
    """``g1(delta) = e^-delta - 1 + delta``: the limit of ``g(beta, delta)`` as ``beta -> 1``."""
    d = np.asarray(d, dtype=float)
    return np.expm1(-d) + d


def sensitivity_bounds(w: float, lams) -> tuple[np.ndarray, np.ndarray]:
    """Pointwise bounds ``min(g0, g1) / (w(1-w) g(w, delta))`` and ``max(g0, g1) / (w(1-w) g(w, delta))``
    on ``D_{N,m}(lam) / (U_{N,m} kl(w || lam))``, one pair per ``lam`` (``lam != w``).

    Implements {prf:ref}`thm-masked-sensitivity`; ``g(w, delta) = kl(w || lam) / (w(1-w))``.
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
    """``(c_I, C_I)``: the extremes over ``lam in I`` of :func:`sensitivity_bounds`, on ``n`` grid points of ``I``."""
    w = _check_w(w)
    c0 = min(w, 1.0 - w)
    lam = np.linspace(c0 / 2.0, 1.0 - c0 / 2.0, n)
    lam = lam[np.abs(lam - w) > 1e-9]
    lo, hi = sensitivity_bounds(w, lam)
    return float(lo.min()), float(hi.max())


def log_curvature_at_truth(log_u, w: float):
    """``log D''_{N,m}(w) = log U_{N,m} - 2 log(w(1-w))`` ({prf:ref}`thm-masked-curvature`)."""
    w = _check_w(w)
    return np.asarray(log_u, dtype=float) - 2.0 * math.log(w * (1.0 - w))
