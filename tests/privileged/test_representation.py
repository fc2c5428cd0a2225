"""Laws, exact Bayes predictor and convex fit of the representation-gap experiment."""

import numpy as np
import pytest
from scipy import integrate
from scipy.special import expit

from blindspots.privileged import representation as rp


@pytest.mark.parametrize("shape", rp.SHAPES)
@pytest.mark.parametrize("var", [1.0, 2.5])
def test_laws_are_normalised_with_the_stated_variance(shape, var):
    dens = lambda x: np.exp(rp.log_density(shape, var, x))
    assert integrate.quad(dens, -np.inf, np.inf)[0] == pytest.approx(1.0, abs=1e-9)
    assert integrate.quad(lambda x: x * x * dens(x), -np.inf, np.inf)[0] == pytest.approx(var, rel=1e-8)


@pytest.mark.parametrize("shape", rp.SHAPES)
def test_sampler_matches_the_density(shape):
    task = rp.TwoShapeTask(shapes=(shape, shape))
    draws = rp.sample_tasks(task, 200_000, 1, np.random.default_rng(0))["context"][:, 0]
    # second moment of the contaminated law: (1 - pi) + pi * gamma
    expect = 1 - task.anomaly_rate + task.anomaly_rate * task.inflation
    assert np.mean(draws ** 2) == pytest.approx(expect, abs=5 * np.std(draws ** 2) / np.sqrt(len(draws)))


def test_bayes_predictor_equals_direct_product_formula():
    task = rp.TwoShapeTask()
    rng = np.random.default_rng(1)
    s = rp.sample_tasks(task, 4, 6, rng)
    lp = rp.label_logprobs_given_context(task, s["context"], s["x"])

    def mix(k, x):
        v = task.variances[k]
        sh = task.shapes[k]
        return ((1 - task.anomaly_rate) * np.exp(rp.log_density(sh, v, x))
                + task.anomaly_rate * np.exp(rp.log_density(sh, task.inflation * v, x)))

    for t in range(4):
        ws = np.array([np.prod(mix(k, s["context"][t])) for k in (0, 1)])
        ws /= ws.sum()
        pa = sum(ws[k] * task.anomaly_rate * np.exp(rp.log_density(task.shapes[k], task.inflation * task.variances[k], s["x"][t]))
                 for k in (0, 1))
        px = sum(ws[k] * mix(k, s["x"][t]) for k in (0, 1))
        assert np.exp(lp[t, 1]) == pytest.approx(pa / px, rel=1e-10)


def test_fit_read_out_recovers_a_logistic_model():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(200_000, 3))
    w = np.array([1.0, -2.0, 0.5])
    y = (rng.random(len(X)) < expit(0.3 + X @ w)).astype(float)
    pred = rp.fit_read_out(X, y)
    z = pred(X)[:, 1] - pred(X)[:, 0]
    np.testing.assert_allclose(z, 0.3 + X @ w, atol=0.05)


def test_design_has_the_bilinear_size():
    ctx = np.random.default_rng(3).normal(size=(5, 20))
    assert rp.design(ctx, ctx[:, 0]).shape == (5, 4 * 3 - 1)
    assert rp.design(ctx, ctx[:, 0], with_meta=True).shape == (5, 4 * 12 - 1)


@pytest.mark.parametrize("kwargs, name", [
    ({"shapes": ("gauss", "cauchy")}, "shapes"), ({"variances": (1.0, 0.0)}, "variances"),
    ({"anomaly_rate": 0.0}, "anomaly_rate"), ({"inflation": 0.5}, "inflation"),
])
def test_bad_task_raises_naming_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=name):
        rp.TwoShapeTask(**kwargs)


def test_bad_context_feature_raises():
    with pytest.raises(ValueError, match="psi"):
        rp.context_summary(np.zeros((2, 3)), psi=("x3",))


# ----------------------------------------------------------------------------- n -> infinity limits
SHAPE = rp.TwoShapeTask(shapes=("gauss", "bimodal"))
CONTROL = rp.TwoShapeTask(shapes=("gauss", "gauss"), variances=(1.0, 4.0))


def test_quadrature_bayes_risk_equals_monte_carlo():
    s = rp.sample_tasks(SHAPE, 400_000, 1, np.random.default_rng(7))
    loss = -rp.label_logprobs_given_generator(SHAPE, s["s"], s["x"])[np.arange(len(s["x"])), s["y"]]
    se = loss.std(ddof=1) / np.sqrt(len(loss))
    assert rp.bayes_risk_given_shape(SHAPE) == pytest.approx(loss.mean(), abs=4 * se)


@pytest.mark.parametrize("task", [SHAPE, CONTROL])
def test_limits_are_converged_in_the_grid(task):
    for f in (rp.bayes_risk_given_shape, rp.shape_blind_excess, rp.per_shape_excess):
        assert f(task, 20_001) == pytest.approx(f(task, 80_001), abs=1e-8)  # Newton stops near 1e-10


def test_epsilon_phi_vanishes_for_gaussian_shapes():
    # a Gaussian scale mixture's log-odds is quadratic in x, which span(1, x, |x|, x^2) contains
    assert abs(rp.per_shape_excess(CONTROL)) < 1e-10
    assert rp.per_shape_excess(SHAPE) >= -1e-12


def test_shape_blind_limit_equals_a_fitted_blind_rule():
    rng = np.random.default_rng(8)
    s = rp.sample_tasks(SHAPE, 400_000, 1, rng)
    t = rp.sample_tasks(SHAPE, 400_000, 1, rng)
    pred = rp.fit_read_out(rp.query_features(s["x"])[:, 1:], s["y"])
    rows = np.arange(len(t["x"]))
    d = (-pred(rp.query_features(t["x"])[:, 1:])[rows, t["y"]]
         + rp.label_logprobs_given_generator(SHAPE, t["s"], t["x"])[rows, t["y"]])
    assert rp.shape_blind_excess(SHAPE) == pytest.approx(d.mean(), abs=4 * d.std(ddof=1) / np.sqrt(len(d)) + 1e-4)


def test_plain_limit_exceeds_epsilon_phi_when_moments_agree():
    assert rp.shape_blind_excess(SHAPE) > rp.per_shape_excess(SHAPE) + 0.01
    assert rp.shape_blind_excess(CONTROL) > rp.per_shape_excess(CONTROL)


def test_fit_optimism_is_p_over_2n_for_a_well_specified_model():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(100_000, 3))
    y = (rng.random(len(X)) < expit(0.3 + X @ np.array([1.0, -2.0, 0.5]))).astype(float)
    assert rp.fit_read_out(X, y).optimism == pytest.approx(4 / (2 * len(y)), rel=0.1)


def test_one_chunk_per_split_gives_the_unchunked_result():
    task = rp.TwoShapeTask()
    whole = rp.representation_gaps(task, 20, 2_000, 1_500, np.random.default_rng(3))
    one = rp.representation_gaps(task, 20, 2_000, 1_500, np.random.default_rng(3), chunk=2_000)
    assert whole == one


def test_chunked_gaps_agree_with_unchunked_within_their_errors():
    # chunks draw other tasks, so the two runs are independent samples of the same population gaps
    task = rp.TwoShapeTask()
    whole = rp.representation_gaps(task, 20, 6_000, 6_000, np.random.default_rng(4))
    chunked = rp.representation_gaps(task, 20, 6_000, 6_000, np.random.default_rng(5), chunk=1_700)
    for key in ("R_D", "gap_plain", "gap_meta", "shrink"):
        assert abs(whole[key] - chunked[key]) < 5 * np.hypot(whole[key + "_se"], chunked[key + "_se"]), key
    assert whole["params_meta"] == chunked["params_meta"]


def test_chunk_sizes_cover_the_tasks_in_order():
    assert rp._chunk_sizes(10, 4, "fit_tasks") == [4, 4, 2]
    assert rp._chunk_sizes(10, None, "fit_tasks") == [10]
    assert rp._chunk_sizes(10, 10, "fit_tasks") == [10]


@pytest.mark.parametrize("kwargs,name", [({"chunk": 0}, "chunk"), ({"chunk": 2.5}, "chunk"),
                                         ({"fit_tasks": 1}, "fit_tasks"), ({"test_tasks": 1}, "test_tasks")])
def test_bad_chunking_raises_naming_the_parameter(kwargs, name):
    args = {"fit_tasks": 100, "test_tasks": 100, **kwargs}
    chunk = args.pop("chunk", None)
    with pytest.raises(ValueError, match=name):
        rp.representation_gaps(rp.TwoShapeTask(), 5, args["fit_tasks"], args["test_tasks"],
                                np.random.default_rng(0), chunk=chunk)
