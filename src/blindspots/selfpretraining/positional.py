"""How far a positional score matrix is from a relative-position (Toeplitz) one.

A matrix ``G`` is Toeplitz when ``G_ij`` depends on the offset ``i - j`` only. The nearest Toeplitz
matrix in the Frobenius norm, ``Toep(G)``, replaces every diagonal by its mean (the diagonals are
orthogonal subspaces), so the *diagonal energy fraction* ``||Toep(G)||^2 / ||G||^2`` is 1 for a Toeplitz
matrix and about ``(2n - 1) / n^2`` for a matrix of independent centred entries. The sinusoidal code makes
``PE PE^T`` exactly Toeplitz (``sin a sin b + cos a cos b = cos(a - b)``); a random ``W_Q W_K^T``
in between, as in the positional product ``S^pos = PE W_Q W_K^T PE^T / sqrt(d_h)``, breaks that. The
*offset profile* is the mean of each diagonal, ``b_{i-j}``.

Implements {prf:ref}`def-sp-positional-product`.
"""

from __future__ import annotations

import torch


def offset_profile(matrix: torch.Tensor) -> torch.Tensor:
    """Mean of each diagonal of the last two dimensions, offsets ``i - j = -(n-1) .. n-1``: ``(..., 2n - 1)``."""
    m = matrix.double()
    n = m.shape[-1]
    if m.shape[-2] != n:
        raise ValueError(f"matrix must be square in its last two dimensions, got {tuple(m.shape)}")
    i = torch.arange(n, device=m.device)
    offset = (i[:, None] - i[None, :] + n - 1).reshape(-1)
    sums = torch.zeros(*m.shape[:-2], 2 * n - 1, dtype=torch.float64, device=m.device).index_add_(
        -1, offset, m.reshape(*m.shape[:-2], -1))
    counts = torch.zeros(2 * n - 1, dtype=torch.float64, device=m.device).index_add_(
        0, offset, torch.ones(n * n, dtype=torch.float64, device=m.device))
    return sums / counts


def toeplitz_projection(matrix: torch.Tensor) -> torch.Tensor:
    """The nearest Toeplitz matrix (Frobenius norm): every diagonal replaced by its mean."""
    n = matrix.shape[-1]
    i = torch.arange(n, device=matrix.device)
    return offset_profile(matrix)[..., (i[:, None] - i[None, :] + n - 1)]


def diagonal_energy_fraction(matrix: torch.Tensor) -> float:
    """``||Toep(G)||^2 / ||G||^2`` of :func:`toeplitz_projection`, averaged over leading dimensions."""
    m = matrix.double().reshape(-1, *matrix.shape[-2:])
    total = (m ** 2).sum((-1, -2)).clamp_min(1e-300)
    return float(((toeplitz_projection(m) ** 2).sum((-1, -2)) / total).mean())


def random_diagonal_fraction(n: int) -> float:
    """The expected fraction of a matrix of i.i.d. centred entries: ``(2n - 1) / n^2``."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    return (2 * n - 1) / n ** 2
