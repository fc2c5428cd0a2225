"""Every arm of the mini LRA on every task and depth: data checks, gates, the comparison table, figures.

Chapter 04 runs :func:`.mini_lra.lra_seed` with every arm of {prf:ref}`def-sp-mini-lra-arms` on the three
tasks at once (:func:`arms_job`), merges the records per task (:func:`merge_arms_jobs`), and computes from
them, once, what its tables say:

- the checks of the data: ListOps labels against the independent evaluator, PathFinder labels against a
  flood fill, no sequence in both splits (:func:`listops_mismatches`, :func:`pathfinder_mismatches`,
  :func:`train_test_overlap`);
- the gates of each task and depth (:func:`task_gates`, {prf:ref}`def-sp-gates`);
- the rows of the comparison table (:func:`comparison_rows`; :data:`PRIMARY` is each task's primary
  comparison, written before the runs), whose verdicts :func:`.gates.comparison_table` computes;
- the check that the QK-only hybrid copied W_Q, b_Q, W_K, b_K of every layer and nothing else
  (:func:`qk_copy_shortfall`);
- the figures: SPT's loss against the unigram entropy, each arm's label loss against the label entropy, and
  each arm's accuracy against the shortcut.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from . import gates, mini_lra, train

#: The primary comparison of every task, fixed before the runs: SPT + fine-tune against scratch given the
#: same total number of optimiser steps (label steps + SPT steps), so that a gain cannot be extra training.
PRIMARY: tuple[str, str] = ("spt", "scratch_matched")
#: The rows of the comparison table, (treated, control), per task and depth; the first is :data:`PRIMARY`.
COMPARISONS: tuple[tuple[str, str], ...] = (PRIMARY, ("spt", "scratch"), ("qk_only", "scratch"),
                                            ("other_source", "scratch"))
#: Short names of the comparisons, for glue keys and tables.
COMPARISON_KEYS: dict[tuple[str, str], str] = {PRIMARY: "primary", ("spt", "scratch"): "spt",
                                               ("qk_only", "scratch"): "qk",
                                               ("other_source", "scratch"): "other"}
#: The positive control: scratch with ALiBi's fixed distance bias, built to learn where attention to
#: neighbours is what the task needs.
CONTROL_ARM = "alibi"
#: Which SPT run a pretrained arm starts from (its masked loss is that arm's plateau measurement).
SPT_SOURCE: dict[str, str] = {"spt": "spt", "qk_only": "spt", "other_source": "other_source"}
#: What each task's shortcut baseline sees (:func:`.gates.shortcut_features`).
SHORTCUTS: dict[str, str] = {"listops": "root operator + token counts", "image": "bag of pixels",
                             "pathfinder": "endpoint distances"}
_MAX_JOBS_PER_TASK = 10000


# ----------------------------------------------------------------------------
# Jobs: every task in one pool


def arms_job_ids(tasks: Sequence[str], depths: Iterable[int], seeds: Iterable[int]) -> list[int]:
    """Job ids for :func:`arms_job`: ``10000 * task index + `` a :func:`.mini_lra.lra_job_ids` id (split
    halves), every task's jobs in one list so that one pool of workers keeps busy across tasks. Tasks come
    in the order given; pass the costliest first."""
    unknown = [t for t in tasks if t not in mini_lra.TASKS]
    if not tasks or unknown:
        raise ValueError(f"tasks must be a non-empty list of {mini_lra.TASKS}, got {list(tasks)}")
    ids = mini_lra.lra_job_ids(list(depths), list(seeds))
    return [_MAX_JOBS_PER_TASK * mini_lra.TASKS.index(t) + j for t in tasks for j in ids]


def arms_job(job: int, config: Mapping[str, Any],
             data: Mapping[str, Mapping[str, np.ndarray]]) -> dict[str, Any]:
    """One job of :func:`arms_job_ids`: :func:`.mini_lra.lra_seed` on its task, with the task's data and the
    data of :data:`.mini_lra.OTHER_SOURCE`'s task (both in ``data``, keyed by task). Adds ``task`` to the
    record."""
    index, lra_job = divmod(int(job), _MAX_JOBS_PER_TASK)
    if not 0 <= index < len(mini_lra.TASKS):
        raise ValueError(f"job must be 10000 * task index (0..{len(mini_lra.TASKS) - 1}) + an lra job id, "
                         f"got {job}")
    task = mini_lra.TASKS[index]
    source = mini_lra.OTHER_SOURCE[task]
    missing = [t for t in (task, source) if t not in data]
    if missing:
        raise ValueError(f"data must hold the arrays of {task!r} and of its other source {source!r}; "
                         f"missing {missing}")
    config = mini_lra.task_config(task, config)
    return {"task": task, **mini_lra.lra_seed(lra_job, config, data[task], data[source])}


def merge_arms_jobs(results: Iterable[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Task -> one record per (depth, seed) (:func:`.mini_lra.merge_lra_jobs`), tasks in first-seen order."""
    by_task: dict[str, list] = {}
    for r in results:
        by_task.setdefault(r["task"], []).append(r)
    return {t: mini_lra.merge_lra_jobs(rs) for t, rs in by_task.items()}


def at_depth(records: Iterable[Mapping[str, Any]], n_layers: int) -> list[Mapping[str, Any]]:
    """The records of one depth, by seed."""
    out = sorted((r for r in records if r["layers"] == n_layers), key=lambda r: r["seed"])
    if not out:
        raise ValueError(f"no record has n_layers = {n_layers}")
    return out


def accuracies(records: Iterable[Mapping[str, Any]],
               arms: Iterable[str] | None = None) -> dict[str, np.ndarray]:
    """Test accuracy of each arm over seeds (in the order of ``records``), from merged records of one depth.
    ``arms``: default every arm that every record holds, in the records' order."""
    records = list(records)
    if not records:
        raise ValueError("records must hold at least one seed's record")
    if arms is None:
        arms = [a for a in records[0]["rows"] if all(a in r["rows"] for r in records)]
    arms = list(arms)
    missing = sorted({a for r in records for a in arms if a not in r["rows"]})
    if missing:
        raise ValueError(f"records must hold every arm of {arms} for every seed; missing {missing}")
    return {a: np.array([r["rows"][a] for r in records], dtype=float) for a in arms}


# ----------------------------------------------------------------------------
# Checks of the data


def listops_mismatches(data: Mapping[str, np.ndarray]) -> tuple[int, np.ndarray]:
    """``(mismatches, lengths)``: how many ListOps labels (both splits) differ from the value that the
    recursive evaluator :func:`.listops.evaluate_recursive` (written apart from the generator's) computes
    from the tokens, and every expression's length in tokens."""
    from . import listops

    inverse = {v: k for k, v in listops.TOKEN_IDS.items()}
    mismatch, lengths = 0, []
    for part in ("train", "test"):
        for row, label in zip(data[f"x_{part}"], data[f"y_{part}"]):
            tokens = [inverse[int(i)] for i in row[row != mini_lra.PAD]]
            lengths.append(len(tokens))
            mismatch += int(listops.evaluate_recursive(tokens) != int(label))
    return mismatch, np.array(lengths)


def pathfinder_mismatches(data: Mapping[str, np.ndarray], sizes: Mapping[str, Any]) -> int:
    """How many PathFinder labels (both splits) differ from whether a flood fill of the image, with the
    task's link radius, joins the two endpoints (:func:`.pathfinder.endpoints_connected`)."""
    from . import pathfinder

    pf = mini_lra.pathfinder_task(sizes)
    return sum(pathfinder.endpoints_connected(x.reshape(pf.size, pf.size), pf.link_radius) != bool(y)
               for part in ("train", "test") for x, y in zip(data[f"x_{part}"], data[f"y_{part}"]))


def offset_imbalance(data: Mapping[str, np.ndarray]) -> int:
    """The largest difference, over endpoint offsets, between the numbers of connected and unconnected
    PathFinder images (both splits together). The offset is read from the token positions
    (:func:`.gates.endpoint_offsets`), apart from the generator's :func:`.pathfinder.endpoint_offset`, so a
    generator that pairs by a wrong key shows."""
    offsets = np.sort(gates.endpoint_offsets(np.concatenate([data["x_train"], data["x_test"]])), axis=1)
    signs = np.where(np.concatenate([data["y_train"], data["y_test"]]) == 1, 1, -1)
    _, group = np.unique(offsets, axis=0, return_inverse=True)
    return int(np.abs(np.bincount(group.ravel(), weights=signs)).max())


def train_test_overlap(data: Mapping[str, np.ndarray]) -> int:
    """How many test sequences also appear in the training split."""
    train = {r.tobytes() for r in np.ascontiguousarray(data["x_train"])}
    return sum(r.tobytes() in train for r in np.ascontiguousarray(data["x_test"]))


# ----------------------------------------------------------------------------
# Gates


@dataclass
class TaskGates:
    """The gates of one task at one depth ({prf:ref}`def-sp-gates`), and what they were measured on.

    ``plateau``: SPT run (``"spt"``, ``"other_source"``) -> its plateau gate; ``shortcut``: the best arm
    (positive control excluded) against the shortcut; ``constant``: arm -> no run of it predicts one label;
    ``control``: the positive control against the shortcut (None when it was not run).
    """

    task: str
    layers: int
    entropy: dict[str, float]
    shortcut_accuracy: float
    best_arm: str
    plateau: dict[str, gates.Gate]
    shortcut: gates.Gate
    constant: dict[str, gates.Gate]
    control: gates.Gate | None
    n_predicted: dict[str, np.ndarray] = field(repr=False)

    def all(self) -> list[gates.Gate]:
        """Every gate of the task and depth, for the gate table."""
        every_run = np.concatenate(list(self.n_predicted.values()))
        out = [*self.plateau.values(), self.shortcut, gates.constant_gate(every_run)]
        return out + ([self.control] if self.control is not None else [])

    def named(self) -> dict[str, gates.Gate]:
        """Every gate under a claim id ``<task>-<layers>l-<gate>`` (for :func:`.gates.claim_gates`)."""
        every_run = np.concatenate(list(self.n_predicted.values()))
        out = {f"{self.task}-{self.layers}l-{'other-' if run != 'spt' else ''}spt-left-plateau": g
               for run, g in self.plateau.items()}
        out[f"{self.task}-{self.layers}l-best-arm-beats-shortcut"] = self.shortcut
        out[f"{self.task}-{self.layers}l-no-constant-run"] = gates.constant_gate(every_run)
        if self.control is not None:
            out[f"{self.task}-{self.layers}l-control-learns"] = self.control
        return out

    def for_row(self, treated: str, control: str) -> list[gates.Gate]:
        """The gates a comparison of ``treated`` against ``control`` needs: the plateau of the SPT run the
        treated arm starts from (if any), the best arm against the shortcut, no run of either arm predicting
        a constant, and the positive control."""
        out = [self.plateau[SPT_SOURCE[treated]]] if treated in SPT_SOURCE else []
        both = np.concatenate([self.n_predicted[treated], self.n_predicted[control]])
        out += [self.shortcut, gates.constant_gate(both)]
        missing = gates.Gate(gates.CONTROL, False, float("nan"), 0.0, "the control was not run at this depth")
        return out + [self.control if self.control is not None else missing]


def task_gates(task: str, records: Sequence[Mapping[str, Any]], data: Mapping[str, Mapping[str, np.ndarray]],
               shortcut: float) -> TaskGates:
    """The gates of ``task`` from its merged records of one depth.

    ``data``: every task's arrays (the unigram entropies are those of the task's test tokens, and of the
    other source's for SPT on another task's inputs, :func:`.mini_lra.masked_entropy`); ``shortcut``: the
    shortcut baseline's test accuracy (:func:`.gates.shortcut_accuracy`).
    """
    records = list(records)
    depths = {r["layers"] for r in records}
    if len(depths) != 1:
        raise ValueError(f"records must be of one depth, got depths {sorted(depths)}")
    acc = accuracies(records)
    entropy = {"spt": mini_lra.masked_entropy(data[task])}
    plateau = {"spt": gates.plateau_gate([r["masked_loss"]["spt"] for r in records], entropy["spt"])}
    if "other_source" in acc:
        entropy["other_source"] = mini_lra.masked_entropy(data[mini_lra.OTHER_SOURCE[task]])
        plateau["other_source"] = gates.plateau_gate([r["masked_loss"]["other_source"] for r in records],
                                                     entropy["other_source"])
    candidates = [a for a in acc if a != CONTROL_ARM]
    best = max(candidates, key=lambda a: acc[a].mean())
    n_pred = {a: np.array([r["n_predicted"][a] for r in records], dtype=int) for a in acc}
    control = (gates.shortcut_gate(acc[CONTROL_ARM], shortcut, name=gates.CONTROL, arm=arm_label(CONTROL_ARM))
               if CONTROL_ARM in acc else None)
    return TaskGates(task=task, layers=depths.pop(), entropy=entropy, shortcut_accuracy=float(shortcut),
                     best_arm=best, plateau=plateau,
                     shortcut=gates.shortcut_gate(acc[best], shortcut, arm=arm_label(best)),
                     constant={a: gates.constant_gate(n) for a, n in n_pred.items()}, control=control,
                     n_predicted=n_pred)


def gate_records(task_gates_list: Iterable[TaskGates]) -> list[dict[str, Any]]:
    """The gates as a table of measurements, one record per task, depth and gate (for :func:`html_table`)."""
    rows = []
    for tg in task_gates_list:
        for g in tg.all():
            rows.append({"task": tg.task, "layers": tg.layers, "gate": g.name + _plateau_suffix(tg, g),
                         "passed": "pass" if g.passed else "FAIL", "measured": g.detail})
    return rows


def _plateau_suffix(tg: TaskGates, g: gates.Gate) -> str:
    if g.name != gates.PLATEAU:
        return ""
    run = next(k for k, v in tg.plateau.items() if v is g)
    return "" if run == "spt" else " (SPT on another task)"


# ----------------------------------------------------------------------------
# The comparison table


def row_name(task: str, layers: int, treated: str, control: str) -> str:
    """A comparison row's name: task, depth, and the two arms."""
    primary = " (primary)" if (treated, control) == PRIMARY else ""
    depth = f"{layers} layer{'s' if layers > 1 else ''}"
    return f"{task}, {depth}: {arm_label(treated)} vs {arm_label(control)}{primary}"


def comparison_rows(records_by_task: Mapping[str, Sequence[Mapping[str, Any]]],
                    task_gates_by: Mapping[tuple[str, int], TaskGates]) -> dict[str, gates.Row]:
    """Every row of :data:`COMPARISONS` whose two arms ran, for every task and depth in ``task_gates_by``
    (``(task, layers) -> TaskGates``), with the gates each row needs (:meth:`TaskGates.for_row`), keyed
    ``"<task>-<layers>-<key>"`` (:data:`COMPARISON_KEYS`). Feed the rows to :func:`.gates.comparison_table`,
    which makes the tested ones a single Holm family and writes each row's verdict."""
    rows = {}
    for (task, layers), tg in task_gates_by.items():
        acc = accuracies(at_depth(records_by_task[task], layers))
        for treated, control in COMPARISONS:
            if treated in acc and control in acc:
                key = f"{task}-{layers}-{COMPARISON_KEYS[(treated, control)]}"
                rows[key] = gates.paired_row(row_name(task, layers, treated, control), acc[treated],
                                             acc[control], tg.for_row(treated, control))
    return rows


def comparison_records(rows: Iterable[gates.Row]) -> list[dict[str, Any]]:
    """The comparison table, one record per row (for :func:`html_table`): paired effect, 95% interval,
    Holm-adjusted p (tested rows), detectable effect (tested rows) and verdict."""
    out = []
    for r in rows:
        e = r.effect
        out.append({"comparison": r.name, "effect": e.difference, "95% CI": f"[{e.low:+.3f}, {e.high:+.3f}]",
                    "seeds": e.n_treated, "p (Holm)": "-" if r.p_holm is None else f"{r.p_holm:.3g}",
                    "detectable": "-" if r.detectable is None else r.detectable, "verdict": r.verdict})
    return out


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


def qk_copy_shortfall(records_by_task: Mapping[str, Iterable[Mapping[str, Any]]]) -> int:
    """Over every task, depth and seed that ran the QK-only arm, the most by which :func:`layers_qk_copied`
    falls short of the depth: 0 exactly when every hybrid copied W_Q, b_Q, W_K, b_K of every layer and
    nothing else."""
    shortfalls = [r["layers"] - layers_qk_copied([r["copied_qk"]], r["layers"])
                  for records in records_by_task.values() for r in records if "qk_only" in r["rows"]]
    if not shortfalls:
        raise ValueError("no record ran the qk_only arm")
    return max(shortfalls)


# ----------------------------------------------------------------------------
# Labels and figures


def arm_label(arm: str) -> str:
    """An arm's name for tables and figures (:data:`.mini_lra.ARM_LABELS`)."""
    if arm not in mini_lra.ARM_LABELS:
        raise ValueError(f"arm must be one of {mini_lra.ARMS}, got {arm!r}")
    return mini_lra.ARM_LABELS[arm]


def loss_figure(records_by_task: Mapping[str, Sequence[Mapping[str, Any]]],
                task_gates_by: Mapping[tuple[str, int], TaskGates]):
    """SPT's training loss (masked tokens of each batch, as recorded every 10 steps; every seed, every depth)
    against the unigram entropy of the task's tokens (the plateau) and the gate's line 0.1 nats below; open
    circles: each seed's held-out masked loss after SPT, the gate's measurement. The first steps, far above
    the plateau, are cut off. Imports plotting when called."""
    from .. import plotting

    tasks = list(records_by_task)
    fig, axes = plotting.figure(ncols=len(tasks), width=3.3, height=2.7, squeeze=False)
    for ax, task in zip(axes[0], tasks):
        depths = sorted({r["layers"] for r in records_by_task[task]})
        h = task_gates_by[(task, depths[0])].entropy["spt"]
        low = h - gates.PLATEAU_MARGIN
        for k, L in enumerate(depths):
            color = plotting.PALETTE[k % len(plotting.PALETTE)]
            recs = [r for r in at_depth(records_by_task[task], L) if r.get("spt_loss")]
            for i, r in enumerate(recs):
                curve = np.asarray(r["spt_loss"], dtype=float)
                steps = train.recorded_steps(len(curve))
                ax.plot(steps + 1, curve[steps], "-", color=color, lw=0.8, alpha=0.7,
                        label=f"{L} layer{'s' if L > 1 else ''}: training loss, seeds" if i == 0 else None)
                ax.plot(len(curve), r["masked_loss"]["spt"], "o", mfc="none", color=color, ms=5,
                        label="held-out loss after SPT" if i == 0 and k == 0 else None)
                low = min(low, float(curve.min()), float(r["masked_loss"]["spt"]))
        ax.axhline(h, color=plotting.INK, lw=1, label="unigram entropy (plateau)")
        ax.axhline(h - gates.PLATEAU_MARGIN, color=plotting.INK, lw=1, ls=":",
                   label=f"gate: {gates.PLATEAU_MARGIN} below")
        ax.set_ylim(low - 0.05, h + 0.4)
        ax.set_title(task, fontsize=9)
        ax.set_xlabel("SPT optimiser step", fontsize=8)
        ax.set_ylabel("masked loss (nats per token)", fontsize=8)
    axes[0][0].legend(fontsize=6)
    return fig, axes


def label_loss_figure(records_by_task: Mapping[str, Sequence[Mapping[str, Any]]],
                      data: Mapping[str, Mapping[str, np.ndarray]], *, n_layers: int = 1,
                      arms: Sequence[str] | Mapping[str, Mapping[str, str]] | None = None, title=None):
    """Each arm's label training loss (the mini-batch cross-entropy, read every
    :data:`.train.RECORD_EVERY` steps; thin lines: seeds, thick: their mean) against the label entropy of
    the training set, the loss of the best constant prediction: a run still on that line predicts one
    label. ``arms``: default every arm with a curve in every record (one colour per arm, in that order);
    or per task a mapping arm -> legend label, where tasks run different arms (a sweep with a task's own
    SPT lengths). ``title(arm)`` names an arm in the legend otherwise (default :func:`arm_label`). Imports
    plotting when called."""
    from .. import plotting

    title = title or arm_label
    tasks = list(records_by_task)
    per_task = isinstance(arms, Mapping)
    if per_task and set(arms) != set(tasks):
        raise ValueError(f"arms must name the arms of every task in {tasks}, got tasks {sorted(arms)}")
    fig, axes = plotting.figure(ncols=len(tasks), width=3.3, height=2.7, squeeze=False)
    for ax, task in zip(axes[0], tasks):
        recs = at_depth(records_by_task[task], n_layers)
        labels = dict(arms[task]) if per_task else {}
        names = (list(labels) if per_task else list(arms) if arms is not None
                 else [a for a in recs[0]["label_loss"] if all(a in r["label_loss"] for r in recs)])
        missing = sorted({a for r in recs for a in names if a not in r["label_loss"]})
        if missing:
            raise ValueError(f"records of {task!r} lack the label loss curves of {missing}")
        h = gates.unigram_entropy(data[task]["y_train"])
        top = h
        for k, arm in enumerate(names):
            color = plotting.PALETTE[k % len(plotting.PALETTE)]
            curves = [np.asarray(r["label_loss"][arm], dtype=float) for r in recs]
            n = min(len(c) for c in curves)
            at = train.recorded_steps(n)
            for c in curves:
                ax.plot(at + 1, c[at], "-", color=color, lw=0.5, alpha=0.3)
            mean = np.mean([c[at] for c in curves], axis=0)
            ax.plot(at + 1, mean, "-", color=color, lw=1.5, label=labels[arm] if per_task else title(arm))
            top = max(top, float(np.percentile(mean, 95)))
        ax.axhline(h, color=plotting.INK, lw=1, ls="--", label="label entropy (one label)")
        ax.set_ylim(0, top * 1.15)
        ax.set_title(task, fontsize=9)
        ax.set_xlabel("label optimiser step", fontsize=8)
        ax.set_ylabel("cross-entropy (nats)", fontsize=8)
        if per_task:
            ax.legend(fontsize=6)
    if not per_task:
        axes[0][0].legend(fontsize=6)
    return fig, axes


def accuracy_figure(records_by_task: Mapping[str, Sequence[Mapping[str, Any]]],
                    task_gates_by: Mapping[tuple[str, int], TaskGates], majority: Mapping[str, float]):
    """Each arm's test accuracy (bars: mean over seeds; circles: seeds) at every depth, against the shortcut
    baseline and the majority label. Imports plotting when called."""
    from .. import plotting

    tasks = list(records_by_task)
    fig, axes = plotting.figure(ncols=len(tasks), width=3.6, height=3.4, squeeze=False)
    for ax, task in zip(axes[0], tasks):
        depths = sorted({r["layers"] for r in records_by_task[task]})
        names = []
        for L in depths:
            for arm, v in accuracies(at_depth(records_by_task[task], L)).items():
                i = len(names)
                color = plotting.PALETTE[mini_lra.ARMS.index(arm) % len(plotting.PALETTE)]
                ax.barh(i, v.mean(), color=color, alpha=0.6)
                ax.plot(v, np.full(len(v), i), "o", mfc="none", color=plotting.INK, ms=3)
                names.append(f"{L}L: {arm_label(arm)}")
        ax.axvline(task_gates_by[(task, depths[0])].shortcut_accuracy, color=plotting.INK, lw=1.2,
                   label=f"shortcut ({SHORTCUTS[task]})")
        ax.axvline(majority[task], color=plotting.INK, ls="--", lw=1, label="majority label")
        ax.set_yticks(range(len(names)))
        ax.set_yticklabels(names, fontsize=6)
        ax.invert_yaxis()
        ax.set_title(task, fontsize=9)
        ax.set_xlabel("test accuracy", fontsize=8)
        ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=1, frameon=False)
    return fig, axes
