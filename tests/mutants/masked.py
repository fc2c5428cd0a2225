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
    Mutant("masked-04-coercivity-constant", "masked/04_schedules", "full-mask-coercivity-pi0-1",
           "Pinsker constant doubled: TV <= sqrt(eps / (4 pi0)) instead of sqrt(eps / (2 pi0))",
           patch="import numpy as _np\nimport blindspots.masked.identifiability as _m\n"
                 "_m.coercivity_radius = lambda eps, pi0: _np.sqrt(_np.asarray(eps, dtype=float) / (4.0 * pi0))\n"),
]
