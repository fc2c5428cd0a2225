"""Theory values of Part I (blindspots.masked.theory) against independent evaluations."""

import math

import mpmath as mp
import numpy as np
import pytest
from scipy.integrate import quad

from blindspots.masked import exact, theory
from blindspots.masked import identifiability as ident
from blindspots.masked.laws import CurieWeissLaw, ProductLaw


def test_product_rate_is_the_bhattacharyya_exponent_of_one_coordinate():
    for theta in (0.3, 0.6, 0.8):
        a, b = (1 + theta) / 2, (1 - theta) / 2
        bc = 2 * math.sqrt(a * b)  # Bhattacharyya coefficient of the two coordinate laws
        assert theory.product_rate(theta) == pytest.approx(-math.log(bc), rel=1e-14)


def test_product_constants_match_the_lemma():
    k = theory.product_constants(0.6)
    assert k.L0 == pytest.approx(math.log(4.0))
    assert k.c1 == pytest.approx(0.0225)
    assert k.gamma == pytest.approx(math.log(4.0) * 0.3)
    assert k.c == pytest.approx(0.0225)
    assert k.s_pin == 31
    # s_pin is the first m with e^{-c1 m} <= 1/2
    assert math.exp(-k.c1 * k.s_pin) <= 0.5 < math.exp(-k.c1 * (k.s_pin - 1))


def test_blindness_constant_is_the_maximum_over_the_interval():
    for w in (0.5, 0.9):
        lo, hi = ident.mode_weight_interval(w)
        lam = np.linspace(lo, hi, 100_001)
        d = np.log(lam / (1 - lam)) - math.log(w / (1 - w))
        brute = float(np.max(np.maximum(np.expm1(d) - d, np.expm1(-d) + d)))
        assert theory.blindness_constant(w) == pytest.approx(brute, rel=1e-12)


def test_bounds_on_U_hold_for_the_exact_engine():
    law, theta = ProductLaw(0.6), 0.6
    for w in (0.5, 0.9):
        for m in (31, 63, 100):
            assert exact.log_residual_uncertainty(law, 255, m, w) <= theory.log_residual_upper_bound(theta, w, m)
        for s in (0, 1, 2, 4):
            assert exact.log_residual_uncertainty(law, 255, s, w) >= theory.log_residual_lower_bound(theta, 255, s, w) - 1e-12
    # tight at s = 0, w = 1/2: U = 1/4 and the bound is 1/4 (1 - g), g -> 0
    assert math.exp(theory.log_residual_lower_bound(theta, 1023, 0, 0.5)) == pytest.approx(0.25, rel=1e-12)


@pytest.mark.parametrize("theta", [0.3, 0.6, 0.8])
def test_low_visibility_onset_is_where_hoeffding_first_and_forever_gives_one_half(theta):
    from scipy.stats import binom

    for s in (0, 1, 2, 4, 8):
        N0 = theory.low_visibility_onset(theta, s)
        assert N0 % 2 == 1 and N0 >= 2 * s + 1  # for N <= 2s - 1 the bound is vacuous (g = 1)
        assert theory.low_visibility_hoeffding_bound(theta, N0, s) <= 0.5
        # the smallest such odd N: the odd N below it fail (bound > 1/2, or not yet monotone)
        for N in range(max(s + 1, 1) | 1, N0, 2):
            n = N - s
            assert (theory.low_visibility_hoeffding_bound(theta, N, s) > 0.5
                    or theta * n <= s - 1 or theta * n < abs(s - 1))
        previous = 1.0
        for N in range(N0, N0 + 400, 2):
            bound = theory.low_visibility_hoeffding_bound(theta, N, s)
            assert bound <= previous + 1e-15  # non-increasing from N0 on
            previous = bound
            g = binom.cdf((N - 1) // 2, N - s, (1.0 + theta) / 2.0)
            assert g <= bound + 1e-15  # Hoeffding holds against the exact binomial tail
    for s in (2, 4):  # N <= 2s - 1: the hidden block cannot outvote the visible one
        assert theory.low_visibility_hoeffding_bound(theta, 2 * s - 1, s) == 1.0
    with pytest.raises(ValueError):
        theory.low_visibility_onset(theta, -1)
    with pytest.raises(ValueError):
        theory.low_visibility_hoeffding_bound(theta, 3, 3)


def test_low_visibility_floor_is_one_eighth_and_holds_for_the_engine_beyond_the_onset():
    theta, law = 0.6, ProductLaw(0.6)
    L0 = math.log(1.6 / 0.4)
    assert theory.log_low_visibility_floor(theta, 0, 0.5) == pytest.approx(math.log(0.125), abs=1e-15)
    assert theory.log_low_visibility_floor(theta, 3, 0.9) == pytest.approx(
        math.log(0.125) - math.log(9.0) - 3 * L0, rel=1e-14)
    for s in (0, 1, 4):
        N0 = theory.low_visibility_onset(theta, s)
        for w in (0.5, 0.9):
            for N in (N0, N0 + 2, 255):
                floor = theory.log_low_visibility_floor(theta, s, w)
                assert exact.log_residual_uncertainty(law, N, s, w) >= floor
                # the floor is the lemma's bound with log(1 - g) replaced by its worst case -log 2
                assert theory.log_residual_lower_bound(theta, N, s, w) >= floor - 1e-12
    with pytest.raises(ValueError):
        theory.log_low_visibility_floor(theta, 1, 1.0)


def test_prefactor_slope_bias_is_the_secant_slope_of_half_log_m():
    assert theory.prefactor_slope_bias(16, 64) == pytest.approx(0.5 * math.log(4) / 48)
    with pytest.raises(ValueError, match="m1"):
        theory.prefactor_slope_bias(10, 5)


def test_cw_barrier_matches_mpmath():
    mp.mp.dps = 30
    beta = mp.mpf("1.5")
    ms = mp.findroot(lambda x: x - mp.tanh(beta * x), 0.9)
    h = -((1 + ms) / 2 * mp.log((1 + ms) / 2) + (1 - ms) / 2 * mp.log((1 - ms) / 2))
    ref = float(h + beta * ms**2 / 2 - mp.log(2))
    assert theory.cw_barrier(1.5) == pytest.approx(ref, rel=1e-12)
    assert theory.fixed_fraction_rate(CurieWeissLaw(1.5), 0.5) == pytest.approx(ref, rel=1e-12)
    assert ident.visible_overlap_rate(CurieWeissLaw(1.5), 0.5) == pytest.approx(ref, abs=1e-9)
    with pytest.raises(ValueError, match="f must be"):
        theory.fixed_fraction_rate(CurieWeissLaw(1.5), 0.2)


def test_fixed_fraction_rate_for_law_P():
    assert theory.fixed_fraction_rate(ProductLaw(0.8), 0.5) == pytest.approx(0.5 * -0.5 * math.log(1 - 0.64))


def test_cw_null_limit_is_approached_by_the_exact_engine():
    law = CurieWeissLaw(0.5)
    for w in (0.5, 0.9):
        lim = theory.cw_null_residual_limit(0.5, 0.5, w)
        u = [exact.residual_uncertainty(law, N, N // 2, w) for N in (255, 1023)]
        assert abs(u[1] - lim) < abs(u[0] - lim) < 2e-3
    # any limit is a mean of beta (1 - beta), so it lies in (0, 1/4]
    assert 0 < theory.cw_null_residual_limit(0.01, 0.5, 0.5) <= 0.25


def test_g_functions_and_sensitivity_bounds():
    d = np.array([-2.0, -0.3, 0.4, 3.0])
    np.testing.assert_allclose(theory.g0(d), np.exp(d) - 1 - d, rtol=1e-13)
    np.testing.assert_allclose(theory.g1(d), np.exp(-d) - 1 + d, rtol=1e-13)
    # the pointwise bounds bracket the exact ratio for a law whose posterior sits at w (m = 0)
    for w in (0.5, 0.9):
        lams = np.array([0.06, 0.3, 0.7, 0.96])
        lo, hi = theory.sensitivity_bounds(w, lams)
        ratio = np.array([float(mp.mpf(w) * mp.log(mp.mpf(w) / l) + (1 - mp.mpf(w)) * mp.log((1 - mp.mpf(w)) / (1 - mp.mpf(l))))
                          for l in lams]) / (w * (1 - w) * exact.binary_kl(w, lams))
        assert np.all(lo <= ratio * (1 + 1e-12)) and np.all(ratio <= hi * (1 + 1e-12))
        c, C = theory.sensitivity_constants(w)
        D_I = max(abs(math.log(l / (1 - l)) - math.log(w / (1 - w))) for l in ident.mode_weight_interval(w))
        assert math.exp(-D_I) / (w * (1 - w)) <= c <= 1 / (w * (1 - w)) <= C <= math.exp(D_I) / (w * (1 - w))
    with pytest.raises(ValueError, match="differ from w"):
        theory.sensitivity_bounds(0.5, [0.5])


def test_kl_factor_is_the_integral_of_the_lemma():
    # kl(beta || sigma(ell + delta)) = beta(1-beta) int_0^delta (delta-u) sigma'(ell+u)/sigma'(ell) du
    sig = lambda x: 1 / (1 + math.exp(-x))
    for beta, delta in ((0.2, 1.3), (0.9, -2.0), (0.5, 0.05)):
        ell = math.log(beta / (1 - beta))
        integral = quad(lambda u: (delta - u) * sig(ell + u) * (1 - sig(ell + u)), 0, delta, epsabs=1e-15)[0]
        lam = sig(ell + delta)
        assert exact.binary_kl(beta, lam) == pytest.approx(integral, rel=1e-10)


def test_log_curvature_at_truth():
    assert theory.log_curvature_at_truth(math.log(0.1), 0.5) == pytest.approx(math.log(0.1 / 0.0625))


def test_recovery_slopes_and_cubic_ratio_bound():
    assert ident.recovery_slope("kappa_pi") == 1.0
    assert ident.recovery_slope("r_pi") == -0.5
    assert ident.recovery_slope("r_eps") == 0.5
    with pytest.raises(ValueError, match="kind"):
        ident.recovery_slope("nope")
    # m = 0: D = kl(w || lam); its third over second derivative at lam = w is within the bound
    for w in (0.5, 0.7, 0.9):
        d2 = 1 / (w * (1 - w))
        d3 = -2 / w**2 + 2 / (1 - w) ** 2  # d^3/dlam^3 of kl(w || lam) at lam = w
        assert abs(d3 / d2) <= ident.cubic_ratio_bound(w) + 1e-12


def test_fit_tolerances_do_not_depend_on_the_prediction():
    g = ident.recovery_grid(ProductLaw(0.6), 127, 0.5, 63, 0, [0.0, 1e-3, 1e-2, 1e-1], [1e-10, 1e-8, 1e-6, 1e-4])
    fits = ident.grid_fits(g)
    for key, found in fits.items():
        for f in found:
            assert f.predicted == ident.recovery_slope(key)
            assert 0 < f.tol < 0.1  # a prediction 0.1 away must fail
            assert f.deviation <= 1.0


def test_uniform_ratio_growth_exponent_is_the_cap_exponent():
    from blindspots.masked import schedules

    assert ident.uniform_ratio_growth_exponent() == 1.0
    rows = [ident.tensorization_row(ProductLaw(0.6), N, schedules.UniformRatio(), 0.5, None) for N in (255, 511)]
    s = ident.pair_slopes(np.log([256.0, 512.0]), [r.log_c for r in rows])
    assert s[0] == pytest.approx(ident.uniform_ratio_growth_exponent(), abs=1e-6)


# --------------------------------------------------------------------------
# Chapter 5: a-priori remainder bounds for law P (tolerances of at-rate-each-p, at-uniform-growth-p)
# --------------------------------------------------------------------------


def _log_u_unconditioned(theta, w, m):
    """``log U^nu_m`` by the exact binomial sum (no conditioning on S > 0)."""
    from scipy.stats import binom

    k = np.arange(m + 1)
    return 0.5 * m * math.log1p(-theta**2) + math.log(float((binom.pmf(k, m, 0.5) * theory._h_terms(theta, w, k - m / 2)).sum()))


def test_h_sum_is_the_lattice_sum_of_h():
    for theta, w in ((0.6, 0.5), (0.8, 0.9)):
        L0 = math.log((1 + theta) / (1 - theta))
        for parity in (0, 1):
            brute = mp.fsum(w * (1 - w) / (w * mp.e ** (j * L0) + (1 - w) * mp.e ** (-j * L0))
                            for j in (i + parity / 2 for i in range(-400, 401)))
            assert theory.product_h_sum(theta, w, parity) == pytest.approx(float(brute), rel=1e-13)


@pytest.mark.parametrize("theta,w", [(0.6, 0.5), (0.6, 0.9), (0.8, 0.5), (0.3, 0.7)])
def test_unconditioned_remainder_brackets_the_exact_sum_and_is_order_one_over_m(theta, w):
    for m in (1, 2, 3, 4, 7, 16, 31, 64, 127, 128, 383, 512):
        z = (_log_u_unconditioned(theta, w, m) + theory.product_rate(theta) * m + 0.5 * math.log(m)
             - 0.5 * math.log(2 / math.pi) - math.log(theory.product_h_sum(theta, w, m % 2)))
        lo, hi = theory.product_unconditioned_remainder(theta, w, m)
        assert lo - 1e-12 <= z <= hi + 1e-12
        if m >= 16:  # the next term of the expansion: width O(1/m)
            assert (hi - lo) * m < 40.0


def test_conditioning_bounds_bracket_the_engine():
    for theta, w in ((0.6, 0.5), (0.8, 0.9)):
        law = ProductLaw(theta)
        for N, m in ((31, 8), (63, 32), (127, 32), (127, 95), (255, 128), (511, 383)):
            gap = exact.log_residual_uncertainty(law, N, m, w) - _log_u_unconditioned(theta, w, m)
            lo, hi = theory.product_conditioning_bounds(theta, w, N, m)
            slack = theory.log_roundoff_bound(N)
            assert lo - slack <= gap <= hi + slack


def test_rate_pair_tolerance_bounds_the_engine_and_rejects_a_wrong_rate():
    law = ProductLaw(0.6)
    for w in (0.5, 0.9):
        for rho in (0.25, 0.5, 0.75):
            Ns = (255, 511)
            ms = [round(rho * N) for N in Ns]
            y = [math.log(w * (1 - w)) - exact.log_residual_uncertainty(law, N, m, w) - 0.5 * math.log(m)
                 for N, m in zip(Ns, ms)]
            s = (y[1] - y[0]) / (Ns[1] - Ns[0])
            tol = theory.product_rate_pair_tolerance(0.6, w, rho, Ns[0], ms[0], Ns[1], ms[1])
            rate = ident.visible_overlap_rate(law, rho)
            assert abs(s - rate) <= tol
            assert abs(s - 1.01 * rate) > tol  # a rate 1 % off fails (at these sizes the tolerance is < 0.5 %)


def test_uniform_growth_tolerance_bounds_the_engine_pair_slope():
    from blindspots.masked import schedules

    for theta, w in ((0.6, 0.5), (0.8, 0.9)):
        law = ProductLaw(theta)
        Ns = (127, 255)
        logc = [ident.log_tensorization_limit_bound(
            schedules.log_schedule_residual_uncertainty(law, N, schedules.UniformRatio(), w), w) for N in Ns]
        s = (logc[1] - logc[0]) / math.log((Ns[1] + 1) / (Ns[0] + 1))
        tol = theory.product_uniform_growth_tolerance(theta, w, *Ns)
        assert abs(s - 1.0) <= tol < 0.01


@pytest.mark.parametrize("theta,w", [(0.6, 0.5), (0.6, 0.9), (0.8, 0.5), (0.8, 0.9)])
def test_fitted_rate_interval_contains_the_engine_fit_and_rejects_a_wrong_rate(theta, w):
    law = ProductLaw(theta)
    N = 255
    ms = np.arange(N // 8 + 1, N // 2 + 1, 3)  # both parities, as on the chapter's grid
    log_u = np.array([exact.log_residual_uncertainty(law, N, int(m), w) for m in ms])
    rate = -ident.ols(ms, log_u)[0]
    lo, hi = theory.product_fitted_rate_interval(theta, w, N, ms)
    assert lo <= rate <= hi
    # the prefactor pushes the fitted rate above r_star; the interval is narrow enough to see it ...
    assert lo > theory.product_rate(theta)
    # ... and to reject a rate 1 % off (a wrong r_star moves the interval by the same amount)
    assert hi - lo < 0.01 * theory.product_rate(theta)
    assert not lo <= 1.01 * rate <= hi


def test_fitted_rate_interval_centre_is_the_prefactor_and_its_width_the_next_term():
    # at large N (conditioning negligible) and one parity (log H0 constant), the interval's centre is r_star
    # minus the OLS slope of -1/2 log m; the brackets are O(1/m) and the OLS factor O(1/window), so doubling
    # the window (and N) divides the half-width by about 4 (at most 3 allowed)
    theta, w = 0.6, 0.5
    halves = []
    for N, a in ((4095, 400), (8191, 800)):
        ms = np.arange(a, 2 * a, 2 * a // 200)
        lo, hi = theory.product_fitted_rate_interval(theta, w, N, ms)
        centre = theory.product_rate(theta) + ident.ols(ms, 0.5 * np.log(ms))[0]
        assert abs((lo + hi) / 2 - centre) < (hi - lo) / 2
        halves.append((hi - lo) / 2)
    assert halves[1] < halves[0] / 3


def test_fitted_rate_interval_rejects_bad_sizes():
    with pytest.raises(ValueError):
        theory.product_fitted_rate_interval(0.6, 0.5, 255, [10])
    with pytest.raises(ValueError):
        theory.product_fitted_rate_interval(0.6, 0.5, 255, [0, 10])
    with pytest.raises(ValueError):
        theory.product_fitted_rate_interval(0.6, 0.5, 255, [10.5, 20])


def _cw_exact_pieces(beta, N, m):
    """Brute-force ``log Z - N phi*`` and ``log K - N log 2`` by summing every lattice term."""
    from scipy.special import gammaln, logsumexp

    def lb(k, j):
        return gammaln(k + 1.0) - gammaln(j + 1.0) - gammaln(k - j + 1.0)

    n = N - m
    k = np.arange(N + 1)
    log_z = logsumexp(lb(N, k) + beta * (2 * k - N) ** 2 / (2.0 * N))
    a = np.arange(m // 2 + 1)[:, None]
    b = np.arange(n + 1)[None, :]
    S = 2 * (a + b) - N
    log_k = logsumexp(np.where(S > 0, lb(m, a) + lb(n, b) + beta * S**2 / (2.0 * N), -np.inf))
    phi = theory.cw_barrier(beta) + math.log(2.0)
    return log_z - N * phi, log_k - N * math.log(2.0), log_z, log_k


@pytest.mark.parametrize("N", [15, 31, 63, 127, 255, 1023])
def test_cw_partition_and_wedge_bounds_bracket_the_brute_force_sums(N):
    for beta in ((1.5, 2.0) if N >= 31 else (1.5,)):  # beta = 2 needs m* + 1/N < 1
        for m in (N // 2, (2 * N) // 3):
            if not beta * (N - m) < N:
                continue
            z, k, _, _ = _cw_exact_pieces(beta, N, m)
            z_lo, z_hi = theory.cw_log_partition_bounds(beta, N)
            k_lo, k_hi = theory.cw_log_wedge_bounds(beta, N, m)
            assert z_lo <= z <= z_hi
            assert k_lo <= k <= k_hi


@pytest.mark.parametrize("N", [15, 63, 255])
def test_cw_exact_reduction_of_U_to_the_wedge_sum(N):
    # U = w(1-w) (2/Z) K theta' with theta' in [1, 2/c0] (the exact reduction behind the sandwich)
    beta, m = 1.5, N // 2
    law = CurieWeissLaw(beta)
    _, _, log_z, log_k = _cw_exact_pieces(beta, N, m)
    for w in (0.5, 0.7, 0.9):
        c0 = min(w, 1 - w)
        t = exact.log_residual_uncertainty(law, N, m, w) - (math.log(w * (1 - w)) + math.log(2.0) - log_z + log_k)
        assert -1e-12 <= t <= math.log(2.0 / c0) + 1e-12


@pytest.mark.parametrize("N", [15, 31, 63, 127, 255, 511, 1023, 4095])
def test_cw_barrier_offset_interval_contains_the_engine(N):
    for beta in ((1.5, 2.0) if N >= 31 else (1.5,)):  # beta = 2 needs m* + 1/N < 1
        law, dF = CurieWeissLaw(beta), theory.cw_barrier(beta)
        m = N // 2 if beta == 1.5 else (2 * N) // 3
        for w in (0.5, 0.9):
            lo, hi = theory.cw_barrier_offset_interval(beta, N, m, w)
            x = -exact.log_residual_uncertainty(law, N, m, w) - N * dF
            assert lo <= x <= hi


def test_cw_barrier_offset_interval_rejects_a_wrong_barrier_at_book_scale():
    N, m, law, dF = 1023, 511, CurieWeissLaw(1.5), theory.cw_barrier(1.5)
    for w in (0.5, 0.9):
        lo, hi = theory.cw_barrier_offset_interval(1.5, N, m, w)
        lu = exact.log_residual_uncertainty(law, N, m, w)
        for wrong in (1.15 * dF, 0.85 * dF):
            x = -lu - N * wrong
            assert not lo <= x <= hi
        # the interval does not depend on Delta F: it is the same whatever the caller subtracts
        assert hi - lo < 0.3 * N * dF


def test_cw_barrier_offset_interval_rejects_bad_arguments():
    with pytest.raises(ValueError, match="beta"):
        theory.cw_barrier_offset_interval(0.9, 127, 63, 0.5)
    with pytest.raises(ValueError, match="paramagnetic"):
        theory.cw_barrier_offset_interval(1.5, 127, 20, 0.5)
    with pytest.raises(ValueError, match="m must"):
        theory.cw_barrier_offset_interval(1.5, 127, 127, 0.5)
    with pytest.raises(ValueError, match="w must"):
        theory.cw_barrier_offset_interval(1.5, 127, 63, 1.0)


def test_recovery_weight_bound_is_pinsker_times_the_sensitivity_constant():
    w, eps = 0.5, np.array([1e-6, 1e-3])
    c_J = theory.sensitivity_constants(w)[0]
    got = theory.recovery_weight_bound(eps, 0.25, 0.1, w)
    assert got == pytest.approx(np.sqrt(eps / (2 * 0.25 * c_J * 0.1)), rel=1e-12)
    assert np.exp(theory.log_recovery_weight_bound(math.log(1e-300), math.log(1e-250), w)) == pytest.approx(
        math.sqrt(1e-50 / (2 * c_J)), rel=1e-10)
    with pytest.raises(ValueError, match="pi_s"):
        theory.recovery_weight_bound(eps, 0.0, 0.1, w)


def test_recovery_weight_bound_holds_and_is_tight_for_the_full_mask():
    # mu = delta_0: D_mu(lam) = kl(w || lam), U_mu = w(1-w); near lam = w the ratio |lam - w| / bound
    # tends to sqrt(4 c_J (w(1-w))^2), 0.87 at w = 1/2, and never exceeds 1 on J
    for w in (0.5, 0.9):
        lo, hi = ident.mode_weight_interval(w)
        lam = np.linspace(lo, hi, 4001)
        lam = lam[np.abs(lam - w) > 1e-9]
        log_kl = exact.log_binary_kl(w, lam)
        ratio = np.abs(lam - w) / np.exp(theory.log_recovery_weight_bound(log_kl, math.log(w * (1 - w)), w))
        assert ratio.max() <= 1.0
        limit = math.sqrt(4 * theory.sensitivity_constants(w)[0] * (w * (1 - w)) ** 2)
        assert ratio.max() >= limit * (1 - 1e-3)
    # tight enough at w = 1/2 that the upper constant C_J in place of c_J breaks it
    c_J, C_J = theory.sensitivity_constants(0.5)
    assert math.sqrt(4 * c_J / 16) * math.sqrt(C_J / c_J) > 1.0


def test_recovery_weight_bound_holds_on_a_multi_point_schedule_of_the_engine():
    law, N, w = ProductLaw(0.6), 63, 0.9
    ms, mu = np.array([0, 3, 20, 62]), np.array([0.01, 0.2, 0.5, 0.29])
    lo, hi = ident.mode_weight_interval(w)
    lam = np.linspace(lo, hi, 401)
    lam = lam[np.abs(lam - w) > 1e-9]
    prof = exact.discrepancy_profile(law, N, ms, w, lam)
    from scipy.special import logsumexp
    log_d = logsumexp(np.log(mu)[:, None] + prof.log_D, axis=0)
    log_u = logsumexp(np.log(mu) + prof.log_U)
    assert np.all(np.log(np.abs(lam - w)) <= theory.log_recovery_weight_bound(log_d, log_u, w) + 1e-12)
    # the pi_s form is weaker: pi_s U_s <= U_mu for each s
    for k in range(ms.size):
        assert theory.log_recovery_weight_bound(0.0, math.log(mu[k]) + prof.log_U[k], w) >= \
            theory.log_recovery_weight_bound(0.0, log_u, w)
