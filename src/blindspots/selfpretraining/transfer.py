"""Moving weights from a self-pretrained checkpoint into a classifier.

:func:`finetune_init` loads every weight except the reconstruction head
(Amos et al. 2024). :func:`hybrid_init` copies one group only (the hybrid
initialisations of Coser et al.): ``"qk"`` (W_Q, W_K and their biases),
``"attention"`` (W_Q, W_K, W_V, W_O) or ``"mlp"``. Both return the exact list of
tensor names they copied, so a table can say what was transferred.
"""

from __future__ import annotations

import re

import torch
from torch import nn

HEAD_PREFIX = "mlm_head."
GROUPS: dict[str, re.Pattern] = {
    "qk": re.compile(r"^blocks\.\d+\.attn\.(q_proj|k_proj)\.(weight|bias)$"),
    "attention": re.compile(r"^blocks\.\d+\.attn\.(q_proj|k_proj|v_proj|out_proj)\.(weight|bias)$"),
    "mlp": re.compile(r"^blocks\.\d+\.mlp\.\d+\.(weight|bias)$"),
    "embeddings": re.compile(r"^tok_emb\.weight$"),
}


def _copy(target: nn.Module, source: nn.Module, keep) -> list[str]:
    src = source.state_dict()
    dst = target.state_dict()
    if set(src) != set(dst):
        raise ValueError("source and target must have the same architecture "
                         f"(differing tensors: {sorted(set(src) ^ set(dst))})")
    copied = []
    with torch.no_grad():
        for name, tensor in dst.items():
            if not keep(name):
                continue
            if src[name].shape != tensor.shape:
                raise ValueError(f"shape of {name} differs: {tuple(src[name].shape)} vs {tuple(tensor.shape)}")
            tensor.copy_(src[name])
            copied.append(name)
    return copied


def finetune_init(target: nn.Module, source: nn.Module) -> list[str]:
    """Copy every tensor of ``source`` into ``target`` except ``mlm_head.*``; return their names."""
    return _copy(target, source, lambda name: not name.startswith(HEAD_PREFIX))


def hybrid_init(target: nn.Module, source: nn.Module, group: str | tuple[str, ...]) -> list[str]:
    """Copy only the tensors of ``group`` (``"qk"``, ``"attention"``, ``"mlp"``, ``"embeddings"``,
    or a tuple of these); return their names."""
    groups = (group,) if isinstance(group, str) else tuple(group)
    for g in groups:
        if g not in GROUPS:
            raise ValueError(f"group must be one of {tuple(GROUPS)}, got {g!r}")
    patterns = [GROUPS[g] for g in groups]
    return _copy(target, source, lambda name: any(p.match(name) for p in patterns))


def freeze_attention(model: nn.Module, *, qk_only: bool = False) -> list[str]:
    """Stop gradients to the attention weights (all four, or W_Q, W_K only); return their names."""
    pattern = GROUPS["qk" if qk_only else "attention"]
    frozen = []
    for name, p in model.named_parameters():
        if pattern.match(name):
            p.requires_grad_(False)
            frozen.append(name)
    return frozen
