"""Every arm of the mini LRA beyond one layer, one task per chapter (chapters 10-12).

The chapters run :func:`.mini_lra.lra_seed` with every arm at one depth and differ only in their task and
sizes. What they compute from the merged records lives here, once: the accuracies per arm, the paired
effects over scratch, the rows that set the paper's claims next to the measurements, the check that the
QK-only hybrid copied every layer, the pretraining-length sweep (when the preset stops SPT early) and
the figure.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import numpy as np

from .. import claims
from . import mini_lra

#: The paper's claims, one row each: (key, statement). The QK-only row compares the hybrid's gain with half of SPT's.
PAPER_CLAIMS: tuple[tuple[str, str], ...] = (
    ("spt", "SPT + fine-tune beats scratch"),
    ("qk", "W_Q, W_K alone recover most of the gain (QK-only gain minus half the SPT gain)"),
    ("other", "SPT on another task's data still beats scratch"),
    ("alibi", "beyond the paper: ALiBi scratch beats scratch"),
)
#: The QK-only row's verdict when SPT's own gain is not resolved: "most of the gain" presumes a gain.
NO_GAIN = "no SPT gain to recover at this scale"


def accuracies(results: Iterable[Mapping[str, Any]], arms: Iterable[str]) -> dict[str, np.ndarray]:
    """Test accuracy of each arm over seeds (in the order of ``results``), from merged :func:`~.mini_lra.lra_seed`
    records. Every record must hold every arm."""
    results, arms = list(results), list(arms)
    missing = sorted({a for r in results for a in arms if a not in r["rows"]})
    if not results or missing:
        raise ValueError(f"results must hold every arm of {arms} for every seed; missing {missing or 'all (no results)'}")
    return {a: np.array([r["rows"][a] for r in results], dtype=float) for a in arms}


def effects_over_scratch(acc: Mapping[str, np.ndarray]) -> dict[str, claims.SeedEffect]:
    """Paired effect (95% t interval over seeds) of every arm but scratch over scratch."""
    if "scratch" not in acc:
        raise ValueError(f"acc must hold a 'scratch' arm, got {sorted(acc)}")
    return {a: claims.seed_effect(v, acc["scratch"], paired=True) for a, v in acc.items() if a != "scratch"}


def paper_rows(acc: Mapping[str, np.ndarray]) -> list[tuple[str, str, claims.SeedEffect, str]]:
    """The rows of the headline table: ``(key, paper's claim, measured paired effect, verdict)``.

    Verdicts come from :func:`~.mini_lra.verdict`; the QK-only row compares the hybrid's gain over scratch with
    half of SPT's, and says :data:`NO_GAIN` unless SPT's own gain is resolved.
    """
    needed = {"scratch", "spt", "qk_only", "other_source", "alibi"}
    if not needed <= set(acc):
        raise ValueError(f"acc must hold every arm {sorted(needed)}, missing {sorted(needed - set(acc))}")
    eff = effects_over_scratch(acc)
    half_spt = (acc["spt"] - acc["scratch"]) / 2
    measured = {"spt": eff["spt"], "qk": claims.seed_effect(acc["qk_only"] - acc["scratch"], half_spt, paired=True),
                "other": eff["other_source"], "alibi": eff["alibi"]}
    rows = []
    for key, text in PAPER_CLAIMS:
        v = NO_GAIN if key == "qk" and not eff["spt"].low > 0 else mini_lra.verdict(measured[key])
        rows.append((key, text, measured[key], v))
    return rows


def constant_prediction_runs(acc: Mapping[str, np.ndarray], y_test: np.ndarray) -> tuple[int, int]:
    """``(runs, of)``: how many runs (arm and seed) score exactly what predicting one label for every test item
    scores (that label's share of ``y_test``), out of how many. Such a run has almost surely collapsed to a
    single class; a model that learned something could match a share only by coincidence."""
    y = np.asarray(y_test)
    if y.ndim != 1 or not len(y):
        raise ValueError(f"y_test must be a non-empty 1-D array of labels, got shape {y.shape}")
    n = len(y)
    shares = np.bincount(y) / n
    scores = np.concatenate([np.asarray(a, dtype=float).ravel() for a in acc.values()])
    # accuracies are counts / n: compare the counts, not the floats
    hits = np.isin(np.rint(scores * n).astype(int), np.rint(shares[shares > 0] * n).astype(int))
    return int(hits.sum()), len(scores)


def qk_tensor_names(layer: int) -> set[str]:
    """The four tensors the QK-only hybrid copies from block ``layer``: W_Q, b_Q, W_K, b_K."""
    return {f"blocks.{int(layer)}.attn.{p}.{w}" for p in ("q_proj", "k_proj") for w in ("weight", "bias")}


def layers_qk_copied(copied: Iterable[Iterable[str]], n_layers: int) -> int:
    """Over seeds, the least of: layers whose four W_Q, W_K tensors were all copied, minus the number of other
    tensors copied. It equals ``n_layers`` exactly when every seed's hybrid copied W_Q, W_K of every layer and
    nothing else."""
    if n_layers < 1:
        raise ValueError(f"n_layers must be >= 1, got {n_layers}")
    every = set().union(*(qk_tensor_names(i) for i in range(n_layers)))
    per_seed = [set(c) for c in copied]
    if not per_seed:
        raise ValueError("copied must list the copied tensors of at least one seed")
    return min(sum(qk_tensor_names(i) <= c for i in range(n_layers)) - len(c - every) for c in per_seed)


def sweep_rows(acc: Mapping[str, np.ndarray], config: Mapping[str, Any]) -> dict[int, np.ndarray]:
    """The pretraining-length sweep inside the arms: SPT epochs -> accuracies over seeds (0 is scratch), by
    :func:`~.mini_lra.sweep_points`. Every sweep row must be in ``acc``."""
    points = mini_lra.sweep_points(config)
    missing = [row for row in points.values() if row not in acc]
    if missing:
        raise ValueError(f"acc lacks the sweep rows {missing}")
    return {e: np.asarray(acc[row]) for e, row in points.items()}


def arm_label(arm: str) -> str:
    """A row's name for tables and figures: the arms' labels, and ``spt_<e>ep`` as SPT stopped after e epochs."""
    if arm in mini_lra.ARM_LABELS:
        return mini_lra.ARM_LABELS[arm]
    e = mini_lra.stopped_epochs(arm)
    if e is not None:
        return f"SPT {e} epoch{'s' if e > 1 else ''} + fine-tune"
    raise ValueError(f"arm must be one of {mini_lra.ARMS} or spt_<epochs>ep, got {arm!r}")


def figure(acc: Mapping[str, np.ndarray], majority: float, n_layers: int, task: str):
    """Each arm's accuracy (bar: mean; circles: seeds) against the majority label. Imports plotting when called."""
    from .. import plotting

    arms = list(acc)
    fig, ax = plotting.figure(width=5.2, height=0.45 * len(arms) + 1.2)
    for i, a in enumerate(arms):
        ax.barh(i, acc[a].mean(), color=plotting.PALETTE[i % len(plotting.PALETTE)], alpha=0.6)
        ax.plot(acc[a], np.full(len(acc[a]), i), "o", mfc="none", color=plotting.INK, ms=4)
    ax.axvline(majority, color=plotting.INK, ls="--", lw=1, label="majority label")
    ax.set_yticks(range(len(arms)))
    ax.set_yticklabels([f"{n_layers} layers: {arm_label(a)}" for a in arms], fontsize=7)
    ax.invert_yaxis()
    ax.set_title(task, fontsize=9)
    ax.set_xlabel("test accuracy (fraction correct; bars: mean, circles: seeds)", fontsize=7)
    ax.legend(fontsize=7)
    return fig, ax
