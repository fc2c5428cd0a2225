"""Attention hooks, pooling and configuration errors of the encoder."""

import pytest
import torch

from blindspots.selfpretraining.model import Encoder, ModelConfig, NoAttentionEncoder
from blindspots.selfpretraining.tasks import CLS, PAD, VOCAB_SIZE


def make(**kw) -> Encoder:
    torch.manual_seed(0)
    base = dict(vocab_size=VOCAB_SIZE, d_model=16, n_heads=2, n_layers=2, max_len=32, pad_id=PAD, cls_id=CLS)
    base.update(kw)
    return Encoder(ModelConfig(**base))


def tokens(b=3, n=10):
    return torch.randint(0, 5, (b, n), generator=torch.Generator().manual_seed(1))


def test_recorded_probabilities_are_softmax_of_recorded_scores():
    model = make()
    model.set_record(True)
    model.classify(tokens())
    for attn in model.attentions:
        assert attn.last_scores.shape == (3, 2, 10, 10)
        torch.testing.assert_close(attn.last_probs, torch.softmax(attn.last_scores, -1))
        torch.testing.assert_close(attn.last_probs.sum(-1), torch.ones(3, 2, 10))


def test_scores_are_the_bits_of_qk_over_root_d_head():
    # The explicit path scales Q before the product (faster); with d_head = 16, as in every chapter, the
    # scores that chapters read must still be bit for bit Q K^T / 4.
    model = make(d_model=32, n_heads=2, n_layers=1)
    model.set_record(True)
    x = tokens()
    model.classify(x)
    attn = model.attentions[0]
    h = model.blocks[0].ln1(model.tok_emb(x) + model.positions[:10])
    q, k = attn._split(attn.q_proj(h)), attn._split(attn.k_proj(h))
    assert torch.equal(attn.last_scores, q @ k.transpose(-1, -2) / 4.0)


@pytest.mark.parametrize("alibi", [False, True])
def test_fused_attention_matches_the_explicit_scores(alibi):
    # Training takes the fused kernel; reading S or A takes the explicit path: both must be one function,
    # with padding masked and ALiBi's bias added, in the outputs and in every gradient.
    model = make(alibi=alibi)
    x = tokens(4, 12)
    x[:2, -3:] = PAD

    def run():  # both heads, so that every parameter has a gradient
        out = torch.cat([model.classify(x).flatten(), model.reconstruct(x).flatten()])
        return out, torch.autograd.grad((out * torch.linspace(-1, 1, len(out))).sum(), list(model.parameters()))

    fused, fused_grads = run()
    model.set_record(True)
    explicit, explicit_grads = run()
    torch.testing.assert_close(fused, explicit, rtol=1e-5, atol=1e-6)
    for a, b in zip(fused_grads, explicit_grads):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


def test_score_hook_can_read_and_replace_scores():
    model = make(n_layers=1)
    seen = []
    model.attentions[0].score_hook.register_forward_hook(lambda m, i, o: seen.append(o.shape))
    model.attentions[0].prob_hook.register_forward_hook(lambda m, i, o: torch.full_like(o, 1.0 / o.shape[-1]))
    replaced = model.classify(tokens())
    model.set_uniform(True)
    uniform = model.classify(tokens())
    assert seen[0] == (3, 2, 10, 10)
    torch.testing.assert_close(replaced, uniform)


def test_uniform_attention_is_uniform_over_non_padding_keys():
    model = make(n_layers=1)
    model.set_uniform(True)
    model.set_record(True)
    x = tokens()
    x[:, -3:] = PAD
    model.classify(x)
    p = model.attentions[0].last_probs
    torch.testing.assert_close(p[..., :7], torch.full_like(p[..., :7], 1 / 7))
    assert float(p[..., 7:].abs().max()) == 0.0


def test_padding_does_not_change_mean_pooled_logits():
    model = make()
    x = tokens(1, 8)
    padded = torch.cat([x, torch.full((1, 4), PAD)], 1)
    torch.testing.assert_close(model.classify(x), model.classify(padded))


def test_cls_pooling_prepends_one_token_and_reconstructs_input_positions():
    model = make(pooling="cls")
    model.set_record(True)
    x = tokens()
    assert model.classify(x).shape == (3, 2)
    assert model.attentions[0].last_scores.shape[-1] == 11
    assert model.reconstruct(x).shape == (3, 10, VOCAB_SIZE)


def test_no_attention_encoder_ignores_token_order_except_through_positions():
    torch.manual_seed(0)
    model = NoAttentionEncoder(ModelConfig(vocab_size=VOCAB_SIZE, d_model=16, max_len=32))
    with torch.no_grad():
        model.positions.zero_()
    x = tokens()
    torch.testing.assert_close(model.classify(x), model.classify(x.flip(1)))


def test_sequence_longer_than_position_table_raises():
    with pytest.raises(ValueError, match="max_len=32"):
        make().classify(tokens(1, 33))
    with pytest.raises(ValueError, match="max_len=32"):
        make(pooling="cls").classify(tokens(1, 32))


@pytest.mark.parametrize("kw, name", [
    (dict(pooling="max"), "pooling"),
    (dict(n_layers=5), "n_layers"),
    (dict(n_layers=0), "n_layers"),
    (dict(d_model=15, n_heads=2), "d_model"),
    (dict(pad_id=99), "pad_id"),
    (dict(pooling="cls", cls_id=None), "cls_id"),
])
def test_config_errors_name_the_parameter(kw, name):
    with pytest.raises(ValueError, match=name):
        make(**kw)


def test_unknown_pooling_error_lists_valid_choices():
    with pytest.raises(ValueError, match=r"\('mean', 'cls'\)"):
        make(pooling="max")
