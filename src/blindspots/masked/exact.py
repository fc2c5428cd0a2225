"""Exact masked discrepancy of the mode-reweighting witness family.

Implements {prf:ref}`thm-masked-info-decomposition`: for a visible set ``V`` with
``|V| = m``,

    D_{N,m}(lam) = E_{x_V ~ p} KL(p(x_K | x_V) || q_lam(x_K | x_V))
                 = E_r kl(omega_V || omega_{V,lam}),
    logit omega_{V,lam} = logit omega_V + (logit lam - logit w),

where ``omega_V = P(+ mode | x_V)`` depends on ``x_V`` only through the visible
magnetisation ``r = 2a - m`` (``a`` = number of visible ``+1``).

How the engine is exact and fast
--------------------------------
* It never enumerates states: it works on the ``m + 1`` values of ``a``.
* Everything is in the log domain. The binary KL is written as
  ``kl = omega (1 - omega) g(logit omega, t)`` (``t = logit lam - logit w``) with ``g`` evaluated without
  cancellation (a cumulant series for ``|t| < 0.1``, a log-sum-exp form
  otherwise), so ``log D`` stays exact when ``D`` is far below 1e-300.
* Per-configuration mode weights ``h^+(a)`` come from

  - **law P**: binomial tails ``P(Bin(N-m, rho) >= (N+1)/2 - a)``, all of them
    from one reverse cumulative log-sum-exp (``O(N)`` per ``m``);
  - **any law** (Curie-Weiss): the sum over the total plus-count ``n+`` with
    *certified pruning*: blocks of ``(a, n+)`` whose upper bound lies more than
    ``40 + log(N+1)`` nats below a lower bound of the result are skipped, so
    the dropped mass is below ``e^-40`` relative. Memory is ``O(N)`` per block;
    no ``N x N`` table is ever formed.

* For ``U`` and ``D`` of Curie-Weiss only the classes near ``a = m/2`` are summed (a window that widens
  until the classes left out are certified below ``e^-40`` relative, by the monotonicity of ``h^+`` in
  ``a``; see ``_window_table``): a few hundred to a few thousand rows instead of ``m + 1``, which takes a
  full profile at ``N = 2^20 - 1`` to seconds. ``posterior_table`` still returns every class.

* The sum over ``a`` for ``D`` is pruned the same way (terms more than ~45 nats
  below the largest are dropped, with the spread of ``g`` accounted for).

``method="direct"`` switches every pruning and fast path off (plain chunked
summation), which the tests compare against.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.special import gammaln, logsumexp

from .laws import Law, ProductLaw, check_m, check_N, check_unit

__all__ = [
    "PosteriorTable", "posterior_table", "log_mode_weights", "masked_discrepancy",
    "log_masked_discrepancy", "residual_uncertainty", "log_residual_uncertainty",
    "binary_kl", "log_binary_kl", "discrepancy_profile", "Profile", "clear_cache",
    "METHODS", "visible_grid",
]

METHODS = ("auto", "direct", "pruned", "tails")
#: Relative mass (in nats, on top of log(#terms)) below which terms are dropped.
PRUNE_NATS = 40.0
#: |delta| below which the cumulant series evaluates kl (cancellation-free).
SERIES_DELTA = 0.1
_SERIES_ORDER = 16


def _check_law(law) -> Law:
    if not isinstance(law, Law):
        raise ValueError(f"law must be a ProductLaw or CurieWeissLaw, got {law!r}")
    return law


def _check_method(method: str) -> str:
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    return method


# --------------------------------------------------------------------------
# log-factorials, log-binomials
# --------------------------------------------------------------------------

@lru_cache(maxsize=8)
def _log_factorials(N: int) -> np.ndarray:
    return gammaln(np.arange(N + 1, dtype=float) + 1.0)


def _log_binom_row(N: int, n: int) -> np.ndarray:
    """``log C(n, j)`` for ``j = 0..n`` (``n <= N``)."""
    lf = _log_factorials(N)
    j = np.arange(n + 1)
    return lf[n] - lf[j] - lf[n - j]


@lru_cache(maxsize=16)
def _log_weight(law: Law, N: int) -> np.ndarray:
    lw = law.log_weight(N)
    lw.setflags(write=False)
    return lw


@lru_cache(maxsize=16)
def _log_Z(law: Law, N: int) -> float:
    """Normaliser of the + mode: ``log sum_{n+} C(N, n+) F(n+)`` over the plus-count ``n+``."""
    return float(logsumexp(_log_binom_row(N, N) + _log_weight(law, N)))


# --------------------------------------------------------------------------
# per-configuration + mode weights h^+(a), a = 0..m
# --------------------------------------------------------------------------

def _log_h_direct(law: Law, N: int, m: int) -> np.ndarray:
    """Plain chunked summation over the hidden plus-count ``j`` (no pruning)."""
    n = N - m
    lC = _log_binom_row(N, n)
    lF = _log_weight(law, N)
    out = np.empty(m + 1)
    rows = max(1, (1 << 21) // (n + 1))
    j = np.arange(n + 1)
    for a0 in range(0, m + 1, rows):
        a = np.arange(a0, min(m + 1, a0 + rows))
        G = lC[None, :] + lF[a[:, None] + j[None, :]]
        out[a0:a0 + len(a)] = logsumexp(G, axis=1)
    return out - _log_Z(law, N)


def _lse(x: np.ndarray, axis=None):
    """Plain log-sum-exp (no copies of scipy's generality; ``-inf`` if all ``-inf``)."""
    x = np.asarray(x, dtype=float)
    mx = np.max(x, axis=axis, keepdims=True)
    fin = np.isfinite(mx)
    mx = np.where(fin, mx, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(x - mx), axis=axis, keepdims=True)) + mx
    out = np.where(fin, out, -np.inf)
    return out.item() if axis is None else np.squeeze(out, axis=axis)


def _row_lse(G: np.ndarray) -> np.ndarray:
    """Row-wise log-sum-exp, in place on ``G`` (rows of ``-inf`` give ``-inf``)."""
    mx = G.max(axis=1)
    fin = np.isfinite(mx)
    G -= np.where(fin, mx, 0.0)[:, None]
    np.exp(G, out=G)
    with np.errstate(divide="ignore"):
        return np.where(fin, mx + np.log(G.sum(axis=1)), -np.inf)


def _monotone_weight(law: Law, N: int) -> bool:
    """``log F`` is ``-inf`` on a prefix and non-decreasing after it (the pruning certificates need it)."""
    lF = _log_weight(law, N)
    finite = np.isfinite(lF)
    first = int(np.argmax(finite)) if np.any(finite) else N + 1
    return bool(np.all(finite[first:]) and not np.any(np.diff(lF[first:]) < 0))


def _log_h_pruned(law: Law, N: int, m: int) -> np.ndarray:
    """Summation over the total plus-count ``n+`` with certified block pruning, all rows ``a = 0..m``."""
    if not _monotone_weight(law, N):
        return _log_h_direct(law, N, m)
    return _log_h_rows(law, N, m, 0, m)


def _log_h_rows(law: Law, N: int, m: int, r0: int, r1: int) -> np.ndarray:
    """``log h^+(a)`` for ``a = r0..r1`` by summation over ``n+`` with certified block pruning.

    ``G(a, n+) = log C(n, n+ - a) + log F(n+)`` (``n = N - m`` hidden coordinates). For a block ``a0..a1``:
    lower bound of every row ``M0 = max_{n+} G(a0, n+)`` (``log F`` is
    non-decreasing where finite, so shifting ``n+`` with ``a`` keeps the term);
    upper bound per column ``UB(n+) = log F(n+) + max_{a in block} log C(n, n+ - a)``
    (``log C(n, .)`` is unimodal at ``n // 2``). Only the hull of the columns with
    ``UB(n+) >= M0 - PRUNE_NATS - log(N+1)`` is summed: the dropped terms weigh
    less than ``e^-PRUNE_NATS`` relative. Memory is O(block x kept columns). Needs
    :func:`_monotone_weight`.
    """
    n = N - m
    lC = _log_binom_row(N, n)
    lF = _log_weight(law, N)
    margin = PRUNE_NATS + math.log(N + 1.0)
    block = max(16, int(math.sqrt(N)))
    out = np.empty(r1 - r0 + 1)
    jmode = n // 2
    # lC padded with -inf so that j = t - a may run over [-(m+1), N]
    pad = m + 1
    lCp = np.full(pad + N + 2, -np.inf)
    lCp[pad:pad + n + 1] = lC
    for a0 in range(r0, r1 + 1, block):
        a1 = min(r1, a0 + block - 1)
        M0 = np.max(lC + lF[a0:a0 + n + 1])
        t_blk = np.arange(a0, a1 + n + 1)  # the columns some row of the block reaches
        lo = np.maximum(t_blk - a1, 0)
        hi = np.minimum(t_blk - a0, n)
        jstar = np.minimum(np.maximum(jmode, lo), hi)
        UB = lC[jstar] + lF[a0:a1 + n + 1]
        thr = M0 - margin if np.isfinite(M0) else -np.inf
        keep = np.flatnonzero(UB >= thr) if np.isfinite(thr) else np.flatnonzero(np.isfinite(UB))
        if keep.size == 0:
            out[a0 - r0:a1 - r0 + 1] = -np.inf
            continue
        tl, th = a0 + int(keep[0]), a0 + int(keep[-1])
        width = th - tl + 1
        # rows a = a0..a1 of lC[t - a], t = tl..th, as a strided (Hankel) view
        win = np.lib.stride_tricks.sliding_window_view(lCp, width)
        rows = win[pad + tl - a1: pad + tl - a0 + 1][::-1]
        G = rows + lF[tl:th + 1][None, :]
        out[a0 - r0:a1 - r0 + 1] = _row_lse(G)
    return out - _log_Z(law, N)


def _log_h_tails(law: ProductLaw, N: int, m: int) -> np.ndarray:
    """Law P: ``h^+(a) = rho^a (1-rho)^(m-a) P(Bin(N-m, rho) >= (N+1)/2 - a) / Z``."""
    n = N - m
    half = (N + 1) // 2
    lr, l1r = math.log(law.rho), math.log1p(-law.rho)
    k_lo = max(0, half - m)
    # log pmf of Bin(n, rho) at j = k_lo..n, then reverse cumulative log-sum-exp
    tail = np.full(n + 2, -np.inf)  # tail[k] for k = 0..n+1
    if k_lo <= n:
        j = np.arange(k_lo, n + 1)
        lp = _log_binom_row(N, n)[k_lo:] + j * lr + (n - j) * l1r
        tail[k_lo:n + 1] = np.logaddexp.accumulate(lp[::-1])[::-1]
    if k_lo == 0:
        tail[0] = 0.0  # whole distribution (exactly 1)
    a = np.arange(m + 1)
    k = half - a
    lt = np.where(k > n, -np.inf, tail[np.clip(k, 0, n + 1)])
    lt = np.where(k <= 0, 0.0, lt)
    return a * lr + (m - a) * l1r + lt - _log_Z(law, N)


@lru_cache(maxsize=512)
def _log_h_cached(law: Law, N: int, m: int, method: str) -> np.ndarray:
    if method == "direct":
        out = _log_h_direct(law, N, m)
    elif method == "tails":
        if not isinstance(law, ProductLaw):
            raise ValueError("method='tails' needs a ProductLaw (binomial tails)")
        out = _log_h_tails(law, N, m)
    elif method == "pruned":
        out = _log_h_pruned(law, N, m)
    else:  # auto
        out = _log_h_tails(law, N, m) if isinstance(law, ProductLaw) else _log_h_pruned(law, N, m)
    out.setflags(write=False)
    return out


def log_mode_weights(law: Law, N: int, m: int, method: str = "auto") -> np.ndarray:
    """``log h^+(a)``, ``a = 0..m``: log-probability under ``p^+`` of ONE visible
    configuration with ``a`` plus-ones (the ``-`` mode gives ``h^+(m - a)``)."""
    law = _check_law(law)
    N = check_N(N)
    m = check_m(m, N)
    return _log_h_cached(law, N, m, _check_method(method))


def clear_cache() -> None:
    """Forget every cached table (for cold timings)."""
    for f in (_log_h_cached, _window_table, _log_Z, _log_weight, _log_factorials):
        f.cache_clear()


# --------------------------------------------------------------------------
# posterior table
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class PosteriorTable:
    """Visible-magnetisation classes of ``|V| = m`` under ``p = w p^+ + (1-w) p^-``.

    Attributes
    ----------
    r : visible magnetisations ``2a - m`` (only classes with positive probability).
    log_prob : ``log P_p(r)``, multiplicity ``C(m, a)`` included (sums to 1).
    logit : ``logit beta(r)``, the log-odds of the + mode given ``x_V`` (may be +-inf).
    """

    N: int
    m: int
    w: float
    r: np.ndarray
    log_prob: np.ndarray
    logit: np.ndarray

    @property
    def beta(self) -> np.ndarray:
        return _sigmoid(self.logit)

    @property
    def log_s(self) -> np.ndarray:
        """``log beta (1 - beta)`` (``-inf`` where the mode is certain)."""
        return -_softplus(self.logit) - _softplus(-self.logit)


def _softplus(x):
    x = np.asarray(x, dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(x > 0, x + np.log1p(np.exp(-np.abs(x))), np.log1p(np.exp(-np.abs(x))))


def _sigmoid(x):
    x = np.asarray(x, dtype=float)
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _logit(u):
    u = np.asarray(u, dtype=float)
    return np.log(u) - np.log1p(-u)


def _logit_shift(lam, w):
    """``logit lam - logit w``: ``log1p((lam - w) / (w (1 - lam)))`` when that argument is at most
    1/2 in modulus (``lam - w`` is exact there, where the plain difference of logits loses digits),
    otherwise the difference of logits (whose terms then do not cancel)."""
    lam = np.asarray(lam, dtype=float)
    w = np.asarray(w, dtype=float)
    # The log1p form is accurate only while its argument is moderate; far from ``w`` the
    # ratio loses relative accuracy (and overflows for lam -> 1 or w -> 0). There we use
    # log(lam / w) + log((1 - w) / (1 - lam)): both terms have the sign of lam - w (no
    # cancellation, |result| >= log 1.5), and each ratio is formed to relative eps, so the
    # error is a few eps absolute even when lam and w are both ~1e-300 (a difference of
    # logits there would lose |log w| * eps). Where lam / w leaves the normal range,
    # |log lam - log w| > 690 and the difference of logs is itself accurate.
    with np.errstate(divide="ignore", over="ignore", invalid="ignore", under="ignore"):
        x = (lam - w) / (w * (1.0 - lam))
        near = np.abs(x) <= 0.5
        r = lam / w
        t1 = np.where((r > 1e-300) & (r < 1e300), np.log(r), np.log(lam) - np.log(w))
        far = t1 + np.log((1.0 - w) / (1.0 - lam))
        out = np.where(near, np.log1p(np.where(near, x, 0.0)), far)
    return out


def posterior_table(law: Law, N: int, m: int, w: float, method: str = "auto") -> PosteriorTable:
    """Log-probabilities of each visible magnetisation and the mode posterior.

    Implements the sufficient-statistic reduction of {prf:ref}`thm-masked-info-decomposition`.
    """
    law = _check_law(law)
    N = check_N(N)
    m = check_m(m, N)
    w = check_unit("w", w)
    lh = _log_h_cached(law, N, m, _check_method(method))
    lhm = lh[::-1]  # h^-(a) = h^+(m - a)
    a = np.arange(m + 1)
    lw, l1w = math.log(w), math.log1p(-w)
    lmix = np.logaddexp(lw + lh, l1w + lhm)
    keep = np.isfinite(lmix)
    lC = _log_binom_row(N, m)
    with np.errstate(invalid="ignore"):
        ell = (lw - l1w) + lh - lhm
    log_prob = (lC + lmix)[keep]
    # The classes sum to 1 exactly; renormalising removes the round-off of log Z
    # (about eps * |log Z|, i.e. 1e-13 relative at N = 1023 for Curie-Weiss).
    log_prob = log_prob - _lse(log_prob)
    return PosteriorTable(N=N, m=m, w=w, r=(2 * a - m)[keep], log_prob=log_prob, logit=ell[keep])


#: Half-width (rows each side of m/2) of the first window of :func:`_window_table`; it doubles until certified.
WINDOW_START = 64


def _log_left_out_bound(lo: int, log_binom_before: float, log_h_lo: float) -> float:
    """``log[lo C(m, lo-1) h(lo)]``: what the classes outside ``lo..m-lo`` weigh at most (:func:`_window_table`)."""
    return math.log(lo) + log_binom_before + log_h_lo


@lru_cache(maxsize=256)
def _window_table(law: Law, N: int, m: int, w: float, spread: float) -> PosteriorTable:
    """The classes that carry ``U_{N,m}`` and ``D_{N,m}`` (within ``e^-PRUNE_NATS`` relative), for laws
    without binomial tails (Curie-Weiss), at a cost independent of ``m`` once the window is certified.

    Both sums weigh each class by ``P(a) beta (1 - beta) = w (1-w) C(m,a) h(a) h(m-a) / mix(a)``, and
    ``D`` by a factor ``g`` whose log varies by at most ``spread`` over the table (see
    :func:`_log_D_from_table`). Only the rows ``a = lo..m-lo`` around ``m/2`` are computed; ``lo`` halves
    its distance to 0 until the rows left out are certified negligible:

    * ``h = h^+`` is non-decreasing in ``a`` (``log F`` is, see :func:`_monotone_weight`), and
      ``C(m, a)`` increases up to ``m/2``;
    * a class ``a < lo`` weighs at most ``w C(m,a) h(a) <= w C(m, lo-1) h(lo)`` (its ``h(a) <= h(m-a)``),
      one ``a > m - lo`` at most ``(1-w) C(m, lo-1) h(lo)``; so all of them together weigh at most
      ``lo C(m, lo-1) h(lo)``, and they are dropped once that is ``PRUNE_NATS + spread + 1`` nats below the
      largest class kept.

    ``log_prob`` is exact (not renormalised: the table is partial).
    """
    c = m // 2
    half = min(c, WINDOW_START)
    rows = np.empty(0)
    lo_done = None
    lC = _log_binom_row(N, m)
    lw, l1w = math.log(w), math.log1p(-w)
    while True:
        lo = c - half
        hi = m - lo
        if lo_done is None:
            rows = _log_h_rows(law, N, m, lo, hi)
        else:  # extend the window on both sides, keep the rows already summed
            left = _log_h_rows(law, N, m, lo, lo_done - 1)
            right = _log_h_rows(law, N, m, m - lo_done + 1, hi)
            rows = np.concatenate([left, rows, right])
        lo_done = lo
        lh, lhm = rows, rows[::-1]
        lmix = np.logaddexp(lw + lh, l1w + lhm)
        with np.errstate(invalid="ignore"):
            ell = (lw - l1w) + lh - lhm
        log_prob = lC[lo:hi + 1] + lmix
        if lo == 0:
            break
        with np.errstate(invalid="ignore"):
            carried = log_prob - _softplus(ell) - _softplus(-ell)
        top = np.max(carried[np.isfinite(carried)], initial=-np.inf)
        left_out = _log_left_out_bound(lo, lC[lo - 1], lh[0])
        if left_out <= top - (PRUNE_NATS + spread + 1.0):
            break
        half = min(c, 2 * half)
    a = np.arange(lo, hi + 1)
    keep = np.isfinite(log_prob)
    return PosteriorTable(N=N, m=m, w=w, r=(2 * a - m)[keep], log_prob=log_prob[keep], logit=ell[keep])


def _table_for_sums(law: Law, N: int, m: int, w: float, method: str, spread: float) -> PosteriorTable:
    """The table that ``U`` and ``D`` sum over: all classes, or for Curie-Weiss (``auto``, ``pruned``) the
    certified window of :func:`_window_table` (same sums to ``e^-PRUNE_NATS`` relative)."""
    law = _check_law(law)
    N = check_N(N)
    m = check_m(m, N)
    w = float(check_unit("w", w))
    method = _check_method(method)
    windowed = (method == "pruned" or (method == "auto" and not isinstance(law, ProductLaw)))
    if windowed and m + 1 > 2 * WINDOW_START + 1 and _monotone_weight(law, N):
        return _window_table(law, N, m, w, float(spread))
    return posterior_table(law, N, m, w, method)


# --------------------------------------------------------------------------
# binary KL, cancellation-free
# --------------------------------------------------------------------------

def _cumulant_polys(order: int) -> list[np.ndarray]:
    """``R_k`` with ``kappa_k(beta) = beta (1-beta) R_k(beta)`` (Bernoulli cumulants),
    as coefficient arrays in increasing powers of beta, ``k = 2..order``."""
    P = np.polynomial.polynomial
    s = np.array([0.0, 1.0, -1.0])           # beta (1 - beta)
    ds = np.array([1.0, -2.0])               # d/dbeta of s
    R = [np.array([1.0])]                    # R_2
    for _ in range(3, order + 1):
        Rk = R[-1]
        nxt = P.polyadd(P.polymul(ds, Rk), P.polymul(s, P.polyder(Rk)))
        R.append(nxt)
    return R


_R = _cumulant_polys(_SERIES_ORDER)
_RMAT = np.zeros((len(_R), max(len(r) for r in _R)))
for _i, _r in enumerate(_R):
    _RMAT[_i, :len(_r)] = _r
_KS = np.arange(2, _SERIES_ORDER + 1, dtype=float)
_FACT = np.array([math.factorial(int(k)) for k in _KS], dtype=float)


def _log_g_direct(e: np.ndarray, d: np.ndarray) -> np.ndarray:
    """``log g`` for ``e = logit beta <= 0`` (A,) and ``|d| >= SERIES_DELTA`` (L,).

    ``g = log(beta/gamma)/(1-beta) + log((1-beta)/(1-gamma))/beta`` with
    ``beta/gamma = beta + (1-beta) e^-d`` and ``(1-beta)/(1-gamma) = (1-beta) + beta e^d``,
    each evaluated as a log-sum-exp (no overflow, no cancellation beyond ~2/|d|).
    """
    lb = -_softplus(-e)                      # log beta
    l1b = -_softplus(e)                      # log(1 - beta)
    b = np.exp(lb)
    A = np.logaddexp(lb[:, None], l1b[:, None] - d[None, :])
    B = np.logaddexp(l1b[:, None], lb[:, None] + d[None, :])
    # where the arguments are moderate, log1p(x expm1(+-d)) avoids the cancellation
    # inside log-sum-exp (max + log1p(...) of opposite signs)
    with np.errstate(over="ignore", invalid="ignore"):
        xa = np.exp(l1b)[:, None] * np.expm1(-d)[None, :]
        xb = b[:, None] * np.expm1(d)[None, :]
    sa, sb = np.abs(xa) <= 0.5, np.abs(xb) <= 0.5
    A[sa] = np.log1p(xa[sa])
    A /= np.exp(l1b)[:, None]
    # B / beta without dividing by a (possibly subnormal) beta:
    #  |xb| <= 1/2: B / beta = expm1(d) * log1p(xb) / xb   (ratio -> 1 as xb -> 0, exact once
    #               |xb| < eps, so underflow of beta or xb costs nothing);
    #  otherwise   : B >= log 1.5 > 0 (xb < -1/2 is impossible for beta <= 1/2), and
    #               log(B / beta) = log B - log beta, kept in the log domain because
    #               B / beta overflows for subnormal beta.
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        em = np.broadcast_to(np.expm1(d)[None, :], B.shape)
        xs = np.where(sb, xb, 0.0)
        ratio = np.where(xs == 0.0, 1.0, np.log1p(xs) / np.where(xs == 0.0, 1.0, xs))
        near = np.log(A + em * ratio)
        lB = np.log(np.where(sb, 1.0, B)) - lb[:, None]
        far = lB + np.log1p(A * np.exp(-lB))
    return np.where(sb, near, far)


def _log_g(ell: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """``log g`` with ``kl(sigma(ell) || sigma(ell + delta)) = s * g``, ``s = beta(1-beta)``.

    ``ell`` (A,) finite, ``delta`` (L,); returns (A, L).
    """
    ell = np.asarray(ell, dtype=float)[:, None]
    delta = np.asarray(delta, dtype=float)[None, :]
    out = np.empty((ell.shape[0], delta.shape[1]))
    small = np.abs(delta[0]) < SERIES_DELTA
    if np.any(small):
        beta = _sigmoid(ell[:, 0])
        d = delta[0, small]
        powers = beta[:, None] ** np.arange(_RMAT.shape[1])[None, :]      # (A, deg+1)
        Rvals = powers @ _RMAT.T                                            # (A, K)
        dk = d[None, :] ** _KS[:, None] / _FACT[:, None]                    # (K, Ls)
        out[:, small] = np.log(Rvals @ dk)
    big = ~small
    if np.any(big):
        d = delta[0, big]
        e = ell[:, 0]
        flip = e > 0
        sub = np.empty((e.size, d.size))
        # kl is invariant under (ell, delta) -> (-ell, -delta): work with beta <= 1/2
        for rows, sign in ((~flip, 1.0), (flip, -1.0)):
            if np.any(rows):
                sub[rows] = _log_g_direct(-np.abs(e[rows]), sign * d)
        out[:, big] = sub
    return out


def binary_kl(w, lam):
    """``kl(w || lam)`` for Bernoulli laws, cancellation-free (arrays broadcast)."""
    return np.exp(log_binary_kl(w, lam))


def log_binary_kl(w, lam):
    """``log kl(w || lam)`` (``-inf`` when ``w == lam``)."""
    w = check_unit("w", w)
    lam = check_unit("lam", lam)
    wb, lb = np.broadcast_arrays(np.asarray(w, float), np.asarray(lam, float))
    ell = _logit(wb.ravel())
    dl = _logit_shift(lb.ravel(), wb.ravel())
    out = np.empty(ell.size)
    for i in range(ell.size):
        if dl[i] == 0.0:
            out[i] = -np.inf
            continue
        ls = -_softplus(ell[i]) - _softplus(-ell[i])
        out[i] = ls + _log_g(ell[i:i + 1], dl[i:i + 1])[0, 0]
    out = out.reshape(wb.shape)
    return float(out) if out.ndim == 0 else out


# --------------------------------------------------------------------------
# discrepancy and residual uncertainty
# --------------------------------------------------------------------------

def _log_D_from_table(tab: PosteriorTable, lam: np.ndarray, prune: bool) -> np.ndarray:
    lam = np.atleast_1d(np.asarray(lam, dtype=float))
    delta = _logit_shift(lam, tab.w)
    out = np.full(lam.shape, -np.inf)
    ls = tab.log_s
    base = tab.log_prob + ls
    fin = np.isfinite(base)
    if not np.any(fin):
        return out
    base, ell = base[fin], tab.logit[fin]
    nz = delta != 0.0
    if not np.any(nz):
        return out
    d = delta[nz]
    if prune and base.size > 64:
        # g(omega, t) lies between g(1, t) and g(0, t) (monotone in omega; t = delta here), and
        # max(g0, g1) / min(g0, g1) = (e^x - 1 - x) / (e^-x - 1 + x) <= e^x with x = |delta|,
        # so log g varies by at most |delta| over the table. (Evaluating the two logs
        # directly cancels to log 0 once |delta| ~ 1e-16.)
        spread = float(np.max(np.abs(d)))
        cut = base.max() - (PRUNE_NATS + math.log(base.size) + spread + 1.0)
        sel = base >= cut
        base, ell = base[sel], ell[sel]
    lg = _log_g(ell, d)
    out[nz] = _lse(base[:, None] + lg, axis=0)
    return out


def _spread(lams: np.ndarray, w: float) -> float:
    """``max |logit lam - logit w|``: the range of ``log g`` over a table (see :func:`_log_D_from_table`)."""
    d = np.abs(_logit_shift(np.asarray(lams, dtype=float), w))
    d = d[np.isfinite(d)]
    return float(d.max()) if d.size else 0.0


def _lam_out(lam, values):
    if np.ndim(lam) == 0:
        return float(values[0])
    return values.reshape(np.shape(lam))


def log_masked_discrepancy(law: Law, N: int, m: int, w: float, lam, method: str = "auto"):
    """``log D_{N,m}(lam)``: exact in the log domain (``-inf`` when ``lam == w`` or m = N).

    Parameters
    ----------
    law : ProductLaw | CurieWeissLaw
    N : odd sequence length; m : visible size in [0, N]
    w : true mode weight in (0, 1); lam : witness weight(s) in (0, 1), scalar or array
    method : ``"auto"`` (fast, pruned) or ``"direct"`` (plain summation, no pruning)

    Implements {prf:ref}`thm-masked-info-decomposition`.
    """
    lam_c = np.ravel(check_unit("lam", lam))
    w = check_unit("w", w)
    tab = _table_for_sums(law, N, m, w, method, _spread(lam_c, w))
    vals = _log_D_from_table(tab, lam_c, prune=(method != "direct"))
    return _lam_out(lam, vals)


def masked_discrepancy(law: Law, N: int, m: int, w: float, lam, method: str = "auto"):
    """``D_{N,m}(lam) = E_{x_V~p} KL(p(x_K|x_V) || q_lam(x_K|x_V))`` for ``|V| = m``.

    ``lam`` may be an array (returns an array of the same shape). Values below
    ~1e-308 underflow to 0 here; use :func:`log_masked_discrepancy` for them.
    """
    return np.exp(log_masked_discrepancy(law, N, m, w, lam, method))


def log_residual_uncertainty(law: Law, N: int, m: int, w: float, method: str = "auto") -> float:
    """``log U_{N,m}`` with ``U = E[omega_V (1 - omega_V)]`` (MMSE of the mode given x_V)."""
    tab = _table_for_sums(law, N, m, w, method, 0.0)
    return float(_lse(tab.log_prob + tab.log_s))


def residual_uncertainty(law: Law, N: int, m: int, w: float, method: str = "auto") -> float:
    """``U_{N,m} = E_{x_V~p}[omega_V (1 - omega_V)]``."""
    return float(np.exp(log_residual_uncertainty(law, N, m, w, method)))


def witness_grid(w: float, n: int) -> np.ndarray:
    """``n`` evenly spaced witness weights on ``J = [c0/2, 1 - c0/2]`` (``c0 = min(w, 1 - w)``), the one
    nearest ``w`` replaced by ``w`` itself, so that a profile contains the exact zero ``D(w) = 0``."""
    from .identifiability import mode_weight_interval  # J's one definition (checks w); imported on use

    lo, hi = mode_weight_interval(w)
    if int(n) != n or n < 2:
        raise ValueError(f"n must be an integer >= 2, got {n!r}")
    grid = np.linspace(lo, hi, int(n))
    grid[np.argmin(np.abs(grid - w))] = w
    return grid


def visible_grid(N: int, small=(0, 1, 2, 4)) -> np.ndarray:
    """Dyadic visible sizes ``1, 2, 4, ... < N`` with ``0`` and ``N//4, N//2, 3N//4``."""
    N = check_N(N)
    ms = set(small) | {N // 4, N // 2, (3 * N) // 4}
    k = 1
    while k < N:
        ms.add(k)
        k *= 2
    return np.array(sorted(x for x in ms if 0 <= x <= N - 1), dtype=int)


@dataclass(frozen=True)
class Profile:
    """``log_D[i, j] = log D_{N, ms[i]}(lams[j])`` and ``log_U[i] = log U_{N, ms[i]}``."""

    law: Law
    N: int
    w: float
    ms: np.ndarray
    lams: np.ndarray
    log_D: np.ndarray
    log_U: np.ndarray

    @property
    def D(self) -> np.ndarray:
        return np.exp(self.log_D)

    @property
    def U(self) -> np.ndarray:
        return np.exp(self.log_U)


def discrepancy_profile(law: Law, N: int, ms, w: float, lams, method: str = "auto") -> Profile:
    """Discrepancies for every visible size in ``ms`` and every ``lam``, plus ``U``."""
    N = check_N(N)
    ms = np.array([check_m(m, N) for m in np.atleast_1d(ms).tolist()], dtype=int)
    lams = np.atleast_1d(np.asarray(check_unit("lam", lams), dtype=float))
    logD = np.empty((ms.size, lams.size))
    logU = np.empty(ms.size)
    spread = _spread(lams, check_unit("w", w))
    for i, m in enumerate(ms):
        tab = _table_for_sums(law, N, int(m), w, method, spread)
        logD[i] = _log_D_from_table(tab, lams, prune=(method != "direct"))
        logU[i] = _lse(tab.log_prob + tab.log_s)
    return Profile(law=law, N=N, w=float(w), ms=ms, lams=lams, log_D=logD, log_U=logU)


def fitted_rate(prof: Profile, which: str = "U", window: tuple[float, float] = (0.125, 0.5)) -> float:
    """Decay rate of a profile in ``m``: minus the least-squares slope of ``log U_{N,m}`` (``which="U"``) or
    of ``log sup_lambda D_{N,m}`` (``which="D"``) on the visible sizes ``window[0] N <= m <= window[1] N``."""
    if which not in ("U", "D"):
        raise ValueError(f"which must be 'U' or 'D', got {which!r}")
    lo, hi = window
    if not 0.0 <= lo < hi <= 1.0:
        raise ValueError(f"window must satisfy 0 <= window[0] < window[1] <= 1, got {window!r}")
    sel = (prof.ms >= lo * prof.N) & (prof.ms <= hi * prof.N)
    if sel.sum() < 2:
        raise ValueError(f"window {window!r} holds {int(sel.sum())} of the profile's visible sizes; need >= 2")
    y = prof.log_D.max(axis=1) if which == "D" else prof.log_U
    return float(-np.polyfit(prof.ms[sel].astype(float), y[sel], 1)[0])


def timed_against_enumeration(law: Law, N: int, w: float, lams) -> tuple[float, float]:
    """Seconds for ``D_{N,m}(lambda)`` at every ``m`` and the given ``lams``: by brute-force enumeration of
    the ``2^N`` states (one visible set per ``m``, which exchangeability allows), then by a cold engine
    profile. A timing, for the benchmark and the engine's page; it asserts nothing."""
    import time

    from . import enumeration as en

    ms = list(range(N + 1))
    t0 = time.perf_counter()
    p = en.mixture_table(law, N, w)
    for lam in lams:
        q = en.witness_table(law, N, lam)
        for m in ms:
            en.masked_discrepancy_joint(p, q, N, m, subsets="first")
    brute = time.perf_counter() - t0
    clear_cache()
    t0 = time.perf_counter()
    discrepancy_profile(law, N, ms, w, np.asarray(lams, dtype=float))
    return brute, time.perf_counter() - t0
