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
