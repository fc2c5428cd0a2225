"""Two-mode laws on {-1,+1}^N and their per-configuration weights.

Both laws are exchangeable and spin-flip symmetric. A law is described by one
small function, :meth:`log_weight`, the unnormalised log-probability of a single
configuration ``x`` with ``n+`` coordinates equal to ``+1`` (``t`` in the code; the book keeps ``t`` for the
logit shift), restricted to the ``+`` half-space ``S(x) = 2 n+ - N > 0`` (the ``+`` mode ``p^+``). The ``-`` mode is
its mirror image, ``p^-(x) = p^+(-x)``. Everything downstream (the exact engine
in :mod:`blindspots.masked.exact`) is law-agnostic apart from optional fast paths.

Implements the laws of {prf:ref}`def-masked-two-mode-law`:

* **Law P** (:class:`ProductLaw`): ``nu_+`` is the product law with
  ``P(x_i = +1) = (1 + theta)/2`` and ``p^+ = nu_+(. | S > 0)``.
* **Law C** (:class:`CurieWeissLaw`): ``p(x) ~ exp(beta S^2 / (2N))`` and
  ``p^+ = p(. | S > 0)``.

The data law is ``p = w p^+ + (1 - w) p^-`` and the witness family
``q_lam = lam p^+ + (1 - lam) p^-``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln

__all__ = ["ProductLaw", "CurieWeissLaw", "Law", "make_law", "check_N", "check_m", "check_unit",
           "log_binom", "curie_weiss_magnetisation"]


def check_N(N) -> int:
    """Return ``N`` as int or raise ``ValueError`` (N must be an odd integer >= 1)."""
    if isinstance(N, bool) or not isinstance(N, (int, np.integer)):
        raise ValueError(f"N must be an odd integer >= 1, got {N!r}")
    N = int(N)
    if N < 1 or N % 2 == 0:
        raise ValueError(f"N must be an odd integer >= 1, got {N}")
    return N


def check_m(m, N: int) -> int:
    """Return ``m`` as int or raise ``ValueError`` (m must be an integer in [0, N])."""
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)):
        raise ValueError(f"m must be an integer in [0, N={N}], got {m!r}")
    m = int(m)
    if not 0 <= m <= N:
        raise ValueError(f"m must be an integer in [0, N={N}], got {m}")
    return m


def check_unit(name: str, value) -> np.ndarray | float:
    """Check that every entry of ``value`` lies in the open interval (0, 1)."""
    arr = np.asarray(value, dtype=float)
    if arr.size == 0:
        raise ValueError(f"{name} must be non-empty and lie in the open interval (0, 1)")
    if not np.all((arr > 0.0) & (arr < 1.0)):
        bad = arr[~((arr > 0.0) & (arr < 1.0))].ravel()[0]
        raise ValueError(f"{name} must lie in the open interval (0, 1), got {bad!r}")
    return float(arr) if arr.ndim == 0 else arr


def log_binom(n: int, k) -> np.ndarray:
    """``log C(n, k)`` (``-inf`` outside ``0 <= k <= n``); ``k`` may be an array."""
    k = np.asarray(k, dtype=float)
    out = np.full(k.shape, -np.inf)
    ok = (k >= 0) & (k <= n)
    kk = k[ok]
    out[ok] = gammaln(n + 1.0) - gammaln(kk + 1.0) - gammaln(n - kk + 1.0)
    return out


def curie_weiss_magnetisation(beta: float) -> float:
    """Positive root ``m*`` of ``m = tanh(beta m)`` (0 when ``beta <= 1``)."""
    if beta <= 1.0:
        return 0.0
    lo, hi = 1e-300, 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if math.tanh(beta * mid) > mid:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


class Law:
    """Base class: an exchangeable, spin-flip-symmetric two-mode law."""

    name: str = "law"

    def log_weight(self, N: int) -> np.ndarray:
        """Unnormalised log-probability ``log F(n+)`` of ONE configuration with ``n+`` plus-ones
        under the ``+`` mode, for ``n+ = 0..N`` (``-inf`` where ``2 n+ - N < 0``).

        Must be non-decreasing on ``n+ > N/2`` (the pruned engine relies on it).
        """
        raise NotImplementedError

    def label(self) -> str:
        return self.name


@dataclass(frozen=True)
class ProductLaw(Law):
    """Law P: ``p^+ = nu_+(. | S > 0)`` with ``nu_+`` i.i.d., ``P(x_i=+1) = (1+theta)/2``.

    Parameters
    ----------
    theta : float
        Bias in the open interval (0, 1).
    """

    theta: float

    def __post_init__(self):
        th = self.theta
        if isinstance(th, bool) or not isinstance(th, (int, float, np.floating, np.integer)) \
                or not 0.0 < float(th) < 1.0:
            raise ValueError(f"theta must lie in the open interval (0, 1), got {th!r}")
        object.__setattr__(self, "theta", float(th))

    name = "P"

    @property
    def rho(self) -> float:
        """``P(x_i = +1)`` under ``nu_+``."""
        return (1.0 + self.theta) / 2.0

    @property
    def L0(self) -> float:
        """Per-coordinate log-likelihood ratio ``log((1+theta)/(1-theta))``."""
        return math.log1p(self.theta) - math.log1p(-self.theta)

    def log_weight(self, N: int) -> np.ndarray:
        t = np.arange(N + 1, dtype=float)
        out = t * math.log(self.rho) + (N - t) * math.log1p(-self.rho)
        out[2 * np.arange(N + 1) - N < 0] = -np.inf
        return out

    def label(self) -> str:
        return f"Law P, θ={self.theta:g}"


@dataclass(frozen=True)
class CurieWeissLaw(Law):
    """Law C: ``p(x) ~ exp(beta S^2 / (2N))``, ``p^+ = p(. | S > 0)``.

    Parameters
    ----------
    beta : float
        Inverse temperature, > 0. ``beta > 1`` is two-mode (metastable),
        ``beta < 1`` unimodal.
    """

    beta: float

    def __post_init__(self):
        b = self.beta
        if isinstance(b, bool) or not isinstance(b, (int, float, np.floating, np.integer)) \
                or not float(b) > 0.0 or not math.isfinite(float(b)):
            raise ValueError(f"beta must be a finite number > 0, got {b!r}")
        object.__setattr__(self, "beta", float(b))

    name = "C"

    @property
    def m_star(self) -> float:
        """Spontaneous magnetisation (0 for ``beta <= 1``)."""
        return curie_weiss_magnetisation(self.beta)

    def log_weight(self, N: int) -> np.ndarray:
        S = 2.0 * np.arange(N + 1) - N
        out = self.beta * S * S / (2.0 * N)
        out[S < 0] = -np.inf
        return out

    def label(self) -> str:
        return f"Law C, β={self.beta:g}"


def make_law(kind: str, param: float) -> Law:
    """``("P", theta)`` -> :class:`ProductLaw`, ``("C", beta)`` -> :class:`CurieWeissLaw`."""
    if kind == "P":
        return ProductLaw(param)
    if kind == "C":
        return CurieWeissLaw(param)
    raise ValueError(f"kind must be 'P' (product) or 'C' (Curie-Weiss), got {kind!r}")
