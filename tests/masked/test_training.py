"""Training the mode weight: gradients, half-times, sampling, excess-loss moments (blindspots.masked.training)."""

import math

import numpy as np
import pytest

from blindspots.masked import enumeration as en
from blindspots.masked import exact, schedules as sc
from blindspots.masked import training as tr
from blindspots.masked.laws import CurieWeissLaw, ProductLaw

LAW = ProductLaw(0.8)


def _sig(a):
    return 1.0 / (1.0 + math.exp(-a))


def test_example_gradient_equals_autograd_of_example_loss():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    lhp, lhm = rng.normal(size=20) * 30, rng.normal(size=20) * 30
    z = rng.random(20) < 0.5
    for a0 in (-2.0, 0.1, 3.0):
        a = torch.tensor(a0, dtype=torch.float64, requires_grad=True)
        lam_log, l1m = torch.nn.functional.logsigmoid(a), torch.nn.functional.logsigmoid(-a)
        zt = torch.tensor(z, dtype=torch.float64)
        loss = (-(zt * lam_log + (1 - zt) * l1m)
                + torch.logaddexp(lam_log + torch.tensor(lhp), l1m + torch.tensor(lhm))).sum()
        loss.backward()
        ours = tr.example_gradient(a0, lhp - lhm, z).sum()
        assert abs(float(a.grad) - ours) < 1e-12 * max(1.0, abs(ours))
        assert abs(float(loss.detach()) - tr.example_loss(a0, lhp, lhm, z).sum()) < 1e-9


def test_example_loss_has_no_overflow_in_pinned_classes():
    out = tr.example_loss(2.0, np.array([-800.0, 0.0]), np.array([0.0, -800.0]), np.array([0, 1]))
    assert np.all(np.isfinite(out))


@pytest.mark.parametrize("law,N", [(LAW, 31), (CurieWeissLaw(1.5), 31)])
def test_population_gradient_equals_derivative_of_schedule_discrepancy(law, N):
    sch = sc.TwoPoint(N // 2, 1, 0.1)
    for w in (0.5, 0.8):
        for alpha in (-1.0, 0.4, 2.0):
            g = tr.population_gradient(law, N, sch, w, alpha)[0]
            h = 1e-5
            fd = (sc.schedule_discrepancy(law, N, sch, w, _sig(alpha + h))
                  - sc.schedule_discrepancy(law, N, sch, w, _sig(alpha - h))) / (2 * h)
            assert abs(g - fd) < 1e-8 * max(1.0, abs(g))


def test_population_gradient_near_truth_is_u_times_offset():
    N, w = 63, 0.5
    sch = sc.TwoPoint(31, 0, 0.01)
    u = sc.schedule_residual_uncertainty(LAW, N, sch, w)
    t = 1e-4
    g = tr.population_gradient(LAW, N, sch, w, t)[0]
    assert abs(g / (u * t) - 1) < 1e-6


def test_predicted_half_time_is_ln2_over_eta_u():
    assert tr.predicted_half_time(2.0, 0.25) == pytest.approx(math.log(2) / 0.5)
    with pytest.raises(ValueError, match="eta"):
        tr.predicted_half_time(0.0, 0.25)


def test_halving_interval_contains_one_and_shrinks_with_small_steps():
    lo, hi = tr.halving_time_interval(0.5, 0.02, 4.0, 1e-3, 1.0)
    assert lo < 1 < hi and hi - lo < 0.2
    lo2, hi2 = tr.halving_time_interval(0.5, 0.002, 4.0, 1e-5, -1.0)
    assert lo2 < 1 < hi2 and hi2 - lo2 < 0.02
    with pytest.raises(ValueError, match="eta"):
        tr.halving_time_interval(0.5, 0.02, 4.0, 0.2, 1.0)


def test_population_gd_half_times_lie_in_their_interval():
    N, w, eta, d0 = 31, 0.5, 4.0, 0.02
    schs = [sc.TwoPoint(15, s, pi) for s in (0, 4) for pi in (0.0, 1e-2, 1e-1)]
    lam0 = np.array([0.9, 0.1, 0.8, 0.2, 0.7, 0.3])
    runs = tr.population_gd(LAW, N, w, schs, lam0, eta, 40000, d0)
    u = np.array([sc.schedule_residual_uncertainty(LAW, N, x, w) for x in schs])
    ratio = runs.half_time / tr.predicted_half_time(eta, u)
    for i in range(len(schs)):
        lo, hi = tr.halving_time_interval(w, d0, eta, u[i], runs.side[i])
        assert not runs.censored[i] and lo <= ratio[i] <= hi


def test_population_gd_censors_blind_runs():
    runs = tr.population_gd(LAW, 127, 0.5, [sc.TwoPoint(63, 0, 0.0)], np.array([0.9]), 4.0, 2000, 0.02)
    assert runs.censored[0] and runs.final_gap[0] > 0.39


def test_sample_counts_match_the_exact_visible_law():
    # visible magnetisation classes of the engine's posterior table against sampled counts (chi-square-like check)
    rng = np.random.default_rng(1)
    N, m, w = 15, 4, 0.7
    a, t, z = tr.sample_counts(rng, LAW, N, w, np.full(200_000, m))
    tab = exact.posterior_table(LAW, N, m, w)
    p = np.exp(tab.log_prob)
    counts = np.bincount(a, minlength=m + 1)
    freq = counts[((tab.r + m) // 2)] / a.size
    se = np.sqrt(p * (1 - p) / a.size)
    assert np.all(np.abs(freq - p) <= 5 * se + 1e-12)
    # mode frequency and S sign agree with z
    assert abs(z.mean() - w) < 5 * math.sqrt(w * (1 - w) / z.size)
    assert np.all((2 * t - N > 0) == z)


def _brute_excess(law, N, w, lam, m):
    p, q = en.mixture_table(law, N, w), en.witness_table(law, N, lam)
    V = tuple(range(m))
    P, Q = en._split(p, N, V), en._split(q, N, V)
    pv, qv = P.sum(1, keepdims=True), Q.sum(1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.where(P > 0, np.log(P / pv) - np.log(Q / qv), 0.0)
    return float((P * x).sum()), float((P * x * x).sum())


@pytest.mark.parametrize("w,lam", [(0.5, 0.7), (0.6, 0.2)])
def test_excess_moments_equal_brute_force_enumeration(w, lam):
    N = 7
    for sch in (sc.PointMass(0), sc.PointMass(3), sc.TwoPoint(3, 1, 0.2)):
        mom = tr.excess_loss_moments(LAW, N, sch, w, lam)
        ms, wt = sch.support(N)
        bm = sum(c * _brute_excess(LAW, N, w, lam, int(m))[0] for m, c in zip(ms, wt))
        b2 = sum(c * _brute_excess(LAW, N, w, lam, int(m))[1] for m, c in zip(ms, wt))
        assert abs(mom.mean - bm) < 1e-12 and abs(mom.second / b2 - 1) < 1e-12


def test_excess_mean_equals_engine_discrepancy_within_roundoff_bound():
    for N in (31, 127):
        for lam in (0.3, 0.501, 0.9):
            sch = sc.TwoPoint(N // 2, 1, 1e-3)
            mom = tr.excess_loss_moments(LAW, N, sch, 0.5, lam)
            d = sc.schedule_discrepancy(LAW, N, sch, 0.5, lam)
            assert abs(mom.mean - d) <= mom.mean_roundoff + 1e-12 * d


def test_detection_cost_lies_in_its_sandwich_and_scales():
    N, w = 63, 0.5
    for s in (0, 4):
        for pi in (1e-3, 1e-1):
            sch = sc.TwoPoint(31, s, pi)
            u = sc.schedule_residual_uncertainty(LAW, N, sch, w)
            for lam in (0.45, 0.501, 0.8):
                mom = tr.excess_loss_moments(LAW, N, sch, w, lam)
                n1 = tr.detection_cost(mom.mean, mom.second) + 1
                lo, hi = tr.detection_cost_interval(u, w, lam)
                assert lo <= n1 <= hi


def test_raw_loss_moments_equal_brute_force_enumeration():
    N, w = 7, 0.6
    p = en.mixture_table(LAW, N, w)
    for m in (0, 2, 5):
        P = en._split(p, N, tuple(range(m)))
        pv = P.sum(1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            L = np.where(P > 0, -(np.log(P) - np.log(pv)), 0.0)
        H = float((P * L).sum())
        V = float((P * (L - H) ** 2).sum())
        h, v = tr.raw_loss_moments(LAW, N, m, w)
        assert abs(h - H) < 1e-12 and abs(v - V) < 1e-12


def test_mixture_loss_variance_is_the_law_of_total_variance():
    total, extra = tr.mixture_loss_variance(0.3, 10.0, 2.0, 4.0, 1.0)
    assert extra == pytest.approx(0.3 * 0.7 * 36.0)
    assert total == pytest.approx(0.7 * 2.0 + 0.3 * 1.0 + extra)
    with pytest.raises(ValueError, match="pi"):
        tr.mixture_loss_variance(1.5, 0, 0, 0, 0)


def test_simulated_losses_match_exact_moments():
    rng = np.random.default_rng(3)
    N, w, lam = 31, 0.5, 0.7
    L, X, m = tr.simulate_losses(rng, LAW, N, w, 15, 0, 0.2, lam, 200_000)
    mom = tr.excess_loss_moments(LAW, N, sc.TwoPoint(15, 0, 0.2), w, lam)
    assert abs(X.mean() - mom.mean) < 5 * X.std() / math.sqrt(X.size)
    assert abs((X ** 2).mean() - mom.second) < 5 * (X ** 2).std() / math.sqrt(X.size)
    hb, vb = tr.raw_loss_moments(LAW, N, 15, w)
    hs, vs = tr.raw_loss_moments(LAW, N, 0, w)
    total, _ = tr.mixture_loss_variance(0.2, hb, vb, hs, vs)
    se = math.sqrt(np.mean((L - L.mean()) ** 4) / L.size)
    assert abs(L.var() - total) < 5 * se


def test_sgd_seed_blind_stays_and_boost_recovers():
    out = tr.sgd_seed(0, theta=0.8, N=63, w=0.5, m_base=31, s=0, pis=[0.0, 0.3], lam0_range=(0.8, 0.9),
                      eta=4.0, batch=16, steps=1500, tail=0.5, replicas=2, n_val=500)
    assert np.all(out["error"][0] > 0.25) and np.all(out["error"][1] < 0.06)
    again = tr.sgd_seed(0, theta=0.8, N=63, w=0.5, m_base=31, s=0, pis=[0.0, 0.3], lam0_range=(0.8, 0.9),
                        eta=4.0, batch=16, steps=1500, tail=0.5, replicas=2, n_val=500)
    assert np.array_equal(out["error"], again["error"])


def test_error_slope_recovers_a_planted_power_law():
    rng = np.random.default_rng(0)
    pis = np.array([1e-3, 1e-2, 1e-1])
    e = np.abs(rng.normal(size=(6, 3, 50))) * pis[None, :, None] ** -0.5
    slope, lo, hi = tr.error_slope(pis, e, 500, np.random.default_rng(1))
    assert lo < -0.5 < hi and abs(slope + 0.5) < 0.05
    with pytest.raises(ValueError, match="shape"):
        tr.error_slope(pis, e[:, :2], 10, rng)


def test_criteria_are_fixed_constants():
    assert tr.SLOPE_BAND == (-0.65, -0.35) and tr.predicted_error_slope() == -0.5
    assert tr.BLIND_MIN_ERROR == 0.1 and tr.RECOVERY_MAX_ERROR == 0.05
