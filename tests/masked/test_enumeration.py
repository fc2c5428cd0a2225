"""Brute-force enumeration: chain rule, invariances, validation."""

import numpy as np
import pytest

from blindspots.masked import enumeration as en
from blindspots.masked.laws import ProductLaw


def _random_law(rng, N):
    p = rng.random(2 ** N)
    return p / p.sum()


def test_full_mask_discrepancy_equals_joint_kl_for_arbitrary_laws():
    rng = np.random.default_rng(1)
    N = 5
    p, q = _random_law(rng, N), _random_law(rng, N)
    assert abs(en.masked_discrepancy_joint(p, q, N, 0) - en.kl_joint(p, q)) < 1e-14


def test_chain_rule_D_V_equals_joint_kl_minus_visible_marginal_kl():
    rng = np.random.default_rng(2)
    N, V = 5, (1, 3)
    p, q = _random_law(rng, N), _random_law(rng, N)
    P = p.reshape((2,) * N).sum(axis=tuple(i for i in range(N) if i not in V)).ravel()
    Q = q.reshape((2,) * N).sum(axis=tuple(i for i in range(N) if i not in V)).ravel()
    want = en.kl_joint(p, q) - en.kl_joint(P, Q)
    got = en.masked_discrepancy_joint(p, q, N, 2, subsets=[V])
    assert abs(got - want) < 1e-13


def test_all_visible_sets_agree_with_first_set_for_exchangeable_laws():
    law, N = ProductLaw(0.6), 7
    p, q = en.mixture_table(law, N, 0.9), en.witness_table(law, N, 0.4)
    a = en.masked_discrepancy_joint(p, q, N, 3, subsets="all")
    b = en.masked_discrepancy_joint(p, q, N, 3, subsets="first")
    assert abs(a - b) <= 1e-13 * b


def test_full_visibility_gives_zero_discrepancy():
    rng = np.random.default_rng(3)
    p, q = _random_law(rng, 4), _random_law(rng, 4)
    assert en.masked_discrepancy_joint(p, q, 4, 4) == 0.0


def test_enumeration_rejects_bad_tables_and_sizes():
    p = np.full(8, 1 / 8)
    with pytest.raises(ValueError, match="m must"):
        en.masked_discrepancy_joint(p, p, 3, 4)
    with pytest.raises(ValueError, match="p must"):
        en.masked_discrepancy_joint(np.ones(8), p, 3, 1)
    with pytest.raises(ValueError, match="N must"):
        en.states(40)
