"""Brute-force enumeration of all 2^N states (small N only, N <= ~15).

Independent of the exact engine: it builds joint probability tables and
computes the masked log discrepancy of {prf:ref}`def-masked-discrepancy`
straight from its definition, for ARBITRARY joint laws ``p`` and ``q`` on
{-1,+1}^N. States are indexed by the integer whose binary digits (most
significant first) give ``x_i = +1`` for a 1 bit.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .laws import Law, check_m, check_N, check_unit

__all__ = ["MAX_N", "states", "mode_tables", "mixture_table", "witness_table",
           "masked_discrepancy_joint", "visible_sets", "kl_joint", "total_variation"]

#: Largest N enumerated (2^N states).
MAX_N = 17


def _check_small_N(N) -> int:
    N = int(N) if isinstance(N, (int, np.integer)) and not isinstance(N, bool) else N
    if not isinstance(N, int) or not 1 <= N <= MAX_N:
        raise ValueError(f"N must be an integer in [1, {MAX_N}] for enumeration, got {N!r}")
    return N


def states(N: int) -> np.ndarray:
    """All ``2^N`` states as a ``(2^N, N)`` int8 array of +-1."""
    N = _check_small_N(N)
    idx = np.arange(2 ** N, dtype=np.int64)
    bits = (idx[:, None] >> np.arange(N - 1, -1, -1)) & 1
    return (2 * bits - 1).astype(np.int8)


def mode_tables(law: Law, N: int) -> tuple[np.ndarray, np.ndarray]:
    """Joint tables ``(p^+, p^-)`` over all states (N odd), normalised to 1."""
    N = check_N(N)
    X = states(N)
    t = (X > 0).sum(axis=1)
    lw = law.log_weight(N)[t]
    lw_minus = law.log_weight(N)[N - t]  # p^-(x) = p^+(-x)
    p_plus = np.exp(lw - lw.max())
    p_plus /= p_plus.sum()
    p_minus = np.exp(lw_minus - lw_minus.max())
    p_minus /= p_minus.sum()
    return p_plus, p_minus


def mixture_table(law: Law, N: int, w: float) -> np.ndarray:
    """``p = w p^+ + (1 - w) p^-`` as a joint table."""
    w = check_unit("w", w)
    pp, pm = mode_tables(law, N)
    return w * pp + (1.0 - w) * pm


def witness_table(law: Law, N: int, lam: float) -> np.ndarray:
    """``q_lam = lam p^+ + (1 - lam) p^-`` (same as :func:`mixture_table`)."""
    lam = check_unit("lam", lam)
    return mixture_table(law, N, lam)


def visible_sets(N: int, m: int) -> list[tuple[int, ...]]:
    """All visible sets of size ``m`` (lexicographic)."""
    return list(itertools.combinations(range(N), m))


def _check_joint(name: str, p, N: int) -> np.ndarray:
    p = np.asarray(p, dtype=float)
    if p.shape != (2 ** N,):
        raise ValueError(f"{name} must be a joint table of shape (2**N,) = ({2 ** N},), got {p.shape}")
    if np.any(p < 0) or not math.isclose(p.sum(), 1.0, rel_tol=0, abs_tol=1e-9):
        raise ValueError(f"{name} must be non-negative and sum to 1")
    return p


def _split(p: np.ndarray, N: int, V: tuple[int, ...]) -> np.ndarray:
    """Table reshaped to ``(2^|V|, 2^|K|)`` rows = visible configuration."""
    K = [i for i in range(N) if i not in V]
    return p.reshape((2,) * N).transpose(list(V) + K).reshape(2 ** len(V), 2 ** len(K))


def masked_discrepancy_joint(p, q, N: int, m: int, subsets="all") -> float:
    """``E_{V uniform, |V|=m} E_{x_V~p} KL(p(x_K|x_V) || q(x_K|x_V))`` by enumeration.

    Parameters
    ----------
    p, q : joint tables of shape ``(2^N,)`` (any laws; ``q`` must dominate ``p``)
    N : number of coordinates (any N <= MAX_N, even allowed here)
    m : visible size in [0, N]
    subsets : ``"all"`` (average over all C(N, m) visible sets), ``"first"``
        (only ``V = {0..m-1}``, exact for exchangeable p and q), or a list of sets.
    """
    N = _check_small_N(N)
    m = check_m(m, N)
    p = _check_joint("p", p, N)
    q = _check_joint("q", q, N)
    if subsets == "all":
        sets = visible_sets(N, m)
    elif subsets == "first":
        sets = [tuple(range(m))]
    else:
        sets = [tuple(int(i) for i in V) for V in subsets]
        if not sets or any(len(V) != m or len(set(V)) != m or min(V, default=0) < 0
                           or max(V, default=0) >= N for V in sets):
            raise ValueError(f"subsets must be 'all', 'first' or a list of distinct-index sets of size m={m}")
    total = 0.0
    for V in sets:
        P = _split(p, N, V)
        Q = _split(q, N, V)
        pv = P.sum(axis=1, keepdims=True)
        qv = Q.sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            pc = np.where(pv > 0, P / pv, 0.0)
            qc = np.where(qv > 0, Q / qv, 0.0)
            if np.any((pc > 0) & (qc == 0)):
                return math.inf
            # Bregman form q*phi(p/q), phi(u) = u log u - u + 1 >= 0: every term is
            # non-negative, so the sum has no cancellation (sum of q - p is 0).
            qs = np.where(qc > 0, qc, 1.0)
            v = (pc - qc) / qs
            term = np.where(qc > 0, qs * ((1.0 + v) * np.log1p(v) - v), 0.0)
        total += float(np.sum(pv[:, 0] * term.sum(axis=1)))
    return total / len(sets)


def kl_joint(p, q) -> float:
    """``KL(p || q)`` of two joint tables."""
    p, q = np.asarray(p, float), np.asarray(q, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        if np.any((p > 0) & (q == 0)):
            return math.inf
        return float(np.sum(np.where(p > 0, p * (np.log(p) - np.log(np.where(q > 0, q, 1.0))), 0.0)))


def total_variation(p, q) -> float:
    """``TV(p, q) = (1/2) sum |p - q|``."""
    return 0.5 * float(np.sum(np.abs(np.asarray(p, float) - np.asarray(q, float))))
