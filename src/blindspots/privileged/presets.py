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
                  "rep": _REP, "rep_ns": [50, 400], "rep_fit_tasks": 10_000, "rep_test_tasks": 10_000, "rep_chunk": 10_000},
        "book": {"prior": _PRIOR, "ns": _GAP_NS, "gap_tasks": 400_000, "slope_n_min": 100,
                 "asymptotic_samples": 4_000_000, "d_grid": [1, 2, 4, 8], "d_tasks": 200_000, "d_asymptotic_samples": 1_000_000, "z": 3.0, "chunk": 50_000,
                 "rep": _REP, "rep_ns": [50, 400], "rep_fit_tasks": 60_000, "rep_test_tasks": 60_000, "rep_chunk": 60_000},
        "full": {"prior": _PRIOR, "ns": _GAP_NS, "gap_tasks": 10_000_000, "slope_n_min": 100,
                 "asymptotic_samples": 40_000_000, "d_grid": [1, 2, 4, 8], "d_tasks": 2_000_000, "d_asymptotic_samples": 10_000_000, "z": 3.0, "chunk": 100_000,
                 "rep": _REP, "rep_ns": [50, 400], "rep_fit_tasks": 500_000, "rep_test_tasks": 500_000, "rep_chunk": 50_000},
    },
    "privileged/02_teacher_forcing": {
        "smoke": {"prior": _PRIOR, "n": 10, "steps": 150, "batch": 128, "hidden": 32, "lr": 3e-3,
                  "embed_weight": 1.0, "test_tasks": 5_000, "curve_points": 6, "curve_tasks": 1_000, "z": 3.0,
                  "seeds": 2, "n_jobs": 1},
        "book": {"prior": _PRIOR, "n": 10, "steps": 2_000, "batch": 256, "hidden": 64, "lr": 3e-3,
                 "embed_weight": 1.0, "test_tasks": 100_000, "curve_points": 40, "curve_tasks": 5_000, "z": 3.0,
                 "seeds": 6, "n_jobs": 2},
        # sized for 2 CPU cores (about 30 minutes): 3x the steps, 2x the batch and 10 seeds, the
        # book's width and learning rate, checkpoints every 75 steps
        "full": {"prior": _PRIOR, "n": 10, "steps": 6_000, "batch": 512, "hidden": 64, "lr": 3e-3,
                 "embed_weight": 1.0, "test_tasks": 400_000, "curve_points": 80, "curve_tasks": 20_000, "z": 3.0,
                 "seeds": 10, "n_jobs": 2},
    },
}

# Chapters 03-04 (issue 12): PIQL's priors, a PFN, the privileged variants. Prior and model constants are the
# same at every scale; book scale is a shallow 2-layer model, full scale a deeper and longer run.
_PIQL_PRIOR = {"family": "mixture", "d_max": 4, "n_context": 48, "n_query": 16, "anomaly_rate": 0.1,
               "context_anomaly_rate": 0.05}
_PIQL_ENCODER = {"width": 32, "layers": 1, "prefix": 4, "max_len": 160, "batch": 32, "lr": 3e-3}


def _piql(steps, seeds, layers, width, val, test, probe, splits, enc_steps, eval_every):
    return {"prior": _PIQL_PRIOR, "model": {"width": width, "layers": layers, "heads": 4},
            "train": {"steps": steps, "batch": 16, "lr": 3e-3, "embed_weight": 1.0, "eval_every": eval_every},
            "eval": {"val_tasks": val, "test_tasks": test, "probe_train": probe[0], "probe_test": probe[1]},
            "encoder": {**_PIQL_ENCODER, "steps": enc_steps}, "seeds": seeds, "n_jobs": 2,
            "real": {"datasets": ["wine", "wdbc", "digits"], "splits": splits}}


for _nb, _probe in (("privileged/03_piql_training", False), ("privileged/04_piql_probes", True)):
    # chapter 03: speedup curves (dense evaluation) and real data; chapter 04: probes, no real data
    _ev = 2 if _probe else 1
    PRESETS[_nb] = {
        "smoke": _piql(20, 2, 2, 32, 32, 16, (60, 40) if _probe else (0, 0), 2, 10, 10),
        "book": _piql(300, 6, 2, 32, 256, 128, (300, 200) if _probe else (0, 0), 5, 150, 25 * _ev),
        "full": _piql(1500, 6, 10, 64, 512, 256, (600, 400) if _probe else (0, 0), 10, 1000, 100),
    }
    if not _probe:  # chapter 03's real data: independent outlier draws, each with its own splits
        for _sc, _draws in (("smoke", 2), ("book", 5), ("full", 5)):
            PRESETS[_nb][_sc]["real"]["draws"] = _draws
    if _probe:
        for _s in PRESETS[_nb].values():
            _s["real"] = {"datasets": [], "splits": 0}
            # chapter 04's seeds start at 100: its probe claim was reformulated after runs on seeds 0-5
            _s["seed_base"] = 100

# Chapter 05: the same model family at several depths, no probes, no real data. Its seeds start at 200: the
# parameter-matched claim (piql.SPLIT_CLAIMS) was written after a run on seeds 0-5.
PRESETS["privileged/05_piql_depth"] = {
    scale: {**PRESETS["privileged/04_piql_probes"][like],
            "eval": {**PRESETS["privileged/04_piql_probes"][like]["eval"], "probe_train": 0, "probe_test": 0},
            "depths": depths, "seed_base": 200}
    # mutant (the planted-error tests' run, runtime.MUTANT_SCALE): book's run at one layer, where its claims are
    for scale, like, depths in (("smoke", "smoke", [1, 2]), ("book", "book", [1, 2, 4]),
                                ("full", "full", [1, 2, 4, 10]), ("mutant", "book", [1]))
}
