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


def _perturb_profile(when: str, value: str, field: str = "log_D") -> str:
    """Patch ``exact.discrepancy_profile``: where ``when`` holds (names ``law, N, ms, w, lams``), the
    profile's ``field`` (``log_D`` or ``log_U``) becomes ``value`` (names ``prof``, ``_np``)."""
    return ("import numpy as _np\nimport dataclasses as _dc\nimport blindspots.masked.exact as _m\n"
            "_orig = _m.discrepancy_profile\n"
            "def _patched(law, N, ms, w, lams, *a, **k):\n"
            "    prof = _orig(law, N, ms, w, lams, *a, **k)\n"
            f"    return _dc.replace(prof, {field}={value}) if {when} else prof\n"
            "_m.discrepancy_profile = _patched\n")


MUTANTS += [
    # ---------------------------------------------------------------- masked/01_setup
    # full-mask-equals-binary-kl is the verification of D_(N,0) = kl(w||lam); 03's full-mask-binary-kl repeats it
    # (consistency).
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
    # pinning-failure-probability, pinning-residual-uncertainty, blindness-bound and low-visibility-residual-uncertainty
    # are sanity records (loose bounds, slack up to e^9.4, that a constant off by 2 passes); product-fixed-fraction-rate-*
    # are consistency records (the check at-rate-each-p of masked/05 makes at f = 1/2): no mutants.
    Mutant("masked-02-onset-too-early", "masked/02_mode_blindness", "low-visibility-onset",
           "N_0(s) = 2s + 1, the first size where the low-visibility bound is not vacuous (Hoeffding's step forgotten)",
           patch=_wrap("blindspots.masked.theory", "low_visibility_onset", "lambda theta, s: 2 * int(s) + 1")),
    *[Mutant(f"masked-02-product-rate-theta{t}", "masked/02_mode_blindness", f"decay-rate-theta{t}",
             f"r_star 10 % too large at theta={t}",
             patch=_wrap("blindspots.masked.theory", "product_rate",
                         f"lambda theta: _orig(theta) * (1.1 if theta == {t} else 1.0)"))
      for t in ("0.6", "0.8")],
    # cw-barrier-rate is a sanity record (no a-priori bound on the finite-size correction of the barrier rate).
    Mutant("masked-02-barrier", "masked/02_mode_blindness", "cw-barrier-sandwich",
           "Curie-Weiss free-energy barrier Delta F 15 % too large (the sandwich claim comes before the sanity slope record)",
           patch=_wrap("blindspots.masked.theory", "cw_barrier", "lambda beta: 1.15 * _orig(beta)")),
    # ---------------------------------------------------------------- masked/exact_engine (appendix)
    # Defects of the engine that only large N reaches: chapter 02's sizes (N <= 1023) pass with them.
    *[Mutant(f"masked-engine-long-rate-drift-theta{t}", "masked/exact_engine", f"decay-rate-long-theta{t}",
             f"law P at theta={t}: the engine's log U drifts by 1e-6 per visible coordinate at N > 2000, as a "
             "sum that loses a little mass per term would",
             patch=_perturb_profile(f"N > 2000 and getattr(law, 'theta', None) == {t}",
                                    "prof.log_U - 1e-6 * prof.ms", field="log_U"))
      for t in ("0.6", "0.8")],
    Mutant("masked-engine-long-cw-normaliser", "masked/exact_engine", "cw-barrier-sandwich-long",
           "law C: the engine's U off by a factor e^20 at N > 2000, as a normaliser summed over a truncated "
           "range of magnetisations would be",
           patch=_wrap("blindspots.masked.exact", "log_residual_uncertainty",
                       "lambda law, N, *a, **k: _orig(law, N, *a, **k) "
                       "- (20.0 if N > 2000 and hasattr(law, 'beta') else 0.0)")),
    Mutant("masked-engine-window-uncertified", "masked/exact_engine", "cw-window-matches-full-table",
           "the Curie-Weiss window of classes is never widened: the classes left out are taken to weigh nothing",
           patch="import math as _math\nimport blindspots.masked.exact as _e\n"
                 "_e._log_left_out_bound = lambda lo, lb, lh: -_math.inf\n"),
    # cw-null-no-blindness-w* are sanity records (their tolerance is extrapolated from the same sequence): no mutant.
    # ---------------------------------------------------------------- masked/03_information_decomposition
    # curvature-identity-engine (D and U from one posterior table) and full-mask-binary-kl (01's check repeated) are
    # consistency records: no mutants. masked/04's curvature-identity-all-cells likewise.
    Mutant("masked-03-engine-bias", "masked/03_information_decomposition", "decomposition-vs-definition-mp",
           "the engine's D off by a relative 1e-9",
           patch=_wrap("blindspots.masked.exact", "masked_discrepancy",
                       "lambda *a, **k: _orig(*a, **k) * (1 + 1e-9)")),
    Mutant("masked-03-sandwich-quadratic", "masked/03_information_decomposition", "sensitivity-brute-force",
           "wrong theory: D = U kl / (w(1-w)) for every lambda (the curvature constant used as both bounds)",
           patch=_wrap("blindspots.masked.theory", "sensitivity_bounds",
                       "lambda w, lams: tuple(__import__('numpy').full(__import__('numpy').size(lams), 1 / (w * (1 - w))) for _ in range(2))")),
    Mutant("masked-03-enumeration-near-truth", "masked/03_information_decomposition", "curvature-identity-brute-force",
           "brute-force D off by a relative 1e-3 for witnesses next to the truth (|q/p - 1| < 1e-2)",
           patch="import numpy as _np\nimport blindspots.masked.enumeration as _m\n_orig = _m.masked_discrepancy_joint\n"
                 "def _patched(p, q, *a, **k):\n    out = _orig(p, q, *a, **k)\n"
                 "    near = _np.max(_np.abs(_np.asarray(q) / _np.asarray(p) - 1)) < 1e-2\n"
                 "    return out * (1 + 1e-3) if near else out\n_m.masked_discrepancy_joint = _patched\n"),
    # ---------------------------------------------------------------- masked/05_tensorization
    Mutant("masked-05-rate-p", "masked/05_tensorization", "at-rate-each-p",
           "law P visible-overlap rate 0.1 % too large",
           patch=_wrap("blindspots.masked.identifiability", "visible_overlap_rate",
                       "lambda law, rho, *a, **k: _orig(law, rho, *a, **k) * (1.001 if law.name == 'P' else 1.0)")),
    # at-rate-each-c is a sanity record (change-of-slope tolerance read off the same pair slopes): no mutant.
    # at-full-mask-grid-reaches-limit (arithmetic on cells chosen for it) and at-uniform-growth-p (follows from the
    # mass 1/(N+1) on every visible size) are consistency records: no mutant.
]

MUTANTS += [
    # ---------------------------------------------------------------- masked/06_training
    # SGD runs in-process at smoke scale (preset n_jobs = 1), so patches of blindspots.masked.training reach it.
    Mutant("masked-06-half-time-efold", "masked/06_training", "gd-half-time",
           "predicted half-time 1/(eta U_eff) (the e-folding time) instead of ln 2/(eta U_eff)",
           patch=_wrap("blindspots.masked.training", "predicted_half_time",
                       "lambda eta, u: _orig(eta, u) / __import__('math').log(2.0)")),
    Mutant("masked-06-step-never-applied", "masked/06_training", "sgd-blind-stays-wrong",
           "the SGD update is never applied (step size 0): every chain ends where it started, which the earlier form "
           "of the claim (blind error alone above 0.1) let pass",
           patch=_wrap("blindspots.masked.training", "sgd_seed", "lambda seed, **k: _orig(seed, **{**k, 'eta': 0.0})")),
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
    # excess-mean-equals-discrepancy is a consistency record (one mean written two ways): no mutant.
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
# The MLP's training claims are made at book scale only; these planted errors run the chapter at book scale and stop
# at the MLP's claims (about a minute). The seeds then run in the kernel, one after another, so that the planted error
# reaches them (a worker process would import the unpatched module).
_IN_KERNEL = "import os as _os\n_os.environ['BLINDSPOTS_SEED_JOBS'] = '1'\n"
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

MUTANTS += [
    Mutant("masked-07-mlp-arms-share-schedule", _NB07, "mlp-blind-stays-wrong",
           "the MLP's training loop uses the last arm's schedule for every arm: the blind MLP is trained with "
           "full-mask mass",
           scale="book",
           patch=_IN_KERNEL + "import blindspots.masked.neural as _m\n_orig = _m.mlp_seed\n"
                 "def _patched(seed, *, schedules, **k):\n"
                 "    last = list(schedules.values())[-1]\n"
                 "    return _orig(seed, schedules={name: last for name in schedules}, **k)\n"
                 "_m.mlp_seed = _patched\n"),
    Mutant("masked-07-mlp-label-from-visible", _NB07, "mlp-full-mask-recovers",
           "the mode label of a training example is read off the visible block (z = 1{r > 0}) instead of the whole "
           "sequence: with nothing visible the label is always -",
           scale="book",
           patch=_IN_KERNEL + "import blindspots.masked.training as _m\n_orig = _m.sample_counts\n"
                 "def _patched(rng, law, N, w, m):\n"
                 "    a, t, z = _orig(rng, law, N, w, m)\n"
                 "    return a, t, 2 * a > m\n"
                 "_m.sample_counts = _patched\n"),
    Mutant("masked-07-mlp-init-ignores-seed", _NB07, "mlp-blind-depends-on-init",
           "every seed initialises the MLP from the same generator (seed 0); only the training data follow the seed",
           scale="book",
           patch=_IN_KERNEL + "import torch as _t\nimport blindspots.masked.neural as _m\n_orig = _m.PosteriorMLP\n"
                 "_m.PosteriorMLP = lambda hidden, gen: _orig(hidden, _t.Generator().manual_seed(0))\n"),
]
# The transformer's training claims (tf-*) are sanity records: a planted error could reach them only through book-scale
# transformer training, several minutes per error with the seeds in the kernel. Their statistics keep unit tests in
# tests/masked/test_neural.py, which are not planted errors.

# ---- masked/08_real_text
# markov-classifier-upper-side (Brier >= U for any predictor) is a consistency record and decay-code-prose (factor chosen
# after an earlier run) a sanity record: no mutants.
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
]
