"""PIQL's task priors: shapes, ranges, labels correct by construction, seeds, and bad input."""

import numpy as np
import pytest
from scipy import stats

from blindspots.privileged import priors as P

D_MAX = 5
PRIORS = {
    "gmm": P.GMMPrior(d_max=D_MAX, n_context=40, n_query=12),
    "scm": P.SCMPrior(d_max=D_MAX, n_context=40, n_query=12),
    "copula": P.CopulaPrior(d_max=D_MAX, n_context=40, n_query=12),
    "mixture": P.MixturePrior(d_max=D_MAX, n_context=40, n_query=12),
}


@pytest.mark.parametrize("name", sorted(PRIORS))
def test_batches_have_the_configured_shapes_padding_and_labels(name):
    b = PRIORS[name].sample_batch(30, np.random.default_rng(0))
    assert b.context_x.shape == (30, 40, D_MAX) and b.query_x.shape == (30, 12, D_MAX)
    assert b.context_y.shape == (30, 40) and b.query_y.shape == (30, 12)
    assert set(np.unique(np.concatenate([b.context_y.ravel(), b.query_y.ravel()]))) <= {0, 1}
    dims = np.array([g.dim for g in b.generators])
    assert np.array_equal(b.feature_mask.sum(axis=1), dims)
    assert dims.min() >= (2 if name == "copula" else 1) and dims.max() <= D_MAX
    for x in (b.context_x, b.query_x):
        padded = ~b.feature_mask[:, None, :].repeat(x.shape[1], axis=1)
        assert np.all(x[padded] == 0) and np.all(np.isfinite(x))
    # the first features are the real ones
    assert all(np.array_equal(m, np.arange(D_MAX) < d) for m, d in zip(b.feature_mask, dims))


def test_gmm_generators_lie_in_piqls_ranges():
    prior = PRIORS["gmm"]
    rng = np.random.default_rng(1)
    for _ in range(200):
        g = prior.sample_generator(rng)
        mu, var = np.asarray(g.means), np.asarray(g.variances)
        assert 2 <= g.components <= 5 and 1 <= g.dim <= D_MAX
        # U(0,1) * randint(-M, M) with M <= 5 (upper end excluded) and max(U, 0.01) * randint(1, V), V <= 5
        assert np.all(mu > -5) and np.all(mu < 4)
        assert np.all(var >= 0.01) and np.all(var < 4)
        assert g.inflation == 5.0 and len(g.sub_dims) >= 1
        assert list(g.sub_dims) == sorted(set(g.sub_dims)) and max(g.sub_dims) < g.dim


def _independent_min_sq_mahalanobis(g, x):
    """r^2 by an explicit loop (not the generator's vectorised code)."""
    out = []
    for row in x:
        best = np.inf
        for mu, var in zip(g.means, g.variances):
            best = min(best, sum((row[j] - mu[j]) ** 2 / var[j] for j in g.sub_dims))
        out.append(best)
    return np.array(out)


def test_gmm_labels_follow_the_chi_square_rule_under_their_generator():
    rng = np.random.default_rng(2)
    prior = P.GMMPrior(d_max=4, n_context=60, n_query=20, anomaly_rate=0.3)
    checked = 0
    for _ in range(25):
        t = prior.sample_task(rng)
        g = t.generator
        x = np.concatenate([t.context_x, t.query_x])[:, :g.dim]
        y = np.concatenate([t.context_y, t.query_y])
        r2 = _independent_min_sq_mahalanobis(g, x)
        df = len(g.sub_dims)
        assert np.all(r2[y == 0] < stats.chi2.ppf(0.85, df))
        assert np.all(r2[y == 1] > stats.chi2.ppf(0.95, df))
        checked += len(y)
    assert checked == 25 * 80


def test_gmm_anomalies_are_drawn_from_the_inflated_covariance():
    # 1-d, one component of variance 1 at 0: anomalies are N(0, 5) conditioned on x^2 > chi2_1(0.95)
    g = P.GMMGenerator(((0.0,), (50.0,)), ((1.0,), (1.0,)), (0,))
    x = g.sample(np.ones(20_000, dtype=int), np.random.default_rng(3))[:, 0]
    near = x[np.abs(x) < 25]
    q = stats.chi2.ppf(0.95, 1)
    # P(|X| > a | |X| > sqrt(q)) for X ~ N(0, 5) at a = 4
    expect = stats.norm.sf(4 / np.sqrt(5)) / stats.norm.sf(np.sqrt(q / 5))
    se = np.sqrt(expect * (1 - expect) / len(near))
    assert abs(np.mean(np.abs(near) > 4) - expect) < 4 * se


def test_anomaly_rate_matches_the_configured_rate():
    prior = P.MixturePrior(d_max=3, n_context=50, n_query=50, anomaly_rate=0.2)
    b = prior.sample_batch(80, np.random.default_rng(4))
    y = np.concatenate([b.context_y.ravel(), b.query_y.ravel()])
    assert abs(y.mean() - 0.2) < 4 * np.sqrt(0.2 * 0.8 / y.size)


def test_scm_generators_and_noise_anomalies():
    prior = P.SCMPrior(d_max=D_MAX)
    rng = np.random.default_rng(5)
    kept = []
    for _ in range(40):
        g = prior.sample_generator(rng)
        assert 3 <= g.layers <= 7 and 20 <= g.width <= 40 and g.keep_prob == 0.6
        assert set(g.anomaly_nodes) <= set(g.feature_nodes) and len(g.anomaly_nodes) >= 1
        assert min(g.feature_nodes) >= g.width  # features are non-root nodes
        kept += [np.mean(w != 0) for w, _ in g.weights()]
        # same noise draws: inliers and anomalies differ only at or after the first anomalous layer
        x0 = g.sample(np.zeros(50, dtype=int), np.random.default_rng(6))
        x1 = g.sample(np.ones(50, dtype=int), np.random.default_rng(6))
        layer = np.array(g.feature_nodes) // g.width
        first = min(n // g.width for n in g.anomaly_nodes)
        np.testing.assert_array_equal(x0[:, layer < first], x1[:, layer < first])
        anom_cols = [g.feature_nodes.index(n) for n in g.anomaly_nodes]
        assert np.all(np.abs(x1[:, anom_cols] - x0[:, anom_cols]).max(axis=0) > 0)
    assert abs(np.mean(kept) - 0.6) < 0.03


def test_copula_anomalies_reflect_the_uniforms_and_keep_the_marginals():
    prior = PRIORS["copula"]
    rng = np.random.default_rng(7)
    for _ in range(10):
        g = prior.sample_generator(rng)
        x0 = g.sample(np.zeros(30, dtype=int), np.random.default_rng(8))
        x1 = g.sample(np.ones(30, dtype=int), np.random.default_rng(8))
        for j, (name, shape, loc, scale) in enumerate(g.marginals):
            law = P._marginal(name, shape)
            if j in g.reflect_dims:
                u = law.cdf((x0[:, j] - loc) / scale)
                np.testing.assert_allclose(x1[:, j], loc + scale * law.ppf(1 - u), rtol=1e-6, atol=1e-6)
            else:
                np.testing.assert_array_equal(x1[:, j], x0[:, j])


def _tau_tolerance(n):
    """5 standard errors of Kendall's tau under independence (its largest variance near 0 dependence)."""
    return 5 * np.sqrt(2 * (2 * n + 5) / (9 * n * (n - 1)))


@pytest.mark.parametrize("kind", ["clayton", "gaussian"])
def test_copula_dependence_matches_kendalls_tau_and_anomalies_flip_it(kind):
    margins = (("gamma", 2.0, 0.0, 1.0), ("t", 3.0, 1.0, 2.0))
    if kind == "clayton":
        g = P.CopulaGenerator("clayton", margins, (1,), theta=2.0)
        tau = 2.0 / (2.0 + 2.0)  # theta / (theta + 2)
    else:
        g = P.CopulaGenerator("gaussian", margins, (1,), correlation=((1.0, 0.6), (0.6, 1.0)))
        tau = 2 / np.pi * np.arcsin(0.6)
    n = 2000
    x0 = g.sample(np.zeros(n, dtype=int), np.random.default_rng(9))
    x1 = g.sample(np.ones(n, dtype=int), np.random.default_rng(10))
    assert abs(stats.kendalltau(x0[:, 0], x0[:, 1])[0] - tau) < _tau_tolerance(n)
    assert abs(stats.kendalltau(x1[:, 0], x1[:, 1])[0] + tau) < _tau_tolerance(n)


def test_mixture_draws_every_family_and_respects_weights():
    rng = np.random.default_rng(11)
    fam = [P.MixturePrior(d_max=3).sample_generator(rng).family for _ in range(90)]
    assert set(fam) == set(P.FAMILIES)
    only = P.MixturePrior(d_max=3, weights=(1.0, 0.0, 0.0))
    assert {only.sample_generator(rng).family for _ in range(20)} == {"gmm"}


@pytest.mark.parametrize("name", sorted(PRIORS))
def test_a_seed_fixes_the_tasks(name):
    a = PRIORS[name].sample_batch(6, np.random.default_rng(12))
    b = PRIORS[name].sample_batch(6, np.random.default_rng(12))
    c = PRIORS[name].sample_batch(6, np.random.default_rng(13))
    for k in ("context_x", "context_y", "query_x", "query_y", "feature_mask"):
        np.testing.assert_array_equal(getattr(a, k), getattr(b, k))
    assert a.generators == b.generators
    assert not np.array_equal(a.context_x, c.context_x)


def test_make_task_pads_real_data():
    t = P.make_task(np.ones((5, 2)), [0, 0, 1, 0, 0], np.zeros((3, 2)), d_max=4)
    assert t.context_x.shape == (5, 4) and t.dim == 2 and t.family == "real"
    assert np.array_equal(t.query_y, [-1, -1, -1])


@pytest.mark.parametrize("kwargs, match", [
    (dict(context_x=np.ones((5, 6)), query_x=np.ones((2, 6))), r"between 1 and d_max = 4 features, got 6"),
    (dict(context_x=np.ones((0, 2)), query_x=np.ones((2, 2))), "context_x must hold at least one point"),
    (dict(context_x=np.array([[1.0, np.nan]] * 5), query_x=np.ones((2, 2))), "context_x must be finite"),
    (dict(context_x=np.ones((5, 2)), query_x=np.array([[np.inf, 0.0]])), "query_x must be finite"),
    (dict(context_x=np.ones((5, 2)), query_x=np.ones((2, 3))), "same number of features"),
])
def test_make_task_rejects_bad_data(kwargs, match):
    y = [0] * len(kwargs["context_x"])
    with pytest.raises(ValueError, match=match):
        P.make_task(kwargs["context_x"], y, kwargs["query_x"], d_max=4)


def test_make_task_rejects_bad_labels():
    with pytest.raises(ValueError, match=r"context_y must be 3 labels in \{0, 1\}"):
        P.make_task(np.ones((3, 1)), [0, 2, 0], np.ones((1, 1)), d_max=2)


@pytest.mark.parametrize("cls, kwargs, match", [
    (P.GMMPrior, dict(d_max=0), "d_max must be >= 1, got 0"),
    (P.GMMPrior, dict(d_max=3, d_min=4), r"d_min must lie in \[1, 3\]"),
    (P.GMMPrior, dict(n_context=0), "n_context must be >= 1"),
    (P.GMMPrior, dict(n_query=2.5), "n_query must be an integer"),
    (P.GMMPrior, dict(anomaly_rate=1.0), r"anomaly_rate must lie in \(0, 1\)"),
    (P.GMMPrior, dict(components=(3, 2)), "components must satisfy"),
    (P.GMMPrior, dict(inflation=1.0), "inflation must be > 1"),
    (P.SCMPrior, dict(keep_prob=0.0), "keep_prob"),
    (P.CopulaPrior, dict(d_max=1), "d_max must be >= 2 for the copula prior"),
    (P.MixturePrior, dict(weights=(1.0, -1.0, 1.0)), "weights must be 3 non-negative"),
    (P.MixturePrior, dict(d_max=1), "d_max must be >= 2 when the copula family has positive weight"),
    (P.MixturePrior, dict(families=("gmm", "tabpfn")), "families must be a non-empty subset"),
])
def test_priors_reject_bad_settings(cls, kwargs, match):
    with pytest.raises(ValueError, match=match):
        cls(**kwargs)


def test_sample_batch_rejects_no_tasks():
    with pytest.raises(ValueError, match="tasks must be >= 1"):
        PRIORS["gmm"].sample_batch(0, np.random.default_rng(0))


@pytest.mark.parametrize("kind", ["clayton", "gaussian"])
def test_copula_uniforms_are_uniform_marginally(kind):
    """Kendall's tau is rank-based and cannot see a wrong marginal transform; a KS test can
    (critical value 1.95 / sqrt(n) at level 0.001, fixed in advance)."""
    margins = (("gamma", 2.0, 0.0, 1.0),) * 3
    corr = ((1.0, 0.5, 0.2), (0.5, 1.0, 0.3), (0.2, 0.3, 1.0))
    g = (P.CopulaGenerator("clayton", margins, (0,), theta=3.0) if kind == "clayton"
         else P.CopulaGenerator("gaussian", margins, (0,), correlation=corr))
    n = 4000
    u = g.uniforms(n, np.random.default_rng(14))
    for j in range(3):
        assert stats.kstest(u[:, j], "uniform").statistic < 1.95 / np.sqrt(n)


@pytest.mark.parametrize("name, shape", [("lognormal", 0.7), ("gamma", 2.5), ("t", 3.0), ("weibull", 1.7)])
def test_marginal_ppf_is_scipys_quantile_function(name, shape):
    u = np.linspace(1e-6, 1 - 1e-6, 101)
    np.testing.assert_allclose(P.marginal_ppf(name, shape, u), P._marginal(name, shape).ppf(u), rtol=1e-12, atol=0)
    with pytest.raises(ValueError, match="marginal"):
        P.marginal_ppf("cauchy", 1.0, u)
