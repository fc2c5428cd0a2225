"""The positional product, its Toeplitz projection, and the ALiBi distance bias."""

import math

import numpy as np
import pytest
import torch

from blindspots.selfpretraining import positional as P
from blindspots.selfpretraining import mini_lra, train
from blindspots.selfpretraining.model import ModelConfig, alibi_slopes, positional_product, sinusoidal_positions


def test_toeplitz_matrix_has_all_its_energy_on_diagonals_and_its_profile_back():
    n = 12
    b = torch.randn(2 * n - 1, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    i = torch.arange(n)
    t = b[i[:, None] - i[None, :] + n - 1]
    assert abs(P.diagonal_energy_fraction(t) - 1) < 1e-12
    assert torch.allclose(P.offset_profile(t), b)


def test_sinusoidal_code_gives_a_toeplitz_gram_matrix():
    pe = sinusoidal_positions(40, 16).double()
    assert abs(P.diagonal_energy_fraction(pe @ pe.T) - 1) < 1e-6


def test_random_matrix_fraction_matches_the_iid_expectation():
    n = 50
    r = torch.randn(400, n, n, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    assert abs(P.diagonal_energy_fraction(r) - P.random_diagonal_fraction(n)) < 0.1 * P.random_diagonal_fraction(n)


def test_projection_is_orthogonal():
    m = torch.randn(9, 9, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    t = P.toeplitz_projection(m)
    assert abs(float(((m - t) * t).sum())) < 1e-10
    assert torch.allclose(P.toeplitz_projection(t), t)


def test_positional_product_is_the_position_term_of_the_scores():
    cfg = ModelConfig(vocab_size=5, d_model=8, n_heads=2, max_len=20)
    m = train.build_model(cfg, seed=3, device="cpu")
    a = m.attentions[0]
    pe = m.positions[:10].double()
    q = pe @ a.q_proj.weight.double().T
    k = pe @ a.k_proj.weight.double().T
    head0 = q[:, :4] @ k[:, :4].T / math.sqrt(4)
    assert torch.allclose(positional_product(m, 10)[0], head0)


def test_alibi_adds_minus_slope_times_distance_and_keeps_the_weights():
    base = ModelConfig(vocab_size=5, d_model=8, n_heads=2, max_len=20)
    with_bias = ModelConfig(vocab_size=5, d_model=8, n_heads=2, max_len=20, alibi=True)
    m0, m1 = train.build_model(base, seed=4, device="cpu"), train.build_model(with_bias, seed=4, device="cpu")
    assert all(torch.equal(v, m1.state_dict()[k]) for k, v in m0.state_dict().items())
    x = torch.randint(0, 5, (3, 7), generator=torch.Generator().manual_seed(0))
    for m in (m0, m1):
        m.set_record(True)
        m.classify(x)
    d = (torch.arange(7)[:, None] - torch.arange(7)[None, :]).abs()
    diff = m0.attentions[0].last_scores - m1.attentions[0].last_scores
    slopes = alibi_slopes(2)
    assert torch.allclose(diff, slopes[:, None, None] * d, atol=1e-5)
    assert torch.allclose(slopes, torch.tensor([2 ** -4, 2 ** -8]))


def test_majority_accuracy():
    data = {"y_train": np.array([1, 1, 2]), "y_test": np.array([1, 0, 0, 1])}
    assert mini_lra.majority_accuracy(data) == 0.5


def test_alibi_on_a_grid_uses_the_pixels_euclidean_distance():
    """With alibi_grid = w, the bias between positions i and j is -lambda_h times the distance between the
    pixels (i // w, i % w) and (j // w, j % w): pixels above each other are 1 apart, not w."""
    from blindspots.selfpretraining.model import SelfAttention
    attn = SelfAttention(8, 2, alibi=True, alibi_grid=3)
    bias = attn._bias(9, "cpu", torch.float64)
    slopes = alibi_slopes(2).double()
    assert torch.allclose(bias[:, 0, 3], -slopes)  # (0, 0) to (1, 0)
    assert torch.allclose(bias[:, 0, 8], -slopes * 8 ** 0.5)  # (0, 0) to (2, 2)
    assert torch.allclose(bias[:, 2, 3], -slopes * 5 ** 0.5)  # (0, 2) to (1, 0), neighbours in reading order
    with pytest.raises(ValueError, match="alibi_grid"):
        ModelConfig(vocab_size=5, d_model=8, n_heads=2, alibi_grid=3)


def test_alibi_slopes_sized_to_a_task():
    """Given slopes replace Press et al.'s, head by head, in the bias the encoder adds; a wrong number of
    slopes, a non-positive one, or slopes without alibi are refused with the parameter's name."""
    cfg = ModelConfig(vocab_size=5, d_model=8, n_heads=2, alibi=True, alibi_slopes=(1.0, 0.5))
    m = train.build_model(cfg, seed=0, device="cpu")
    bias = m.blocks[0].attn._bias(4, "cpu", torch.float64)
    assert torch.allclose(bias[:, 0, 2], torch.tensor([-2.0, -1.0], dtype=torch.float64))
    assert torch.allclose(bias[:, 3, 0], torch.tensor([-3.0, -1.5], dtype=torch.float64))
    for bad in ({"alibi_slopes": (1.0,)}, {"alibi_slopes": (1.0, 0.0)}, {"alibi_slopes": (1.0, 0.5), "alibi": False}):
        with pytest.raises(ValueError, match="alibi_slopes"):
            ModelConfig(vocab_size=5, d_model=8, n_heads=2, **{"alibi": True, **bad})
