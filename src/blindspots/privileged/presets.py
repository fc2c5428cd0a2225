"""Sizes of the Part III (privileged information) chapters at each scale.

``smoke`` checks that a notebook runs (seconds), ``book`` is what gets committed
(under 4 minutes on 2 CPU cores), ``full`` is a larger Monte Carlo for a GPU or a long run.
Model constants (prior hyper-parameters, anomaly rate, inflation) are the same at
every scale; only Monte Carlo and training sizes change.
"""

_PRIOR = {"d": 2, "anomaly_rate": 0.1, "inflation": 5.0, "m0": 0.0, "k0": 1.0, "a0": 3.0, "b0": 2.0}
_GAP_NS = [1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000]
_REP = {"anomaly_rate": 0.1, "inflation": 5.0, "scale_control_variances": [1.0, 4.0]}

PRESETS: dict = {
    "privileged/01_privileged_gap": {
        "smoke": {"prior": _PRIOR, "ns": _GAP_NS, "gap_tasks": 20_000, "slope_n_min": 100,
                  "asymptotic_samples": 200_000, "d_grid": [1, 2, 4, 8], "d_tasks": 60_000, "d_asymptotic_samples": 200_000, "z": 3.0, "chunk": 20_000,
                  "rep": _REP, "rep_ns": [50, 400], "rep_fit_tasks": 10_000, "rep_test_tasks": 10_000},
        "book": {"prior": _PRIOR, "ns": _GAP_NS, "gap_tasks": 400_000, "slope_n_min": 100,
                 "asymptotic_samples": 4_000_000, "d_grid": [1, 2, 4, 8], "d_tasks": 200_000, "d_asymptotic_samples": 1_000_000, "z": 3.0, "chunk": 50_000,
                 "rep": _REP, "rep_ns": [50, 400], "rep_fit_tasks": 60_000, "rep_test_tasks": 60_000},
        "full": {"prior": _PRIOR, "ns": _GAP_NS, "gap_tasks": 10_000_000, "slope_n_min": 100,
                 "asymptotic_samples": 40_000_000, "d_grid": [1, 2, 4, 8], "d_tasks": 2_000_000, "d_asymptotic_samples": 10_000_000, "z": 3.0, "chunk": 100_000,
                 "rep": _REP, "rep_ns": [50, 400], "rep_fit_tasks": 500_000, "rep_test_tasks": 500_000},
    },
    "privileged/02_teacher_forcing": {
        "smoke": {"prior": _PRIOR, "n": 10, "steps": 150, "batch": 128, "hidden": 32, "lr": 3e-3,
                  "embed_weight": 1.0, "test_tasks": 5_000, "curve_points": 3, "curve_tasks": 1_000, "z": 3.0,
                  "seeds": 2, "n_jobs": 1},
        "book": {"prior": _PRIOR, "n": 10, "steps": 2_000, "batch": 256, "hidden": 64, "lr": 3e-3,
                 "embed_weight": 1.0, "test_tasks": 100_000, "curve_points": 10, "curve_tasks": 5_000, "z": 3.0,
                 "seeds": 6, "n_jobs": 2},
        "full": {"prior": _PRIOR, "n": 10, "steps": 20_000, "batch": 1024, "hidden": 128, "lr": 1e-3,
                 "embed_weight": 1.0, "test_tasks": 1_000_000, "curve_points": 40, "curve_tasks": 50_000, "z": 3.0,
                 "seeds": 10, "n_jobs": 2},
    },
}
