"""Steps to a loss level with censoring: times, per-seed speedup bounds, and the median's interval."""

import math

import numpy as np
import pytest

from blindspots.privileged import speed


def test_steps_to_target_is_the_first_checkpoint_at_or_below_the_level():
    curve = [0.5, 0.3, 0.35, 0.2, 0.1]
    steps = [10, 20, 30, 40, 50]
    assert speed.steps_to_target(curve, steps, 0.3) == (20, False)  # "at" counts as reached
    assert speed.steps_to_target(curve, steps, 0.25) == (40, False)
    assert speed.steps_to_target(curve, steps, 1.0) == (10, False)


def test_a_run_that_never_reaches_the_level_is_censored_at_its_budget():
    assert speed.steps_to_target([0.5, 0.4, 0.3], [10, 20, 30], 0.1) == (30, True)


@pytest.mark.parametrize("curve, steps", [([], []), ([0.1, 0.2], [10]), ([0.1, 0.2], [20, 10]), ([0.1], [0])])
def test_steps_to_target_rejects_malformed_curves(curve, steps):
    with pytest.raises(ValueError):
        speed.steps_to_target(curve, steps, 0.1)


def test_speedup_bounds_keep_censored_runs_as_one_sided_bounds():
    assert speed.speedup_bounds(100, False, 50, False) == (2.0, 2.0)
    assert speed.speedup_bounds(100, False, 200, True) == (0.0, 0.5)  # arm slower than the budget allows
    assert speed.speedup_bounds(200, True, 50, False) == (4.0, math.inf)  # baseline never got there: >= T / t
    assert speed.speedup_bounds(200, True, 200, True) == (0.0, math.inf)
    with pytest.raises(ValueError, match="t_base and t_arm must be > 0"):
        speed.speedup_bounds(0, False, 10, False)


@pytest.mark.parametrize("n, k, coverage", [
    (6, 1, 1 - 2 / 64), (10, 2, 1 - 2 * 11 / 1024), (7, 1, 1 - 2 / 128),
])
def test_order_statistic_rank_matches_the_binomial_coverage(n, k, coverage):
    got_k, got_cov = speed.order_statistic_rank(n, 0.95)
    assert got_k == k and got_cov == pytest.approx(coverage, abs=1e-12)


def test_order_statistic_rank_refuses_too_few_seeds():
    with pytest.raises(ValueError, match="n = 4 seeds cannot give a 95% interval"):
        speed.order_statistic_rank(4, 0.95)


def test_median_interval_without_censoring_is_the_sign_test_interval():
    x = np.array([1.5, 2.0, 2.5, 3.0, 1.2, 4.0])
    m = speed.median_interval(x, x)
    assert m.median_low == m.median_high == pytest.approx(np.median(x))
    assert (m.low, m.high, m.k, m.censored) == (1.2, 4.0, 1, 0)
    assert not m.median_is_bound


def test_a_censored_seed_opens_the_interval_instead_of_being_imputed():
    # one arm run never reaches the level: its speedup is only known to be < 0.8
    low = np.array([1.5, 2.0, 2.5, 3.0, 1.2, 0.0])
    high = np.array([1.5, 2.0, 2.5, 3.0, 1.2, 0.8])
    m = speed.median_interval(low, high)
    assert m.low == 0.0 and m.high == 3.0 and m.censored == 1
    # the sample median's bounds: the censored seed sits below the median either way
    assert m.median_low == m.median_high == pytest.approx(1.75)
    # an imputation (any value in [0, 0.8]) would have claimed a lower end above 0
    imputed = speed.median_interval(high, high)
    assert imputed.low == 0.8 > m.low


def test_a_median_on_censored_seeds_is_reported_as_a_bound():
    low = np.array([0.0, 0.0, 0.0, 0.0, 1.2, 1.5])
    high = np.array([0.5, 0.6, 0.7, 0.9, 1.2, 1.5])
    m = speed.median_interval(low, high)
    assert m.median_is_bound and m.median_low == 0.0 and m.median_high == pytest.approx(0.8)
    assert speed.format_bound(m.median_low, m.median_high) == "< 0.80"


def test_too_few_seeds_give_the_whole_line_not_a_narrow_interval():
    m = speed.median_interval([1.5, 2.0], [1.5, 2.0])
    assert (m.low, m.high, m.k, m.coverage) == (-math.inf, math.inf, 0, 1.0)
    assert m.median_low == 1.75


def test_median_interval_rejects_inverted_bounds():
    with pytest.raises(ValueError, match="low <= high"):
        speed.median_interval([2.0, 1.0], [1.0, 1.0])


def test_format_bound_reads_values_and_one_sided_bounds():
    assert speed.format_bound(1.5, 1.5) == "1.50"
    assert speed.format_bound(0.0, 0.5) == "< 0.50"
    assert speed.format_bound(4.0, math.inf) == "> 4.00"
    assert speed.format_bound(0.0, math.inf) == "any"
    assert speed.format_bound(1.2, 1.5) == "1.20 to 1.50"


def test_target_index_is_the_last_evaluation_at_or_before_the_fraction():
    steps = [25, 50, 75, 100]
    assert [speed.target_index(steps, f) for f in (0.5, 0.75, 1.0)] == [1, 2, 3]
    assert speed.target_index(steps, 0.6) == 1  # 60 lies between 50 and 75: the earlier one
    assert speed.target_index(steps, 0.1) == 0  # before the first evaluation: the first
    for bad in (0.0, 1.5, True):
        with pytest.raises(ValueError, match="fraction"):
            speed.target_index(steps, bad)
