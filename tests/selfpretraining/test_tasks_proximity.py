"""The synthetic task's reversal symmetry and the proximity measures."""

import numpy as np
import torch

from blindspots.selfpretraining import proximity as P
from blindspots.selfpretraining.tasks import NOISE, WalkTask, reverse, sample_sticky_chain, sample_walks, token_counts


def test_walk_labels_follow_net_direction_and_reversal_swaps_them():
    rng = np.random.default_rng(0)
    task = WalkTask(length=30, noise_prob=0.0)
    x, y = sample_walks(500, rng, task)
    steps = (np.diff(x, axis=1) + 1) % 4 - 1  # in {-1, 0, 1}
    assert np.array_equal(y, (steps.sum(1) > 0).astype(int))
    rsteps = (np.diff(reverse(x), axis=1) + 1) % 4 - 1
    assert np.array_equal(1 - y, (rsteps.sum(1) > 0).astype(int))
    assert np.array_equal(token_counts(x), token_counts(reverse(x)))


def test_noise_rate_and_vocabulary():
    rng = np.random.default_rng(1)
    x, y = sample_walks(400, rng)
    assert x.shape == (400, 100) and set(np.unique(x)) <= {0, 1, 2, 3, NOISE}
    assert abs((x == NOISE).mean() - 0.1) < 0.01
    assert abs(y.mean() - 0.5) < 0.1
    s = sample_sticky_chain(50, rng)
    assert s.shape == (50, 100) and set(np.unique(s)) <= {0, 1, 2, 3, NOISE}


def test_toeplitz_score_is_one_for_relative_and_small_for_random_scores():
    n = 20
    i = torch.arange(n, dtype=torch.float64)
    rel = torch.cos(0.3 * (i[:, None] - i[None, :])) + 5 * i[:, None]  # row constants are ignored
    assert abs(P.toeplitz_score(rel) - 1) < 1e-12
    rnd = torch.randn(20, 40, 40, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert P.toeplitz_score(rnd) < 0.1


def test_local_mass_of_uniform_attention():
    n, k = 30, 2
    probs = torch.full((n, n), 1 / n)
    assert abs(P.local_mass(probs, k) - P.uniform_local_mass(n, k)) < 1e-6
    assert abs(P.local_mass(torch.eye(n), 0) - 1) < 1e-12
