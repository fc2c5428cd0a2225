"""Masked-token reconstruction as in Amos et al. (2024), the self-pretraining loss.

Each non-padding token is masked independently with probability ``mlm_prob``
(default 0.5) and replaced by the mask token; the cross-entropy is taken on the
masked positions only (targets elsewhere are ``IGNORE``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

IGNORE: int = -100


def check_mlm_prob(mlm_prob: float) -> float:
    """Return ``mlm_prob`` or raise ``ValueError`` naming the valid range (0, 1)."""
    p = float(mlm_prob)
    if not 0.0 < p < 1.0:
        raise ValueError(f"mlm_prob must lie in the open interval (0, 1), got {mlm_prob!r}")
    return p


def mask_tokens(tokens: torch.Tensor, *, mask_id: int, mlm_prob: float = 0.5,
                pad_id: int | None = None, generator: torch.Generator | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """Mask each non-padding token iid with probability ``mlm_prob``.

    Returns ``(inputs, targets)``: ``inputs`` has ``mask_id`` at the masked
    positions, ``targets`` holds the original token there and ``IGNORE`` elsewhere
    (including every padding position).
    """
    p = check_mlm_prob(mlm_prob)
    u = torch.rand(tokens.shape, generator=generator, device=tokens.device)
    masked = u < p
    if pad_id is not None:
        masked &= tokens.ne(pad_id)
    inputs = torch.where(masked, torch.full_like(tokens, mask_id), tokens)
    targets = torch.where(masked, tokens, torch.full_like(tokens, IGNORE))
    return inputs, targets


def reconstruction_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over the masked positions (``targets != IGNORE``); 0 if none."""
    flat_t = targets.reshape(-1)
    if not flat_t.ne(IGNORE).any():
        return logits.sum() * 0.0
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), flat_t, ignore_index=IGNORE)


def masked_reconstruction_loss(model, tokens: torch.Tensor, *, mask_id: int, mlm_prob: float = 0.5,
                               pad_id: int | None = None,
                               generator: torch.Generator | None = None) -> torch.Tensor:
    """Mask ``tokens``, reconstruct them with ``model.reconstruct`` and return the loss."""
    inputs, targets = mask_tokens(tokens, mask_id=mask_id, mlm_prob=mlm_prob, pad_id=pad_id,
                                  generator=generator)
    return reconstruction_loss(model.reconstruct(inputs), targets)
