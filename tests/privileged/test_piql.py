"""PIQL's training experiments (chapters 03-04): meta-PI++, the hashed program embedding, metrics, speedups,
the paired per-seed run with its checkpoints, and the real-data recipes."""

import math

import numpy as np
import pytest
import torch
from scipy import stats
from sklearn.metrics import roc_auc_score

from blindspots import claims
from blindspots.privileged import piql, pfn, priors, program, realdata

SMALL = {"prior": {"family": "mixture", "d_max": 3, "n_context": 12, "n_query": 6, "anomaly_rate": 0.2,
                   "context_anomaly_rate": 0.1},
         "model": {"width": 8, "layers": 1, "heads": 2},
         "train": {"steps": 4, "batch": 3, "lr": 3e-3, "embed_weight": 1.0, "eval_every": 2},
         "eval": {"val_tasks": 6, "test_tasks": 6, "probe_train": 12, "probe_test": 9},
         "encoder": {"width": 8, "layers": 1, "prefix": 2, "max_len": 160, "steps": 2, "batch": 4, "lr": 3e-3}}


def squash(m):
    return np.sign(m) * np.log1p(np.abs(m))


# ----------------------------------------------------------------------------- meta-PI++
def test_meta_pi_plus_matches_direct_statistics():
    rng = np.random.default_rng(0)
    x = rng.gamma(2.0, size=(5, 40, 3))
    mask = np.array([[True, True, False]] * 5)
    m = piql.meta_pi_plus(x, mask)
    assert m.shape == (5, piql.meta_pi_plus_size(3)) == (5, 21 * 3 + 3 * 3)
    per = m[:, :3 * 21].reshape(5, 3, 21)
    assert np.all(per[:, 2] == 0)  # padded feature
    names = piql.PER_FEATURE_PLUS
    col = lambda n: names.index(n)  # noqa: E731
    np.testing.assert_allclose(per[:, 0, col("skewness")], squash(stats.skew(x[:, :, 0], axis=1)), atol=1e-12)
    np.testing.assert_allclose(per[:, 1, col("excess kurtosis")], squash(stats.kurtosis(x[:, :, 1], axis=1)), atol=1e-12)
    np.testing.assert_allclose(per[:, 0, col("q90")], squash(np.quantile(x[:, :, 0], 0.9, axis=1)), atol=1e-12)
    pairs = m[:, 3 * 21:].reshape(5, 3, 3)  # pairs (0,1), (0,2), (1,2)
    pear = np.array([np.corrcoef(t[:, 0], t[:, 1])[0, 1] for t in x])
    np.testing.assert_allclose(pairs[:, 0, 0], squash(pear), atol=1e-12)
    spear = np.array([stats.spearmanr(t[:, 0], t[:, 1]).statistic for t in x])
    np.testing.assert_allclose(pairs[:, 0, 1], squash(spear), atol=1e-12)
    assert np.all(pairs[:, 1:] == 0)  # pairs with the padded feature


def test_meta_pi_plus_counts_modes_and_heavy_tails():
    rng = np.random.default_rng(1)
    bimodal = np.concatenate([rng.normal(-6, 0.5, (1, 200, 1)), rng.normal(6, 0.5, (1, 200, 1))], axis=1)
    unimodal = rng.normal(0, 1, (1, 400, 1))
    mask = np.ones((1, 1), dtype=bool)
    modes = lambda x: np.expm1(piql.meta_pi_plus(x, mask)[0, piql.PER_FEATURE_PLUS.index("histogram modes")])  # noqa: E731
    assert round(modes(bimodal)) == 2 and round(modes(unimodal)) == 1
    hill = piql.PER_FEATURE_PLUS.index("Hill tail index of |x - median|")
    heavy = piql.meta_pi_plus(rng.standard_t(1.5, (1, 400, 1)), mask)[0, hill]
    light = piql.meta_pi_plus(rng.normal(size=(1, 400, 1)), mask)[0, hill]
    assert heavy > light  # the Hill estimate of 1/alpha grows with the tail weight


def test_meta_pi_plus_rejects_bad_shapes():
    with pytest.raises(ValueError, match="context_x"):
        piql.meta_pi_plus(np.zeros((2, 1, 3)), np.ones((2, 3), bool))
    with pytest.raises(ValueError, match="feature_mask"):
        piql.meta_pi_plus(np.zeros((2, 5, 3)), np.ones((2, 2), bool))


# ----------------------------------------------------------------------------- hashed program embedding
def test_hashed_encoder_is_frozen_deterministic_and_reads_the_program():
    tok = program.ProgramTokenizer()
    enc = piql.HashedProgramEncoder(tok, width=8, prefix=2, max_len=160)
    assert sum(p.numel() for p in enc.parameters()) == 0
    gens = [priors.GMMPrior(d_max=3).sample_generator(np.random.default_rng(k)) for k in range(4)]
    ids = torch.as_tensor(tok.encode_batch(gens, 160))
    assert enc.text(ids) == [" ".join(program.serialise(g)) for g in gens]
    a, b = enc(ids), piql.HashedProgramEncoder(tok, width=8, prefix=2, max_len=160)(ids)
    assert a.shape == (4, 2, 8) and torch.equal(a, b)
    assert not torch.allclose(a[0], a[1])
    model = pfn.PFN(3, width=8, layers=1, heads=2, program_encoder=enc)  # accepted as a frozen encoder
    assert model.uses_program
    with pytest.raises(ValueError, match="n_features"):
        piql.HashedProgramEncoder(tok, n_features=4)


# ----------------------------------------------------------------------------- metrics and speedups
def test_task_aurocs_match_sklearn_with_ties_and_flag_one_label_rows():
    rng = np.random.default_rng(2)
    y = rng.random((20, 15)) < 0.3
    y[:, 0], y[:, 1] = True, False
    p = np.round(rng.random((20, 15)), 1)
    ref = [roc_auc_score(a, b) for a, b in zip(y, p)]
    np.testing.assert_allclose(piql.task_aurocs(y, p), ref, atol=1e-12)
    y[3] = False
    assert np.isnan(piql.task_aurocs(y, p)[3])


def test_speedup_is_the_books_reading_and_reports_censored_runs_as_bounds():
    steps = np.array([10, 20, 30, 40])
    base = np.array([0.5, 0.4, 0.3, 0.3])  # reaches its final value 0.3 at step 30
    fast = np.array([0.4, 0.3, 0.2, 0.2])  # at step 20
    assert piql.speedup(fast, base, steps) == (pytest.approx(1.5), False)
    assert piql.speedup(base, base, steps) == (1.0, False)
    # never reaches 0.3: censored, the ratio is only known to lie below t_base / T = 30 / 40
    assert piql.speedup(np.array([0.6, 0.6, 0.6, 0.6]), base, steps) == (pytest.approx(0.75), True)
    # target at half the run: the baseline's value at step 20 (0.4), reached at step 20 by the baseline, 10 by fast
    assert piql.speedup(fast, base, steps, fraction=0.5) == (pytest.approx(2.0), False)
    auc_base, auc_fast = np.array([0.6, 0.7, 0.8, 0.8]), np.array([0.8, 0.9, 0.9, 0.9])
    assert piql.speedup(auc_fast, auc_base, steps, higher_is_better=True) == (pytest.approx(3.0), False)
    with pytest.raises(ValueError, match="steps"):
        piql.speedup([1.0, 2.0], [1.0, 2.0], [1])
    with pytest.raises(ValueError, match="fraction"):
        piql.speedup(fast, base, steps, fraction=0.0)


def test_km_median_matches_a_hand_computed_kaplan_meier_curve():
    # events at 100, 200, 200, censored twice at 300: S = 5/6 after 100, 3/6 after 200 -> median 200
    assert piql.km_median([100.0, 200.0, 200.0, math.inf, math.inf, 300.0], 300.0) == (200.0, False)
    # 4 of 6 censored: S never reaches 1/2 -> the median lies beyond the run
    assert piql.km_median([100.0, 150.0, math.inf, math.inf, math.inf, math.inf], 300.0) == (300.0, True)
    assert piql.km_median([math.inf, math.inf], 300.0) == (300.0, True)
    with pytest.raises(ValueError, match="times"):
        piql.km_median([400.0], 300.0)


def test_speedup_interval_keeps_censored_medians_as_bounds():
    tb = np.array([100.0, 150, 200, 250, 300, 300])
    # two of six censored: the median (100) is observed, the lower end of the interval is a bound only
    s = piql.speedup_interval(tb, np.array([50.0, 75, 100, math.inf, 150, math.inf]), 300.0)
    assert s["estimate"] == pytest.approx(2.0) and not s["estimate_bound"] and s["censored"] == 2
    assert s["low"] == 0.0 and s["low_bound"] and s["low_reading"] <= s["estimate"] <= s["high"]
    assert piql.speedup_text(s).startswith("2.00x [<= ")
    # five of six censored: the estimate is the bound median(t_base) / T, never an imputed number
    s = piql.speedup_interval(tb, np.array([math.inf] * 4 + [150.0, math.inf]), 300.0)
    assert s["estimate_bound"] and s["estimate"] == pytest.approx(200.0 / 300.0)
    assert piql.speedup_text(s).startswith("<= 0.67x") and "at most 0.67x" in piql.speedup_verdict(s)
    # fully censored: every end is a bound, and the interval includes 1 (nothing resolved)
    s = piql.speedup_interval(tb, np.full(6, math.inf), 300.0)
    assert s["estimate_bound"] and s["low_bound"] and s["high_bound"] and s["high"] == pytest.approx(1.0)
    assert piql.speedup_verdict(s).startswith("not resolved")
    # uncensored and every seed twice as fast: the interval is the point
    s = piql.speedup_interval(tb, tb / 2, 300.0)
    assert (s["estimate"], s["low"], s["high"]) == (pytest.approx(2.0), pytest.approx(2.0), pytest.approx(2.0))
    assert piql.speedup_verdict(s).startswith("resolved") and piql.speedup_text(s) == "2.00x [2.00, 2.00]"
    with pytest.raises(ValueError, match="t_base and t_var"):
        piql.speedup_interval([1.0], [1.0], 300.0)


def test_speedups_reads_per_seed_times_to_target_from_the_curves():
    curve = lambda v: {"steps": [10, 20, 30, 40], "bce": v, "auroc": [0.5] * 4}  # noqa: E731
    results = [{"variants": {"baseline": {"curve": curve([0.5, 0.4, 0.3, 0.3])},
                             "meta": {"curve": curve(m)}}} for m in ([0.4, 0.3, 0.2, 0.2], [0.6] * 4)]
    out = piql.speedups(results, "meta")
    np.testing.assert_array_equal(out["t_base"], [30.0, 30.0])
    np.testing.assert_array_equal(out["t_var"], [20.0, math.inf])  # the second seed never reaches 0.3
    np.testing.assert_allclose(out["ratio"], [1.5, 0.75])
    assert list(out["censored"]) == [False, True] and out["horizon"] == 40.0
    assert list(piql.speedups(results, "meta", fraction=0.5)["t_base"]) == [20.0, 20.0]
    with pytest.raises(ValueError, match="metric"):
        piql.speedups(results, "meta", "loss")


def test_speedup_interval_recovers_a_known_ratio_under_heavy_censoring():
    # baseline uniform on (0, 300] (median 150), variant exponential with median 200 censored at 300 (35 %):
    # true speedup 0.75; dropping the censored runs would give about 1.3
    rng = np.random.default_rng(3)
    tb = rng.uniform(1e-3, 300.0, 4000)
    tv = rng.exponential(200.0 / math.log(2.0), 4000)
    s = piql.speedup_interval(tb, np.where(tv > 300.0, math.inf, tv), 300.0, n_resamples=200)
    assert s["estimate"] == pytest.approx(0.75, rel=0.05) and s["low"] < 0.75 < s["high"]
    assert s["high"] < 0.9 and not s["estimate_bound"]


# ----------------------------------------------------------------------------- the paired per-seed run
def test_context_anomaly_rate_is_validated_and_used():
    clean = priors.GMMPrior(d_max=2, n_context=200, context_anomaly_rate=0.0).sample_task(np.random.default_rng(0))
    assert clean.context_y.sum() == 0
    with pytest.raises(ValueError, match="context_anomaly_rate"):
        priors.GMMPrior(context_anomaly_rate=1.0)
    mix = priors.MixturePrior(d_max=2, context_anomaly_rate=0.0)
    assert mix.component("scm").context_anomaly_rate == 0.0


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    encoder = piql.pretrain_encoder(SMALL, 0)
    ds = realdata.odds_dataset("wine", 3)
    real = {"wine": (ds, realdata.novelty_splits(ds, 12, 2))}
    folder = tmp_path_factory.mktemp("ck")
    out = piql.run_seed(0, config=SMALL, variants=list(piql.VARIANTS), encoder_state=encoder["state"],
                        real_data=real, checkpoint_dir=str(folder))
    return encoder, real, folder, out


def test_run_seed_returns_every_measurement(small_run):
    _, _, _, out = small_run
    assert set(out["variants"]) == set(piql.VARIANTS)
    for v, res in out["variants"].items():
        meta_kind, program_kind = piql.VARIANTS[v]
        assert res["curve"]["steps"] == [2, 4]
        assert set(res["test"]) == {"gmm", "scm", "copula"}
        assert ("meta_shuffled_bce" in res) == (meta_kind is not None)
        assert ("student_r2" in res) == (program_kind is not None)
        assert len(res["probes"]["family"]) == SMALL["model"]["layers"] + 1
        assert len(res["probes"]["family_control"]) == SMALL["model"]["layers"] + 1
        assert 0.0 <= res["real"]["wine"]["auroc"] <= 1.0
        alpha = res["curve"]["alpha"]
        assert (alpha[0] == 1.0) == (program_kind is not None)


def test_variants_of_a_seed_share_stream_and_initial_weights():
    torch.manual_seed(0)
    encoders = piql.encoders_from(SMALL, None, 0)
    a = piql.build_model("baseline", 3, encoders, width=8, layers=1, heads=2, seed=5)
    b = piql.build_model("meta++", 3, encoders, width=8, layers=1, heads=2, seed=5)
    for name in ("rows.weight", "blocks.0.linear1.weight", "head.1.weight"):
        assert torch.equal(a.state_dict()[name], b.state_dict()[name])
    with pytest.raises(ValueError, match="trained"):
        piql.build_model("program", 3, encoders, width=8, layers=1, heads=2, seed=0)  # no trained encoder given


def test_a_rerun_resumes_from_checkpoints_without_training(small_run, monkeypatch):
    encoder, real, folder, out = small_run
    assert len(list(folder.glob("*.pt"))) == len(piql.VARIANTS)
    monkeypatch.setattr(piql, "train_variant", lambda *a, **k: pytest.fail("a finished variant was retrained"))
    again = piql.run_seed(0, config=SMALL, variants=list(piql.VARIANTS), encoder_state=encoder["state"],
                          real_data=real, checkpoint_dir=str(folder))
    assert again["variants"]["both"]["curve"] == out["variants"]["both"]["curve"]
    saved = torch.load(next(folder.glob("seed0_program.pt")), weights_only=True)
    assert "state" in saved and "student.queries" in saved["state"]


def test_no_program_reaches_the_model_at_evaluation(small_run, monkeypatch):
    encoder, _, _, _ = small_run
    encoders = piql.encoders_from(SMALL, encoder["state"], 0)
    model = piql.build_model("program", 3, encoders, width=8, layers=1, heads=2, seed=0)
    tok = program.ProgramTokenizer()
    t = piql.stream_tensors(piql.make_prior(SMALL["prior"]).sample_batch(4, np.random.default_rng(0)), tok, 160)
    seen = []
    monkeypatch.setattr(encoders["trained"], "forward", lambda ids: seen.append(ids) or pytest.fail("teacher used"))
    piql.evaluate(model, t, "program")
    piql.predict(model, t, "program")
    assert not seen


def test_run_seed_rejects_unknown_variants():
    with pytest.raises(ValueError, match="variants"):
        piql.run_seed(0, config=SMALL, variants=["oracle"])
    with pytest.raises(ValueError, match="family"):
        piql.make_prior({"family": "bernoulli"})


# ----------------------------------------------------------------------------- real data
@pytest.mark.parametrize("name, n, outliers, raw", [("wine", 129, 10, 13), ("wdbc", 376, 19, 30),
                                                    ("digits", 1704, 85, 64)])
def test_odds_recipes(name, n, outliers, raw):
    ds = realdata.odds_dataset(name, 4)
    assert ds.x.shape == (n, 4) and ds.outliers == outliers and ds.raw_features == raw
    assert np.allclose(ds.x.mean(axis=0), 0, atol=1e-9)  # PCA of z-scores: centred


def test_novelty_splits_draw_clean_contexts_and_score_the_rest():
    ds = realdata.odds_dataset("wine", 4)
    splits = realdata.novelty_splits(ds, 30, 3, seed=4)
    for c, q in splits:
        assert c.size == 30 and np.all(ds.y[c] == 0)
        assert np.intersect1d(c, q).size == 0 and c.size + q.size == ds.y.size
    b = realdata.split_batch(ds, splits, 4)
    assert b.context_y.sum() == 0 and b.query_y.sum() == 3 * ds.outliers
    scores = realdata.baseline_scores(ds, splits)
    assert set(scores) == set(realdata.BASELINES) and scores["OneClassSVM"].shape == (3, q.size)


def test_real_data_errors_name_the_parameter():
    with pytest.raises(ValueError, match="name"):
        realdata.odds_dataset("iris", 4)
    with pytest.raises(ValueError, match="d_max"):
        realdata.odds_dataset("wine", 0)
    ds = realdata.odds_dataset("wine", 4)
    with pytest.raises(ValueError, match="n_context"):
        realdata.novelty_splits(ds, 500, 1)
    with pytest.raises(ValueError, match="d_max"):
        realdata.split_batch(realdata.odds_dataset("wine", 13), realdata.novelty_splits(ds, 20, 1), 4)


def test_outlier_draws_keep_different_outliers_and_their_own_splits():
    draws = realdata.outlier_draws("wdbc", 4, 30, 3, 2, seed=5)
    assert len(draws) == 3 and all(len(sp) == 2 for _, sp in draws)
    outliers = [tuple(np.round(ds.x[ds.y == 1, 0], 6)) for ds, _ in draws]
    assert len(set(outliers)) == 3  # each draw keeps its own outliers
    ref = realdata.odds_dataset("wdbc", 4, seed=6)
    np.testing.assert_array_equal(draws[1][0].x, ref.x)
    for (c, q), (c2, q2) in zip(draws[1][1], realdata.novelty_splits(ref, 30, 2, seed=1006)):
        np.testing.assert_array_equal(c, c2)
    with pytest.raises(ValueError, match="draws"):
        realdata.outlier_draws("wine", 4, 30, 0, 2)


def test_paired_over_draws_matches_its_definition():
    a, b = np.array([0.9, 0.8, 0.95, 0.85]), np.array([0.85, 0.8, 0.9, 0.8])
    out = realdata.paired_over_draws(a, b)
    d = a - b
    half = stats.t.ppf(0.975, 3) * d.std(ddof=1) / 2.0
    assert out["difference"] == pytest.approx(d.mean())
    assert (out["low"], out["high"]) == (pytest.approx(d.mean() - half), pytest.approx(d.mean() + half))
    assert out["p"] == pytest.approx(stats.ttest_rel(a, b).pvalue) and out["draws"] == 4
    with pytest.raises(ValueError, match="treated and control"):
        realdata.paired_over_draws([1.0], [1.0])


def test_run_seed_scores_each_outlier_draw():
    draws = realdata.outlier_draws("wine", 3, 12, 2, 2)
    out = piql.run_seed(2, config=SMALL, variants=["baseline"], real_data={"wine": draws})
    per = out["variants"]["baseline"]["real"]["wine"]
    assert isinstance(per, list) and len(per) == 2 and all(0.0 <= d["auroc"] <= 1.0 for d in per)
    one = piql.run_seed(2, config=SMALL, variants=["baseline"], real_data={"wine": draws[1]})
    assert one["variants"]["baseline"]["real"]["wine"] == per[1]


def test_run_seed_trains_every_depth_on_one_stream(tmp_path):
    out = piql.run_seed(1, config=SMALL, variants=["baseline", "meta"], depths=[1, 2], checkpoint_dir=str(tmp_path))
    assert set(out["depths"]) == {"1", "2"} and not out["variants"]
    assert set(out["depths"]["2"]) == {"baseline", "meta"}
    assert len(list(tmp_path.glob("seed1_L2_*.pt"))) == 2
    single = piql.run_seed(1, config=SMALL, variants=["baseline"])
    assert single["variants"]["baseline"]["curve"]["bce"] == out["depths"]["1"]["baseline"]["curve"]["bce"]
    with pytest.raises(ValueError, match="depths"):
        piql.run_seed(1, config=SMALL, variants=["baseline"], depths=[0])


def test_probe_input_layer_holds_the_prefix_tokens():
    prior = piql.make_prior(SMALL["prior"])
    tok = piql.ProgramTokenizer()
    t = piql.stream_tensors(prior.sample_batch(5, np.random.default_rng(0)), tok, SMALL["encoder"]["max_len"])
    encoders = piql.encoders_from(SMALL, None, 0)
    width = 8
    for v, extra in (("baseline", 0), ("meta", 2 * width)):
        model = piql.build_model(v, prior.d_max, encoders, width=width, layers=2, heads=2, seed=0)
        h = piql.hidden_states(model, t, v)
        assert [x.shape for x in h] == [(5, width + extra), (5, width), (5, width)]
    # layer 0 changes with the meta-features (the context part does not)
    model = piql.build_model("meta", prior.d_max, encoders, width=width, layers=1, heads=2, seed=0)
    rolled = {**t, "meta": torch.roll(t["meta"], 1, dims=0)}
    a, b = piql.hidden_states(model, t, "meta")[0], piql.hidden_states(model, rolled, "meta")[0]
    np.testing.assert_array_equal(a[:, :width], b[:, :width])
    assert not np.allclose(a[:, width:], b[:, width:])


def test_control_probe_scores_at_chance_on_a_representation_that_holds_the_label():
    rng = np.random.default_rng(0)
    y_tr, y_te = rng.integers(0, 3, 600), rng.integers(0, 3, 400)
    h_tr = np.eye(3)[y_tr] + 0.01 * rng.normal(size=(600, 3))
    h_te = np.eye(3)[y_te] + 0.01 * rng.normal(size=(400, 3))
    assert piql.probe_accuracy(h_tr, y_tr, h_te, y_te) == 1.0
    assert abs(piql.control_probe_accuracy(h_tr, y_tr, h_te, y_te, seed=0) - 1 / 3) < 0.08


def test_probe_gains_are_over_the_input_layer():
    res = [{"variants": {"meta": {"probes": {"family": [0.9, 0.85, 0.8]}}}}] * 2
    np.testing.assert_allclose(piql.probe_gains(res, "meta"), [-0.05, -0.05])
    np.testing.assert_allclose(piql.probe_gains(res, "meta", layer=2), [-0.1, -0.1])
    with pytest.raises(ValueError, match="layer"):
        piql.probe_gains(res, "meta", layer=0)


# ----------------------------------------------------------------------------- meta-PI's information split
def test_standardised_meta_features_ignore_location_and_scale():
    prior = piql.make_prior(SMALL["prior"])
    t = piql.stream_tensors(prior.sample_batch(5, np.random.default_rng(2)), piql.ProgramTokenizer(),
                            SMALL["encoder"]["max_len"])
    moved = {**t, "context_x": 3.0 * t["context_x"] - 7.0, "meta": None}
    a, b = piql.meta_tensor(t, "meta-std"), piql.meta_tensor(moved, "meta-std")
    np.testing.assert_allclose(a.numpy(), b.numpy(), atol=2e-5)
    mask = t["feature_mask"].numpy()
    names = list(piql.META_FEATURE_NAMES)
    np.testing.assert_allclose(a.numpy()[..., names.index("mean")][mask], 0.0, atol=1e-5)
    np.testing.assert_allclose(a.numpy()[..., names.index("std")][mask], math.log(2.0), atol=1e-5)
    # shape statistics are those of the raw context
    for k in ("skewness", "kurtosis"):
        np.testing.assert_allclose(a.numpy()[..., names.index(k)], t["meta"].numpy()[..., names.index(k)],
                                   atol=1e-4)
    assert "meta-std" in t  # kept for the other variants and depths of the seed


def test_location_scale_meta_keeps_only_mean_and_std():
    prior = piql.make_prior(SMALL["prior"])
    t = piql.stream_tensors(prior.sample_batch(4, np.random.default_rng(3)), piql.ProgramTokenizer(),
                            SMALL["encoder"]["max_len"])
    loc = piql.meta_tensor(t, "meta-loc").numpy()
    raw = t["meta"].numpy()
    keep = list(piql.LOCATION_SCALE)
    np.testing.assert_array_equal(loc[..., keep], raw[..., keep])
    assert not np.any(np.delete(loc, keep, axis=-1))
    assert not np.any(piql.meta_tensor(t, "meta-zero").numpy())
    with pytest.raises(ValueError, match="kind"):
        piql.meta_tensor(t, "meta-location")


def test_split_arms_share_meta_pis_architecture():
    encoders = piql.encoders_from(SMALL, None, 0)
    count = {v: sum(p.numel() for p in piql.build_model(v, 3, encoders, width=8, layers=1, heads=2,
                                                        seed=0).parameters())
             for v in ("baseline", "meta", "meta (shuffled)", "meta (standardised)", "meta (location, scale)",
                       "meta (zeros)")}
    assert len({count[v] for v in count if v != "baseline"}) == 1
    assert count["meta"] > count["baseline"]


def test_split_table_holm_and_verdicts():
    rng = np.random.default_rng(0)
    n = 6
    base = rng.normal(0.40, 0.01, n)
    loss = {"baseline": base, "meta": base - 0.02 + rng.normal(0, 0.001, n),
            "meta (standardised)": base + np.array([2.0, -2.0, 1.0, -1.0, 0.5, -0.4]) * 1e-3}
    results = [{"depths": {"1": {v: {"curve": {"bce": [1.0, loss[v][s]]}} for v in loss}}} for s in range(n)]
    pairs = (("meta", "baseline"), ("meta (standardised)", "baseline"))
    rows = piql.split_table(results, comparisons=pairs)
    assert rows[0]["verdict"] == "resolved: lower loss"
    assert rows[1]["verdict"].startswith("not resolved (could have detected ≥ ")
    np.testing.assert_allclose([r["p_holm"] for r in rows], claims.holm([r["p"] for r in rows]))
    d = base - loss["meta"]
    assert rows[0]["effect"].difference == pytest.approx(d.mean())
    assert rows[0]["p"] == pytest.approx(stats.ttest_1samp(d, 0.0).pvalue)
    sd = (base - loss["meta (standardised)"]).std(ddof=1)
    assert rows[1]["detectable"] == pytest.approx(claims.detectable_effect(sd, n, 0.05 / 2))
    with pytest.raises(ValueError, match="comparisons"):
        piql.split_table(results, comparisons=())
