"""Gradients with respect to attention scores: the theorem's abstraction and the full model.

The abstraction of {prf:ref}`thm-sp-gradient-blindness`: one attention layer
``A = softmax(S)`` applied to fixed values ``V`` (``n x d``), read out linearly per
position. The label loss reads the mean of the outputs, the reconstruction
loss reads the outputs at the masked positions. At ``S = 0`` the label
gradient is ``1 c^T`` with ``c = (u - mean(u)) / n^2`` and ``u = V g``
(:func:`label_gradient_closed_form`); its component along any matrix with
constant column sums is zero. The reconstruction gradient is
``(R - R 1 1^T / n) / n`` with ``R_ij = r_i . v_j``
(:func:`reconstruction_gradient_closed_form`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from .masking import masked_reconstruction_loss


# ----------------------------------------------------------------------------- directions
def centre_rows_and_columns(m: torch.Tensor) -> torch.Tensor:
    """``(I - J/n) M (I - J/n)`` on the last two dimensions (both sums removed)."""
    m = m - m.mean(-1, keepdim=True)
    return m - m.mean(-2, keepdim=True)


def band_direction(n: int, k: int = 1, *, include_self: bool = False, dtype=torch.float64,
                   device=None) -> torch.Tensor:
    """Unit-norm, double-centred band ``1[1 <= |i - j| <= k]``: the proximity direction.

    The neighbours only (``include_self=True`` adds the diagonal ``i = j``).

    Its row sums vanish (softmax ignores row constants) and its column sums vanish,
    so it lies in the subspace that {prf:ref}`thm-sp-gradient-blindness` shows the
    mean-pooled label gradient cannot reach at uniform attention.
    """
    if not 1 <= k < n:
        raise ValueError(f"k must lie in [1, {n - 1}], got {k}")
    i = torch.arange(n, device=device)
    dist = (i[:, None] - i[None, :]).abs()
    band = ((dist <= k) & (dist >= (0 if include_self else 1))).to(dtype)
    d = centre_rows_and_columns(band)
    return d / d.norm()


def row_shared_part(g: torch.Tensor) -> torch.Tensor:
    """The part of ``g`` whose rows are all equal, ``1 mean_rows(g)^T`` (last two dims)."""
    return g.mean(-2, keepdim=True).expand_as(g)


def row_shared_fraction(g: torch.Tensor) -> float:
    """Energy fraction ``||1 gbar^T||^2 / ||g||^2`` summed over all leading dimensions.

    1 for a gradient of the theorem's form ``1 c^T``; ``1/n`` for a single nonzero row.
    """
    g = g.double()
    total = (g ** 2).sum()
    return float((row_shared_part(g) ** 2).sum() / total)


def relational_norm_ratio(g: torch.Tensor) -> float:
    """``||g - 1 gbar^T|| / ||g||``: the relative size of the query-dependent part."""
    g = g.double()
    return float((g - row_shared_part(g)).norm() / g.norm())


def direction_cosine(g: torch.Tensor, direction: torch.Tensor) -> float:
    """Cosine between ``g`` (summed over leading dims) and an ``(n, n)`` direction.

    ``g`` is first summed over batch and heads: the score update that one step
    of gradient descent makes on average, as a matrix over (query, key).
    """
    g = g.double().reshape(-1, *g.shape[-2:]).sum(0)
    d = direction.double().to(g.device)
    return float((g * d).sum() / (g.norm() * d.norm()))


def per_matrix_projection(g: torch.Tensor, direction: torch.Tensor) -> torch.Tensor:
    """``<g_b, D> / ||g_b||`` for every matrix ``g_b`` in the leading dimensions."""
    g = g.double().reshape(-1, *g.shape[-2:])
    d = direction.double().to(g.device)
    return (g * d).sum((-1, -2)) / g.norm(dim=(-1, -2))


# ----------------------------------------------------------------------------- abstraction
@dataclass
class Abstraction:
    """One random float64 instance of the theorem's abstraction."""

    values: torch.Tensor  # (n, d): V, the values of the (masked) input
    label_readout: torch.Tensor  # (C, d)
    label: int
    recon_readout: torch.Tensor  # (n_tok, d): U
    targets: torch.Tensor  # (n,) token ids in [0, n_tok)
    masked: torch.Tensor  # (n,) bool, at least one True

    @property
    def n(self) -> int:
        return self.values.shape[0]


def random_abstraction(rng: np.random.Generator, *, n_range=(4, 64), d_range=(2, 16),
                       classes_range=(2, 6), vocab_range=(3, 12), scale_range=(0.1, 3.0),
                       mask_prob: float = 0.5) -> Abstraction:
    """Random widths, lengths, readouts and values (float64), for the exact checks."""
    n = int(rng.integers(n_range[0], n_range[1] + 1))
    d = int(rng.integers(d_range[0], d_range[1] + 1))
    c = int(rng.integers(classes_range[0], classes_range[1] + 1))
    k = int(rng.integers(vocab_range[0], vocab_range[1] + 1))
    scale = float(rng.uniform(*scale_range))
    masked = rng.random(n) < mask_prob
    masked[rng.integers(n)] = True
    t = lambda a: torch.tensor(a, dtype=torch.float64)
    return Abstraction(values=t(scale * rng.standard_normal((n, d))),
                       label_readout=t(rng.standard_normal((c, d))), label=int(rng.integers(c)),
                       recon_readout=t(rng.standard_normal((k, d))),
                       targets=torch.tensor(rng.integers(0, k, n)), masked=torch.tensor(masked))


def abstraction_losses(inst: Abstraction, scores: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean-pooled label loss, masked reconstruction loss) at scores ``S``."""
    h = torch.softmax(scores, dim=-1) @ inst.values  # (n, d)
    z = inst.label_readout @ h.mean(0)
    label = F.cross_entropy(z[None], torch.tensor([inst.label]))
    logits = h[inst.masked] @ inst.recon_readout.T
    recon = F.cross_entropy(logits, inst.targets[inst.masked])
    return label, recon


def abstraction_score_gradients(inst: Abstraction) -> tuple[torch.Tensor, torch.Tensor]:
    """Autograd gradients of both losses with respect to ``S`` at ``S = 0`` (uniform attention)."""
    out = []
    for which in range(2):
        s = torch.zeros(inst.n, inst.n, dtype=torch.float64, requires_grad=True)
        loss = abstraction_losses(inst, s)[which]
        (g,) = torch.autograd.grad(loss, s)
        out.append(g)
    return out[0], out[1]


def label_gradient_closed_form(inst: Abstraction) -> torch.Tensor:
    """``1 c^T`` with ``c = (u - mean u) / n^2``, ``u = V W^T (softmax(z) - e_y)``."""
    n = inst.n
    vbar = inst.values.mean(0)
    z = inst.label_readout @ vbar
    g = inst.label_readout.T @ (torch.softmax(z, 0) - F.one_hot(torch.tensor(inst.label), z.shape[0]).double())
    u = inst.values @ g
    c = (u - u.mean()) / n ** 2
    return torch.ones(n, 1, dtype=torch.float64) @ c[None]


def reconstruction_gradient_closed_form(inst: Abstraction) -> torch.Tensor:
    """``(R - R 1 1^T / n) / n`` with ``R_ij = r_i . v_j``, ``r_i = U^T (pi - e_{x_i}) / |M|`` on masked
    ``i``."""
    n = inst.n
    vbar = inst.values.mean(0)
    k = inst.recon_readout.shape[0]
    pi = torch.softmax(inst.recon_readout @ vbar, 0)
    err = pi[None] - F.one_hot(inst.targets, k).double()  # (n, n_tok)
    err = err * inst.masked[:, None].double() / inst.masked.sum()
    r = err @ inst.recon_readout  # (n, d)
    big_r = r @ inst.values.T
    return (big_r - big_r.mean(1, keepdim=True)) / n


# ----------------------------------------------------------------------------- i.i.d. tokens
def band_trace(n: int, k: int = 1) -> float:
    """``tr(D_k)`` of the unit, double-centred band direction (:func:`band_direction`), in closed form.

    With the centring ``I - J/n`` and ``B = B_k`` (zero diagonal, row sums ``s_i``, ``beta_k = k(2n - k - 1)``
    ones), ``((I - J/n) B (I - J/n))_ii = -2 s_i/n + beta_k/n^2``, which sums to ``-beta_k/n``, and
    ``||(I - J/n) B (I - J/n)||_F^2 = beta_k - 2 ||s||^2/n + beta_k^2/n^2``. Hence
    ``tr(D_k) = -beta_k / (n ||(I - J/n) B (I - J/n)||_F) < 0``: about ``-sqrt(2k/n)`` for ``k << n``. Used by
    {prf:ref}`prop-sp-iid-band-mean`.
    """
    if not isinstance(n, (int, np.integer)) or not isinstance(k, (int, np.integer)) or not 1 <= k < n:
        raise ValueError(f"need integers 1 <= k < n, got n={n!r}, k={k!r}")
    i = np.arange(n)
    s = np.minimum(i, k) + np.minimum(n - 1 - i, k)
    total = float(k * (2 * n - k - 1))
    fro2 = total - 2.0 * float(np.sum(s.astype(float) ** 2)) / n + total ** 2 / n ** 2
    return -total / (n * np.sqrt(fro2))


def masked_pair_mass(n: int, m: int, trace: float) -> float:
    """``E mu_M``, ``mu_M = sum_{i, j in M} D_ij``, for a uniformly random masked set ``M`` of size ``m``, and
    ``D 1 = 0``.

    ``Pr(i in M) = m/n`` on the diagonal and ``Pr(i, j in M) = m(m-1)/(n(n-1))`` off it; the
    off-diagonal entries of ``D`` sum to ``-tr D``, so the mass is
    ``tr(D) [m/n - m(m-1)/(n(n-1))] = tr(D) m(n-m) / (n(n-1))``.
    """
    if not 1 <= m < n:
        raise ValueError(f"need 1 <= m < n, got m={m!r}, n={n!r}")
    return float(trace) * m * (n - m) / (n * (n - 1))


def iid_band_mean_factor(n: int, m: int, k: int = 1) -> float:
    """The factor ``kappa_n = E[mu_M] / (n m) = tr(D_k) (n - m) / (n^2 (n - 1))`` of
    {prf:ref}`prop-sp-iid-band-mean`.

    Under i.i.d. tokens and a uniform masked set of size ``m``,
    ``E <grad_S l_rec, D_k> = iid_band_mean_factor(n, m, k) * E[(pi - p)^T U (e_MASK - vbar_vis)]``.
    """
    return masked_pair_mass(n, m, band_trace(n, k)) / (n * m)


@dataclass
class IidReconstruction:
    """The abstraction of {prf:ref}`def-sp-abstraction` on i.i.d. tokens (numpy, float64).

    Tokens ``0..n_tok-1`` are i.i.d. with law ``p``; ``n_tok`` is the MASK token. Values are
    ``v_j = E[:, x~_j]`` (``E`` is ``d x (n_tok+1)``), the read-out is ``U`` (``n_tok x d``).
    """

    p: np.ndarray  # (n_tok,)
    embed: np.ndarray  # (d, n_tok + 1); the last column embeds MASK
    readout: np.ndarray  # (n_tok, d)

    @property
    def vocab(self) -> int:
        return self.p.shape[0]


def random_iid_reconstruction(rng: np.random.Generator, *, vocab: int = 4, width: int = 6,
                              visible_scale: float = 0.5, mask_scale: float = 2.0) -> IidReconstruction:
    """A fixed random instance: uniform ``p``, visible embeddings of scale ``visible_scale``, MASK of ``mask_scale``.

    A MASK embedding far from the visible ones makes ``e_MASK - vbar_vis`` large, so that the mean of
    {prf:ref}`prop-sp-iid-band-mean` stands out of the Monte Carlo noise at a moderate sample size.
    """
    embed = visible_scale * rng.standard_normal((width, vocab + 1))
    embed[:, vocab] = mask_scale * rng.standard_normal(width)
    readout = rng.standard_normal((vocab, width)) / np.sqrt(width)
    return IidReconstruction(p=np.full(vocab, 1.0 / vocab), embed=embed, readout=readout)


def iid_band_projection_samples(setting: IidReconstruction, n: int, m: int, samples: int,
                                rng: np.random.Generator, k: int = 1, chunk: int = 5000) -> tuple[np.ndarray, np.ndarray]:
    """Per-sequence ``Pi = <grad_S l_rec, D_k>`` at uniform attention, and the statistic
    ``xi = (pi - p)^T U (e_MASK - vbar_vis)``.

    Each sequence has i.i.d. tokens from ``setting.p`` and a uniformly random masked set of size ``m``.
    The projection is computed from {prf:ref}`prop-sp-reconstruction-gradient`,
    ``(1/(n m)) sum_{i in M} sum_j D_ij (pi - e_{x_i})^T U v_j``, without using the i.i.d. structure.
    Returns two arrays of length ``samples``.
    """
    if not 1 <= m < n:
        raise ValueError(f"need 1 <= m < n, got m={m!r}, n={n!r}")
    if samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples!r}")
    kk, e, u = setting.vocab, setting.embed, setting.readout
    w = u @ e  # (n_tok, n_tok + 1): score of target a against value token c
    d = band_direction(n, k).numpy()
    proj, stat = [], []
    for start in range(0, samples, chunk):
        b = min(chunk, samples - start)
        x = rng.choice(kk, size=(b, n), p=setting.p)
        order = np.argsort(rng.random((b, n)), axis=1)
        masked = np.zeros((b, n), bool)
        np.put_along_axis(masked, order[:, :m], True, axis=1)
        shown = np.where(masked, kk, x)
        v = e.T[shown]  # (b, n, d)
        z = v.mean(1) @ u.T
        pi = np.exp(z - z.max(1, keepdims=True))
        pi /= pi.sum(1, keepdims=True)
        # sum_{i in M} sum_j D_ij pi^T U v_j
        first = ((masked.astype(float) @ d) * np.take_along_axis(pi @ w, shown, 1)).sum(1)
        # sum_{i in M} sum_j D_ij W[x_i, x~_j]
        neigh = d @ np.eye(kk + 1)[shown]  # (b, n, n_tok + 1): sum_j D_ij 1[x~_j = c]
        second = (masked * (w[x] * neigh).sum(2)).sum(1)
        proj.append((first - second) / (n * m))
        vis_mean = (v * (~masked)[:, :, None]).sum(1) / (n - m)
        stat.append(np.einsum("bk,kd,bd->b", pi - setting.p, u, e[:, kk][None] - vis_mean))
    return np.concatenate(proj), np.concatenate(stat)


# ----------------------------------------------------------------------------- full model
def label_loss(model, tokens: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(model.classify(tokens), labels)


def score_gradients(model, loss_fn) -> list[torch.Tensor]:
    """Gradient of ``loss_fn()`` with respect to every layer's scores ``(B, H, n, n)``.

    Reads the scores through forward hooks on ``attn.score_hook``; with
    ``model.set_uniform(True)`` this is the gradient at uniform attention.
    """
    store: list[torch.Tensor] = []

    def hook(_module, _inp, out):
        out.retain_grad()
        store.append(out)

    handles = [a.score_hook.register_forward_hook(hook) for a in model.attentions]
    try:
        model.zero_grad(set_to_none=True)
        loss = loss_fn()
        loss.backward()
    finally:
        for h in handles:
            h.remove()
    model.zero_grad(set_to_none=True)
    return [s.grad.detach() for s in store]


def label_score_gradients(model, tokens, labels) -> list[torch.Tensor]:
    """:func:`score_gradients` of the label loss."""
    return score_gradients(model, lambda: label_loss(model, tokens, labels))


def reconstruction_score_gradients(model, tokens, *, mask_id: int, generator: torch.Generator,
                                   mlm_prob: float = 0.5, pad_id: int | None = None) -> list[torch.Tensor]:
    """:func:`score_gradients` of the masked reconstruction loss."""
    return score_gradients(model, lambda: masked_reconstruction_loss(
        model, tokens, mask_id=mask_id, mlm_prob=mlm_prob, pad_id=pad_id, generator=generator))


def qk_step_score_change(model, loss_fn, layer: int = 0) -> torch.Tensor:
    """First-order change of layer ``layer``'s scores under one gradient step on ``W_Q, W_K``.

    The scores ``S = Q K^T / sqrt(d_h)``, with queries ``Q = X W_Q`` and keys ``K = X W_K`` of the layer
    input ``X``, are bilinear in (W_Q, b_Q) and (W_K, b_K), so the change per unit step along minus the
    gradient is exactly ``-(Q_G K^T + Q K_G^T) / sqrt(d_h)``, where ``Q_G`` (``K_G``) applies the gradient of
    the query (key) map to the same layer input. Returns ``(batch, heads, n, n)``.
    """
    attn = model.attentions[layer]
    seen: dict[str, torch.Tensor] = {}
    handle = attn.register_forward_pre_hook(lambda _m, args: seen.__setitem__("x", args[0].detach()))
    try:
        model.zero_grad(set_to_none=True)
        loss_fn().backward()
    finally:
        handle.remove()
    x = seen["x"]
    q = attn._split(attn.q_proj(x)).detach()
    k = attn._split(attn.k_proj(x)).detach()
    qg = attn._split(F.linear(x, attn.q_proj.weight.grad, attn.q_proj.bias.grad))
    kg = attn._split(F.linear(x, attn.k_proj.weight.grad, attn.k_proj.bias.grad))
    model.zero_grad(set_to_none=True)
    return -(qg @ k.transpose(-1, -2) + q @ kg.transpose(-1, -2)) / attn.d_head ** 0.5


def qk_gradient_norm(model, loss_fn, layer: int = 0) -> float:
    """``sqrt(||dL/dW_Q||^2 + ||dL/dW_K||^2)`` at layer ``layer`` (weights only)."""
    attn = model.attentions[layer]
    model.zero_grad(set_to_none=True)
    loss_fn().backward()
    out = float(torch.sqrt(attn.q_proj.weight.grad.double().pow(2).sum()
                           + attn.k_proj.weight.grad.double().pow(2).sum()))
    model.zero_grad(set_to_none=True)
    return out


def head_cosines(g: torch.Tensor, direction: torch.Tensor) -> np.ndarray:
    """:func:`direction_cosine` for each head of a ``(B, H, n, n)`` gradient (summed over the batch)."""
    return np.array([direction_cosine(g[:, h], direction) for h in range(g.shape[1])])


def loglog_slope(x, y) -> float:
    """Least-squares slope of ``log y`` against ``log x``."""
    return float(np.polyfit(np.log(np.asarray(x, float)), np.log(np.asarray(y, float)), 1)[0])


# ----------------------------------------------------------------------------- predictions
QK_SLOPES: dict[str, float] = {"weight_gradient": 1.0, "score_change": 2.0}


def qk_slope_prediction(quantity: str) -> float:
    """Predicted log-log slope against the init scale omega of W_Q, W_K (zero biases, S = O(omega^2)).

    With ``W_Q``, ``W_K`` in the layout ``Q = X W_Q`` (``q_proj.weight`` is ``W_Q^T``),
    ``"weight_gradient"``: ``dL/dW_Q = X^T (dL/dS) X W_K / sqrt(d_h)`` is linear in omega, slope 1.
    ``"score_change"``: the first-order score change of one step, ``-(Q_G K^T + Q K_G^T)/sqrt(d_h)``,
    is quadratic, slope 2. Both hold to first order while the softmax stays near uniform.
    """
    if quantity not in QK_SLOPES:
        raise ValueError(f"quantity must be one of {tuple(QK_SLOPES)}, got {quantity!r}")
    return QK_SLOPES[quantity]


def qk_slope_tolerance(max_score: float, sigma_lo: float, sigma_hi: float) -> float:
    """How far the fitted slope may stray from :func:`qk_slope_prediction` on ``[sigma_lo, sigma_hi]``.

    With ``S_inf = max |S_ij|`` (``max_score``) every attention weight lies within ``e^{+-2 S_inf}`` of
    ``1/n``; the score gradient (two factors of A) and the forward pass change by a relative
    ``eps = e^{4 S_inf} - 1`` at most, so each end of the fit is off by at most ``eps`` and the slope by
    ``2 eps / ln(sigma_hi/sigma_lo)`` (``sigma_lo``, ``sigma_hi``: the ends omega_a, omega_b of the fitted
    range of init scales).
    """
    if not 0 < sigma_lo < sigma_hi:
        raise ValueError(f"need 0 < sigma_lo < sigma_hi, got {sigma_lo}, {sigma_hi}")
    if max_score < 0:
        raise ValueError(f"max_score must be >= 0, got {max_score}")
    return float(2 * np.expm1(4 * max_score) / np.log(sigma_hi / sigma_lo))


def random_direction_scale(n: int) -> float:
    """``1/(n-1)``: the typical |cosine| of a fixed unit direction with a uniformly random one in the
    ``(n-1)^2``-dimensional space of doubly-centred ``n x n`` matrices (standard deviation of the cosine)."""
    if n < 2:
        raise ValueError(f"n must be >= 2, got {n}")
    return 1.0 / (n - 1)
