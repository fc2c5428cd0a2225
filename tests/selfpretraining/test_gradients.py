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


# ----------------------------------------------------------------------------- i.i.d. tokens (prop-sp-iid-band-mean)
@pytest.mark.parametrize("n,k", [(4, 1), (10, 1), (37, 3), (100, 1), (64, 5)])
def test_band_trace_closed_form_equals_trace_of_band_direction(n, k):
    assert abs(G.band_trace(n, k) - float(torch.trace(G.band_direction(n, k)))) < 1e-13
    assert G.band_trace(n, k) < 0


def test_band_trace_rejects_bad_arguments():
    with pytest.raises(ValueError):
        G.band_trace(5, 5)
    with pytest.raises(ValueError):
        G.band_trace(5, 0)


@pytest.mark.parametrize("n,m", [(5, 2), (6, 1), (6, 5), (7, 3)])
def test_masked_pair_mass_equals_enumeration_over_subsets(n, m):
    from itertools import combinations

    d = G.band_direction(n, 1).numpy()
    subsets = list(combinations(range(n), m))
    exact = np.mean([d[np.ix_(s, s)].sum() for s in subsets])
    assert abs(G.masked_pair_mass(n, m, np.trace(d)) - exact) < 1e-13


def test_iid_band_mean_factor_is_trace_times_n_minus_m_over_n2_n_minus_1():
    n, m = 20, 7
    assert abs(G.iid_band_mean_factor(n, m) - G.band_trace(n) * (n - m) / (n ** 2 * (n - 1))) < 1e-17


def test_iid_projection_samples_match_the_reconstruction_closed_form():
    """The vectorised projection equals <R(I - J/n)/n, D_1> on the same sequences, built as Abstraction instances."""
    setting = G.random_iid_reconstruction(np.random.default_rng(3))
    n, m = 9, 4
    proj, stat = G.iid_band_projection_samples(setting, n, m, 6, np.random.default_rng(4), chunk=4)
    # replay the same draws
    rng = np.random.default_rng(4)
    d = G.band_direction(n, 1)
    kk = setting.vocab
    x_all, m_all = [], []
    for size in (4, 2):
        x = rng.choice(kk, size=(size, n), p=setting.p)
        order = np.argsort(rng.random((size, n)), axis=1)
        masked = np.zeros((size, n), bool)
        np.put_along_axis(masked, order[:, :m], True, axis=1)
        x_all.append(x)
        m_all.append(masked)
    x_all, m_all = np.concatenate(x_all), np.concatenate(m_all)
    for b in range(6):
        shown = np.where(m_all[b], kk, x_all[b])
        inst = G.Abstraction(values=torch.tensor(setting.embed.T[shown]), label_readout=torch.zeros(2, 6, dtype=torch.float64),
                             label=0, recon_readout=torch.tensor(setting.readout), targets=torch.tensor(x_all[b]),
                             masked=torch.tensor(m_all[b]))
        g = G.reconstruction_gradient_closed_form(inst)
        assert abs(float((g * d).sum()) - proj[b]) < 1e-14
        _, g_auto = G.abstraction_score_gradients(inst)
        assert abs(float((g_auto * d).sum()) - proj[b]) < 1e-14
    assert stat.shape == (6,)


def test_iid_band_mean_matches_prediction_and_is_not_zero():
    """Monte Carlo at n = 10: the mean projection equals factor * mean statistic within 4 SE, and is > 4 SE from 0."""
    setting = G.random_iid_reconstruction(np.random.default_rng(0))
    n, m = 10, 5
    proj, stat = G.iid_band_projection_samples(setting, n, m, 20_000, np.random.default_rng(1))
    diff = proj - G.iid_band_mean_factor(n, m) * stat
    se = lambda a: a.std(ddof=1) / np.sqrt(a.size)
    assert abs(diff.mean()) <= 4 * se(diff)
    assert abs(proj.mean()) > 4 * se(proj)
