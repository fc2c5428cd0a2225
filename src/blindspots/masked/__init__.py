from .._exports import lazy_exports

_GROUPS = (
    ("laws", "masked/01-05", "the two-mode laws: P (product modes) and C (Curie-Weiss)",
     ("Law", "ProductLaw", "CurieWeissLaw", "make_law")),
    ("exact", "masked/01-04", "exact engine: masked discrepancy and residual uncertainty by visible size, in logs",
     ("masked_discrepancy", "log_masked_discrepancy", "residual_uncertainty", "log_residual_uncertainty",
      "discrepancy_profile", "posterior_table", "log_mode_weights", "binary_kl", "log_binary_kl")),
    ("schedules", "masked/04-05", "mask schedules and their averages",
     ("Schedule", "PointMass", "TwoPoint", "Mixture", "FixedFraction", "UniformRatio", "full_mask_mass",
      "min_visible", "schedule_discrepancy", "log_schedule_discrepancy", "schedule_residual_uncertainty",
      "log_schedule_residual_uncertainty", "log_schedule_discrepancy_bracket")),
    ("enumeration", "masked/01-03", "brute-force references over all 2^N states (small N)",
     ("states", "mixture_table", "witness_table", "mode_tables", "visible_sets", "masked_discrepancy_joint",
      "kl_joint", "total_variation")),
    ("identifiability", "masked/04-05", "recovery radii, coercivity on random joint laws, tensorization",
     ("mode_weight_interval", "recovery_radius", "recovery_radii", "recovery_grid", "recovery_slope",
      "coercivity_draws", "coercivity_radius", "random_joint_laws", "excess_masked_risk", "pair_slopes",
      "tensorization_row", "visible_overlap_rate", "uniform_ratio_growth_exponent")),
    ("theory", "masked/02-05", "closed forms, rates, constants and a-priori tolerances the claims test against",
     ("product_rate", "product_constants", "blindness_constant", "log_blindness_bound", "fixed_fraction_rate",
      "cw_barrier", "cw_barrier_offset_interval", "cw_null_residual_limit", "sensitivity_bounds",
      "sensitivity_constants", "log_curvature_at_truth", "recovery_weight_bound", "log_recovery_weight_bound",
      "g0", "g1")),
    ("training", "masked/06", "training the mode weight: gradient descent, SGD, excess-loss moments, detection cost",
     ("population_gradient", "population_gd", "predicted_half_time", "halving_time_interval", "sgd_seed",
      "error_slope", "excess_loss_moments", "detection_cost", "detection_cost_interval", "raw_loss_moments",
      "mixture_loss_variance", "simulate_losses")),
    ("neural", "masked/07", "neural masked predictors: an MLP on the sufficient statistic, a masked transformer, "
     "its unmasking sampler and the mode weights its conditionals imply",
     ("true_posterior", "witness_conditional", "full_mask_weight", "fit_witness_weight", "PosteriorMLP",
      "MaskedTransformer", "unmask_sample", "sampler_weight", "sampler_log_prob", "witness_oracle",
      "implied_weights", "mlp_seed", "transformer_seed", "sd_ratio_lower", "spread_test_p")),
    ("corpora", "masked/08", "real-text corpora: loader, byte tokens, windows, split by document",
     ("Document", "PairData", "encode", "decode", "load_mode", "document_windows", "split_by_document",
      "make_pair")),
    ("residual", "masked/08", "residual mode uncertainty of real text: estimators, bootstrap, censoring, Markov control, fits",
     ("visible_spans", "BackoffNgram", "ngram_posterior", "span_features", "fit_calibrated_logistic",
      "resample_weights", "cell_estimate", "censor_reason", "MarkovPair", "markov_exact_uncertainty",
      "markov_chernoff_rate", "ngram_cells", "classifier_cells", "compare_decay", "context_for_discrepancy")),
)

__doc__, __all__, __getattr__, __dir__ = lazy_exports(
    __name__, "Part I, masked prediction (Cai & Shi): mode blindness and mask schedules.", _GROUPS)
