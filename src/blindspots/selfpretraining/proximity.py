"""How proximal an attention pattern is: local mass and the Toeplitz score."""

from __future__ import annotations

import functools

import numpy as np
import torch


def distance_matrix(n: int, device=None) -> torch.Tensor:
    """``|i - j|`` as an ``(n, n)`` integer tensor."""
    i = torch.arange(n, device=device)
    return (i[:, None] - i[None, :]).abs()


def local_mass(probs: torch.Tensor, k: int) -> float:
    """Mean over queries (and batch, heads) of the attention mass on keys with ``|i - j| <= k``: the local mass
    ``M_k(A)`` of {prf:ref}`def-sp-proximity`.

    Uniform attention over ``n`` keys gives about ``(2k + 1) / n``.
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    n = probs.shape[-1]
    band = (distance_matrix(n, probs.device) <= k).to(probs.dtype)
    return float((probs.detach() * band).sum(-1).mean())


def uniform_local_mass(n: int, k: int) -> float:
    """:func:`local_mass` of uniform attention over ``n`` keys."""
    return float((distance_matrix(n) <= k).double().sum(-1).mean() / n)


@functools.lru_cache(maxsize=8)
def _offset_normal_pinv(n: int) -> torch.Tensor:
    """Pseudo-inverse of the normal matrix of the fit ``S_ij = a_i + b_{i-j}`` (size ``3n - 1``)."""
    i = torch.arange(n)
    offset = i[:, None] - i[None, :] + n - 1
    normal = torch.zeros(3 * n - 1, 3 * n - 1, dtype=torch.float64)
    normal[:n, :n] = n * torch.eye(n)
    counts = torch.zeros(2 * n - 1, dtype=torch.float64).index_add_(0, offset.reshape(-1), torch.ones(n * n, dtype=torch.float64))
    normal[n:, n:] = torch.diag(counts)
    cross = torch.zeros(n, 2 * n - 1, dtype=torch.float64)
    cross[i[:, None].expand(n, n).reshape(-1), offset.reshape(-1)] = 1.0
    normal[:n, n:], normal[n:, :n] = cross, cross.T
    return torch.from_numpy(np.linalg.pinv(normal.numpy(), hermitian=True))


def toeplitz_score(scores: torch.Tensor) -> float:
    """Fraction of the variance of the scores explained by the offset ``i - j``.

    Softmax ignores a constant per row, so the scores are fitted by least
    squares as ``S_ij = a_i + b_{i-j}`` (a row constant plus a function of the
    offset) and the score is ``1 - ||residual||^2 / ||S - rowmean(S)||^2``. It is 1
    when the attention depends on relative positions only (absolute positions
    cancelled) and about ``2/n`` for unstructured scores. Computed per matrix
    (leading dimensions) and averaged.
    """
    s = scores.detach().double().reshape(-1, *scores.shape[-2:])
    m, n = s.shape[0], s.shape[-1]
    i = torch.arange(n, device=s.device)
    offset = (i[:, None] - i[None, :] + n - 1).reshape(-1)
    flat = s.reshape(m, n * n)
    rhs = torch.cat([s.sum(-1), torch.zeros(m, 2 * n - 1, dtype=s.dtype, device=s.device)
                     .index_add_(1, offset, flat)], dim=1)  # (design matrix)^T S
    coef = rhs @ _offset_normal_pinv(n).to(s.device)
    fitted = coef[:, :n, None] + coef[:, n:][:, offset].reshape(m, n, n)
    resid = ((s - fitted) ** 2).sum((-1, -2))
    centred = s - s.mean(-1, keepdim=True)
    total = (centred ** 2).sum((-1, -2)).clamp_min(1e-300)
    return float((1.0 - resid / total).mean())


def mean_attention_by_offset(probs: torch.Tensor, max_offset: int) -> torch.Tensor:
    """Average attention on the key at each offset ``j - i`` in ``[-max_offset, max_offset]``."""
    n = probs.shape[-1]
    p = probs.reshape(-1, n, n).double().mean(0)
    out = []
    for d in range(-max_offset, max_offset + 1):
        out.append(torch.diagonal(p, offset=d).mean())
    return torch.stack(out)


@torch.no_grad()
def attention_snapshot(model, tokens: torch.Tensor, layer: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Scores and probabilities ``(B, H, n, n)`` of one layer on ``tokens`` (eval mode, on the CPU)."""
    was = model.training
    model.eval()
    attn = model.attentions[layer]
    old = attn.record
    attn.record = True
    model.classify(tokens)
    scores, probs = attn.last_scores.detach().cpu(), attn.last_probs.detach().cpu()
    attn.record = old
    attn.last_scores = attn.last_probs = None
    model.train(was)
    return scores, probs


def proximity_summary(model, tokens: torch.Tensor, k: int, layer: int = 0) -> dict[str, float]:
    """Proximity of one layer's attention on ``tokens``, averaged over heads.

    ``local_mass``: :func:`local_mass` within ``|i - j| <= k``. ``toeplitz``: :func:`toeplitz_score`
    of each sequence's scores (token content included). ``toeplitz_positional``: the Toeplitz score
    of the scores averaged over the sequences, which keeps their positional part only.
    """
    scores, probs = attention_snapshot(model, tokens, layer)
    return {"local_mass": local_mass(probs, k), "toeplitz": toeplitz_score(scores),
            "toeplitz_positional": toeplitz_score(scores.mean(0))}
