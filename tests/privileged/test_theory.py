"""Exact posteriors of the Gaussian anomaly prior, checked against brute-force integration."""

import math

import numpy as np
import pytest
from scipy import integrate

from blindspots.privileged import theory as th

PRIOR = th.GaussianAnomalyPrior(d=1, anomaly_rate=0.2, inflation=4.0, m0=0.3, k0=0.7, a0=2.5, b0=1.5)
CX = np.array([[[0.4], [1.9], [-0.2]]])
CY = np.array([[0, 1, 0]])


def _log_normal(x, mean, var):
    return -0.5 * math.log(2 * math.pi * var) - 0.5 * (x - mean) ** 2 / var


def _joint(mu, var, x_new=None, c=None):
    """Prior density times likelihood of the context (and of a new point of scale c), by hand."""
    a0, b0 = PRIOR.a0, PRIOR.b0
    lp = a0 * math.log(b0) - math.lgamma(a0) - (a0 + 1) * math.log(var) - b0 / var  # inverse gamma
    lp += _log_normal(mu, PRIOR.m0, var / PRIOR.k0)
    for xi, yi in zip(CX[0, :, 0], CY[0]):
        lp += _log_normal(float(xi), mu, PRIOR.scales[yi] * var)
    if x_new is not None:
        lp += _log_normal(x_new, mu, c * var)
    return math.exp(lp)


def _integrate(f):
    # integrate over mu in a wide window and over log-variance (Jacobian var)
    val, _ = integrate.dblquad(lambda mu, lv: f(mu, math.exp(lv)) * math.exp(lv), -7.0, 6.0,
                               lambda lv: -10.0, lambda lv: 10.0, epsabs=1e-12, epsrel=1e-8)
    return val


@pytest.mark.parametrize("x_new", [-1.3, 0.5, 3.0])
def test_predictive_equals_brute_force_integral(x_new):
    post = th.posterior(PRIOR, CX, CY)
    lp = th.log_predictive(PRIOR, post, np.array([[x_new]]))[0]
    evidence = _integrate(_joint)
    for c in (0, 1):
        brute = _integrate(lambda mu, v: _joint(mu, v, x_new, PRIOR.scales[c])) / evidence
        assert np.exp(lp[c]) == pytest.approx(brute, rel=1e-6)


def test_posterior_mean_of_mu_equals_brute_force_integral():
    post = th.posterior(PRIOR, CX, CY)
    evidence = _integrate(_joint)
    brute = _integrate(lambda mu, v: mu * _joint(mu, v)) / evidence
    assert post.m[0, 0] == pytest.approx(brute, rel=1e-6)
    # E[sigma^2 | D] = b_n / (a_n - 1)
    brute_var = _integrate(lambda mu, v: v * _joint(mu, v)) / evidence
    assert post.b[0, 0] / (post.a[0, 0] - 1) == pytest.approx(brute_var, rel=1e-6)


def test_label_posterior_given_context_is_normalised_and_matches_bayes_rule():
    post = th.posterior(PRIOR, CX, CY)
    x = np.array([[2.2]])
    lp = th.label_logprobs_given_context(PRIOR, post, x)
    assert np.exp(lp).sum() == pytest.approx(1.0, abs=1e-12)
    pred = np.exp(th.log_predictive(PRIOR, post, x)[0])
    direct = PRIOR.anomaly_rate * pred[1] / (PRIOR.anomaly_rate * pred[1] + (1 - PRIOR.anomaly_rate) * pred[0])
    assert np.exp(lp[0, 1]) == pytest.approx(direct, rel=1e-12)


def test_label_posterior_does_not_underflow_far_from_the_data():
    prior = th.GaussianAnomalyPrior(d=50)
    rng = np.random.default_rng(0)
    mu, var = th.sample_generators(prior, 3, rng)
    x = mu + 1e3 * np.sqrt(var)
    lp = th.label_logprobs_given_generator(prior, mu, var, x)
    assert np.all(np.isfinite(lp)) and np.allclose(np.exp(lp).sum(axis=1), 1.0)


def test_posterior_from_class_stats_equals_posterior_from_points():
    prior = th.GaussianAnomalyPrior(d=3)
    rng = np.random.default_rng(1)
    mu, var = th.sample_generators(prior, 5, rng)
    x, y = th.sample_points(prior, mu, var, 17, rng)
    post = th.posterior(prior, x, y)
    # weighted sums by hand
    w = 1.0 / prior.scales[y]
    k = prior.k0 + w.sum(axis=1)[:, None]
    m = (prior.k0 * prior.m0 + (w[..., None] * x).sum(axis=1)) / k
    b = prior.b0 + 0.5 * ((w[..., None] * x ** 2).sum(axis=1) + prior.k0 * prior.m0 ** 2 - k * m ** 2)
    np.testing.assert_allclose(post.m, m, rtol=1e-12)
    np.testing.assert_allclose(post.b, b, rtol=1e-10)
    np.testing.assert_allclose(post.a, prior.a0 + 17 / 2)


def test_gap_curve_from_sufficient_statistics_matches_gap_from_points():
    prior = th.GaussianAnomalyPrior(d=2)
    tasks = 40_000
    curve = th.information_gap_curve(prior, np.array([1, 4]), tasks, np.random.default_rng(2))
    rng = np.random.default_rng(3)
    for i, n in enumerate((1, 4)):
        mu, var = th.sample_generators(prior, tasks, rng)
        x, y = th.sample_points(prior, mu, var, n + 1, rng)
        post = th.posterior(prior, x[:, :n], y[:, :n])
        kl = th.bernoulli_kl(th.label_logprobs_given_generator(prior, mu, var, x[:, n]),
                             th.label_logprobs_given_context(prior, post, x[:, n]))
        se = np.hypot(kl.std() / np.sqrt(tasks), curve["gap_se"][i])
        assert abs(kl.mean() - curve["gap"][i]) < 4 * se


def test_sampled_label_gap_equals_kl_gap():
    """R_D - R_G from the drawn query labels equals E KL (part 1 of the theorem), two independent estimators."""
    prior = th.GaussianAnomalyPrior(d=2)
    curve = th.information_gap_curve(prior, np.array([1, 10, 100]), 200_000, np.random.default_rng(4))
    assert np.all(curve["gap"] >= 0)
    np.testing.assert_allclose(curve["R_D"] - curve["R_G"], curve["gap_sampled"], rtol=1e-9, atol=1e-12)
    # the sampled-label estimator does not reuse the KL: the per-task difference has spread
    assert np.all(curve["check_se"] > 0.1 * curve["gap_sampled_se"])
    assert np.all(np.abs(curve["gap_sampled"] - curve["gap"]) < 4 * curve["check_se"])
    # the label-averaged R_G (entropy) and the sampled one agree too
    assert abs(curve["H_G"] - curve["R_G"]) < 4 * curve["R_G_se"]


def test_sampled_label_gap_detects_a_wrong_label_law():
    """If the query labels were drawn at a wrong anomaly rate, the two estimators would disagree."""
    prior = th.GaussianAnomalyPrior(d=2)
    wrong = th.GaussianAnomalyPrior(d=2, anomaly_rate=0.3)
    rng = np.random.default_rng(5)
    tasks = 100_000
    mu, var = th.sample_generators(prior, tasks, rng)
    x, y = th.sample_points(wrong, mu, var, 11, rng)
    post = th.posterior(prior, x[:, :10], y[:, :10])
    rows = np.arange(tasks)
    lp_g = th.label_logprobs_given_generator(prior, mu, var, x[:, 10])
    lp_d = th.label_logprobs_given_context(prior, post, x[:, 10])
    ck = (lp_g[rows, y[:, 10]] - lp_d[rows, y[:, 10]]) - th.bernoulli_kl(lp_g, lp_d)
    assert abs(ck.mean()) > 4 * ck.std() / np.sqrt(tasks)


def test_loglog_slope_recovers_an_exact_power_law():
    ns = np.array([10, 100, 1000])
    slope, se, icpt = th.fit_loglog_slope(ns, 3.0 / ns, np.diag((1e-3 / ns) ** 2), 10)
    assert slope == pytest.approx(-1.0, abs=1e-12) and icpt == pytest.approx(np.log(3.0))
    assert se > 0


def test_two_term_fit_recovers_constants():
    ns = np.array([10.0, 30.0, 100.0, 300.0])
    gap = 0.3 / ns - 0.5 / ns ** 2
    C, C_se, B, _ = th.fit_two_term(ns, gap, np.diag((1e-4 / ns) ** 2), 10)
    assert C == pytest.approx(0.3, rel=1e-10) and B == pytest.approx(-0.5, rel=1e-8)


@pytest.mark.parametrize("kwargs, name", [
    ({"d": 0}, "d"), ({"anomaly_rate": 1.0}, "anomaly_rate"), ({"inflation": 1.0}, "inflation"),
    ({"k0": 0.0}, "k0"), ({"a0": -1.0}, "a0"), ({"b0": float("inf")}, "b0"),
])
def test_bad_prior_raises_naming_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=name):
        th.GaussianAnomalyPrior(**kwargs)


def test_bad_grid_raises():
    prior = th.GaussianAnomalyPrior()
    with pytest.raises(ValueError, match="ns"):
        th.information_gap_curve(prior, np.array([5, 5]), 10, np.random.default_rng(0))
    with pytest.raises(ValueError, match="tasks"):
        th.information_gap_curve(prior, np.array([1, 2]), 0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="n_min"):
        th.fit_loglog_slope([1, 2], [1.0, 0.5], np.eye(2), 5)


@pytest.mark.parametrize("d", [1, 3])
def test_asymptotic_constant_is_below_its_linear_bound(d):
    a = th.GaussianAnomalyPrior(d=d)
    ca, _ = th.asymptotic_gap_constant(a, 20_000, np.random.default_rng(0))
    assert 0 < ca <= th.asymptotic_gap_bound(a)
    assert th.asymptotic_gap_bound(a) == pytest.approx(d * th.asymptotic_gap_bound(th.GaussianAnomalyPrior(d=1)))


def test_asymptotic_constant_equals_quadrature_in_one_dimension():
    """For d = 1 the Monte Carlo constant equals a deterministic integral over the standardised query."""
    prior = th.GaussianAnomalyPrior(d=1)
    pi, gamma = prior.anomaly_rate, prior.inflation
    a = 0.5 * (1 - 1 / gamma)
    wbar = 1 - pi + pi / gamma

    def integrand(zz):
        f0 = (1 - pi) * math.exp(-0.5 * zz * zz) / math.sqrt(2 * math.pi)
        f1 = pi * math.exp(-0.5 * zz * zz / gamma) / math.sqrt(2 * math.pi * gamma)
        p = f1 / (f0 + f1)
        return (f0 + f1) * 0.5 * p * (1 - p) * a ** 2 * (4 * zz ** 2 / wbar + 2 * zz ** 4)

    exact, _ = integrate.quad(integrand, -60.0, 60.0, epsabs=1e-13, limit=200)
    C, C_se = th.asymptotic_gap_constant(prior, 400_000, np.random.default_rng(1))
    assert abs(C - exact) < 4 * C_se
    assert C_se < 0.01 * exact


def test_context_posterior_is_calibrated_on_labels_from_the_prior():
    prior = th.GaussianAnomalyPrior()
    c = th.information_gap_curve(prior, np.array([1, 5, 50]), 40_000, np.random.default_rng(11), chunk=20_000)
    assert np.all(np.abs(c["calib"]) < 4 * c["calib_se"])
    assert np.all(np.abs(c["calib_ll"]) < 4 * c["calib_ll_se"])


def test_shifted_context_posterior_is_not_calibrated(monkeypatch):
    prior = th.GaussianAnomalyPrior()
    orig = th.label_logprobs_given_context

    def shifted(pr, post, x):
        lp = orig(pr, post, x)
        z = lp[:, 1] - lp[:, 0] + 0.3
        return np.stack([-np.logaddexp(0.0, z), -np.logaddexp(0.0, -z)], axis=-1)

    monkeypatch.setattr(th, "label_logprobs_given_context", shifted)
    c = th.information_gap_curve(prior, np.array([1, 50]), 40_000, np.random.default_rng(11), chunk=20_000)
    assert np.all(np.abs(c["calib"]) > 6 * c["calib_se"])
    # the label-vs-KL identity does not notice: it holds for any predictor
    assert np.all(np.abs(c["check"]) < 4 * c["check_se"])
