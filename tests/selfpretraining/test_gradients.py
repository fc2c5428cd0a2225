"""The gradient identity of thm-sp-gradient-blindness and its full-model measurements."""

import numpy as np
import pytest
import torch

from blindspots.selfpretraining import gradients as G
from blindspots.selfpretraining.model import Encoder, ModelConfig
from blindspots.selfpretraining.tasks import MASK, VOCAB_SIZE


@pytest.mark.parametrize("seed", range(20))
def test_mean_pooled_label_gradient_equals_one_c_transpose(seed):
    inst = G.random_abstraction(np.random.default_rng(seed))
    label, recon = G.abstraction_score_gradients(inst)
    torch.testing.assert_close(label, G.label_gradient_closed_form(inst), rtol=1e-12, atol=1e-15)
    torch.testing.assert_close(recon, G.reconstruction_gradient_closed_form(inst), rtol=1e-12, atol=1e-15)
    assert G.relational_norm_ratio(label) <= 1e-12
    d = G.band_direction(inst.n, 1)
    assert abs(float(G.per_matrix_projection(label, d))) <= 1e-12
    assert G.relational_norm_ratio(recon) > 1e-3


def test_band_direction_has_zero_row_and_column_sums_and_unit_norm():
    d = G.band_direction(12, 2)
    torch.testing.assert_close(d.sum(0), torch.zeros(12, dtype=torch.float64), atol=1e-14, rtol=0)
    torch.testing.assert_close(d.sum(1), torch.zeros(12, dtype=torch.float64), atol=1e-14, rtol=0)
    assert abs(float(d.norm()) - 1) < 1e-14


def test_row_shared_fraction_of_one_c_transpose_and_of_one_row():
    c = torch.randn(7, dtype=torch.float64)
    assert abs(G.row_shared_fraction(torch.ones(7, 1, dtype=torch.float64) * c) - 1) < 1e-14
    one_row = torch.zeros(7, 7, dtype=torch.float64)
    one_row[0] = c
    assert abs(G.row_shared_fraction(one_row) - 1 / 7) < 1e-14


def test_score_gradients_match_finite_difference_through_hook():
    torch.manual_seed(0)
    model = Encoder(ModelConfig(vocab_size=VOCAB_SIZE, d_model=8, n_heads=1, max_len=16)).double()
    x = torch.randint(0, 5, (2, 6), generator=torch.Generator().manual_seed(0))
    y = torch.tensor([0, 1])
    model.set_uniform(True)
    (g,) = G.label_score_gradients(model, x, y)
    bump = torch.zeros_like(g)
    bump[1, 0, 2, 3] = 1e-6
    model.attentions[0].score_hook.register_forward_hook(lambda m, i, o: o + bump)
    up = float(G.label_loss(model, x, y).detach())
    bump.neg_()
    down = float(G.label_loss(model, x, y).detach())
    assert abs((up - down) / 2e-6 - float(g[1, 0, 2, 3])) < 1e-7


def test_qk_step_score_change_is_the_derivative_of_the_scores():
    torch.manual_seed(0)
    model = Encoder(ModelConfig(vocab_size=VOCAB_SIZE, d_model=8, n_heads=2, max_len=16)).double()
    x = torch.randint(0, 5, (2, 6), generator=torch.Generator().manual_seed(0))
    y = torch.tensor([0, 1])
    loss = lambda: G.label_loss(model, x, y)
    ds = G.qk_step_score_change(model, loss)
    model.zero_grad()
    loss().backward()
    attn = model.attentions[0]
    grads = {p: p.grad.clone() for p in (attn.q_proj.weight, attn.q_proj.bias, attn.k_proj.weight, attn.k_proj.bias)}
    model.set_record(True)
    model.classify(x)
    s0 = attn.last_scores.detach().clone()
    eps = 1e-7
    with torch.no_grad():
        for p, gp in grads.items():
            p.sub_(eps * gp)
    model.classify(x)
    fd = (attn.last_scores.detach() - s0) / eps
    torch.testing.assert_close(fd, ds, rtol=1e-4, atol=1e-8)


def test_qk_slope_predictions_are_one_and_two():
    assert G.qk_slope_prediction("weight_gradient") == 1.0
    assert G.qk_slope_prediction("score_change") == 2.0
    with pytest.raises(ValueError, match="quantity"):
        G.qk_slope_prediction("bias")


def test_qk_slope_tolerance_vanishes_with_the_scores_and_grows_with_them():
    assert G.qk_slope_tolerance(0.0, 0.01, 0.1) == 0.0
    small, large = G.qk_slope_tolerance(1e-3, 0.003, 0.03), G.qk_slope_tolerance(1e-2, 0.003, 0.03)
    assert 0 < small < large
    assert abs(small - 2 * np.expm1(4e-3) / np.log(10)) < 1e-15
    with pytest.raises(ValueError):
        G.qk_slope_tolerance(0.1, 0.1, 0.01)


def test_random_direction_cosine_scale_is_one_over_n_minus_one():
    """Cosine of D_1 with random doubly-centred matrices has standard deviation 1/(n-1)."""
    n = 30
    d = G.band_direction(n, 1)
    gen = torch.Generator().manual_seed(0)
    cos = []
    for _ in range(400):
        r = G.centre_rows_and_columns(torch.randn(n, n, generator=gen, dtype=torch.float64))
        cos.append(float((r * d).sum() / r.norm()))
    assert abs(np.std(cos) * (n - 1) - 1) < 0.15
    assert G.random_direction_scale(n) == 1 / (n - 1)
