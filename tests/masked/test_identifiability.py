"""Identities behind chapters 4 (schedules) and 5 (tensorization)."""

import math

import numpy as np
import pytest

from blindspots.masked import enumeration, exact, schedules
from blindspots.masked import identifiability as ident
from blindspots.masked.laws import CurieWeissLaw, ProductLaw

LAW_P = ProductLaw(0.6)
LAW_C = CurieWeissLaw(1.5)


def _log_D(law, N, sched, w):
    return lambda lam: schedules.log_schedule_discrepancy(law, N, sched, w, lam)


# --------------------------------------------------------------------------
# recovery radius
# --------------------------------------------------------------------------


@pytest.mark.parametrize("w", [0.5, 0.9])
def test_recovery_radius_solves_the_discrepancy_equation(w):
    sched = schedules.TwoPoint(31, 1, 1e-3)
    f = _log_D(LAW_P, 63, sched, w)
    rr = ident.recovery_radius(f, w, 1e-7)
    assert not rr.censored
    lam = w + rr.radius if rr.side == "right" else w - rr.radius
    assert f(lam) == pytest.approx(math.log(1e-7), abs=1e-9)
    # the other side is inside: D <= eps there
    other = w - rr.radii[0] if rr.side == "right" else w + rr.radii[1]
    assert f(other) <= math.log(1e-7) + 1e-9


def test_recovery_radius_matches_quadratic_prediction_at_small_eps():
    w, eps = 0.5, 1e-12
    sched = schedules.TwoPoint(31, 0, 1e-2)
    rr = ident.recovery_radius(_log_D(LAW_P, 63, sched, w), w, eps)
    kappa = ident.schedule_curvature(schedules.log_schedule_residual_uncertainty(LAW_P, 63, sched, w), w)
    assert rr.radius == pytest.approx(math.sqrt(2 * eps / kappa), rel=1e-4)


def test_recovery_radius_is_censored_at_the_interval_edge_for_a_blind_schedule():
    w = 0.5
    rr = ident.recovery_radius(_log_D(LAW_P, 255, schedules.PointMass(127), w), w, 1e-6)
    assert rr.censored and rr.radius == pytest.approx(0.25)


@pytest.mark.parametrize("law", [LAW_P, LAW_C])
def test_vectorised_bisection_agrees_with_brentq(law):
    w, N = 0.9, 127
    pis = np.array([1e-5, 1e-3, 1e-1, 0.0])
    eps = np.array([1e-9, 1e-6, 1e-3, 1e-12])
    r, c = ident.two_point_radii(law, N, 31, 2, w, pis, eps)
    for k in range(pis.size):
        rr = ident.recovery_radius(_log_D(law, N, schedules.TwoPoint(31, 2, float(pis[k])), w), w, float(eps[k]))
        assert bool(c[k]) == rr.censored
        assert r[k] == pytest.approx(rr.radius, rel=1e-10)


def test_schedule_curvature_equals_uncertainty_over_squared_fisher_scale():
    for law, w in [(LAW_P, 0.5), (LAW_C, 0.9)]:
        sched = schedules.TwoPoint(31, 4, 1e-2)
        kappa_fd, err = ident.curvature_richardson(_log_D(law, 63, sched, w), w)
        kappa = ident.schedule_curvature(schedules.log_schedule_residual_uncertainty(law, 63, sched, w), w)
        assert abs(kappa_fd / kappa - 1.0) <= max(err / kappa_fd, 1e-9)


def test_log_curvature_stays_exact_below_the_float64_range():
    law, N, w = ProductLaw(0.8), 4095, 0.5
    sched = schedules.PointMass(2047)
    log_k, rel = ident.log_curvature_richardson(_log_D(law, N, sched, w), w)
    log_k_th = schedules.log_schedule_residual_uncertainty(law, N, sched, w) - 2 * math.log(w * (1 - w))
    assert log_k_th < -700  # exp() of it underflows
    assert abs(math.expm1(log_k - log_k_th)) <= rel + 1e-12


def test_recovery_grid_local_slopes_are_half_in_the_quadratic_regime():
    g = ident.recovery_grid(LAW_P, 63, 0.5, 31, 0, [0.0, 1e-3, 1e-1], [1e-12, 1e-10])
    assert np.all(np.isnan(g.e_pi[0]))  # pi = 0: no slope in pi
    np.testing.assert_allclose(g.e_eps[1:], 0.5, atol=2e-3)
    share = g.boost_share[1:, None]
    np.testing.assert_allclose(g.e_pi[1:], -0.5 * np.broadcast_to(share, (2, 2)), atol=2e-3)
    np.testing.assert_allclose(g.kappa_elasticity, g.pis * (math.exp(g.log_U_s) - math.exp(g.log_U_base))
                               / ((1 - g.pis) * math.exp(g.log_U_base) + g.pis * math.exp(g.log_U_s)))
    fits = ident.grid_fits(g)
    assert all(f.deviation <= 1.0 for found in fits.values() for f in found)
    assert g.e_pi_mid.shape == (2, 2) and np.all(np.isnan(g.e_pi_mid[0]))
    np.testing.assert_allclose(g.e_eps_mid[1:], 0.5, atol=2e-3)


def test_ols_slope_lies_within_the_local_slope_envelope():
    rng = np.random.default_rng(1)
    x = np.sort(rng.uniform(0, 3, 9))
    y = np.sin(x) + 0.3 * x**2
    slope, _ = ident.ols(x, y)
    xs = np.linspace(x.min(), x.max(), 10001)
    deriv = np.cos(xs) + 0.6 * xs
    assert deriv.min() <= slope <= deriv.max()
    assert ident.pair_slopes([0, 1, 3], [0, 2, 3]).tolist() == [2.0, 0.5]


# --------------------------------------------------------------------------
# arbitrary joint laws by enumeration
# --------------------------------------------------------------------------


def _random_q(p, N, n, seed=0):
    mode = np.sign(enumeration.states(N).sum(axis=1))
    q, _, _ = ident.random_joint_laws(p, mode, np.random.default_rng(seed), n, (1e-2, 1.0), 2.0)
    return q


@pytest.mark.parametrize("m", [0, 1, 2, 4, 5])
def test_masked_discrepancy_all_matches_enumeration_module(m):
    N = 5
    p = enumeration.mixture_table(LAW_C, N, 0.7)
    Q = _random_q(p, N, 4)
    batch = ident.masked_discrepancy_all(p, Q, N, m)
    for k in range(4):
        assert batch[k] == pytest.approx(enumeration.masked_discrepancy_joint(p, Q[k], N, m), rel=1e-10, abs=1e-15)


def test_full_mask_term_equals_joint_kl_and_chain_rule_holds():
    N = 7
    p = enumeration.mixture_table(LAW_P, N, 0.5)
    Q = _random_q(p, N, 6, seed=3)
    kl = ident.kl_divergence(p, Q)
    np.testing.assert_allclose(ident.masked_discrepancy_all(p, Q, N, 0), kl, rtol=1e-12)
    for k in range(6):
        assert kl[k] == pytest.approx(enumeration.kl_joint(p, Q[k]), rel=1e-10)
    # D_m = KL(p||q) - E_V KL(p_V || q_V): every term non-negative, D_N = 0
    d3 = ident.masked_discrepancy_all(p, Q, N, 3)
    assert np.all(d3 >= 0) and np.all(d3 <= kl)
    assert np.all(ident.masked_discrepancy_all(p, Q, N, N) == 0)


@pytest.mark.parametrize("law", [LAW_P, LAW_C])
def test_witness_discrepancy_by_enumeration_matches_exact_engine(law):
    N, w = 7, 0.8
    p = enumeration.mixture_table(law, N, w)
    for lam in (0.2, 0.9):
        q = enumeration.witness_table(law, N, lam)
        for m in (0, 1, 3, 6):
            assert ident.masked_discrepancy_all(p, q, N, m) == pytest.approx(
                exact.masked_discrepancy(law, N, m, w, lam), rel=1e-9)


def test_full_mask_coercivity_holds_for_random_joint_laws():
    d = ident.coercivity_draws(LAW_C, 7, 0.5, 3, 300, np.random.default_rng(4), (1e-3, 1.0), 2.0)
    for pi0 in (1e-3, 1e-1, 1.0):
        assert np.all(d.bound_ratio(pi0) <= 1.0 + 1e-12)
    # the witness direction nearly attains the bound at pi0 = 1 and w = 1/2
    p = enumeration.mixture_table(LAW_C, 7, 0.5)
    q = enumeration.witness_table(LAW_C, 7, 0.5 + 1e-3)
    ratio = ident.total_variation(p, q) / ident.coercivity_radius(ident.kl_divergence(p, q), 1.0)
    assert 0.999 < ratio <= 1.0


def test_excess_masked_risk_is_linear_in_the_schedule():
    N = 5
    p = enumeration.mixture_table(LAW_P, N, 0.5)
    Q = _random_q(p, N, 3, seed=7)
    mix = schedules.Mixture((0, 2, 4), (0.2, 0.5, 0.3))
    expect = sum(m * ident.masked_discrepancy_all(p, Q, N, s) for s, m in zip((0, 2, 4), (0.2, 0.5, 0.3)))
    np.testing.assert_allclose(ident.excess_masked_risk(p, Q, N, mix), expect, rtol=1e-12)


# --------------------------------------------------------------------------
# tensorization
# --------------------------------------------------------------------------


def test_witness_joint_kl_equals_binary_kl_of_mode_weights():
    N, w, lam = 7, 0.3, 0.75
    p = enumeration.mixture_table(LAW_P, N, w)
    q = enumeration.witness_table(LAW_P, N, lam)
    assert enumeration.kl_joint(q, p) == pytest.approx(exact.binary_kl(lam, w), rel=1e-12)


def test_reverse_witness_discrepancy_matches_enumeration():
    N, w, lam = 7, 0.5, 0.8
    p = enumeration.mixture_table(LAW_C, N, w)
    q = enumeration.witness_table(LAW_C, N, lam)
    sched = schedules.TwoPoint(4, 0, 0.25)
    enum = 0.75 * ident.masked_discrepancy_all(q, p, N, 4) + 0.25 * ident.masked_discrepancy_all(q, p, N, 0)
    log_c, arg = ident.log_tensorization_lower_bound(LAW_C, N, sched, w, [lam])
    assert arg == lam
    assert log_c == pytest.approx(exact.log_binary_kl(lam, w) - math.log(enum), abs=1e-9)
    assert math.exp(log_c) <= 1 / 0.25


def test_tensorization_limit_bound_is_the_limit_of_the_witness_ratio():
    N, w = 63, 0.5
    sched = schedules.FixedFraction(0.25)
    limit = ident.log_tensorization_limit_bound(schedules.log_schedule_residual_uncertainty(LAW_P, N, sched, w), w)
    near, _ = ident.log_tensorization_lower_bound(LAW_P, N, sched, w, [w + 1e-4])
    assert near == pytest.approx(limit, abs=1e-3)
    row = ident.tensorization_row(LAW_P, N, sched, w, [0.3, w + 1e-4, 0.7])
    assert row.log_c >= row.log_c_limit and row.pi0 == 0.0 and row.m == 16


def test_full_mask_mass_caps_the_constant_for_random_laws():
    N, w, pi0 = 5, 0.5, 0.1
    p = enumeration.mixture_table(LAW_P, N, w)
    Q = _random_q(p, N, 20, seed=11)
    sched = schedules.TwoPoint(3, 0, pi0)
    for q in Q:
        ratio = enumeration.kl_joint(q, p) / float(ident.excess_masked_risk(q, p, N, sched))
        assert ratio <= 1 / pi0 + 1e-9


def test_visible_overlap_rates():
    assert ident.visible_overlap_rate(LAW_P, 0.5) == pytest.approx(-0.25 * math.log(1 - 0.36))
    barrier = LAW_C.beta * LAW_C.m_star**2 / 2 - ((1 + LAW_C.m_star) / 2 * math.log((1 + LAW_C.m_star) / 2)
                                                 + (1 - LAW_C.m_star) / 2 * math.log((1 - LAW_C.m_star) / 2)) - math.log(2)
    assert ident.visible_overlap_rate(LAW_C, 0.5) == pytest.approx(barrier, abs=1e-9)
    assert ident.visible_overlap_rate(LAW_C, 0.25) < barrier
    # the hidden block stops magnetising exactly at f = 1 - 1/beta
    assert ident.visible_overlap_rate(LAW_C, 1 - 1 / 1.5 + 1e-3) == pytest.approx(barrier, abs=1e-9)
    assert ident.visible_overlap_rate(LAW_C, 1 - 1 / 1.5 - 0.05) < barrier - 1e-4
    assert ident.visible_overlap_rate(LAW_C, 0.0) == pytest.approx(0.0, abs=1e-9)


# --------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------


def test_bad_inputs_name_the_parameter():
    f = _log_D(LAW_P, 15, schedules.PointMass(0), 0.5)
    with pytest.raises(ValueError, match="eps"):
        ident.recovery_radius(f, 0.5, 0.0)
    with pytest.raises(ValueError, match="w"):
        ident.mode_weight_interval(1.0)
    with pytest.raises(ValueError, match="pi"):
        ident.two_point_radii(LAW_P, 15, 3, 0, 0.5, np.array([1.5]), np.array([1e-3]))
    with pytest.raises(ValueError, match="pi0"):
        ident.coercivity_radius(1e-3, 0.0)
    with pytest.raises(ValueError, match="2\\*\\*N"):
        ident.masked_discrepancy_all(np.ones(8) / 8, np.ones(16) / 16, 3, 1)
    with pytest.raises(ValueError, match="m must"):
        ident.masked_discrepancy_all(np.ones(8) / 8, np.ones(8) / 8, 3, 4)
    with pytest.raises(ValueError, match="f must"):
        ident.visible_overlap_rate(LAW_P, 1.5)
    with pytest.raises(ValueError, match="noise"):
        ident.random_joint_laws(np.ones(4) / 4, np.ones(4), np.random.default_rng(0), 2, (0.0, 1.0), 1.0)


@pytest.mark.parametrize("h", [1e-6, 1e-9, 1e-12, 1e-14])
def test_tensorization_lower_bound_is_accurate_next_to_the_true_weight(h):
    """kl(lam || w) / D_mu(q_lam || p) -> w (1 - w) / U_mu as lam -> w with an O(h) correction
    (both are s delta^2 / 2 (1 + O(delta)) to leading order). The kl must not cancel: the
    plain formula made this 23x too large at h = 1e-9 and raised at 1e-14."""
    N, w = 63, 0.5
    sched = schedules.FixedFraction(0.25)
    limit = ident.log_tensorization_limit_bound(schedules.log_schedule_residual_uncertainty(LAW_P, N, sched, w), w)
    for lam in (w + h, w - h):
        near, arg = ident.log_tensorization_lower_bound(LAW_P, N, sched, w, [lam])
        assert arg == lam
        assert abs(near - limit) <= 10 * h + 1e-12


def test_tensorization_row_reports_the_grid_bound_separately():
    sched = schedules.FixedFraction(0.5)
    row = ident.tensorization_row(LAW_P, 63, sched, 0.9, [0.2, 0.6])
    grid, _ = ident.log_tensorization_lower_bound(LAW_P, 63, sched, 0.9, [0.2, 0.6])
    assert row.log_c_grid == grid and row.log_c == max(grid, row.log_c_limit)
    assert math.isnan(ident.tensorization_row(LAW_P, 63, sched, 0.9, None).log_c_grid)
