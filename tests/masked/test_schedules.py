"""Schedules: supports, validation, schedule averages."""

import numpy as np
import pytest

from blindspots.masked import exact
from blindspots.masked.laws import CurieWeissLaw, ProductLaw
from blindspots.masked.schedules import (FixedFraction, Mixture, PointMass, TwoPoint, UniformRatio,
                                         full_mask_mass, min_visible, schedule_discrepancy,
                                         schedule_residual_uncertainty)


def test_two_point_support_and_full_mask_mass():
    ms, wt = TwoPoint(31, 0, 0.01).support(127)
    assert list(ms) == [0, 31] and np.allclose(wt, [0.01, 0.99])
    assert full_mask_mass(TwoPoint(31, 0, 0.01), 127) == 0.01
    assert min_visible(TwoPoint(31, 0, 0.0), 127) == 31


def test_uniform_ratio_schedule_is_uniform_on_visible_sizes():
    # Monte Carlo-free check: integrate Bin(N, 1 - t) over t on a fine grid
    N = 9
    ms, wt = UniformRatio().support(N)
    assert list(ms) == list(range(N + 1)) and np.allclose(wt, 1 / (N + 1))
    from scipy.stats import binom
    from scipy.integrate import quad
    for m in (0, 4, 9):
        val, _ = quad(lambda t: binom.pmf(m, N, 1 - t), 0, 1)
        assert abs(val - 1 / (N + 1)) < 1e-10


def test_fixed_fraction_rounds_to_nearest_size():
    assert list(FixedFraction(0.5).support(127)[0]) == [64]


@pytest.mark.parametrize("sizes,masses", [((0, 3), (-0.1, 1.1)), ((0, 3), (0.5, 0.6))])
def test_mixture_rejects_negative_or_unnormalised_masses(sizes, masses):
    with pytest.raises(ValueError, match="masses"):
        Mixture(sizes, masses)


def test_bad_schedule_parameters_raise():
    with pytest.raises(ValueError, match="pi"):
        TwoPoint(10, 0, 1.5)
    with pytest.raises(ValueError, match="m "):
        PointMass(-1)
    with pytest.raises(ValueError, match="visible sizes"):
        PointMass(200).support(127)


def test_schedule_discrepancy_is_mixture_of_point_discrepancies():
    law, N, w, lam = ProductLaw(0.6), 63, 0.9, np.array([0.3, 0.7])
    sched = TwoPoint(31, 2, 0.1)
    want = 0.9 * exact.masked_discrepancy(law, N, 31, w, lam) + 0.1 * exact.masked_discrepancy(law, N, 2, w, lam)
    np.testing.assert_allclose(schedule_discrepancy(law, N, sched, w, lam), want, rtol=1e-13)
    u = 0.9 * exact.residual_uncertainty(law, N, 31, w) + 0.1 * exact.residual_uncertainty(law, N, 2, w)
    assert abs(schedule_residual_uncertainty(law, N, sched, w) - u) <= 1e-13 * u


def test_monotone_bracket_contains_the_exact_schedule_average():
    from blindspots.masked.schedules import log_schedule_discrepancy, log_schedule_discrepancy_bracket
    law, N, w, lams = CurieWeissLaw(1.5), 255, 0.9, np.array([0.1, 0.5, 0.95])
    sched = UniformRatio()
    exact_avg = log_schedule_discrepancy(law, N, sched, w, lams)
    coarse = exact.discrepancy_profile(law, N, [0, 1, 2, 4, 8, 16, 64, 128, 200], w, lams)
    lo, hi = log_schedule_discrepancy_bracket(sched, coarse)
    assert np.all(lo <= exact_avg + 1e-12) and np.all(exact_avg <= hi + 1e-12)
    assert np.all(hi - lo > 1e-3)  # a coarse grid leaves a real bracket
    lo, hi = log_schedule_discrepancy_bracket(sched, exact.discrepancy_profile(law, N, np.arange(N + 1), w, lams))
    np.testing.assert_allclose(lo, exact_avg, rtol=0, atol=1e-12)
    np.testing.assert_allclose(hi, exact_avg, rtol=0, atol=1e-12)


def test_monotone_bracket_needs_the_full_mask_size():
    from blindspots.masked.schedules import log_schedule_discrepancy_bracket
    prof = exact.discrepancy_profile(ProductLaw(0.6), 63, [1, 2, 4], 0.5, 0.3)
    with pytest.raises(ValueError, match="include 0"):
        log_schedule_discrepancy_bracket(UniformRatio(), prof)
    with pytest.raises(ValueError, match="profile must be"):
        log_schedule_discrepancy_bracket(UniformRatio(), None)
