"""A small pre-norm transformer encoder whose attention can be read and hooked.

Every attention layer passes its scores through ``score_hook`` and its
probabilities through ``prob_hook`` (both ``nn.Identity``), so a forward hook
registered on them can read or replace the scores ``S = Q K^T / sqrt(d_h)`` (queries ``Q = X W_Q``, keys
``K = X W_K`` of the layer input ``X``, per head) or the
probabilities ``A = softmax(S)``. With ``record=True`` the layer also keeps the
last scores and probabilities in ``last_scores`` / ``last_probs``, and with
``hold_uniform=True`` it sets the scores to zero (uniform attention over the
non-padding keys), the point at which {prf:ref}`thm-sp-gradient-blindness` is stated.
When none of these is in use (training), the layer calls the fused
``scaled_dot_product_attention`` instead: the same function, rounded differently.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
import torch.nn.functional as F

POOLINGS: tuple[str, ...] = ("mean", "cls")


@dataclass(frozen=True)
class ModelConfig:
    """Sizes of :class:`Encoder`.

    ``max_len`` is the length of the sinusoidal position table; with CLS pooling
    the CLS token takes one of its rows. ``pad_id`` tokens are never attended to
    and never pooled; ``cls_id`` is prepended when ``pooling == "cls"``.
    """

    vocab_size: int
    n_classes: int = 2
    d_model: int = 32
    n_heads: int = 2
    n_layers: int = 1
    mlp_ratio: int = 4
    max_len: int = 128
    pooling: str = "mean"
    pad_id: int | None = None
    cls_id: int | None = None
    alibi: bool = False  # add the fixed distance bias -lambda_h |i - j| of Press et al. to each head's scores
    alibi_grid: int = 0  # > 0: positions are pixels of rows this wide, and |i - j| is their Euclidean distance
    alibi_slopes: tuple[float, ...] = ()  # one slope per head, sized to a task; () gives Press et al.'s

    def __post_init__(self) -> None:
        if self.pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {self.pooling!r}")
        if not 1 <= self.n_layers <= 4:
            raise ValueError(f"n_layers must lie in [1, 4], got {self.n_layers}")
        if self.vocab_size < 2:
            raise ValueError(f"vocab_size must be >= 2, got {self.vocab_size}")
        if self.n_classes < 2:
            raise ValueError(f"n_classes must be >= 2, got {self.n_classes}")
        if self.n_heads < 1 or self.d_model < 1 or self.d_model % self.n_heads:
            raise ValueError(f"d_model must be a positive multiple of n_heads, got d_model="
                             f"{self.d_model}, n_heads={self.n_heads}")
        if self.d_model % 2:
            raise ValueError(f"d_model must be even (sinusoidal positions), got {self.d_model}")
        if self.max_len < 1:
            raise ValueError(f"max_len must be >= 1, got {self.max_len}")
        if self.mlp_ratio < 1:
            raise ValueError(f"mlp_ratio must be >= 1, got {self.mlp_ratio}")
        for name in ("pad_id", "cls_id"):
            tok = getattr(self, name)
            if tok is not None and not 0 <= tok < self.vocab_size:
                raise ValueError(f"{name} must lie in [0, {self.vocab_size - 1}], got {tok}")
        if self.alibi_grid < 0 or (self.alibi_grid and (not self.alibi or self.pooling == "cls")):
            raise ValueError(f"alibi_grid must be 0, or a row width >= 1 with alibi=True and mean pooling (a CLS "
                             f"token would shift the pixels), got {self.alibi_grid}")
        if self.alibi_slopes and (not self.alibi or len(self.alibi_slopes) != self.n_heads
                                  or min(self.alibi_slopes) <= 0):
            raise ValueError(f"alibi_slopes must be empty, or {self.n_heads} positive slopes (one per head) with "
                             f"alibi=True, got {self.alibi_slopes}")
        if self.pooling == "cls" and self.cls_id is None:
            raise ValueError("cls_id must be set (in [0, vocab_size)) when pooling='cls'")


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """ALiBi's fixed per-head slopes ``lambda_h = 2^(-8 h / n_heads)``, ``h = 1..n_heads`` (Press et al.)."""
    if n_heads < 1:
        raise ValueError(f"n_heads must be >= 1, got {n_heads}")
    return torch.tensor([2.0 ** (-8.0 * h / n_heads) for h in range(1, n_heads + 1)])


def sinusoidal_positions(length: int, d_model: int) -> torch.Tensor:
    """The additive sinusoidal code of Vaswani et al.: ``(length, d_model)``, float32."""
    pos = torch.arange(length, dtype=torch.float64)[:, None]
    freq = torch.exp(-math.log(10000.0) * torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    table = torch.zeros(length, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(pos * freq)
    table[:, 1::2] = torch.cos(pos * freq)
    return table.float()


class SelfAttention(nn.Module):
    """Multi-head self-attention with readable and hookable scores and probabilities."""

    def __init__(self, d_model: int, n_heads: int, alibi: bool = False, alibi_grid: int = 0,
                 slopes: tuple[float, ...] = ()) -> None:
        super().__init__()
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.alibi, self.alibi_grid = alibi, alibi_grid
        fixed = torch.tensor(slopes, dtype=torch.float32) if slopes else alibi_slopes(n_heads)
        # Not a state-dict entry: a model with the bias has the same tensors as one without.
        self.register_buffer("slopes", fixed if alibi else None, persistent=False)
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.score_hook = nn.Identity()  # register_forward_hook here to read or edit S
        self.prob_hook = nn.Identity()  # ... and here for A = softmax(S)
        self.record = False
        self.hold_uniform = False
        self.last_scores: torch.Tensor | None = None
        self.last_probs: torch.Tensor | None = None

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        return x.view(b, n, self.n_heads, self.d_head).transpose(1, 2)  # (b, h, n, d_h)

    def _bias(self, n: int, device, dtype) -> torch.Tensor:
        """ALiBi's fixed score bias ``-lambda_h |i - j|``: ``(n_heads, n, n)``; on a grid, ``|i - j|`` is the
        Euclidean distance between pixels ``i`` and ``j`` of rows ``alibi_grid`` wide."""
        i = torch.arange(n, device=device)
        if self.alibi_grid:
            rc = torch.stack([i // self.alibi_grid, i % self.alibi_grid], 1).to(torch.float64)
            dist = torch.cdist(rc, rc).to(dtype)
        else:
            dist = (i[:, None] - i[None, :]).abs().to(dtype)
        return -self.slopes.to(dtype)[:, None, None] * dist

    def _observed(self) -> bool:
        """Whether anything reads or edits S or A, so they must be formed explicitly."""
        return (self.record or self.hold_uniform
                or any(h._forward_hooks or h._forward_pre_hooks for h in (self.score_hook, self.prob_hook)))

    def forward(self, x: torch.Tensor, key_pad: torch.Tensor | None = None) -> torch.Tensor:
        q, k, v = self._split(self.q_proj(x)), self._split(self.k_proj(x)), self._split(self.v_proj(x))
        if not self._observed():
            # Training reads neither S nor A: the fused kernel computes softmax(S) V without keeping the
            # (batch, heads, n, n) scores, a third faster per step at 256 tokens on one CPU thread.
            mask = self._bias(x.shape[1], x.device, q.dtype) if self.alibi else None
            if key_pad is not None:
                keep = ~key_pad[:, None, None, :]
                mask = keep if mask is None else mask.masked_fill(~keep, float("-inf"))
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            return self.out_proj(out.transpose(1, 2).reshape(x.shape))
        # Scale Q, not the (batch, heads, n, n) scores: the same bits when sqrt(d_head) is a power of two.
        scores = (q / math.sqrt(self.d_head)) @ k.transpose(-1, -2)
        if self.alibi:
            scores = scores + self._bias(scores.shape[-1], scores.device, scores.dtype)
        if self.hold_uniform:
            scores = scores * 0.0
        scores = self.score_hook(scores)
        if key_pad is not None:
            scores = scores.masked_fill(key_pad[:, None, None, :], float("-inf"))
        probs = self.prob_hook(torch.softmax(scores, dim=-1))
        if self.record:
            self.last_scores, self.last_probs = scores, probs
        out = (probs @ v).transpose(1, 2).reshape(x.shape)
        return self.out_proj(out)


class Block(nn.Module):
    """Pre-norm block: ``x + Attn(LN(x))``, then ``x + MLP(LN(x))``."""

    def __init__(self, d_model: int, n_heads: int, mlp_ratio: int, alibi: bool = False, alibi_grid: int = 0,
                 alibi_slopes: tuple[float, ...] = ()) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = SelfAttention(d_model, n_heads, alibi, alibi_grid, alibi_slopes)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, mlp_ratio * d_model), nn.GELU(),
                                 nn.Linear(mlp_ratio * d_model, d_model))

    def forward(self, x: torch.Tensor, key_pad: torch.Tensor | None = None) -> torch.Tensor:
        x = x + self.attn(self.ln1(x), key_pad)
        return x + self.mlp(self.ln2(x))


class Encoder(nn.Module):
    """Token embeddings + sinusoidal positions, 1-4 pre-norm blocks, two heads.

    ``cls_head`` reads the mean of the non-padding positions (``pooling="mean"``)
    or the CLS position (``pooling="cls"``); ``mlm_head`` predicts a token at
    every position for masked reconstruction.
    """

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        c = config
        self.tok_emb = nn.Embedding(c.vocab_size, c.d_model)
        self.register_buffer("positions", sinusoidal_positions(c.max_len, c.d_model), persistent=False)
        self.blocks = nn.ModuleList(Block(c.d_model, c.n_heads, c.mlp_ratio, c.alibi, c.alibi_grid, c.alibi_slopes)
                                    for _ in range(c.n_layers))
        self.ln_f = nn.LayerNorm(c.d_model)
        self.cls_head = nn.Linear(c.d_model, c.n_classes)
        self.mlm_head = nn.Linear(c.d_model, c.vocab_size)

    @property
    def attentions(self) -> list[SelfAttention]:
        return [b.attn for b in self.blocks]

    def set_record(self, on: bool = True) -> None:
        for a in self.attentions:
            a.record = on

    def set_uniform(self, on: bool = True) -> None:
        """Hold every layer's attention uniform over the non-padding keys (scores = 0)."""
        for a in self.attentions:
            a.hold_uniform = on

    def _prepare(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        if tokens.dim() != 2:
            raise ValueError(f"tokens must have shape (batch, length), got {tuple(tokens.shape)}")
        if self.config.pooling == "cls":
            cls = torch.full_like(tokens[:, :1], self.config.cls_id)
            tokens = torch.cat([cls, tokens], dim=1)
        n = tokens.shape[1]
        if n > self.config.max_len:
            extra = " (including the CLS token)" if self.config.pooling == "cls" else ""
            raise ValueError(f"sequence length must be <= max_len={self.config.max_len}, "
                             f"got {n}{extra}")
        key_pad = None if self.config.pad_id is None else tokens.eq(self.config.pad_id)
        if key_pad is not None and not key_pad.any():
            key_pad = None
        return tokens, key_pad

    def encode(self, tokens: torch.Tensor) -> torch.Tensor:
        """Final-LayerNorm hidden states ``(batch, length[+1], d_model)``."""
        tokens, key_pad = self._prepare(tokens)
        x = self.tok_emb(tokens) + self.positions[: tokens.shape[1]]
        for block in self.blocks:
            x = block(x, key_pad)
        return self.ln_f(x)

    def pool(self, hidden: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        if self.config.pooling == "cls":
            return hidden[:, 0]
        if self.config.pad_id is None:
            return hidden.mean(dim=1)
        keep = tokens.ne(self.config.pad_id).to(hidden.dtype)[..., None]
        return (hidden * keep).sum(1) / keep.sum(1).clamp_min(1.0)

    def classify(self, tokens: torch.Tensor) -> torch.Tensor:
        """Class logits ``(batch, n_classes)``."""
        return self.cls_head(self.pool(self.encode(tokens), tokens))

    def reconstruct(self, tokens: torch.Tensor) -> torch.Tensor:
        """Token logits ``(batch, length, vocab_size)`` at the input positions (CLS dropped)."""
        hidden = self.encode(tokens)
        if self.config.pooling == "cls":
            hidden = hidden[:, 1:]
        return self.mlm_head(hidden)

    forward = classify


class NoAttentionEncoder(Encoder):
    """The same model with every attention sublayer removed: ``x + MLP(LN(x))`` only.

    Its mean-pooled logit is a sum of per-position terms ``f(x_i, i)``, the
    no-attention baseline of the training chapter.
    """

    def encode(self, tokens: torch.Tensor) -> torch.Tensor:
        tokens, _ = self._prepare(tokens)
        x = self.tok_emb(tokens) + self.positions[: tokens.shape[1]]
        for block in self.blocks:
            x = x + block.mlp(block.ln2(x))
        return self.ln_f(x)


def scale_qk(model: Encoder, scale: float, generator: torch.Generator | None = None) -> None:
    """Re-draw every ``W_Q``, ``W_K`` as ``N(0, scale^2 / d_model)`` with zero biases."""
    d = model.config.d_model
    with torch.no_grad():
        for a in model.attentions:
            for lin in (a.q_proj, a.k_proj):
                w = torch.randn(lin.weight.shape, generator=generator, device=lin.weight.device,
                                dtype=lin.weight.dtype)
                lin.weight.copy_(w * scale / math.sqrt(d))
                lin.bias.zero_()


@torch.no_grad()
def positional_product(model: Encoder, length: int, layer: int = 0) -> torch.Tensor:
    """The positional product ``S^pos = PE W_Q W_K^T PE^T / sqrt(d_h)`` per head: the score that positions
    alone contribute, ``(n_heads, length, length)`` in float64.

    ``PE`` is the sinusoidal table (its first ``length`` rows); ``W_Q``, ``W_K`` are in the layout
    ``Q = X W_Q`` (``q_proj.weight`` is ``W_Q^T``). Layer norm and biases are left out, so this is the
    position-position term of ``S = Q K^T / sqrt(d_h)`` ({prf:ref}`def-sp-positional-product`).
    """
    if not 1 <= length <= model.config.max_len:
        raise ValueError(f"length must lie in [1, max_len={model.config.max_len}], got {length}")
    attn = model.attentions[layer]
    pe = model.positions[:length].double()
    q = (pe @ attn.q_proj.weight.double().T).view(length, attn.n_heads, attn.d_head).transpose(0, 1)
    k = (pe @ attn.k_proj.weight.double().T).view(length, attn.n_heads, attn.d_head).transpose(0, 1)
    return q @ k.transpose(-1, -2) / math.sqrt(attn.d_head)
