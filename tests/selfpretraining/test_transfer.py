"""Weight transfer: exactly which tensors are copied."""

import pytest
import torch

from blindspots.selfpretraining.model import Encoder, ModelConfig
from blindspots.selfpretraining.transfer import finetune_init, freeze_attention, hybrid_init
from blindspots.selfpretraining.tasks import VOCAB_SIZE

CFG = ModelConfig(vocab_size=VOCAB_SIZE, d_model=16, n_heads=2, n_layers=2, max_len=32)


def pair():
    torch.manual_seed(0)
    source = Encoder(CFG)
    with torch.no_grad():  # LayerNorms start equal: make every source tensor distinct
        for p in source.parameters():
            p.add_(torch.randn_like(p))
    torch.manual_seed(1)
    target = Encoder(CFG)
    return source, target


def equal_names(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    return {k for k in sa if torch.equal(sa[k], sb[k])}


def expected(parts):
    return {f"blocks.{l}.{p}.{w}" for l in range(2) for p in parts for w in ("weight", "bias")}


def test_finetune_init_copies_everything_but_the_reconstruction_head():
    source, target = pair()
    copied = finetune_init(target, source)
    everything = set(source.state_dict())
    assert set(copied) == everything - {"mlm_head.weight", "mlm_head.bias"}
    assert equal_names(source, target) == set(copied)


@pytest.mark.parametrize("group, parts", [
    ("qk", ["attn.q_proj", "attn.k_proj"]),
    ("attention", ["attn.q_proj", "attn.k_proj", "attn.v_proj", "attn.out_proj"]),
    ("mlp", ["mlp.0", "mlp.2"]),
])
def test_hybrid_init_copies_exactly_its_group(group, parts):
    source, target = pair()
    copied = hybrid_init(target, source, group)
    assert set(copied) == expected(parts)
    assert equal_names(source, target) == expected(parts)


def test_unknown_group_raises():
    source, target = pair()
    with pytest.raises(ValueError, match="group must be one of"):
        hybrid_init(target, source, "layernorm")


def test_freeze_attention_stops_exactly_the_attention_weights():
    _, model = pair()
    frozen = freeze_attention(model)
    assert set(frozen) == expected(["attn.q_proj", "attn.k_proj", "attn.v_proj", "attn.out_proj"])
    assert {n for n, p in model.named_parameters() if not p.requires_grad} == set(frozen)


def test_pretrain_checkpoints_store_the_weights_after_each_step_count():
    from blindspots.selfpretraining import train
    from blindspots.selfpretraining.tasks import MASK

    torch.manual_seed(0)
    model = Encoder(CFG)
    x = torch.randint(0, 5, (16, 12), generator=torch.Generator().manual_seed(0))
    start = {k: v.clone() for k, v in model.state_dict().items()}
    saved = {}
    train.pretrain(model, x, steps=3, batch_size=4, lr=1e-2, mask_id=MASK, generator=torch.Generator().manual_seed(1),
                   checkpoints=(0, 2, 3), saved=saved, progress=False)
    assert sorted(saved) == [0, 2, 3]
    assert all(torch.equal(saved[0][k], start[k]) for k in start)
    assert all(torch.equal(saved[3][k], v) for k, v in model.state_dict().items())
    assert not torch.equal(saved[2]["blocks.0.attn.q_proj.weight"], saved[3]["blocks.0.attn.q_proj.weight"])
