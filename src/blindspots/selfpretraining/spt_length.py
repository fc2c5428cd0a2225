"""How long to self-pretrain: the sweep in optimiser steps, its gates and its verdicts (chapter 05).

The sweep (Implements {prf:ref}`def-sp-spt-length-sweep`) runs :func:`.mini_lra.lra_seed` with the arms
``scratch`` and ``spt`` and a list of SPT checkpoints: for every task and seed, one SPT run of ``spt_steps``
optimiser steps is stopped in passing after each of ``spt_checkpoints``, and a fresh model is fine-tuned from
each stop; scratch is the sweep point of 0 steps. This module runs the sweep of every task in one pool of
workers (:func:`run_sweep`), gathers each task's per-seed results (:class:`Sweep`), judges every sweep point
with the gates of :mod:`.gates` (:func:`point_gates`), builds each task's table of SPT lengths against
scratch (:func:`comparison_rows`, one Holm family per task) and draws the chapter's two figures.

Each task's primary comparison, fixed before any run, is :data:`PRIMARY`: the longest SPT (the full run)
against scratch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from . import gates, mini_lra, train

#: Each task's primary comparison, fixed before the runs: the row of :func:`.mini_lra.lra_seed` compared
#: with scratch. ``"spt"`` is the full SPT run, the longest SPT of the sweep; the shorter lengths are the
#: secondary rows of the same table.
PRIMARY: dict[str, str] = {task: "spt" for task in mini_lra.TASKS}
#: The figures' names of the tasks.
TASK_LABELS: dict[str, str] = {"listops": "ListOps", "image": "digits as pixel sequences",
                               "pathfinder": "PathFinder"}
_TASK_JOB = 10_000  # a sweep job's id: _TASK_JOB * (index of its task in config["tasks"]) + lra_seed's id


def task_sweep(task: str, config: Mapping[str, Any]) -> dict[int, str]:
    """``task``'s sweep points, SPT optimiser steps -> row (:func:`.mini_lra.sweep_points` of the task's
    sizes, :func:`.mini_lra.task_config`: a task may sweep a longer SPT than the others)."""
    return mini_lra.sweep_points(mini_lra.task_config(task, config))


def primary_steps(task: str, config: Mapping[str, Any]) -> int:
    """SPT optimiser steps of ``task``'s primary comparison (:data:`PRIMARY`) in ``config``'s sweep."""
    if task not in PRIMARY:
        raise ValueError(f"task must be one of {tuple(PRIMARY)}, got {task!r}")
    steps = {row: s for s, row in task_sweep(task, config).items()}
    return steps[PRIMARY[task]]


def sweep_job_ids(tasks: Sequence[str], seeds: Sequence[int], data: Mapping[str, Mapping[str, np.ndarray]],
                  config: Mapping[str, Any]) -> list[int]:
    """Job ids of :func:`sweep_job` for every task and seed at one layer, the costliest first.

    Each (task, seed) is two jobs (:func:`.mini_lra.lra_job_ids`): the SPT run with its fine-tunes, and
    scratch. Sorted by an estimate of their cost (optimiser steps times sequence length), the jobs of a pool
    of two workers finish close together.
    """
    tasks = list(tasks)
    if not tasks or len(set(tasks)) != len(tasks) or any(t not in mini_lra.TASKS for t in tasks):
        raise ValueError(f"tasks must be distinct names among {mini_lra.TASKS}, got {tasks}")
    label = int(config["label_steps"])

    def cost(job: int) -> float:
        task, group = tasks[job // _TASK_JOB], job % _TASK_JOB // 1000
        points = task_sweep(task, config)  # scratch, then the SPT lengths, each fine-tuned once
        steps = max(points) + (len(points) - 1) * label if group == 1 else label
        return steps * data[task]["x_train"].shape[1]

    jobs = [_TASK_JOB * i + j for i in range(len(tasks)) for j in mini_lra.lra_job_ids([1], seeds)]
    return sorted(jobs, key=lambda j: -cost(j))  # stable: ties keep the order of tasks and seeds


def sweep_job(job: int, config: Mapping[str, Any], data: Mapping[str, Mapping[str, np.ndarray]]) -> dict:
    """One job of :func:`sweep_job_ids`, for :func:`blindspots.runtime.map_seeds`: :func:`.mini_lra.lra_seed`
    on the task ``config["tasks"][job // 10000]``, its record with the task's name added."""
    tasks = list(config["tasks"])
    index = int(job) // _TASK_JOB
    if not 0 <= index < len(tasks):
        raise ValueError(f"job must be 10000 * (task index in [0, {len(tasks)})) + lra_seed's id, got {job}")
    task = tasks[index]
    config = mini_lra.task_config(task, config)
    out = mini_lra.lra_seed(int(job) % _TASK_JOB, config, data[task], data[task])  # no other-source arm
    out["task"] = task
    return out


def run_sweep(config: Mapping[str, Any], data: Mapping[str, Mapping[str, np.ndarray]],
              seeds: Sequence[int], *, n_jobs: int | None) -> dict[str, list[dict[str, Any]]]:
    """Every task's sweep in one pool: ``task -> merged per-seed records`` (:func:`.mini_lra.merge_lra_jobs`).
    """
    from .. import runtime

    tasks = list(config["tasks"])
    jobs = sweep_job_ids(tasks, seeds, data, config)
    records = runtime.map_seeds(sweep_job, jobs, n_jobs=n_jobs, config=config, data=data)
    return {task: mini_lra.merge_lra_jobs([r for r in records if r["task"] == task]) for task in tasks}


@dataclass
class Sweep:
    """One task's sweep over seeds. Per sweep point (SPT optimiser steps, 0 = scratch): the test accuracy and
    the number of distinct labels predicted on the test set, and for SPT points the held-out masked loss of
    the SPT checkpoint. Also the SPT loss curves (seeds x steps) and the task's reference levels: the unigram
    entropy of the masked tokens, the shortcut's accuracy and the majority label's."""

    task: str
    seeds: list[int]
    steps: list[int]
    accuracy: dict[int, np.ndarray]
    n_predicted: dict[int, np.ndarray]
    masked_loss: dict[int, np.ndarray]
    spt_loss: np.ndarray
    entropy: float
    shortcut: float
    majority: float
    #: Held-out masked loss of the local reference predictor (:func:`.gates.neighbourhood_masked_loss`),
    #: where one was computed (image tasks), else None.
    reference: float | None = None

    @property
    def best(self) -> int:
        """The sweep point with the highest mean accuracy (the shortest, on a tie)."""
        return max(self.steps, key=lambda s: (float(self.accuracy[s].mean()), -s))

    @property
    def lengths(self) -> list[int]:
        """The SPT sweep points (all but scratch)."""
        return [s for s in self.steps if s]


def sweep_table(task: str, results: Sequence[Mapping[str, Any]], config: Mapping[str, Any],
                data: Mapping[str, np.ndarray], seeds: Sequence[int], *,
                shortcut: float | None = None, reference: float | None = None) -> Sweep:
    """Gather ``task``'s records from :func:`run_sweep` into a :class:`Sweep` (seeds in ``seeds`` order).

    ``shortcut``: the task's shortcut accuracy (:func:`.gates.shortcut_accuracy` on ``data`` when ``None``);
    ``reference``: the local reference predictor's held-out masked loss (:func:`reference_loss`), if any.
    """
    seeds = [int(s) for s in seeds]
    points = task_sweep(task, config)
    by = {r["seed"]: r for r in results if r["layers"] == 1}
    missing = [s for s in seeds if s not in by]
    if missing:
        raise ValueError(f"results of {task!r} lack seeds {missing}")
    rec = [by[s] for s in seeds]
    for r in rec:
        absent = [row for row in points.values() if row not in r["rows"]]
        if absent or r.get("spt_loss") is None:
            raise ValueError(f"{task!r} seed {r['seed']}: the record lacks {absent or ['spt_loss']}")
    acc = {s: np.array([r["rows"][row] for r in rec], dtype=float) for s, row in points.items()}
    n_pred = {s: np.array([r["n_predicted"][row] for r in rec], dtype=int) for s, row in points.items()}
    masked = {s: np.array([r["masked_loss"][row] for r in rec], dtype=float)
              for s, row in points.items() if s}
    if shortcut is None:
        shortcut = gates.shortcut_accuracy(task, data)
    return Sweep(task=task, seeds=seeds, steps=sorted(points), accuracy=acc, n_predicted=n_pred,
                 masked_loss=masked, spt_loss=np.array([r["spt_loss"] for r in rec], dtype=float),
                 entropy=mini_lra.masked_entropy(data), shortcut=float(shortcut),
                 majority=mini_lra.majority_accuracy(data),
                 reference=None if reference is None else float(reference))


def reference_loss(task: str, data: Mapping[str, np.ndarray], config: Mapping[str, Any]) -> float:
    """PathFinder's local reference for the plateau gate: :func:`.gates.neighbourhood_masked_loss` with a 3x3
    window, at the task's masking rate, with masks from ``data_seed + 7`` (the held-out masks' seed)."""
    if task != "pathfinder":
        raise ValueError(f"task must be 'pathfinder' (the one image task with a reference), got {task!r}")
    cfg = mini_lra.task_config(task, config)
    return gates.neighbourhood_masked_loss(data["x_train"], data["x_test"], side=int(cfg["alibi_grid"]),
                                           mlm_prob=float(cfg["mlm_prob"]), seed=int(cfg["data_seed"]) + 7)


def budget_limited(sweep: Sweep, margin: float = gates.PLATEAU_MARGIN) -> bool:
    """Whether the task's untested rows read *not tested (budget)*, by a rule written before the run it judges
    (after an earlier full-scale run had left PathFinder on its plateau): SPT did
    not leave its plateau even at the longest length, while the local reference predictor (which sees only
    the visible 3x3 window of each masked pixel) ends at least ``margin`` below the entropy. The gate can
    then be passed, so it is this model within this run's steps that does not pass it."""
    if sweep.reference is None or not sweep.lengths:
        return False
    longest = gates.plateau_gate(sweep.masked_loss[sweep.lengths[-1]], sweep.entropy, margin)
    return (not longest.passed) and sweep.entropy - sweep.reference >= margin


def point_gates(sweep: Sweep) -> dict[int, list[gates.Gate]]:
    """The gates of each SPT length's comparison with scratch, ``[plateau, shortcut, constant]`` per length
    (Implements {prf:ref}`def-sp-spt-length-gates`):

    - the SPT checkpoint left its plateau (:func:`.gates.plateau_gate`: held-out masked loss, every seed);
    - the task's best sweep point beats the shortcut (:func:`.gates.shortcut_gate`; the same for all lengths);
    - no run of the two rows compared, this length and scratch, predicts a constant
      (:func:`.gates.constant_gate`).
    """
    best = sweep.best
    shortcut = gates.shortcut_gate(sweep.accuracy[best], sweep.shortcut, arm=f"{best} steps")
    return {s: [gates.plateau_gate(sweep.masked_loss[s], sweep.entropy), shortcut,
                gates.constant_gate(np.concatenate([sweep.n_predicted[0], sweep.n_predicted[s]]))]
            for s in sweep.lengths}


def gate_summary(sweeps: Sequence[Sweep]) -> str:
    """One sentence: at how many SPT lengths each gate passed (the shortcut gate: on how many tasks)."""
    gated = [point_gates(sw) for sw in sweeps]
    points = [gs for by_length in gated for gs in by_length.values()]
    plateau = sum(gs[0].passed for gs in points)
    constant = sum(gs[2].passed for gs in points)
    shortcut = sum(next(iter(by_length.values()))[1].passed for by_length in gated if by_length)
    return (f"SPT left its plateau at {plateau} of {len(points)} SPT lengths; the best sweep point beat the "
            f"shortcut on {shortcut} of {len(gated)} tasks; no run predicted a constant at {constant} of "
            f"{len(points)} lengths")


def row_name(task: str, steps: int) -> str:
    """A comparison row's name: ``"<task>: <steps> SPT steps"``."""
    return f"{task}: {steps} SPT steps"


def comparison_rows(sweep: Sweep, *, where: str = "at book scale") -> list[gates.Row]:
    """The task's table: every SPT length against scratch, paired over seeds, with its gates
    (:func:`point_gates`); the rows whose gates pass are one Holm family (:func:`.gates.comparison_table`,
    ``where`` qualifies *not tested*; a :func:`budget_limited` task's untested rows read *not tested (budget;
    ...)*)."""
    gated = point_gates(sweep)
    rows = [gates.paired_row(row_name(sweep.task, s), sweep.accuracy[s], sweep.accuracy[0], gated[s])
            for s in sweep.lengths]
    return gates.comparison_table(rows, where=where, budget=budget_limited(sweep))


def design_detectable(sweep: Sweep) -> dict[int, float]:
    """For every SPT length, the smallest paired effect over scratch that the design detects with 80 % power
    (:func:`.gates.detectable_effect` at Holm's strictest level, ``ALPHA`` over the task's number of rows,
    with the spread of this row's per-seed differences), whether or not its gates passed."""
    m = len(sweep.lengths)
    out = {}
    for s in sweep.lengths:
        d = sweep.accuracy[s] - sweep.accuracy[0]
        out[s] = gates.detectable_effect(float(d.std(ddof=1)), d.size, gates.ALPHA / m)
    return out


#: How a claimed gate compares its measurement with its threshold (:func:`claim_gates`), and its id's tail.
_GATE_RELATION: dict[str, str] = {gates.PLATEAU: ">=", gates.SHORTCUT: ">", gates.CONSTANT: "<="}
_GATE_ID: dict[str, str] = {gates.PLATEAU: "left-plateau", gates.SHORTCUT: "beats-shortcut",
                            gates.CONSTANT: "no-constant-run"}


def _gate_statement(task: str, steps: int, name: str) -> str:
    """A gate's criterion in words, without measured values (its pass line reads the same on any machine)."""
    if name == gates.PLATEAU:
        return (f"{task}, SPT stopped after {steps} steps: every seed's held-out masked loss at least "
                f"{gates.PLATEAU_MARGIN:g} nats below the unigram entropy")
    if name == gates.SHORTCUT:
        return f"{task}: best sweep point minus the shortcut, lower end of the 95% interval above 0"
    return f"{task}: no run of scratch or of SPT stopped after {steps} steps predicts one label"


def claim_gates(sweeps: Sequence[Sweep], *, kind: str = "sanity") -> None:
    """Claim every gate of every task's sweep, where a run decides the comparisons (full scale).

    One claim per SPT length for the plateau and constant gates, one per task for the shortcut gate (it
    judges the task's best point): ids ``<task>-<s>st-left-plateau``, ``<task>-<s>st-no-constant-run`` and
    ``<task>-beats-shortcut``. A gate is a premise of the comparison, hence ``kind="sanity"``. Every claim
    is made before one :class:`~blindspots.claims.ClaimFailed` names those that failed.
    """
    from .. import claims

    with claims.all_hold():
        for sw in sweeps:
            for s, gs in point_gates(sw).items():
                for g in gs:
                    if g.name == gates.SHORTCUT and s != sw.lengths[0]:
                        continue  # one shortcut gate per task
                    where = sw.task if g.name == gates.SHORTCUT else f"{sw.task}-{s}st"
                    claims.claim_bound(f"{where}-{_GATE_ID[g.name]}", _gate_statement(sw.task, s, g.name),
                                       g.measured, _GATE_RELATION[g.name], g.threshold, kind=kind,
                                       show="pass")


def gate_records(sweeps: Sequence[Sweep]) -> list[dict[str, Any]]:
    """Every task's gates per SPT length, one record (column -> value) per row, for :func:`html_table`."""
    lines = []
    for sw in sweeps:
        for s, (plateau, shortcut, constant) in point_gates(sw).items():
            lines.append({"task": sw.task, "SPT steps": s,
                          "masked loss, worst seed": float(sw.masked_loss[s].max()),
                          "unigram entropy": sw.entropy, "below it by": plateau.measured,
                          "plateau": "pass" if plateau.passed else "FAIL",
                          "best minus shortcut, lower end": shortcut.measured,
                          "shortcut": "pass" if shortcut.passed else "FAIL",
                          "constant runs": f"{int(constant.measured)} of {2 * len(sw.seeds)}",
                          "constant": "pass" if constant.passed else "FAIL"})
    return lines


def comparison_records(sweeps: Sequence[Sweep], tables: Mapping[str, Sequence[gates.Row]],
                       config: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every task's table (:func:`comparison_rows`), one record per row, for :func:`html_table`: the paired
    effect over scratch with its 95 % interval, the Holm-adjusted p-value (tested rows only), the design's
    detectable effect (:func:`design_detectable`) and the verdict."""
    lines = []
    for sw in sweeps:
        detectable = design_detectable(sw)
        for s, r in zip(sw.lengths, tables[sw.task]):
            lines.append({"task": sw.task, "SPT steps": s,
                          "primary": "yes" if s == primary_steps(sw.task, config) else "",
                          "effect over scratch": r.effect.difference,
                          "95% CI": f"[{r.effect.low:+.3f}, {r.effect.high:+.3f}]",
                          "p (Holm)": "" if r.p_holm is None else r.p_holm,
                          "design detects ≥": detectable[s], "verdict": r.verdict})
    return lines


def log_axis(steps: Sequence[int]) -> np.ndarray:
    """The accuracy figure's x positions: log10 of the steps, with 0 put one decade below the smallest
    positive point (so that scratch shows on a log axis)."""
    s = np.asarray(steps, dtype=float)
    if s.size == 0 or np.any(s < 0):
        raise ValueError(f"steps must be a non-empty list of step counts >= 0, got {list(steps)}")
    positive = s[s > 0]
    floor = math.log10(positive.min()) - 1 if positive.size else 0.0
    return np.where(s > 0, np.log10(np.where(s > 0, s, 1)), floor)


def plot_losses(sweeps: Sequence[Sweep], axes, *, margin: float = gates.PLATEAU_MARGIN) -> None:
    """One panel per task: each seed's SPT training loss (on the masked tokens of its mini-batches), the
    held-out masked loss at every SPT length (circles, one per seed), the unigram entropy, and the plateau
    gate's line ``margin`` nats below it."""
    import matplotlib.ticker

    from .. import plotting

    for ax, sw in zip(np.atleast_1d(axes), sweeps):
        n = sw.spt_loss.shape[1]
        at = train.recorded_steps(n)
        for i, curve in enumerate(sw.spt_loss):
            ax.plot(at + 1, curve[at], lw=0.8, color=plotting.PALETTE[0], alpha=0.5,
                    label="SPT training loss, per seed" if i == 0 else None)
        for j, s in enumerate(sw.lengths):
            ax.plot(np.full(len(sw.seeds), s), sw.masked_loss[s], "o", mfc="none", ms=4,
                    color=plotting.PALETTE[1], label="held-out masked loss" if j == 0 else None)
        ax.axhline(sw.entropy, color=plotting.INK, lw=1, ls="--", label="unigram entropy (plateau)")
        ax.axhline(sw.entropy - margin, color=plotting.INK, lw=1, ls=":",
                   label=f"gate: {margin:g} nats below")
        if sw.reference is not None:
            ax.axhline(sw.reference, color=plotting.PALETTE[2], lw=1, ls="-.",
                       label="3x3-window predictor (held out)")
        ax.set_xscale("log")
        ticks = sorted({t for t in (1, 10) if t < sw.lengths[0]} | set(sw.lengths))
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel("SPT optimiser steps")
        ax.set_title(TASK_LABELS.get(sw.task, sw.task), fontsize=9)
    ax0 = np.atleast_1d(axes)[0]
    ax0.set_ylabel("masked reconstruction loss (nats)")
    ax0.legend(fontsize=6, loc="upper right")


def plot_accuracy(sweeps: Sequence[Sweep], axes) -> None:
    """One panel per task: test accuracy after fine-tuning from each sweep point (circles per seed, a line
    through the means) against SPT steps on a log axis with scratch one decade below the first checkpoint
    (:func:`log_axis`); the shortcut's and the majority label's accuracies as lines."""
    from .. import plotting

    for ax, sw in zip(np.atleast_1d(axes), sweeps):
        x = log_axis(sw.steps)
        ax.plot(x, [sw.accuracy[s].mean() for s in sw.steps], "-", color=plotting.PALETTE[0], lw=1.5,
                label="mean")
        for xi, s in zip(x, sw.steps):
            ax.plot(np.full(len(sw.seeds), xi), sw.accuracy[s], "o", mfc="none", ms=4,
                    color=plotting.PALETTE[0], label="per seed" if s == 0 else None)
        ax.axhline(sw.shortcut, color=plotting.PALETTE[2], lw=1, ls="--",
                   label="shortcut (logistic regression)")
        ax.axhline(sw.majority, color=plotting.INK, lw=1, ls=":", label="majority label")
        ax.set_xticks(x, ["0\n(scratch)", *map(str, sw.steps[1:])])
        ax.set_xlabel("SPT optimiser steps before fine-tuning")
        ax.set_title(TASK_LABELS.get(sw.task, sw.task), fontsize=9)
    ax0 = np.atleast_1d(axes)[0]
    ax0.set_ylabel("test accuracy (fraction correct)")
    ax0.legend(fontsize=6, loc="best")
