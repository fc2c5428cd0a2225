PRESETS: dict = {}

# Chapter 4: schedules, recovery radius and full-mask coercivity.
PRESETS["masked/04_schedules"] = {
    "smoke": {
        "laws": [["P", 0.6]], "N": [127], "w": [0.5], "m_base_div": [2], "s": [0, 2],
        "pi": [0.0, 1e-4, 1e-3, 1e-2, 1e-1], "eps": [1e-10, 1e-8, 1e-6, 1e-4, 1e-2],
        "coercivity": {"N": 7, "m_base": 3, "n": 200, "noise": [1e-3, 1.0], "tilt": 2.0,
                       "pi0": [1e-2, 1e-1, 1.0]},
        "blind_N": 255,
    },
    "book": {
        "laws": [["P", 0.6], ["C", 1.5]], "N": [127, 1023], "w": [0.5, 0.9], "m_base_div": [4, 2],
        "s": [0, 1, 2, 4], "pi": [0.0, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1],
        "eps": [1e-12, 1e-11, 1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2],
        "coercivity": {"N": 9, "m_base": 4, "n": 1000, "noise": [1e-3, 1.0], "tilt": 2.0,
                       "pi0": [1e-3, 1e-2, 1e-1, 1.0]},
        "blind_N": 1023,
    },
    "full": {
        "laws": [["P", 0.6], ["P", 0.8], ["C", 1.5]], "N": [127, 255, 511, 1023, 4095],
        "w": [0.5, 0.9], "m_base_div": [4, 2], "s": [0, 1, 2, 4],
        "pi": [0.0, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1],
        "eps": [1e-12, 1e-11, 1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2],
        "coercivity": {"N": 11, "m_base": 5, "n": 2000, "noise": [1e-3, 1.0], "tilt": 2.0,
                       "pi0": [1e-3, 1e-2, 1e-1, 1.0]},
        "blind_N": 4095,
    },
}

# Chapter 5: approximate tensorization.
PRESETS["masked/05_tensorization"] = {
    "smoke": {
        "laws": [["P", 0.6]], "N": [63, 127, 255], "w": [0.5], "rho": [0.5], "pi0": [1e-2],
        "n_lambda": 9, "uniform_ratio": False,
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
