"""Estimators of the residual mode uncertainty (masked/08_real_text): sides, censoring, Markov control, fits."""

import itertools
import math

import numpy as np
import pytest

from blindspots.masked import residual as r

MARKOV = r.MarkovPair(((0.8, 0.2), (0.2, 0.8)), ((0.45, 0.55), (0.55, 0.45)))


def test_visible_spans_are_consecutive_tokens_of_their_window():
    rng = np.random.default_rng(0)
    win = rng.integers(0, 256, size=(20, 50)).astype(np.uint8)
    spans = r.visible_spans(win, 7, rng)
    assert spans.shape == (20, 7)
    for s, w in zip(spans, win):
        assert w.tobytes().find(s.tobytes()) >= 0
    with pytest.raises(ValueError, match=r"k must be an integer in \[1, 50\]"):
        r.visible_spans(win, 51, rng)


def test_brier_score_is_u_plus_squared_posterior_error():
    # a discrete world: x in {0..4}, P(x), omega(x); predictor b(x)
    px = np.array([0.1, 0.3, 0.2, 0.25, 0.15])
    omega = np.array([0.05, 0.4, 0.5, 0.7, 0.99])
    b = np.array([0.2, 0.2, 0.6, 0.9, 0.9])
    U = np.sum(px * omega * (1 - omega))
    brier = np.sum(px * (omega * (1 - b) ** 2 + (1 - omega) * b**2))
    assert brier == pytest.approx(U + np.sum(px * (b - omega) ** 2), abs=1e-15)
    assert brier >= U
    assert np.sum(px * (omega * (1 - omega) ** 2 + (1 - omega) * omega**2)) == pytest.approx(U, abs=1e-15)


def test_ngram_conditionals_sum_to_one():
    rng = np.random.default_rng(1)
    train = rng.integers(97, 101, size=(50, 40)).astype(np.uint8)
    model = r.BackoffNgram(3).fit(train)
    context = np.array([97, 98], dtype=np.uint8)
    spans = np.stack([np.concatenate([context, [x]]) for x in range(256)]).astype(np.uint8)
    lp, reached = model.token_log_probs(spans)
    assert np.exp(lp[:, 2]).sum() == pytest.approx(1.0, abs=1e-12)
    assert reached[0, 2] == 2  # the context "ab" was seen
    with pytest.raises(ValueError, match="order must be"):
        r.BackoffNgram(9)


def _brute_u(pair, k):
    Pa, Pb = pair.matrices()
    pa0 = pb0 = np.array([0.5, 0.5])
    u = 0.0
    for x in itertools.product(range(2), repeat=k):
        pa, pb = pa0[x[0]], pb0[x[0]]
        for s, t in zip(x, x[1:]):
            pa, pb = pa * Pa[s, t], pb * Pb[s, t]
        p = pair.w * pa + (1 - pair.w) * pb
        om = pair.w * pa / p
        u += p * om * (1 - om)
    return u


@pytest.mark.parametrize("k", [1, 2, 3, 5, 8])
def test_markov_exact_uncertainty_matches_brute_force(k):
    assert r.markov_exact_uncertainty(MARKOV, k) == pytest.approx(_brute_u(MARKOV, k), rel=1e-12)


def test_markov_exact_uncertainty_edges():
    assert r.markov_exact_uncertainty(MARKOV, 0) == 0.25
    assert r.markov_exact_uncertainty(MARKOV, 1) == pytest.approx(0.25, abs=1e-15)  # same stationary law
    us = [r.markov_exact_uncertainty(MARKOV, k) for k in range(1, 17)]
    assert all(b < a for a, b in zip(us[1:], us[2:]))
    with pytest.raises(ValueError, match="k must be"):
        r.markov_exact_uncertainty(MARKOV, 40)
    with pytest.raises(ValueError, match="rows summing to 1"):
        r.MarkovPair(((0.5, 0.6), (0.5, 0.5)), ((0.5, 0.5), (0.5, 0.5))).matrices()


def test_chernoff_rate_of_iid_symmetric_sources_is_bhattacharyya():
    p = 0.8
    iid = r.MarkovPair(((p, 1 - p), (p, 1 - p)), ((1 - p, p), (1 - p, p)))
    assert r.markov_chernoff_rate(iid) == pytest.approx(-math.log(2 * math.sqrt(p * (1 - p))), rel=1e-9)


def test_local_decay_of_exact_markov_u_approaches_the_chernoff_rate_from_above():
    rate = r.markov_chernoff_rate(MARKOV)
    local = [math.log(r.markov_exact_uncertainty(MARKOV, k) / r.markov_exact_uncertainty(MARKOV, k + 2)) / 2
             for k in (6, 10, 14, 18)]
    assert all(a > b for a, b in zip(local, local[1:]))
    assert all(x > rate for x in local)


def test_ngram_estimator_recovers_markov_u_and_classifier_stays_above():
    rng = np.random.default_rng(3)
    x_tr, y_tr = r.markov_windows(MARKOV, 1500, 64, rng)
    x_te, y_te = r.markov_windows(MARKOV, 1500, 64, rng)
    boot = r.resample_weights(np.arange(len(y_te)), 200, rng)
    floor = r.calibration_floor(len(y_te))
    cells = r.ngram_cells(x_tr, y_tr, x_te, y_te, boot, floor, [4, 8, 12], 2, rng)
    for c in cells:
        exact = r.markov_exact_uncertainty(MARKOV, c.k)
        assert abs(c.u - exact) < 4 * c.se()
        assert abs(c.brier - exact) < 4 * c.se("brier")
    clf = r.classifier_cells(x_tr, y_tr, np.arange(len(y_tr)), x_te, y_te, boot, floor, [8], rng, n_buckets=256)
    assert clf[0].brier > r.markov_exact_uncertainty(MARKOV, 8) - 4 * clf[0].se("brier")


def test_a_posterior_that_ignores_the_context_sits_at_the_prior():
    rng = np.random.default_rng(4)
    x, y = r.markov_windows(MARKOV, 300, 32, rng)
    boot = r.resample_weights(np.arange(len(y)), 50, rng)
    cells = r.ngram_cells(x, y, x, y, boot, 0.01, [8], 1, rng)  # order 1: no context
    assert cells[0].u == pytest.approx(0.25, abs=2e-3)


def test_censoring_rules():
    assert r.censor_reason(0.10, 0.15, 0.01) == ""
    assert r.censor_reason(0.10, 0.25, 0.01) == "calibration"  # Brier > 2 U
    assert r.censor_reason(0.10, 0.20, 0.01) == ""  # exactly 2 U passes
    assert r.censor_reason(0.005, 0.006, 0.01) == "floor"
    assert r.censor_reason(0.02, 0.004, 0.01) == "floor"
    assert r.censor_reason(0.0, 0.3, 0.01) == "floor"
    with pytest.raises(ValueError, match="floor must be"):
        r.censor_reason(0.1, 0.1, 0.0)
    assert r.calibration_floor(300) == pytest.approx(0.01)
    with pytest.raises(ValueError, match="n_test_docs"):
        r.calibration_floor(0)


def test_bootstrap_resamples_whole_documents():
    rng = np.random.default_rng(5)
    groups = np.repeat(np.arange(10), 5)
    inverse, W = r.resample_weights(groups, 100, rng)
    assert W.shape == (100, 10) and np.all(W.sum(1) == 10)
    # one document's windows all predict 0.5, the others 0: every replicate mean is a multiple of 0.25/10
    p = np.where(groups == 3, 0.5, 0.0)
    cell = r.cell_estimate(1, "t", "lower", p, np.zeros(50), (inverse, W), 0.01)
    assert np.allclose((cell.u_boot * 10 / 0.25) % 1, 0, atol=1e-9)
    assert cell.u == pytest.approx(0.025)
    assert cell.upper_bound() >= cell.floor
    with pytest.raises(ValueError, match="n_boot"):
        r.resample_weights(groups, 5, rng)


def test_span_features_blocks_are_frequencies():
    rng = np.random.default_rng(6)
    spans = rng.integers(0, 256, size=(4, 20)).astype(np.uint8)
    X = r.span_features(spans, "trigram", 64)
    assert X.shape == (4, 256 + 64 + 64)
    assert np.allclose(X[:, :256].sum(1), 1) and np.allclose(X[:, 256:320].sum(1), 1)
    assert np.allclose(X[:, 320:].sum(1), 1)
    with pytest.raises(ValueError, match="richness"):
        r.span_features(spans, "fourgram")


@pytest.mark.parametrize("law", ["exponential", "power"])
def test_decay_fit_recovers_the_law_it_was_given(law):
    k = np.array([8, 16, 32, 64, 128, 256], dtype=float)
    rng = np.random.default_rng(7)
    log_u = (-1.0 - 0.02 * k) if law == "exponential" else (1.0 - 1.3 * np.log(k))
    u = np.exp(log_u + rng.normal(0, 0.01, k.size))
    out = r.compare_decay(k, u, np.full(k.size, 0.01))
    assert out["better"] == law
    assert out["fits"][law].rate == pytest.approx(0.02 if law == "exponential" else 1.3, rel=0.05)


def test_context_for_discrepancy_inverts_the_fit():
    fit = r.DecayFit("power", 1.0, 2.0, 0.0, 0.0, np.array([1.0]))
    k = r.context_for_discrepancy(fit, math.log(1e-4))
    assert fit.predict_log([k])[0] == pytest.approx(math.log(1e-4))
    exp_fit = r.DecayFit("exponential", 0.0, 0.1, 0.0, 0.0, np.array([1.0]))
    assert r.context_for_discrepancy(exp_fit, -1.0) == pytest.approx(10.0)
    assert r.context_for_discrepancy(r.DecayFit("power", 0.0, 0.0, 0, 0, np.array([1.0])), -1.0) == math.inf


def test_calibrated_ngram_ratio_is_near_bayes_on_markov_sources_beyond_the_lower_side():
    # order 2 is the sources' own model class: the isotonic-calibrated ratio is the posterior up to estimation,
    # so its Brier score (an upper bound on U) meets the exact U within the bootstrap spread, also at k = 24
    rng = np.random.default_rng(3)
    x_tr, y_tr = r.markov_windows(MARKOV, 1500, 64, rng)
    x_te, y_te = r.markov_windows(MARKOV, 1500, 64, rng)
    boot = r.resample_weights(np.arange(len(y_te)), 200, rng)
    cells = r.ngram_ratio_cells(x_tr, y_tr, np.arange(len(y_tr)), x_te, y_te, boot, r.calibration_floor(len(y_te)),
                                [8, 16, 24], 2, rng)
    for c in cells:
        exact = r.markov_exact_uncertainty(MARKOV, c.k)
        assert c.side == "upper" and c.estimator == "2-gram ratio"
        assert abs(c.brier - exact) < 4 * c.se("brier")


def test_calibrated_ngram_ratio_of_identical_sources_predicts_the_prior():
    same = r.MarkovPair(((0.7, 0.3), (0.3, 0.7)), ((0.7, 0.3), (0.3, 0.7)))
    rng = np.random.default_rng(4)
    x, y = r.markov_windows(same, 1000, 32, rng)
    model = r.fit_calibrated_ngram(x, y, np.arange(len(y)), 2, 16, rng)
    x_new, y_new = r.markov_windows(same, 2000, 32, rng)
    err = (y_new - model.predict(r.visible_spans(x_new, 16, rng))) ** 2
    # no predictor beats the prior's 1/4 when the sources are the same; a little overfit only raises it
    assert err.mean() > 0.25 - 4 * err.std() / np.sqrt(err.size)
    with pytest.raises(ValueError, match="too few"):
        r.fit_calibrated_ngram(x[:1], y[:1], np.zeros(1), 2, 8, rng)


def test_joint_upper_bound_is_the_smallest_bonferroni_bound():
    rng = np.random.default_rng(5)
    groups = np.repeat(np.arange(200), 2)
    boot = r.resample_weights(groups, 400, rng)
    y = (np.arange(400) % 2).astype(float)
    good = r.cell_estimate(64, "good", "upper", np.clip(y + rng.normal(0, 0.1, 400), 0, 1), y, boot, 1e-4)
    poor = r.cell_estimate(64, "poor", "upper", np.clip(y + rng.normal(0, 0.4, 400), 0, 1), y, boot, 1e-4)
    joint = r.joint_upper_bound([good, poor])
    assert joint == pytest.approx(good.upper_bound(0.975))
    assert joint >= good.upper_bound(0.95)  # the price of taking the smaller of two bounds
    assert r.joint_upper_bound([good]) == pytest.approx(good.upper_bound(0.95))
    lower = r.cell_estimate(64, "n-gram", "lower", y * 0.9, y, boot, 1e-4)
    other_k = r.cell_estimate(32, "good", "upper", y * 0.9, y, boot, 1e-4)
    for bad, match in (([], "at least one"), ([good, lower], "upper-side cells only"), ([good, other_k], "same U"),):
        with pytest.raises(ValueError, match=match):
            r.joint_upper_bound(bad)
    with pytest.raises(ValueError, match="level must lie in"):
        r.joint_upper_bound([good], level=1.0)


def test_brier_by_document_sums_squared_errors_per_document():
    p = np.array([0.9, 0.1, 0.5, 0.0])
    y = np.array([1.0, 1.0, 0.0, 0.0])
    shares = r.brier_by_document(p, y, np.array([7, 7, 3, 5]))
    total = 0.01 + 0.81 + 0.25
    assert [d for d, _ in shares] == [7, 3, 5]
    assert [s for _, s in shares] == pytest.approx([0.82 / total, 0.25 / total, 0.0])
    with pytest.raises(ValueError, match="same length"):
        r.brier_by_document(p, y, np.array([1, 2]))
