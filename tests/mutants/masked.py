"""Planted errors for Part I (masked prediction). See ``registry.py``.

Each patch wraps one function of ``blindspots.masked`` (a theory value, a constant, or the exact
engine for the arguments one claim uses) so that its claim is the first to fail at smoke scale.
"""

from mutants.registry import Mutant


def _shift_slope(kind: str, by: float) -> str:
    return (
        "import blindspots.masked.identifiability as _m\n"
        "_orig = _m.recovery_slope\n"
        f"_m.recovery_slope = lambda kind: _orig(kind) + ({by!r} if kind == {kind!r} else 0.0)\n"
    )


MUTANTS: list[Mutant] = [
    # ---------------------------------------------------------------- masked/04_schedules
    Mutant("masked-04-curvature-theory", "masked/04_schedules", "curvature-identity-all-cells",
           "curvature at the truth off by 0.1 %: log D''(w) = log U - 2 log(w(1-w)) + 1e-3",
           patch="import blindspots.masked.theory as _t\n_orig = _t.log_curvature_at_truth\n"
                 "_t.log_curvature_at_truth = lambda log_u, w: _orig(log_u, w) + 1e-3\n"),
    *[Mutant(f"masked-04-slope-{kind.replace('_', '-')}-{'plus' if by > 0 else 'minus'}", "masked/04_schedules",
             f"slope-{kind.replace('_', '-')}-each",
             f"predicted slope of {kind} shifted by {by:+g}", patch=_shift_slope(kind, by))
      for kind in ("kappa_pi", "r_pi", "r_eps") for by in (0.1, -0.1)],
    Mutant("masked-04-recovery-bound-constant", "masked/04_schedules", "recovery-bound-general",
           "upper sensitivity constant C_J in place of c_J in the recovery bound sqrt(eps / (2 pi_s c_J U_(N,s)))",
           patch="import math as _math\nimport numpy as _np\nimport blindspots.masked.theory as _t\n"
                 "_t.log_recovery_weight_bound = lambda log_eps, log_pi_u, w, n=20001: 0.5 * ("
                 "_np.asarray(log_eps, dtype=float) - _math.log(2.0 * _t.sensitivity_constants(w, n)[1])"
                 " - _np.asarray(log_pi_u, dtype=float))\n"),
    Mutant("masked-04-coercivity-constant", "masked/04_schedules", "full-mask-coercivity-pi0-1",
           "Pinsker constant doubled: TV <= sqrt(eps / (4 pi0)) instead of sqrt(eps / (2 pi0))",
           patch="import numpy as _np\nimport blindspots.masked.identifiability as _m\n"
                 "_m.coercivity_radius = lambda eps, pi0: _np.sqrt(_np.asarray(eps, dtype=float) / (4.0 * pi0))\n"),
]


def _wrap(module: str, name: str, body: str) -> str:
    """Patch ``module.name`` with ``lambda *a, **k: body`` where ``_orig`` is the original function."""
    return f"import {module} as _m\n_orig = _m.{name}\n_m.{name} = {body}\n"


def _perturb_profile(when: str, log_d: str) -> str:
    """Patch ``exact.discrepancy_profile``: where ``when`` holds (names ``law, N, ms, w, lams``), the
    profile's ``log_D`` becomes ``log_d`` (names ``prof``, ``_np``)."""
    return ("import numpy as _np\nimport dataclasses as _dc\nimport blindspots.masked.exact as _m\n"
            "_orig = _m.discrepancy_profile\n"
            "def _patched(law, N, ms, w, lams, *a, **k):\n"
            "    prof = _orig(law, N, ms, w, lams, *a, **k)\n"
            f"    return _dc.replace(prof, log_D={log_d}) if {when} else prof\n"
            "_m.discrepancy_profile = _patched\n")


MUTANTS += [
    # ---------------------------------------------------------------- masked/01_setup
    Mutant("masked-01-engine-bias", "masked/01_setup", "decomposition-vs-enumeration",
           "the engine's D off by a relative 1e-9 (a lost term in the sum over r)",
           patch=_wrap("blindspots.masked.exact", "masked_discrepancy",
                       "lambda *a, **k: _orig(*a, **k) * (1 + 1e-9)")),
    Mutant("masked-01-engine-large-n", "masked/01_setup", "full-mask-equals-binary-kl",
           "the engine off by a relative 1e-10 only at N > 100, where brute force cannot reach",
           patch=_wrap("blindspots.masked.exact", "masked_discrepancy",
                       "lambda law, N, m, w, lam, *a, **k: _orig(law, N, m, w, lam, *a, **k) * (1 + (1e-10 if N > 100 else 0.0))")),
    Mutant("masked-01-profile-drift", "masked/01_setup", "monotone-in-visible-size",
           "the profile engine drifts upward with the visible size (log D + 0.05 m), as a mis-normalised sum would",
           patch=_perturb_profile("True", "prof.log_D + 0.05 * prof.ms[:, None]")),
    # ---------------------------------------------------------------- masked/02_mode_blindness
    Mutant("masked-02-hoeffding-constant", "masked/02_mode_blindness", "pinning-failure-probability",
           "pinning exponent c1 = theta^2/2 instead of theta^2/16 (the conditioning and union-bound factors dropped)",
           patch=_wrap("blindspots.masked.theory", "log_pinning_failure_bound",
                       "lambda theta, m: 8.0 * _orig(theta, m)")),
    Mutant("masked-02-rate-max-not-min", "masked/02_mode_blindness", "pinning-residual-uncertainty",
           "the U bound decays at max(c1, gamma) instead of min(c1, gamma)",
           patch="import dataclasses as _dc\nimport blindspots.masked.theory as _m\n_orig = _m.product_constants\n"
                 "_m.product_constants = lambda theta: _dc.replace(_orig(theta), c=max(_orig(theta).c1, _orig(theta).gamma))\n"),
    Mutant("masked-02-blindness-constant", "masked/02_mode_blindness", "blindness-bound",
           "G_J too small by a factor 10^6",
           patch=_wrap("blindspots.masked.theory", "blindness_constant", "lambda w: 1e-6 * _orig(w)")),
    Mutant("masked-02-lower-bound-factor", "masked/02_mode_blindness", "low-visibility-residual-uncertainty",
           "beta(1-beta) >= 1/2 e^-|logit beta| instead of 1/4 e^-|logit beta| in the low-visibility bound",
           patch=_wrap("blindspots.masked.theory", "log_residual_lower_bound",
                       "lambda theta, N, s, w: _orig(theta, N, s, w) + __import__('math').log(2.0)")),
    Mutant("masked-02-onset-too-early", "masked/02_mode_blindness", "low-visibility-onset",
           "N_0(s) = 2s + 1, the first size where the low-visibility bound is not vacuous (Hoeffding's step forgotten)",
           patch=_wrap("blindspots.masked.theory", "low_visibility_onset", "lambda theta, s: 2 * int(s) + 1")),
    *[Mutant(f"masked-02-product-rate-theta{t}", "masked/02_mode_blindness", f"decay-rate-theta{t}",
             f"r_star 10 % too large at theta={t}",
             patch=_wrap("blindspots.masked.theory", "product_rate",
                         f"lambda theta: _orig(theta) * (1.1 if theta == {t} else 1.0)"))
      for t in ("0.6", "0.8")],
    # cw-barrier-rate is a sanity record (no a-priori bound on the finite-size correction of the barrier rate).
    Mutant("masked-02-window-uncertified", "masked/02_mode_blindness", "cw-window-matches-full-table",
           "the Curie-Weiss window of classes is never widened: the classes left out are taken to weigh nothing",
           patch="import math as _math\nimport blindspots.masked.exact as _e\n"
                 "_e._log_left_out_bound = lambda lo, lb, lh: -_math.inf\n"),
    Mutant("masked-02-barrier", "masked/02_mode_blindness", "cw-barrier-sandwich",
           "Curie-Weiss free-energy barrier Delta F 15 % too large (the sandwich claim comes before the sanity slope record)",
           patch=_wrap("blindspots.masked.theory", "cw_barrier", "lambda beta: 1.15 * _orig(beta)")),
    *[Mutant(f"masked-02-fixed-fraction-theta{t}", "masked/02_mode_blindness", f"product-fixed-fraction-rate-theta{t}",
             f"law P fixed-fraction rate 10 % too large at theta={t}",
             patch=_wrap("blindspots.masked.theory", "fixed_fraction_rate",
                         f"lambda law, f: _orig(law, f) * (1.1 if getattr(law, 'theta', None) == {t} else 1.0)"))
      for t in ("0.6", "0.8")],
    # cw-null-no-blindness-w* are sanity records (their tolerance is extrapolated from the same sequence): no mutant.
    # ---------------------------------------------------------------- masked/03_information_decomposition
    Mutant("masked-03-engine-bias", "masked/03_information_decomposition", "decomposition-vs-definition-mp",
           "the engine's D off by a relative 1e-9",
           patch=_wrap("blindspots.masked.exact", "masked_discrepancy",
                       "lambda *a, **k: _orig(*a, **k) * (1 + 1e-9)")),
    Mutant("masked-03-sandwich-quadratic", "masked/03_information_decomposition", "sensitivity-brute-force",
           "wrong theory: D = U kl / (w(1-w)) for every lambda (the curvature constant used as both bounds)",
           patch=_wrap("blindspots.masked.theory", "sensitivity_bounds",
                       "lambda w, lams: tuple(__import__('numpy').full(__import__('numpy').size(lams), 1 / (w * (1 - w))) for _ in range(2))")),
    Mutant("masked-03-engine-near-truth", "masked/03_information_decomposition", "curvature-identity-engine",
           "the profile engine off by a relative 1e-4 for witnesses within 1e-3 of w",
           patch=_perturb_profile("_np.all(_np.abs(_np.asarray(lams) - w) < 1e-3)", "prof.log_D + 1e-4")),
    Mutant("masked-03-curvature-theory", "masked/03_information_decomposition", "curvature-identity-engine",
           "curvature at the truth off by 0.1 %",
           patch=_wrap("blindspots.masked.theory", "log_curvature_at_truth", "lambda log_u, w: _orig(log_u, w) + 1e-3")),
    Mutant("masked-03-enumeration-near-truth", "masked/03_information_decomposition", "curvature-identity-brute-force",
           "brute-force D off by a relative 1e-3 for witnesses next to the truth (|q/p - 1| < 1e-2)",
           patch="import numpy as _np\nimport blindspots.masked.enumeration as _m\n_orig = _m.masked_discrepancy_joint\n"
                 "def _patched(p, q, *a, **k):\n    out = _orig(p, q, *a, **k)\n"
                 "    near = _np.max(_np.abs(_np.asarray(q) / _np.asarray(p) - 1)) < 1e-2\n"
                 "    return out * (1 + 1e-3) if near else out\n_m.masked_discrepancy_joint = _patched\n"),
    Mutant("masked-03-full-mask-row", "masked/03_information_decomposition", "full-mask-binary-kl",
           "the profile engine off by a relative 1e-10 at m = 0 on the lambda grids",
           patch=_perturb_profile("_np.size(lams) > 4",
                                  "prof.log_D + 1e-10 * (_np.asarray(prof.ms) == 0)[:, None]")),
    # ---------------------------------------------------------------- masked/05_tensorization
    Mutant("masked-05-rate-p", "masked/05_tensorization", "at-rate-each-p",
           "law P visible-overlap rate 0.1 % too large",
           patch=_wrap("blindspots.masked.identifiability", "visible_overlap_rate",
                       "lambda law, rho, *a, **k: _orig(law, rho, *a, **k) * (1.001 if law.name == 'P' else 1.0)")),
    # at-rate-each-c is a sanity record (change-of-slope tolerance read off the same pair slopes): no mutant.
    Mutant("masked-05-grid-bias", "masked/05_tensorization", "at-full-mask-grid-reaches-limit",
           "the witness ratio of full-mask schedules off by a relative 1e-10",
           patch="import blindspots.masked.identifiability as _m\nimport blindspots.masked.schedules as _s\n"
                 "_orig = _m.log_tensorization_lower_bound\n"
                 "def _patched(law, N, schedule, w, lams):\n    best, arg = _orig(law, N, schedule, w, lams)\n"
                 "    return (best + 1e-10 if _s.full_mask_mass(schedule, N) > 0 else best), arg\n"
                 "_m.log_tensorization_lower_bound = _patched\n"),
    Mutant("masked-05-uniform-exponent", "masked/05_tensorization", "at-uniform-growth-p",
           "uniform-ratio growth exponent 1.1 instead of 1",
           patch=_wrap("blindspots.masked.identifiability", "uniform_ratio_growth_exponent", "lambda: 1.1")),
]

MUTANTS += [
    # ---------------------------------------------------------------- masked/06_training
    # SGD runs in-process at smoke scale (preset n_jobs = 1), so patches of blindspots.masked.training reach it.
    Mutant("masked-06-half-time-efold", "masked/06_training", "gd-half-time",
           "predicted half-time 1/(eta U_eff) (the e-folding time) instead of ln 2/(eta U_eff)",
           patch=_wrap("blindspots.masked.training", "predicted_half_time",
                       "lambda eta, u: _orig(eta, u) / __import__('math').log(2.0)")),
    Mutant("masked-06-context-ignored", "masked/06_training", "sgd-blind-stays-wrong",
           "the trainer's posterior ignores the visible block (log h+ - log h- = 0): every mask acts as the full mask",
           patch="import numpy as _np\nimport blindspots.masked.training as _m\n"
                 "_m.model_log_odds = lambda law, N, m: _np.zeros(m + 1)\n"),
    Mutant("masked-06-sampler-weight", "masked/06_training", "sgd-boost-recovers",
           "training examples drawn with mode weight w + 0.1 (a sampler bug): SGD recovers the wrong weight",
           patch=_wrap("blindspots.masked.training", "sample_counts",
                       "lambda rng, law, N, w, m: _orig(rng, law, N, w + 0.1, m)")),
    Mutant("masked-06-error-slope-theory", "masked/06_training", "sgd-error-slope",
           "predicted SGD error slope -1 (error ~ 1/pi) instead of -1/2",
           patch=_wrap("blindspots.masked.training", "predicted_error_slope", "lambda: -1.0")),
    Mutant("masked-06-second-moment", "masked/06_training", "excess-moments-enumeration",
           "exact second moment of the excess loss off by a relative 1e-6 (a lost class)",
           patch=_wrap("blindspots.masked.training", "excess_loss_moments",
                       "lambda *a, **k: __import__('dataclasses').replace(_orig(*a, **k), "
                       "second=_orig(*a, **k).second * (1 + 1e-6))")),
    Mutant("masked-06-raw-moments", "masked/06_training", "raw-loss-moments-enumeration",
           "exact raw-loss variance V_m off by a relative 1e-6",
           patch=_wrap("blindspots.masked.training", "raw_loss_moments",
                       "lambda law, N, m, w: (_orig(law, N, m, w)[0], _orig(law, N, m, w)[1] * (1 + 1e-6))")),
    Mutant("masked-06-mean-large-n", "masked/06_training", "excess-mean-equals-discrepancy",
           "two-point mean of the excess loss off by a relative 1e-6 only at N > 20, where enumeration cannot reach",
           patch=_wrap("blindspots.masked.training", "excess_loss_moments",
                       "lambda law, N, *a, **k: __import__('dataclasses').replace(_orig(law, N, *a, **k), "
                       "mean=_orig(law, N, *a, **k).mean * (1 + (1e-6 if N > 20 else 0.0)))")),
    Mutant("masked-06-detection-constant", "masked/06_training", "detection-cost-sandwich",
           "detection cost 2/(U t^2) instead of 4/(U t^2) (D taken as U t^2 instead of U t^2 / 2)",
           patch=_wrap("blindspots.masked.training", "detection_cost_interval",
                       "lambda u, w, lam: tuple(x / 2 for x in _orig(u, w, lam))")),
    Mutant("masked-06-simulation-law", "masked/06_training", "excess-moments-simulation",
           "simulated examples drawn with mode weight w + 0.05 while the exact moments use w",
           patch=_wrap("blindspots.masked.training", "simulate_losses",
                       "lambda rng, law, N, w, *a, **k: _orig(rng, law, N, w + 0.05, *a, **k)")),
    Mutant("masked-06-raw-variance-mixing", "masked/06_training", "raw-loss-variance",
           "extra variance pi (H_s - H_base)^2 instead of pi (1 - pi) (H_s - H_base)^2",
           patch=_wrap("blindspots.masked.training", "mixture_loss_variance",
                       "lambda pi, hb, vb, hs, vs: (_orig(pi, hb, vb, hs, vs)[0] + pi * pi * (hs - hb) ** 2, "
                       "_orig(pi, hb, vb, hs, vs)[1] + pi * pi * (hs - hb) ** 2)")),
]

_NB07 = "masked/07_neural_predictors"
_NEURAL_UNIT = "tests/masked/test_neural.py::"
MUTANTS += [
    # ---------------------------------------------------------------- masked/07_neural_predictors
    # exact theory side (smoke scale makes these claims; training claims are gated off at smoke)
    Mutant("masked-07-posterior-prior", _NB07, "posterior-enumeration",
           "the MLP's target posterior omega(r, m) computed with the prior weight off by a relative 0.1 %",
           patch=_wrap("blindspots.masked.neural", "true_posterior",
                       "lambda law, N, r, m, w: _orig(law, N, r, m, w * 1.001)")),
    Mutant("masked-07-witness-conditional-product", _NB07, "witness-conditional-enumeration",
           "hidden-site conditional taken as omega rho + (1 - omega)(1 - rho) (the product law, ignoring S > 0)",
           patch="import numpy as _np\nimport blindspots.masked.neural as _m\n"
                 "def _patched(law, N, m, lam):\n"
                 "    om = _m.true_posterior(law, N, 2 * _np.arange(m + 1) - m, m, lam)\n"
                 "    return om * law.rho + (1 - om) * (1 - law.rho)\n"
                 "_m.witness_conditional = _patched\n"),
    Mutant("masked-07-full-mask-product", _NB07, "full-mask-readout-enumeration",
           "full-mask readout inverts the product-law marginal (1 - theta)/2 + theta lam (ignores the conditioning on S > 0)",
           patch=_wrap("blindspots.masked.neural", "full_mask_weight",
                       "lambda law, N, p: (__import__('numpy').asarray(p, dtype=float) - (1 - law.rho)) / law.theta")),
    Mutant("masked-07-fit-bias", _NB07, "witness-fit-enumeration",
           "the least-squares witness fit returns lambda + 1e-4",
           patch=_wrap("blindspots.masked.neural", "fit_witness_weight", "lambda *a, **k: _orig(*a, **k) + 1e-4")),
    Mutant("masked-07-sampler-stale-context", _NB07, "sampler-law-enumeration",
           "the sampler ignores the sites it already filled: every site drawn from the full-mask conditional",
           patch="import torch as _t\nimport blindspots.masked.neural as _m\n"
                 "def _patched(conditional, x, order_positions):\n"
                 "    x = _t.as_tensor(x, dtype=_t.long)\n"
                 "    p = conditional(_t.full(x.shape, _m.MASK, dtype=_t.long)).double()\n"
                 "    return _t.where(x > 0, _t.log(p), _t.log1p(-p)).sum(1)\n"
                 "_m.sampler_log_prob = _patched\n"),
    Mutant("masked-07-sampler-flip", _NB07, "sampler-oracle-weight",
           "the sampler writes +1 when u > p (its draws use 1 - p)",
           patch=_wrap("blindspots.masked.neural", "sampler_weight",
                       "lambda cond, *a, **k: _orig(lambda t: 1 - cond(t), *a, **k)")),
]
# training claims: smoke scale cannot make them; the unit tests plant a swapped model into the book run's per-seed results
for _cid in ("mlp-blind-stays-wrong", "mlp-blind-depends-on-init", "tf-blind-full-mask-wrong", "tf-blind-sampler-wrong",
             "tf-blind-depends-on-init"):
    MUTANTS.append(Mutant(f"masked-07-{_cid}-swapped", _NB07, _cid,
                          "the blind arm's per-seed results replaced by the recovering model's (a swapped model)",
                          unit=_NEURAL_UNIT + f"test_mutant_blind_arm_is_the_recovering_model_fails[{_cid}]"))
for _cid in ("mlp-full-mask-recovers", "tf-recovering-full-mask", "tf-recovering-sampler", "tf-recovering-agree"):
    MUTANTS.append(Mutant(f"masked-07-{_cid}-swapped", _NB07, _cid,
                          "the recovering arm's per-seed results replaced by the blind model's (a swapped model)",
                          unit=_NEURAL_UNIT + f"test_mutant_recovering_arm_is_the_blind_model_fails[{_cid}]"))

# ---- masked/08_real_text
_NB08 = "masked/08_real_text"
MUTANTS += [
    Mutant("masked-08-ngram-ignores-context", _NB08, "markov-decay-rate",
           "the n-gram posterior ignores the in-span context: only the unigram table is fitted, so each token is "
           "scored alone",
           patch="import blindspots.masked.residual as _r\n_orig = _r.BackoffNgram.fit\n"
                 "def _fit(self, windows):\n"
                 "    order = self.order\n    self.order = 1\n    _orig(self, windows)\n    self.order = order\n"
                 "    return self\n"
                 "_r.BackoffNgram.fit = _fit\n"),
    Mutant("masked-08-exact-u-off-by-one", _NB08, "markov-level",
           "the exact U(k) of the Markov control summed over strings of k + 1 tokens (off by one)",
           patch="import blindspots.masked.residual as _r\n_orig = _r.markov_exact_uncertainty\n"
                 "_r.markov_exact_uncertainty = lambda pair, k: _orig(pair, k + 1)\n"),
    Mutant("masked-08-classifier-label-leak", _NB08, "markov-classifier-upper-side",
           "label leak: the mode label enters the classifier's features (a mode-specific marker column) for train "
           "and test windows",
           patch="import numpy as _np\nimport blindspots.masked.residual as _r\n"
                 "def _leaky(train, y_train, groups_train, test, y_test, boot, floor, ks, rng, richness='bigram', "
                 "C=100.0, n_buckets=4096, seed=0):\n"
                 "    cells = []\n"
                 "    for k in ks:\n"
                 "        Xtr = _r.span_features(_r.visible_spans(train, int(k), rng), richness, n_buckets)\n"
                 "        Xte = _r.span_features(_r.visible_spans(test, int(k), rng), richness, n_buckets)\n"
                 "        Xtr = _np.hstack([Xtr, _np.asarray(y_train, dtype=_np.float32)[:, None]])\n"
                 "        Xte = _np.hstack([Xte, _np.asarray(y_test, dtype=_np.float32)[:, None]])\n"
                 "        m = _r.fit_calibrated_logistic(Xtr, y_train, groups_train, C=C, seed=seed)\n"
                 "        cells.append(_r.cell_estimate(int(k), 'leak', 'upper', m.predict(Xte), y_test, boot, floor))\n"
                 "    return cells\n"
                 "_r.classifier_cells = _leaky\n"),
    Mutant("masked-08-tokenizer-per-mode", _NB08, "low-k-floor",
           "label leak through the tokenizer: token ids assigned per corpus (in order of first appearance), so the "
           "same byte gets a different id in each mode",
           patch="import numpy as _np\nimport blindspots.masked.corpora as _c\n_orig = _c.document_windows\n"
                 "def _per_mode(docs, length, per_doc, rng):\n"
                 "    w, owner = _orig(docs, length, per_doc, rng)\n"
                 "    values, first = _np.unique(w.ravel(), return_index=True)\n"
                 "    ids = _np.zeros(256, dtype=_np.uint8)\n"
                 "    ids[values[_np.argsort(first)]] = _np.arange(values.size)\n"
                 "    return ids[w], owner\n"
                 "_c.document_windows = _per_mode\n"),
    Mutant("masked-08-upper-side-ignores-context", _NB08, "decay-code-prose",
           "both upper-side predictors ignore the visible context: the logistic regression's features are all zero "
           "and the n-gram log-likelihood ratio is 0, so each predicts the prior",
           patch="import numpy as _np\nimport blindspots.masked.residual as _r\n"
                 "_r.span_features = lambda spans, richness='bigram', n_buckets=4096: "
                 "_np.zeros((len(spans), 256), dtype=_np.float32)\n"
                 "_r.CalibratedNgram.log_ratio = lambda self, spans: _np.zeros(len(spans))\n"),
]
