"""Sizes of the Part II chapters at each scale (smoke: seconds, book: minutes on 2 cores, full: GPU)."""

# Tiny models: one intra-op thread is as fast as two on an idle machine and several times faster
# when other jobs share the cores (runtime.setup reads torch_threads).
_MODEL = {"d_model": 32, "n_heads": 2, "n_layers": 1, "max_len": 128, "length": 100, "torch_threads": 1}

_TRAIN = {"batch_size": 32, "lr": 3e-3, "mlm_prob": 0.5, "local_k": 2}

PRESETS: dict = {
    "selfpretraining/01_gradient_blindness": {
        "smoke": {**_MODEL, "n_instances": 20, "n_model_seeds": 2, "grad_batch": 8, "band_k": 1,
                  "warmup_steps": 5, "init_scales": [0.003, 0.03, 1.0], "slope_fit_max": 0.03, "scale_batch": 8,
                  "iid_ns": [10], "iid_samples": 4000, "z": 3.0, **_TRAIN},
        "book": {**_MODEL, "n_instances": 500, "n_model_seeds": 4, "grad_batch": 512, "band_k": 1,
                 "warmup_steps": 300, "init_scales": [0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0],
                 "slope_fit_max": 0.03, "scale_batch": 32, "iid_ns": [10, 30, 100], "iid_samples": 20000, "z": 3.0, **_TRAIN},
        "full": {**_MODEL, "n_instances": 5000, "n_model_seeds": 20, "grad_batch": 2048, "band_k": 1,
                 "warmup_steps": 2000, "init_scales": [0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0],
                 "slope_fit_max": 0.03, "scale_batch": 128, "iid_ns": [10, 30, 100], "iid_samples": 100000, "z": 3.0, **_TRAIN},
    },
    "selfpretraining/02_training_mechanism": {
        "smoke": {**_MODEL, **_TRAIN, "n_train": 256, "n_test": 200, "seeds": 2, "spt_steps": 20,
                  "label_steps": 20, "eval_every": 10, "n_maps": 16, "zoom": 30, "max_offset": 6, "n_jobs": 1},
        "book": {**_MODEL, **_TRAIN, "n_train": 2000, "n_test": 500, "seeds": 6, "spt_steps": 1600,
                 "label_steps": 300, "eval_every": 50, "n_maps": 64, "zoom": 30, "max_offset": 6, "n_jobs": 2},
        "full": {**_MODEL, **_TRAIN, "n_train": 20000, "n_test": 5000, "seeds": 10, "spt_steps": 5000,
                 "label_steps": 3000, "eval_every": 100, "n_maps": 500, "zoom": 30, "max_offset": 6, "n_jobs": None},
    },
    "selfpretraining/03_ablations": {
        "smoke": {**_MODEL, **_TRAIN, "n_train": 64, "n_test": 100, "seeds": 2, "spt_checkpoints": [0, 4, 8],
                  "label_steps": 4, "other_source": False, "n_jobs": 1},
        "book": {**_MODEL, **_TRAIN, "n_train": 2000, "n_test": 500, "seeds": 6, "spt_checkpoints": [0, 200, 1600],
                 "label_steps": 200, "other_source": False, "n_jobs": 2},
        "full": {**_MODEL, **_TRAIN, "n_train": 2000, "n_test": 5000, "seeds": 10,
                 "spt_checkpoints": [0, 62, 620, 3100], "label_steps": 1000, "other_source": True, "n_jobs": None},
    },
    "selfpretraining/04_depth": {
        "smoke": {**_MODEL, **_TRAIN, "n_train": 64, "n_test": 100, "spt_steps": 8, "label_steps": 4,
                  "depths": [1, 2], "depth_seeds": 2, "n_jobs": 1},
        "book": {**_MODEL, **_TRAIN, "n_train": 2000, "n_test": 500, "spt_steps": 1600, "label_steps": 200,
                 "depths": [1, 2], "depth_seeds": 5, "n_jobs": 2},
        "full": {**_MODEL, **_TRAIN, "n_train": 2000, "n_test": 5000, "spt_steps": 3200, "label_steps": 1000,
                 "depths": [1, 2, 4], "depth_seeds": 10, "n_jobs": None},
    },
}

# Mini Long Range Arena (chapters 05-06). One vocabulary and max_len for all tasks (cross-task SPT).
_LRA_MODEL = {"d_model": 32, "n_heads": 2, "max_len": 256, "torch_threads": 1, **_TRAIN}
_LISTOPS_BOOK = {"listops_min_length": 40, "listops_max_length": 120, "listops_max_depth": 6, "listops_max_args": 6}
_LISTOPS_FULL = {"listops_min_length": 500, "listops_max_length": 2000, "listops_max_depth": 10, "listops_max_args": 10}
_PF_BOOK = {"pathfinder_size": 16, "pathfinder_path_length": 14, "pathfinder_distractors": 2,
            "pathfinder_distractor_length": 5}
_PF_FULL = {"pathfinder_size": 32, "pathfinder_path_length": 28, "pathfinder_distractors": 4,
            "pathfinder_distractor_length": 8}
_LRA_SMOKE = {**_LRA_MODEL, **_LISTOPS_BOOK, **_PF_BOOK, "listops_min_length": 20, "listops_max_length": 60,
              "n_train": 64, "n_test": 40, "seeds": 2, "spt_epochs": 1, "label_steps": 4, "depths": [1, 2],
              "spt_checkpoints": [], "deep_arms": ["scratch", "spt"], "n_jobs": 1}
_LRA_FULL = {**_LRA_MODEL, **_LISTOPS_FULL, **_PF_FULL, "max_len": 2048, "n_train": 20000, "n_test": 2000,
             "seeds": 10, "spt_epochs": 50, "label_steps": 5000, "depths": [1, 2, 4], "spt_checkpoints": [1, 10],
             "deep_arms": ["scratch", "spt", "qk_only", "other_source", "alibi"], "n_jobs": None}  # every arm at every depth
PRESETS["selfpretraining/05_mini_lra"] = {
    "smoke": {**_LRA_SMOKE, "tasks": ["listops", "image"]},
    "book": {**_LRA_MODEL, **_LISTOPS_BOOK, **_PF_BOOK, "tasks": ["listops", "image"], "n_train": 2000, "n_test": 297,
             "seeds": 5, "spt_epochs": 3, "label_steps": 240, "depths": [1, 2], "spt_checkpoints": [],
             "deep_arms": ["scratch", "spt"], "n_jobs": 2},  # beyond one layer: scratch and SPT only (the budget)
    "full": {**_LRA_FULL, "tasks": ["listops", "image"]},
}
PRESETS["selfpretraining/06_mini_lra_pathfinder"] = {
    "smoke": {**_LRA_SMOKE, "tasks": ["pathfinder"]},
    # Book scale: one layer only (two doubled the run), and 150 label steps: with 240 the chapter took 356 s
    # of wall time on two idle cores, over its 4-minute budget (seed CPU time varies by 40% between machines).
    "book": {**_LRA_MODEL, **_LISTOPS_BOOK, **_PF_BOOK, "tasks": ["pathfinder"], "n_train": 2000, "n_test": 297,
             "seeds": 5, "spt_epochs": 3, "label_steps": 150, "depths": [1], "spt_checkpoints": [],
             "deep_arms": ["scratch", "spt"], "n_jobs": 2},
    "full": {**_LRA_FULL, "tasks": ["pathfinder"]},
}
# Chapter 07, the pretraining-length sweep on the digits (length 64, the cheapest task). Rows: scratch (0 epochs),
# SPT stopped after each of spt_checkpoints, and SPT after spt_epochs; every row at every depth. Full scale is
# sized for 2 CPU cores (about 20 minutes): the paper's sweep points 0, 1, 10 and 50 epochs, depth up to 4.
_SWEEP = {"tasks": ["image"], "arms": ["scratch", "spt"], "deep_arms": ["scratch", "spt"], "n_train": 1500, "n_test": 297}
PRESETS["selfpretraining/07_spt_length"] = {
    "smoke": {**_LRA_SMOKE, **_SWEEP, "n_train": 64, "n_test": 40, "seeds": 2, "spt_epochs": 2,
              "spt_checkpoints": [1], "label_steps": 4, "depths": [1], "n_jobs": 1},
    "book": {**_LRA_MODEL, **_LISTOPS_BOOK, **_PF_BOOK, **_SWEEP, "seeds": 5, "spt_epochs": 10,
             "spt_checkpoints": [1, 3], "label_steps": 240, "depths": [1, 2], "n_jobs": 2},
    "full": {**_LRA_MODEL, **_LISTOPS_BOOK, **_PF_BOOK, **_SWEEP, "seeds": 5, "spt_epochs": 50,
             "spt_checkpoints": [1, 10], "label_steps": 1000, "depths": [1, 2, 4], "n_jobs": 2},
}
# Chapter 09, the same sweep on ListOps and PathFinder at book-scale lengths (120 and 256 tokens), scratch and SPT
# rows only. Depths are per task (task_depths). Full scale is sized for 2 CPU cores (about 45 minutes): sweep
# points 0, 1, 10 and 50 epochs, ListOps at depths 1, 2 and 4, PathFinder at 1 and 2 (its depth 4 costs 4x its
# depth 1 per step: chapter 12's full scale runs it, with every arm, on this protocol).
_LRA_SWEEP = {"tasks": ["listops", "pathfinder"], "arms": ["scratch", "spt"], "deep_arms": ["scratch", "spt"],
              "n_train": 1000, "n_test": 297}
_SWEEP_SMOKE = {k: v for k, v in _LRA_SMOKE.items() if k != "depths"}  # every scale sets the same keys
PRESETS["selfpretraining/09_lra_spt_length"] = {
    "smoke": {**_SWEEP_SMOKE, **_LRA_SWEEP, "n_train": 64, "n_test": 40, "seeds": 2, "spt_epochs": 2,
              "spt_checkpoints": [1], "label_steps": 4, "task_depths": {"listops": [1], "pathfinder": [1]}, "n_jobs": 1},
    "book": {**_LRA_MODEL, **_LISTOPS_BOOK, **_PF_BOOK, **_LRA_SWEEP, "seeds": 5, "spt_epochs": 3,
             "spt_checkpoints": [1], "label_steps": 150, "task_depths": {"listops": [1], "pathfinder": [1]}, "n_jobs": 2},
    "full": {**_LRA_MODEL, **_LISTOPS_BOOK, **_PF_BOOK, **_LRA_SWEEP, "seeds": 5, "spt_epochs": 50,
             "spt_checkpoints": [1, 10], "label_steps": 400, "task_depths": {"listops": [1, 2, 4], "pathfinder": [1, 2]},
             "n_jobs": 2},
}
# Chapters 10-12: every arm beyond one layer (chapters 05-06 run the QK-only hybrid, the other source and the
# ALiBi control at one layer only), one task per chapter: every arm at two layers on both tasks took 680 s of seed
# CPU time, about 340 s of wall time on two cores, over the 4-minute budget. Book scale: two layers, chapter 05's
# data and protocol. Full scale: four layers and 400 label steps, sized for 2 CPU cores (estimated from the book
# runs' CPU time at about 12 and 8 minutes; the committed runs took 7 and 10 minutes on 2 AMD EPYC cores); PathFinder at
# four layers with every arm is chapter 12.
_EVERY_ARM = {"deep_arms": _LRA_FULL["deep_arms"], "spt_checkpoints": []}  # the five arms of def-sp-mini-lra-arms
for _chapter, _task in (("selfpretraining/10_deep_arms_listops", "listops"), ("selfpretraining/11_deep_arms_digits", "image")):
    PRESETS[_chapter] = {
        "smoke": {**_LRA_SMOKE, **_EVERY_ARM, "tasks": [_task], "depths": [2]},
        "book": {**PRESETS["selfpretraining/05_mini_lra"]["book"], **_EVERY_ARM, "tasks": [_task], "depths": [2]},
        "full": {**PRESETS["selfpretraining/05_mini_lra"]["book"], **_EVERY_ARM, "tasks": [_task], "depths": [4],
                 "label_steps": 400},
    }
# Chapter 12: every arm on PathFinder beyond one layer, with the pretraining-length sweep inside the same runs.
# Book scale: two layers, 80 label steps and 1000 training sequences (every arm plus one early SPT stop took 226 s
# on two idle cores with 100 label steps, too close to the 4-minute budget for slower hosts; at 100 every run
# still predicted one class). Full scale is chapter 09's full sweep protocol
# (1000 sequences, 50 SPT epochs stopped also at 1 and 10, 400 label steps, the same data and initial weights)
# at four layers with every arm, sized for 2 CPU cores (estimated at 45 minutes from timed steps).
_PF_DEEP = {**_LRA_MODEL, **_LISTOPS_BOOK, **_PF_BOOK, **_EVERY_ARM, "tasks": ["pathfinder"], "n_train": 1000,
            "n_test": 297, "seeds": 5, "n_jobs": 2}
PRESETS["selfpretraining/12_deep_arms_pathfinder"] = {
    "smoke": {**_LRA_SMOKE, **_EVERY_ARM, "tasks": ["pathfinder"], "depths": [2], "spt_epochs": 2, "spt_checkpoints": [1]},
    "book": {**_PF_DEEP, "depths": [2], "spt_epochs": 3, "spt_checkpoints": [1], "label_steps": 80},
    "full": {**_PF_DEEP, "depths": [4], "spt_epochs": 50, "spt_checkpoints": [1, 10], "label_steps": 400},
}
