"""Exact engine: identities against brute force, direct summation and mpmath."""

import math

import mpmath as mp
import numpy as np
import pytest

from blindspots.masked import enumeration as en
from blindspots.masked import exact
from blindspots.masked.laws import CurieWeissLaw, ProductLaw

LAWS = [ProductLaw(0.6), ProductLaw(0.8), CurieWeissLaw(1.5), CurieWeissLaw(0.5)]
LAMS = np.array([0.05, 0.3, 0.5, 0.8, 0.97])


@pytest.mark.parametrize("law", LAWS, ids=str)
@pytest.mark.parametrize("N", [9, 13])
def test_engine_matches_brute_force_enumeration(law, N):
    w = 0.9
    p = en.mixture_table(law, N, w)
    for m in range(N + 1):
        got = exact.masked_discrepancy(law, N, m, w, LAMS)
        for lam, g in zip(LAMS, got):
            want = en.masked_discrepancy_joint(p, en.witness_table(law, N, lam), N, m, subsets="first")
            assert abs(g - want) <= 1e-12 * want + 1e-300, (m, lam, g, want)


def test_engine_matches_brute_force_over_all_visible_sets():
    law, N, w, m = CurieWeissLaw(1.5), 9, 0.5, 4
    p, q = en.mixture_table(law, N, w), en.witness_table(law, N, 0.2)
    want = en.masked_discrepancy_joint(p, q, N, m, subsets="all")
    assert abs(exact.masked_discrepancy(law, N, m, w, 0.2) - want) <= 1e-12 * want


@pytest.mark.parametrize("law", LAWS, ids=str)
def test_full_mask_discrepancy_equals_binary_kl(law):
    for w in (0.5, 0.9):
        got = exact.masked_discrepancy(law, 127, 0, w, LAMS)
        want = np.array([float(w * mp.log(mp.mpf(w) / l) + (1 - w) * mp.log((1 - mp.mpf(w)) / (1 - l)))
                         for l in LAMS])
        np.testing.assert_allclose(got, want, rtol=1e-13)


def test_discrepancy_vanishes_at_true_weight_and_full_visibility():
    law = ProductLaw(0.6)
    assert exact.masked_discrepancy(law, 63, 20, 0.9, 0.9) == 0.0
    assert exact.masked_discrepancy(law, 63, 63, 0.9, 0.3) == 0.0
    assert exact.residual_uncertainty(law, 63, 63, 0.9) == 0.0


@pytest.mark.parametrize("law", LAWS, ids=str)
@pytest.mark.parametrize("N", [255, 1023])
def test_fast_path_agrees_with_direct_summation(law, N):
    w, lams = 0.9, np.array([0.2, 0.85, 0.899, 0.95])
    for m in (0, 1, 16, N // 4, N // 2, 3 * N // 4, N - 1):
        fast = exact.log_masked_discrepancy(law, N, m, w, lams)
        slow = exact.log_masked_discrepancy(law, N, m, w, lams, method="direct")
        # relative 1e-8 on D  <=>  absolute 1e-8 on log D
        np.testing.assert_allclose(fast, slow, rtol=0, atol=1e-8)
        assert abs(exact.log_residual_uncertainty(law, N, m, w)
                   - exact.log_residual_uncertainty(law, N, m, w, method="direct")) < 1e-8


@pytest.mark.parametrize("law", [ProductLaw(0.8), CurieWeissLaw(1.5)], ids=str)
def test_fast_path_agrees_with_direct_summation_at_large_N(law):
    N, w, lams = 4095, 0.5, np.array([0.1, 0.5001, 0.9])
    for m in (1, 1023, 2047, 3071):
        np.testing.assert_allclose(exact.log_masked_discrepancy(law, N, m, w, lams),
                                   exact.log_masked_discrepancy(law, N, m, w, lams, method="direct"),
                                   rtol=0, atol=1e-8)


@pytest.mark.parametrize("law", [CurieWeissLaw(1.5), CurieWeissLaw(0.5), CurieWeissLaw(3.0)], ids=str)
@pytest.mark.parametrize("start", [1, exact.WINDOW_START])
def test_certified_window_gives_the_sums_of_the_full_table(law, start, monkeypatch):
    # start=1 makes the window double many times before it is certified
    monkeypatch.setattr(exact, "WINDOW_START", start)
    exact.clear_cache()
    N, lams = 2047, np.array([0.05, 0.3, 0.5001, 0.95])
    for w in (0.5, 0.9, 0.01):
        for m in (200, N // 2, N // 2 + 1, 1500, N - 1):
            full = exact.posterior_table(law, N, m, w)
            part = exact._table_for_sums(law, N, m, w, "auto", exact._spread(lams, w))
            assert part.r.size <= full.r.size
            np.testing.assert_allclose(exact.log_masked_discrepancy(law, N, m, w, lams),
                                       exact._log_D_from_table(full, lams, prune=False), rtol=0, atol=1e-9)
            assert abs(exact.log_residual_uncertainty(law, N, m, w)
                       - exact._lse(full.log_prob + full.log_s)) < 1e-9
    exact.clear_cache()


def test_certified_window_is_narrow_where_the_mode_is_pinned():
    # the reason Curie-Weiss reaches N = 2^20 - 1: a few hundred classes carry U, not m + 1
    law, N = CurieWeissLaw(1.5), 65535
    for m in (N // 4, N // 2, 3 * N // 4):
        tab = exact._table_for_sums(law, N, m, 0.9, "auto", 0.0)
        assert tab.r.size < m / 5
        assert np.all(np.abs(tab.r) <= tab.r.size)  # centred on r = 0


def test_pruned_curie_weiss_path_agrees_with_binomial_tails_for_law_p():
    law, N = ProductLaw(0.6), 1023
    for m in (3, 255, 700):
        np.testing.assert_allclose(exact.log_mode_weights(law, N, m, "pruned"),
                                   exact.log_mode_weights(law, N, m, "tails"), rtol=0, atol=1e-9)


def _mp_log_D(law, N, m, w, lam, dps=60):
    """Independent high-precision evaluation by direct summation (mpmath)."""
    mp.mp.dps = dps
    w, lam = mp.mpf(w), mp.mpf(lam)
    n = N - m

    def F(t):
        if 2 * t - N < 0:
            return mp.mpf(0)
        if isinstance(law, ProductLaw):
            rho = (1 + mp.mpf(law.theta)) / 2
            return rho ** t * (1 - rho) ** (N - t)
        return mp.e ** (mp.mpf(law.beta) * (2 * t - N) ** 2 / (2 * N))

    Fs = [F(t) for t in range(N + 1)]
    Z = mp.fsum(mp.binomial(N, t) * Fs[t] for t in range(N + 1))
    h = [mp.fsum(mp.binomial(n, j) * Fs[a + j] for j in range(n + 1)) / Z for a in range(m + 1)]
    total = mp.mpf(0)
    for a in range(m + 1):
        hp, hm = h[a], h[m - a]
        P = w * hp + (1 - w) * hm
        if P == 0:
            continue
        b = w * hp / P
        g = lam * hp / (lam * hp + (1 - lam) * hm)
        kl = (b * mp.log(b / g) if b > 0 else 0) + ((1 - b) * mp.log((1 - b) / (1 - g)) if b < 1 else 0)
        total += mp.binomial(m, a) * P * kl
    return mp.log(total)


@pytest.mark.parametrize("law,N,m,w,lam", [
    (ProductLaw(0.6), 127, 100, 0.9, 0.3),
    (ProductLaw(0.8), 127, 126, 0.5, 0.5001),
    (CurieWeissLaw(1.5), 127, 64, 0.9, 0.2),
    (CurieWeissLaw(0.5), 127, 31, 0.5, 0.7),
    (ProductLaw(0.8), 255, 200, 0.9, 0.05),
])
def test_engine_matches_mpmath_high_precision(law, N, m, w, lam):
    want = float(_mp_log_D(law, N, m, w, lam))
    got = exact.log_masked_discrepancy(law, N, m, w, lam)
    assert abs(got - want) < 1e-9, (got, want)


def test_log_domain_keeps_discrepancies_far_below_double_range():
    law, N = ProductLaw(0.8), 16383
    logD = exact.log_masked_discrepancy(law, N, 12000, 0.9, 0.3)
    assert np.isfinite(logD) and logD < math.log(1e-300) * 5
    # decay per visible coordinate close to -1/2 log(1 - theta^2)
    logD2 = exact.log_masked_discrepancy(law, N, 12100, 0.9, 0.3)
    rate = (logD - logD2) / 100
    assert abs(rate / (-0.5 * math.log(1 - 0.64)) - 1) < 0.05


def test_curvature_identity_at_true_weight():
    law, N, m, w = CurieWeissLaw(1.5), 255, 40, 0.7
    U = exact.residual_uncertainty(law, N, m, w)
    h = 1e-4
    d2 = (exact.masked_discrepancy(law, N, m, w, w + h) + exact.masked_discrepancy(law, N, m, w, w - h)) / h**2
    assert abs(d2 / (U / (w * (1 - w)) ** 2) - 1) < 1e-5


@pytest.mark.parametrize("kwargs,match", [
    (dict(N=128, m=3, w=0.5, lam=0.5), "N must"),
    (dict(N=127, m=128, w=0.5, lam=0.5), "m must"),
    (dict(N=127, m=-1, w=0.5, lam=0.5), "m must"),
    (dict(N=127, m=3, w=1.0, lam=0.5), "w must"),
    (dict(N=127, m=3, w=0.5, lam=0.0), "lam must"),
    (dict(N=127, m=3, w=0.5, lam=[0.3, 1.2]), "lam must"),
])
def test_bad_input_raises_value_error_naming_parameter(kwargs, match):
    with pytest.raises(ValueError, match=match):
        exact.masked_discrepancy(ProductLaw(0.6), **kwargs)


def test_binary_kl_is_cancellation_free_near_equality():
    w, lam = 0.3, 0.3 + 1e-9
    want = float(mp.mpf(w) * mp.log(mp.mpf(w) / mp.mpf(lam))
                 + (1 - mp.mpf(w)) * mp.log((1 - mp.mpf(w)) / (1 - mp.mpf(lam))))
    assert abs(exact.binary_kl(w, lam) / want - 1) < 1e-13  # lam - w is exact, so delta is accurate


def test_posterior_table_is_normalised_and_symmetric():
    tab = exact.posterior_table(CurieWeissLaw(1.5), 255, 100, 0.5)
    assert abs(np.exp(tab.log_prob).sum() - 1) < 1e-12
    np.testing.assert_allclose(tab.logit, -tab.logit[::-1], atol=1e-9)


def test_binary_kl_kernel_matches_mpmath_across_branches():
    """kl / (beta (1 - beta)) on both sides of the series/log-sum-exp switch, beta near 0, 1/2, 1."""
    mp.mp.dps = 50
    rng = np.random.default_rng(7)
    ell = np.concatenate([rng.uniform(-40, 40, 40), rng.uniform(-0.5, 0.5, 40)])
    delta = np.concatenate([np.sign(rng.uniform(-1, 1, 60)) * 10 ** rng.uniform(-6, 1.3, 60),
                            [0.0999, 0.1, 0.1001, -0.0999, -0.1001]])
    got = np.exp(exact._log_g(ell, delta))
    for i, l in enumerate(ell):
        b = 1 / (1 + mp.e ** (-mp.mpf(l)))
        for j, d in enumerate(delta):
            g = 1 / (1 + mp.e ** (-(mp.mpf(l) + mp.mpf(d))))
            ref = (b * mp.log(b / g) + (1 - b) * mp.log((1 - b) / (1 - g))) / (b * (1 - b))
            assert abs(got[i, j] / float(ref) - 1) < 1e-13, (l, d)


# --------------------------------------------------------------------------
# binary kl and D at weights near 0 and 1 (independent mpmath references)
# --------------------------------------------------------------------------

EPS = np.finfo(float).eps
EXTREME_PAIRS = [
    (0.5, 1e-12), (0.5, 1e-300), (1 - 1e-12, 1e-12), (1e-12, 1 - 1e-12), (1e-300, 0.5),
    (1e-320, 0.5), (0.5, 1e-320), (1e-300, 1 - 1e-12), (1 - 1e-12, 1e-300), (1e-250, 1e-300),
    (1e-300, 1e-250), (1 - 1e-12, 1 - 1e-6), (1 - 1e-6, 1 - 1e-12), (1e-300, 1e-300 * (1 + 1e-9)),
    (1 - 1e-12, 0.5), (0.3, 1 - 2.0 ** -53), (1e-200, 1e-100), (1e-300, 1.6e-300), (1e-300, 3e-300),
    (1 - 1e-12, 1 - 1.6e-12),
]


def _mp_log_kl(w, lam):
    """log kl(w || lam) at 100 digits from the float inputs (log1p: 1 - 1e-300 is not 1 here)."""
    mp.mp.dps = 100
    w, lam = mp.mpf(w), mp.mpf(lam)
    return mp.log(w * mp.log(w / lam) + (1 - w) * (mp.log1p(-w) - mp.log1p(-lam)))


def _log_kl_tolerance(w, want):
    """log kl = log s + log g with s = w (1 - w): each is a handful of float operations on
    numbers of size |log s| and |log kl|, so the absolute error is a few eps times their sum."""
    log_s = math.log(w) + math.log1p(-w)
    return 32 * EPS * (1 + abs(log_s) + abs(float(want)))


@pytest.mark.parametrize("w,lam", EXTREME_PAIRS)
def test_log_binary_kl_matches_mpmath_near_0_and_1(w, lam):
    want = _mp_log_kl(w, lam)
    got = exact.log_binary_kl(w, lam)
    assert np.isfinite(got)
    assert abs(got - float(want)) <= _log_kl_tolerance(w, want), (w, lam, got, float(want))


@pytest.mark.parametrize("w,lam,want", [
    (0.5, 1e-12, None), (0.5, 1e-300, 344.69461676854690), (1 - 1e-12, 1e-12, 27.631021115872286),
    (1e-300, 0.5, math.log(2.0)),
])
def test_binary_kl_reported_failures(w, lam, want):
    """Cases that used to be off by 8e-7 (first), inf (second, third) or 1.0 instead of log 2 (last)."""
    ref = float(mp.e ** _mp_log_kl(w, lam))
    if want is not None:
        assert abs(ref / want - 1) < 1e-15  # the quoted value is the mpmath one
    got = exact.binary_kl(w, lam)
    assert abs(got / ref - 1) <= _log_kl_tolerance(w, math.log(ref)) * 2


@pytest.mark.parametrize("law", [ProductLaw(0.6), CurieWeissLaw(1.5)], ids=str)
@pytest.mark.parametrize("w,lam", [(0.5, 1e-300), (1 - 1e-12, 1e-12), (1e-300, 0.5), (1e-12, 1 - 1e-12),
                                   (0.5, 1 - 1e-12)])
def test_full_mask_discrepancy_at_extreme_weights(law, w, lam):
    """At m = 0 nothing is visible, so D_{N,0}(lam) = kl(w || lam) for any law."""
    want = _mp_log_kl(w, lam)
    got = exact.log_masked_discrepancy(law, 127, 0, w, lam)
    # plus the renormalisation of the single visible class (log prob = 0 up to eps)
    assert abs(got - float(want)) <= _log_kl_tolerance(w, want) + 4 * EPS


@pytest.mark.parametrize("law", [ProductLaw(0.6), CurieWeissLaw(1.5)], ids=str)
@pytest.mark.parametrize("side", [0.0, 1.0])
def test_pruned_discrepancy_one_ulp_from_true_weight(law, side):
    """|delta| ~ 2e-16: D = U delta^2 / 2 (1 + O(delta)) by the cumulant series, so
    log D = log U + 2 log|delta| - log 2 up to |delta| plus round-off of the sums over classes."""
    N, m, w = 255, 100, 0.5
    lam = float(np.nextafter(w, side))
    mp.mp.dps = 50
    delta = (mp.log(mp.mpf(lam)) - mp.log1p(-mp.mpf(lam))) - (mp.log(mp.mpf(w)) - mp.log1p(-mp.mpf(w)))
    want = exact.log_residual_uncertainty(law, N, m, w) + float(2 * mp.log(abs(delta)) - mp.log(2))
    got = exact.log_masked_discrepancy(law, N, m, w, lam)
    direct = exact.log_masked_discrepancy(law, N, m, w, lam, method="direct")
    assert np.isfinite(got) and got < 0
    assert abs(got - want) <= 1e-12   # ~ eps * log(table size) from the two log-sum-exps
    assert abs(got - direct) <= 1e-12


def test_profile_rejects_non_integer_visible_sizes():
    with pytest.raises(ValueError, match="m must"):
        exact.discrepancy_profile(ProductLaw(0.6), 31, 2.7, 0.5, [0.3])
    with pytest.raises(ValueError, match="m must"):
        exact.discrepancy_profile(ProductLaw(0.6), 31, [1, 2.7], 0.5, [0.3])


def test_witness_grid_spans_the_witness_interval_and_contains_w():
    g = exact.witness_grid(0.9, 201)
    assert g.size == 201 and g.min() == pytest.approx(0.05) and g.max() == pytest.approx(0.95)
    assert 0.9 in g and np.all(np.diff(g) > 0)
    with pytest.raises(ValueError, match="w must lie"):
        exact.witness_grid(1.0, 5)
    with pytest.raises(ValueError, match="n must be"):
        exact.witness_grid(0.5, 1)


def test_fitted_rate_of_law_p_approaches_the_bhattacharyya_rate():
    law = ProductLaw(0.6)
    prof = exact.discrepancy_profile(law, 255, np.arange(0, 255), 0.9, exact.witness_grid(0.9, 11))
    r_star = -0.5 * math.log(1 - 0.36)
    assert exact.fitted_rate(prof, "U") == pytest.approx(r_star, rel=0.05)
    assert exact.fitted_rate(prof, "D") == pytest.approx(r_star, rel=0.05)
    with pytest.raises(ValueError, match="which must be"):
        exact.fitted_rate(prof, "V")
    with pytest.raises(ValueError, match="window"):
        exact.fitted_rate(prof, "U", (0.5, 0.5))


def test_timed_against_enumeration_returns_two_positive_times():
    brute, eng = exact.timed_against_enumeration(ProductLaw(0.6), 7, 0.9, [0.3, 0.7])
    assert brute > 0 and eng > 0
