PRESETS: dict = {}

# Chapter 4: schedules, recovery radius and full-mask coercivity.
PRESETS["masked/04_schedules"] = {
    "smoke": {
        "laws": [["P", 0.6]], "N": [127], "w": [0.5], "m_base_div": [2], "s": [0, 2],
        "pi": [0.0, 1e-4, 1e-3, 1e-2, 1e-1], "eps": [1e-10, 1e-8, 1e-6, 1e-4, 1e-2],
        "coercivity": {"N": 7, "m_base": 3, "n": 200, "noise": [1e-3, 1.0], "tilt": 2.0,
                       "pi0": [1e-2, 1e-1, 1.0]},
        "blind_N": 255,
        "general": {"n_schedules": 6, "max_support": 5, "low_max": 8, "log10_damp": 4.0, "n_lambda": 101, "n_near": 13},
    },
    "book": {
        "laws": [["P", 0.6], ["C", 1.5]], "N": [127, 1023], "w": [0.5, 0.9], "m_base_div": [4, 2],
        "s": [0, 1, 2, 4], "pi": [0.0, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1],
        "eps": [1e-12, 1e-11, 1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2],
        "coercivity": {"N": 9, "m_base": 4, "n": 1000, "noise": [1e-3, 1.0], "tilt": 2.0,
                       "pi0": [1e-3, 1e-2, 1e-1, 1.0]},
        "blind_N": 1023,
        "general": {"n_schedules": 25, "max_support": 6, "low_max": 8, "log10_damp": 4.0, "n_lambda": 201, "n_near": 25},
    },
    "full": {
        "laws": [["P", 0.6], ["C", 1.5]], "N": [255, 4095],
        "w": [0.5, 0.9], "m_base_div": [4, 2], "s": [0, 1, 2, 4],
        "pi": [0.0, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1],
        "eps": [1e-12, 1e-11, 1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2],
        "coercivity": {"N": 11, "m_base": 5, "n": 2000, "noise": [1e-3, 1.0], "tilt": 2.0,
                       "pi0": [1e-3, 1e-2, 1e-1, 1.0]},
        "blind_N": 4095,
        "general": {"n_schedules": 50, "max_support": 8, "low_max": 8, "log10_damp": 4.0, "n_lambda": 401, "n_near": 25},
    },
}

# Chapter 5: approximate tensorization.
PRESETS["masked/05_tensorization"] = {
    "smoke": {
        "laws": [["P", 0.6], ["C", 1.5]], "N": [63, 127, 255, 511], "w": [0.5], "rho": [0.5], "pi0": [1e-2],
        "n_lambda": 9, "uniform_ratio": True,
    },
    "book": {
        "laws": [["P", 0.6], ["P", 0.8], ["C", 1.5]], "N": [127, 255, 511, 1023], "w": [0.5, 0.9],
        "rho": [0.25, 0.5, 0.75], "pi0": [1e-3, 1e-2, 1e-1], "n_lambda": 21, "uniform_ratio": True,
    },
    "full": {
        "laws": [["P", 0.6], ["P", 0.8], ["C", 1.5]], "N": [127, 255, 511, 1023, 2047, 4095],
        "w": [0.5, 0.9], "rho": [0.25, 0.5, 0.75], "pi0": [1e-3, 1e-2, 1e-1], "n_lambda": 41,
        "uniform_ratio": True,
    },
}

# Chapter 1: masked prediction as a family of conditional problems (pilot).
PRESETS["masked/01_setup"] = {
    "smoke": {"laws": [["P", 0.6], ["C", 1.5]], "N_enum": [5, 7], "N_allsets": 5, "w": [0.5, 0.9],
              "lam": [0.05, 0.3, 0.6, 0.95], "N_fig": 7, "N_mono": [127], "mp_dps": 40,
              "fig_lam": [0.3, 0.6, 0.99], "allsets_lam": [0.1, 0.6], "mono_lam": [0.05, 0.5, 0.95]},
    "book": {"laws": [["P", 0.6], ["P", 0.8], ["C", 1.5], ["C", 0.5]], "N_enum": [5, 7, 9, 11],
             "N_allsets": 7, "w": [0.5, 0.9], "lam": [0.02, 0.1, 0.3, 0.45, 0.6, 0.8, 0.88, 0.95, 0.99],
             "N_fig": 11, "N_mono": [127, 1023], "mp_dps": 40,
             "fig_lam": [0.3, 0.6, 0.99], "allsets_lam": [0.1, 0.6], "mono_lam": [0.05, 0.5, 0.95]},
    "full": {"laws": [["P", 0.6], ["P", 0.8], ["C", 1.5], ["C", 0.5]], "N_enum": [5, 7, 9, 11, 13],
             "N_allsets": 9, "w": [0.5, 0.9], "lam": [0.02, 0.1, 0.3, 0.45, 0.6, 0.8, 0.88, 0.95, 0.99],
             "N_fig": 13, "N_mono": [127, 1023, 16383], "mp_dps": 40,
             "fig_lam": [0.3, 0.6, 0.99], "allsets_lam": [0.1, 0.6], "mono_lam": [0.05, 0.5, 0.95]},
}

# Chapter 2: mode blindness.
PRESETS["masked/02_mode_blindness"] = {
    "smoke": {"N": [127, 255], "w": [0.5, 0.9], "theta": [0.6, 0.8], "beta": [1.5, 0.5],
              "n_lambda": 21, "m_points": 40, "fit_window": [0.125, 0.5], "small_s": [0, 1, 2, 4],
              "fraction": 0.5, "rate_tol": 0.05, "N_tv": 7, "barrier_N": [127, 1023]},
    "book": {"N": [127, 255, 511, 1023], "w": [0.5, 0.9], "theta": [0.6, 0.8], "beta": [1.5, 0.5],
             "n_lambda": 201, "m_points": 128, "fit_window": [0.125, 0.5], "small_s": [0, 1, 2, 4],
             "fraction": 0.5, "rate_tol": 0.05, "N_tv": 11, "barrier_N": [127, 255, 511, 1023]},
    "full": {"N": [127, 255, 511, 1023, 4095, 16383, 65535], "w": [0.5, 0.9], "theta": [0.6, 0.8],
             "beta": [1.5, 0.5], "n_lambda": 201, "m_points": 128, "fit_window": [0.125, 0.5],
             "small_s": [0, 1, 2, 4], "fraction": 0.5, "rate_tol": 0.05, "N_tv": 11,
             "barrier_N": [127, 255, 511, 1023, 4095, 16383, 65535]},
}

# Appendix: the exact engine (timings against enumeration, the million-token profiles, the certified window).
_ENGINE_COMMON = {"w": [0.5, 0.9], "theta": [0.6, 0.8], "beta": [1.5, 0.5], "fit_window": [0.125, 0.5],
                  "fraction": 0.5, "bert_mask": 0.15, "N_cold": 1023}
PRESETS["masked/exact_engine"] = {
    "smoke": {**_ENGINE_COMMON, "n_lambda": 21, "N_long": 16383,
              "long_fractions": [0.1, 0.3, 0.5, 0.7, 0.85, 0.9], "long_small_m": 16, "window_N": 16383,
              "N_bench": [9, 11], "N_cold": 255},
    "book": {**_ENGINE_COMMON, "n_lambda": 201, "N_long": 1048575,
             "long_fractions": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9], "long_small_m": 64,
             "window_N": 65535, "N_bench": [13, 15]},
    "full": {**_ENGINE_COMMON, "n_lambda": 201, "N_long": 1048575,
             "long_fractions": [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6,
                                0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95],
             "long_small_m": 256, "window_N": 262143, "N_bench": [13, 15, 17]},
}

# Chapter 3: information decomposition and sensitivity.
PRESETS["masked/03_information_decomposition"] = {
    "smoke": {"laws": [["P", 0.6], ["C", 1.5]], "N": [127], "w": [0.5, 0.9], "n_lambda": 21,
              "m_points": 8, "mp_N": 63, "mp_m": [0, 9, 31], "mp_dps": 50, "fd_h": 1e-5, "N_enum": 7,
              "mp_lam": [0.05, 0.7], "mp_w": 0.9, "fd_h_enum": 1e-4, "extremum_grid": 20001},
    "book": {"laws": [["P", 0.6], ["P", 0.8], ["C", 1.5], ["C", 0.5]], "N": [127, 255, 511, 1023],
             "w": [0.5, 0.9], "n_lambda": 201, "m_points": 24, "mp_N": 127, "mp_m": [0, 5, 31, 63, 100],
             "mp_dps": 50, "fd_h": 1e-5, "N_enum": 11,
             "mp_lam": [0.05, 0.7], "mp_w": 0.9, "fd_h_enum": 1e-4, "extremum_grid": 20001},
    "full": {"laws": [["P", 0.6], ["P", 0.8], ["C", 1.5], ["C", 0.5]],
             "N": [127, 255, 511, 1023, 4095, 16383, 65535], "w": [0.5, 0.9], "n_lambda": 201,
             "m_points": 24, "mp_N": 255, "mp_m": [0, 5, 31, 63, 127, 200], "mp_dps": 60, "fd_h": 1e-5,
             "N_enum": 13,
             "mp_lam": [0.05, 0.7], "mp_w": 0.9, "fd_h_enum": 1e-4, "extremum_grid": 20001},
}

# Chapter 6: training the mode weight (population GD, minibatch SGD) and the cost of low-visibility mass.
# sgd.fresh_seed: the blind-against-boost contrast of SGD was written after a run on seeds 0-4, so it runs on
# seeds fresh_seed .. fresh_seed + seeds - 1, which no earlier run used.
PRESETS["masked/06_training"] = {
    "smoke": {
        "theta": 0.8, "w": 0.5,
        "gd": {"N": [31], "s": [0, 4], "pi": [0.0, 1e-2, 1e-1], "lam0": [0.1, 0.8], "eta": 4.0,
               "steps": 60000, "delta0": 0.02},
        "sgd": {"N": 63, "s": 0, "pi": [0.0, 1e-2, 1e-1, 0.5], "eta": 4.0, "batch": 16, "steps": 3000,
                "tail": 0.5, "replicas": 16, "seeds": 5, "n_val": 2000, "n_boot": 500, "lam0": [0.7, 0.9],
                "fresh_seed": 100},
        "n_jobs": 1,
        "cost": {"N": [31], "N_enum": [5, 7], "s": [0, 1], "pi": [1e-3, 1e-2, 1e-1],
                 "gap": [1e-3, 1e-2, 1e-1], "enum_lam": [0.3, 0.7], "enum_pi": [0.0, 0.2],
                 "mc_N": 31, "mc_pi": [0.1, 0.5], "mc_lam": 0.6, "mc_n": 50000},
    },
    "book": {
        "theta": 0.8, "w": 0.5,
        "gd": {"N": [31, 63, 127], "s": [0, 1, 4], "pi": [0.0, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1],
               "lam0": [0.1, 0.7, 0.9], "eta": 4.0, "steps": 80000, "delta0": 0.02},
        "sgd": {"N": 127, "s": 0, "pi": [0.0, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1], "eta": 8.0, "batch": 16,
                "steps": 10000, "tail": 0.5, "replicas": 16, "seeds": 5, "n_val": 20000, "n_boot": 2000,
                "lam0": [0.7, 0.9], "fresh_seed": 100},
        "n_jobs": None,
        "cost": {"N": [31, 63, 127], "N_enum": [7, 9], "s": [0, 1, 4], "pi": [1e-4, 1e-3, 1e-2, 1e-1],
                 "gap": [1e-3, 1e-2, 1e-1, 0.3], "enum_lam": [0.3, 0.7], "enum_pi": [0.0, 0.2],
                 "mc_N": 127, "mc_pi": [0.01, 0.1, 0.5], "mc_lam": 0.6, "mc_n": 200000},
    },
    "full": {
        "theta": 0.8, "w": 0.5,
        "gd": {"N": [31, 63, 127], "s": [0, 1, 4], "pi": [0.0, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1],
               "lam0": [0.1, 0.3, 0.7, 0.9], "eta": 4.0, "steps": 1000000, "delta0": 0.02},
        "sgd": {"N": 127, "s": 0, "pi": [0.0, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1], "eta": 8.0,
                "batch": 16, "steps": 100000, "tail": 0.5, "replicas": 32, "seeds": 10, "n_val": 100000,
                "n_boot": 5000, "lam0": [0.7, 0.9], "fresh_seed": 100},
        "n_jobs": None,
        "cost": {"N": [31, 63, 127], "N_enum": [7, 9, 11], "s": [0, 1, 4],
                 "pi": [1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1], "gap": [1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 0.3],
                 "enum_lam": [0.3, 0.7], "enum_pi": [0.0, 0.2], "mc_N": 127, "mc_pi": [0.01, 0.1, 0.5],
                 "mc_lam": 0.6, "mc_n": 1000000},
    },
}

# Chapter 7: neural masked predictors (an MLP on the sufficient statistic, a small masked transformer on raw
# sequences) and the mode weights their conditionals imply.
PRESETS["masked/07_neural_predictors"] = {
    "smoke": {
        "theta": 0.8, "w": 0.8, "n_jobs": 1,
        "checks": {"N_enum": 9, "ms_enum": [0, 1, 2, 4], "lams": [0.2, 0.5, 0.8], "N_sampler": 5,
                   "sampler_lam": 0.8, "sampler_n": 4000, "N_fit": 65, "ms_fit": [1, 2, 3, 4]},
        "mlp": {"N": 1023, "m_base": 511, "pi0": 0.1, "hidden": 16, "steps": 150, "batch": 128, "lr": 1e-2,
                "n_check": 500, "seeds": 2, "first_seed": 200, "earlier_seeds": 0, "previous_first_seed": None},
        "tf": {"N": 65, "visible_fraction": 0.85, "d": 16, "heads": 2, "layers": 1, "d_ff": 32, "steps": 30,
               "batch": 32, "lr": 3e-3, "n_samples": 40, "ms_cond": [1, 2, 3, 4], "per_class": 2, "n_val": 200,
               "seeds": 2},
    },
    "book": {
        "theta": 0.8, "w": 0.8, "n_jobs": None,
        "checks": {"N_enum": 9, "ms_enum": [0, 1, 2, 4, 8], "lams": [0.2, 0.5, 0.8], "N_sampler": 7,
                   "sampler_lam": 0.8, "sampler_n": 20000, "N_fit": 65, "ms_fit": [1, 2, 3, 4]},
        # 16 and 8 seeds: the blind arm's readouts scatter over [0, 1] with the initialisation, and a t interval of the
        # mean |w_hat - w| then needs more than 5 seeds to clear 0.1 (a first run with 6 MLP seeds failed to).
        # The MLP design was revised after that run, so its claims used fresh seeds 100-115; the run made with the
        # revised design on seeds 0-15 is shown after them (earlier_seeds), as a record. The spread criterion then
        # changed (an F interval, which assumes normal per-seed values, became a permutation test), so the claims
        # use fresh seeds again (first_seed = 200: seeds 200-215), and seeds 100-115 are shown as a record too
        # (previous_first_seed).
        "mlp": {"N": 1023, "m_base": 511, "pi0": 0.1, "hidden": 32, "steps": 1000, "batch": 256, "lr": 1e-2,
                "n_check": 4000, "seeds": 16, "first_seed": 200, "earlier_seeds": 16, "previous_first_seed": 100},
        "tf": {"N": 65, "visible_fraction": 0.85, "d": 16, "heads": 2, "layers": 2, "d_ff": 32, "steps": 800,
               "batch": 64, "lr": 3e-3, "n_samples": 600, "ms_cond": [1, 2, 3, 4], "per_class": 8, "n_val": 2000,
               "seeds": 8},
    },
    "full": {
        "theta": 0.8, "w": 0.8, "n_jobs": None,
        "checks": {"N_enum": 11, "ms_enum": [0, 1, 2, 4, 8, 10], "lams": [0.1, 0.2, 0.5, 0.8, 0.9],
                   "N_sampler": 9, "sampler_lam": 0.8, "sampler_n": 200000, "N_fit": 255, "ms_fit": [1, 2, 3, 4]},
        "mlp": {"N": 1023, "m_base": 511, "pi0": 0.1, "hidden": 64, "steps": 10000, "batch": 1024, "lr": 1e-2,
                "n_check": 20000, "seeds": 10, "first_seed": 100, "earlier_seeds": 0, "previous_first_seed": None},
        "tf": {"N": 255, "visible_fraction": 0.85, "d": 64, "heads": 4, "layers": 4, "d_ff": 256, "steps": 20000,
               "batch": 256, "lr": 1e-3, "n_samples": 10000, "ms_cond": [1, 2, 3, 4], "per_class": 32,
               "n_val": 20000, "seeds": 10},
    },
}

# Chapter 8: residual mode uncertainty of real text (code against prose, German against English).
# decay_ratio_strict = 100 is the strict criterion (two orders of magnitude), fixed before the run; it is tested and
# reported (at book scale it fails: the Brier score levels off near 0.008 by 256 bytes). The line decay-code-prose
# is at decay_ratio = 10, what the data support, chosen after an earlier run: a sanity record (a finding), not a
# verification, and the chapter says so. The code-prose pair
# draws its own windows per document (code, prose) and test fraction: its prose has thousands of short pages, so
# one test document per few windows brings the floor 3/n_doc well below U(1)/100; de-en keeps per_doc and
# test_fraction (it needs translated pairs).
_MARKOV_08 = {"P_a": [[0.8, 0.2], [0.2, 0.8]], "P_b": [[0.45, 0.55], [0.55, 0.45]], "w": 0.5,
              "ks": [2, 3, 4, 6, 8, 10, 12, 14, 16], "slope_from": 4, "classifier_ks": [8, 12, 16], "length": 64,
              "order": 2}
PRESETS["masked/08_real_text"] = {
    "smoke": {"window": 256, "per_doc": 3, "test_fraction": 0.3, "n_boot": 50, "order": 5,
              "ks_short": [1, 2, 4, 8], "ks_long": [8, 64, 256], "C": 100.0, "n_buckets": 1024,
              "richness_ks": [32], "u_floor": 0.01, "decay_ratio": 10.0, "decay_ratio_strict": 100.0,
              "alpha": 0.01,
              "code_prose": {"per_doc": [6, 2], "test_fraction": 0.3},
              "markov": {**_MARKOV_08, "n_docs": 500}, "eps": [1e-3, 1e-6], "engine_N": 255},
    "book": {"window": 256, "per_doc": 8, "test_fraction": 0.3, "n_boot": 200, "order": 5,
             "ks_short": [1, 2, 4, 8], "ks_long": [8, 16, 32, 64, 128, 256], "C": 100.0, "n_buckets": 4096,
             "richness_ks": [16, 64, 256], "u_floor": 0.01, "decay_ratio": 10.0, "decay_ratio_strict": 100.0,
             "alpha": 0.01,
             "code_prose": {"per_doc": [16, 4], "test_fraction": 0.5},
             "markov": {**_MARKOV_08, "n_docs": 2000}, "eps": [1e-3, 1e-6], "engine_N": 4095},
    "full": {"window": 1024, "per_doc": 12, "test_fraction": 0.3, "n_boot": 2000, "order": 5,
             "ks_short": [1, 2, 4, 8], "ks_long": [8, 16, 32, 64, 128, 256, 512, 1024], "C": 100.0,
             "n_buckets": 4096, "richness_ks": [16, 64, 256, 1024], "u_floor": 0.01, "decay_ratio": 10.0,
             "decay_ratio_strict": 100.0, "alpha": 0.01, "code_prose": {"per_doc": [12, 4], "test_fraction": 0.5},
             "markov": {**_MARKOV_08, "n_docs": 20000}, "eps": [1e-3, 1e-6], "engine_N": 16383},
}
