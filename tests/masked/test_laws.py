"""Laws P and C: validation, spin-flip symmetry, normalisation."""

import math

import numpy as np
import pytest

from blindspots.masked import enumeration as en
from blindspots.masked.laws import CurieWeissLaw, ProductLaw, curie_weiss_magnetisation


@pytest.mark.parametrize("theta", [0.0, 1.0, -0.2, 1.5, float("nan")])
def test_product_law_rejects_theta_outside_unit_interval(theta):
    with pytest.raises(ValueError, match="theta"):
        ProductLaw(theta)


@pytest.mark.parametrize("beta", [0.0, -1.0, float("inf")])
def test_curie_weiss_rejects_nonpositive_beta(beta):
    with pytest.raises(ValueError, match="beta"):
        CurieWeissLaw(beta)


@pytest.mark.parametrize("law", [ProductLaw(0.6), CurieWeissLaw(1.5), CurieWeissLaw(0.5)])
def test_modes_live_on_opposite_half_spaces_and_are_mirror_images(law):
    N = 7
    X = en.states(N)
    S = X.sum(axis=1)
    pp, pm = en.mode_tables(law, N)
    assert np.all(pp[S < 0] == 0) and np.all(pm[S > 0] == 0)
    mirror = np.array([int("".join("1" if v < 0 else "0" for v in x), 2) for x in X])
    np.testing.assert_allclose(pm, pp[mirror], rtol=1e-14, atol=0)


def test_product_mode_is_conditioned_product_law():
    theta, N = 0.6, 5
    X = en.states(N)
    rho = (1 + theta) / 2
    nu = np.prod(np.where(X > 0, rho, 1 - rho), axis=1)
    nu = np.where(X.sum(axis=1) > 0, nu, 0.0)
    pp, _ = en.mode_tables(ProductLaw(theta), N)
    np.testing.assert_allclose(pp, nu / nu.sum(), rtol=1e-13)


def test_curie_weiss_magnetisation_solves_mean_field_equation():
    m = curie_weiss_magnetisation(1.5)
    assert abs(math.tanh(1.5 * m) - m) < 1e-14 and 0.85 < m < 0.87
    assert curie_weiss_magnetisation(0.5) == 0.0
