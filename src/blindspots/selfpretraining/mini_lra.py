"""The mini Long Range Arena: three rebuilt LRA tasks, one vocabulary, and the per-seed protocol.

The tasks (:mod:`.listops`, :mod:`.digits_seq`, :mod:`.pathfinder`) share one token vocabulary, so
that one architecture serves all three and a model self-pretrained on one task's inputs can be
fine-tuned on another's: content tokens 0-15 (ListOps uses 0-14, the digits' grey levels 0-15,
PathFinder 0-2), then padding, mask and CLS. Every model has a 10-way head (PathFinder's labels
are 0 and 1).

:func:`lra_seed` runs one seed of one task at one depth, for :func:`blindspots.runtime.map_seeds`:
label training from scratch; SPT on the task's own training inputs, then fine-tuning from every
tensor but the reconstruction head; the QK-only hybrid of the same SPT checkpoint; SPT on another
task's training inputs, then fine-tuning; and, optionally, scratch training with the fixed ALiBi
distance bias. All label runs of a seed see the same mini-batches and all fresh models the same
initial weights, so the arms are paired by seed. Seeds and streams as in :mod:`.protocols`.
"""

from __future__ import annotations

import time
from typing import Any, Mapping

import numpy as np
import torch

from . import digits_seq, gates, listops, pathfinder, positional, train, transfer
from .model import ModelConfig, positional_product
from .protocols import _gen, _rng, train_device  # the same seeding and device as the other training chapters

N_CONTENT = 16
PAD, MASK, CLS = 16, 17, 18
VOCAB_SIZE = 19
N_CLASSES = 10
TASKS: tuple[str, ...] = ("listops", "image", "pathfinder")
# Where each task's cross-task SPT data comes from (the shorter sequences: SPT on 256-token PathFinder costs too much at book scale).
OTHER_SOURCE: dict[str, str] = {"listops": "image", "image": "listops", "pathfinder": "image"}
ARMS: tuple[str, ...] = ("scratch", "scratch_matched", "spt", "qk_only", "other_source", "alibi")
ARM_LABELS: dict[str, str] = {"scratch": "scratch", "scratch_matched": "scratch, SPT's steps added",
                              "spt": "SPT + fine-tune", "qk_only": "SPT, only W_Q, W_K copied",
                              "other_source": "SPT on another task + fine-tune", "alibi": "scratch + ALiBi bias"}


def listops_task(sizes: Mapping[str, Any]) -> listops.ListOpsTask:
    return listops.ListOpsTask(min_length=sizes["listops_min_length"], max_length=sizes["listops_max_length"],
                               max_depth=sizes["listops_max_depth"], max_args=sizes["listops_max_args"],
                               root_operators=tuple(sizes.get("listops_roots", listops.OPERATORS)))


def pathfinder_task(sizes: Mapping[str, Any]) -> pathfinder.PathFinderTask:
    optional = {f: sizes[f"pathfinder_{f}"] for f in ("dash_off", "separation", "balance") if f"pathfinder_{f}" in sizes}
    return pathfinder.PathFinderTask(size=sizes["pathfinder_size"], path_length=sizes["pathfinder_path_length"],
                                     n_distractors=sizes["pathfinder_distractors"],
                                     distractor_length=sizes["pathfinder_distractor_length"], **optional)


def task_data(name: str, sizes: Mapping[str, Any], data_seed: int) -> dict[str, np.ndarray]:
    """Training and test inputs and labels of one task (numpy, shared vocabulary), from ``data_seed``.

    ListOps and PathFinder draw ``n_train + n_test`` distinct examples in one pass and split them, so no
    example is in both splits; the image task splits the 1797 bundled digits (``n_train`` is capped by it), its
    test split ``image_n_test`` digits where given.
    """
    n_train, n_test = sizes["n_train"], sizes["n_test"]
    if name == "listops":
        x, y, _ = listops.sample_listops(n_train + n_test, _rng(data_seed, 11), listops_task(sizes), pad_id=PAD)
    elif name == "pathfinder":
        task = pathfinder_task(sizes)
        n = n_train + n_test + (task.balance and (n_train + n_test) % 2)  # balanced images come in pairs
        x, y = pathfinder.sample_pathfinder(n, _rng(data_seed, 13), task)
    elif name == "image":
        n_test = sizes.get("image_n_test", n_test)  # the 1797 digits cap both splits
        x_tr, y_tr, x_te, y_te = digits_seq.digit_split(n_test, _rng(data_seed, 12), sizes.get("image_upsample", 1))
        return {"x_train": x_tr[:n_train], "y_train": y_tr[:n_train], "x_test": x_te, "y_test": y_te}
    else:
        raise ValueError(f"task must be one of {TASKS}, got {name!r}")
    end = n_train + n_test
    return {"x_train": x[:n_train], "y_train": y[:n_train], "x_test": x[n_train:end], "y_test": y[n_train:end]}


def model_config(sizes: Mapping[str, Any], n_layers: int, *, alibi: bool = False) -> ModelConfig:
    """The encoder of every arm; with ``alibi``, the control's distance bias, on the image grid when
    ``sizes["alibi_grid"]`` gives its row width (:func:`task_config` sets it for PathFinder)."""
    return ModelConfig(vocab_size=VOCAB_SIZE, n_classes=N_CLASSES, d_model=sizes["d_model"], n_heads=sizes["n_heads"],
                       n_layers=n_layers, max_len=sizes["max_len"], pad_id=PAD, cls_id=CLS, alibi=alibi,
                       alibi_grid=int(sizes.get("alibi_grid", 0)) if alibi else 0)


def task_config(task: str, sizes: Mapping[str, Any]) -> dict[str, Any]:
    """``sizes`` for one task. PathFinder's control measures distance on the image (Euclidean, in pixels), so
    that its bias favours the pixels a curve can reach, not the neighbours in reading order; and its SPT masks
    ``pathfinder_mlm_prob`` of the pixels where given (a short curve half masked leaves little to continue).
    ``<task>_spt_steps`` and ``<task>_spt_checkpoints``, where given, replace ``spt_steps`` and
    ``spt_checkpoints`` for that task (a task whose SPT needs a longer run than the others)."""
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    out = dict(sizes)
    for key in ("spt_steps", "spt_checkpoints"):
        if f"{task}_{key}" in sizes:
            out[key] = sizes[f"{task}_{key}"]
    if task == "pathfinder":
        out.update(alibi_grid=pathfinder_task(sizes).size, mlm_prob=sizes.get("pathfinder_mlm_prob", sizes["mlm_prob"]))
    return out


def _tensors(data: Mapping[str, np.ndarray], device: torch.device) -> dict[str, torch.Tensor]:
    return {k: torch.as_tensor(np.array(v)).to(device) for k, v in data.items()}  # a copy: arrays from joblib are read-only


def majority_accuracy(data: Mapping[str, np.ndarray]) -> float:
    """Test accuracy of always predicting the most frequent training label (the chance level of a task)."""
    top = np.bincount(data["y_train"]).argmax()
    return float((data["y_test"] == top).mean())


def _init_seed(config: Mapping[str, Any], seed: int) -> int:
    """Seed of a seed's fresh model weights; its SPT model uses this plus 1."""
    return 1000 * config["data_seed"] + 10 * seed


# Arms that fine-tune from the task's own SPT model; the others (scratch, other_source, alibi) do not need it.
SPT_ARMS: tuple[str, ...] = ("spt", "qk_only")


def lra_job_ids(depths, seeds, *, split: bool = True) -> list[int]:
    """Job ids for :func:`lra_seed`: ``1000 * group + 100 * n_layers + seed``.

    ``split=False`` gives one job per (depth, seed) (group 0: every arm). ``split=True`` gives two: group 1
    runs the task's SPT and the arms that start from it, group 2 the arms that do not. Every arm is seeded on
    its own, so the two halves give exactly the numbers of the whole seed; they only balance the load (5 seeds
    on 2 workers take 3 rounds of whole seeds but 5 rounds of half seeds).
    """
    depths, seeds = [int(L) for L in depths], [int(s) for s in seeds]
    if not depths or any(not 1 <= L <= 9 for L in depths):
        raise ValueError(f"depths must be layer counts in 1..9, got {depths}")
    if not seeds or any(not 0 <= s <= 99 for s in seeds):
        raise ValueError(f"seeds must be integers in 0..99, got {seeds}")
    groups = (1, 2) if split else (0,)
    return [1000 * g + 100 * L + s for L in depths for s in seeds for g in groups]


def merge_lra_jobs(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per (depth, seed) from :func:`lra_seed`'s job records, in first-seen order.

    Rows, label loss curves and diagonal fractions are united, CPU times added; everything else comes from the
    SPT half.
    """
    united = ("rows", "diag", "n_predicted", "masked_loss", "label_loss")  # per-arm (or per-stage) dicts
    merged: dict[tuple[int, int], dict[str, Any]] = {}
    for r in results:
        key = (r["layers"], r["seed"])
        if key not in merged:
            merged[key] = {**r, **{k: dict(r[k]) for k in united}}
            continue
        m = merged[key]
        if set(m["rows"]) & set(r["rows"]):
            raise ValueError(f"jobs of depth {key[0]}, seed {key[1]} both report arms {sorted(set(m['rows']) & set(r['rows']))}")
        both = {k: {**m[k], **r[k]} for k in united}
        cpu = m["cpu_s"] + r["cpu_s"]
        if r.get("spt_loss") is not None:
            m.update(r)
        m.update(cpu_s=cpu, **both)

    def arm_order(arm: str) -> tuple[int, int]:  # a whole seed's order: scratch, ..., spt, spt_<s>st by s, qk_only, ...
        c = stopped_steps(arm)
        return (ARMS.index("spt"), c) if c is not None else (ARMS.index(arm), -1)

    for m in merged.values():
        m.pop("group", None)
        m["rows"] = {a: m["rows"][a] for a in sorted(m["rows"], key=arm_order)}
        m["n_predicted"] = {a: m["n_predicted"][a] for a in m["rows"]}
        m["label_loss"] = {a: m["label_loss"][a] for a in m["rows"]}
    return list(merged.values())


def spt_run(config: Mapping[str, Any], tokens: torch.Tensor, n_layers: int, seed: int, steps: int,
            checkpoints=(), saved: dict | None = None):
    """The SPT run of :func:`lra_seed` for ``seed`` (its initial weights, masks and batches): ``(model, losses)``."""
    d = config["data_seed"]
    m = train.build_model(model_config(config, n_layers), seed=_init_seed(config, seed) + 1, device=tokens.device)
    curve = train.pretrain(m, tokens, steps=steps, batch_size=config["batch_size"], lr=config["lr"],
                           mask_id=MASK, mlm_prob=config["mlm_prob"], pad_id=PAD, generator=_gen(d + 10 * seed + 1, tokens.device),
                           progress=False, checkpoints=checkpoints, saved=saved)
    return m, curve


def checkpoint_gap(config: Mapping[str, Any], data: Mapping[str, np.ndarray], seed: int, n_layers: int,
                   steps: int) -> float:
    """Largest weight difference between SPT's checkpoint after ``steps`` optimiser steps, taken from the run of
    ``config["spt_steps"]`` steps that :func:`lra_seed` fine-tunes from, and a separate run stopped there.

    The learning rate is constant and the batches and masks come from one stream, so the two are the same
    computation: the gap is 0 up to round-off, unless a checkpoint is not what the sweep says it is (an alias
    of the live weights, a wrong step count).
    """
    total = int(config["spt_steps"])
    if not 1 <= steps < total:
        raise ValueError(f"steps must lie in [1, spt_steps={total}), got {steps}")
    tokens = _tensors({"x": data["x_train"]}, train_device(config))["x"]
    saved: dict[int, dict] = {}
    spt_run(config, tokens, n_layers, seed, total, (steps,), saved)
    short, _ = spt_run(config, tokens, n_layers, seed, steps)
    ref = short.state_dict()
    return max(float((saved[steps][k].double() - v.double()).abs().max()) for k, v in ref.items())


def stopped_steps(row: str) -> int | None:
    """The SPT optimiser steps behind a sweep row named ``spt_<s>st`` (:func:`sweep_points`), or None for any other row."""
    digits = row[4:-2] if row.startswith("spt_") and row.endswith("st") else ""
    return int(digits) if digits.isdigit() else None


def sweep_points(config: Mapping[str, Any]) -> dict[int, str]:
    """The rows of a pretraining-length sweep, SPT optimiser steps -> :func:`lra_seed`'s row name:
    0 is ``scratch``, each of ``spt_checkpoints`` is ``spt_<s>st`` and ``spt_steps`` is ``spt``."""
    total = int(config["spt_steps"])
    stops = sorted({int(c) for c in config.get("spt_checkpoints", ())})
    if total < 1 or any(not 1 <= c < total for c in stops):
        raise ValueError(f"spt_checkpoints must lie in [1, spt_steps) with spt_steps >= 1, got {stops} and {total}")
    return {0: "scratch", **{c: f"spt_{c}st" for c in stops}, total: "spt"}


def sweep_accuracies(results: list[dict[str, Any]], config: Mapping[str, Any], depths, seeds) -> dict[tuple[int, int], np.ndarray]:
    """Test accuracies of a sweep, ``(n_layers, SPT steps) -> array over seeds`` (in the order of ``seeds``),
    from :func:`merge_lra_jobs`'s records; every (depth, seed) must be there."""
    by = {(r["layers"], r["seed"]): r["rows"] for r in results}
    missing = [(int(L), int(s)) for L in depths for s in seeds if (int(L), int(s)) not in by]
    if missing:
        raise ValueError(f"results lack (depth, seed) pairs {missing}")
    return {(int(L), c): np.array([by[(int(L), int(s))][row] for s in seeds])
            for L in depths for c, row in sweep_points(config).items()}


def held_out_loss(model, tokens: torch.Tensor, config: Mapping[str, Any]) -> float:
    """The SPT plateau gate's measurement: held-out masked loss with the chapter's masking rate and one fixed
    mask stream (``data_seed + 7``), so every model of a chapter is judged on the same masks."""
    return gates.held_out_masked_loss(model, tokens, mask_id=MASK, mlm_prob=config["mlm_prob"], pad_id=PAD,
                                      seed=int(config["data_seed"]) + 7)


def masked_entropy(data: Mapping[str, np.ndarray]) -> float:
    """Unigram entropy (nats) of the tokens SPT masks in ``data["x_test"]``: every non-padding token."""
    return gates.unigram_entropy(data["x_test"], exclude=(PAD,))


def lra_seed(task: int, config: Mapping[str, Any], data: Mapping[str, np.ndarray],
             other: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """One seed of one task: ``task = 1000 * group + 100 * n_layers + seed`` (see :func:`lra_job_ids`).

    Returns each arm's test accuracy (``rows``) and how many distinct labels it predicted on the test set
    (``n_predicted``). ``data``: the task's arrays; ``other``: the arrays of :data:`OTHER_SOURCE`'s task (its
    ``x_train`` for SPT, its ``x_test`` for the held-out masked loss). ``config``: the chapter's sizes plus
    ``data_seed`` and ``arms`` (a subset of :data:`ARMS`; ``scratch`` and ``spt`` are always run; beyond one
    layer ``deep_arms``). SPT takes ``spt_steps`` optimiser steps; ``scratch_matched`` trains labels for
    ``label_steps + spt_steps`` steps, the total of SPT + fine-tune. With ``spt_checkpoints`` (optimiser steps),
    fine-tuning also starts from SPT stopped after each of them (rows ``spt_<s>st``).

    Also returns the held-out masked loss of every SPT model (``masked_loss``: ``spt``, each checkpoint's row,
    ``other_source``; the plateau gate's measurement, :func:`held_out_loss`), the diagonal energy fraction of
    the positional product (:func:`~.model.positional_product`) at initialisation, after SPT and after
    scratch training, the head-averaged product and its offset profile at initialisation and after SPT,
    SPT's loss curve, and each arm's label loss curve (``label_loss``, :attr:`.train.History.train_loss`). Group 1 runs only the SPT model and the arms that start from it, group 2 only the
    others (their records have ``spt_loss = None``); group 0 runs all.
    """
    t0 = time.process_time()
    group, n_layers, s = int(task) // 1000, int(task) % 1000 // 100, int(task) % 100
    if group not in (0, 1, 2) or n_layers < 1:
        raise ValueError(f"task must be 1000 * group + 100 * n_layers + seed with group in 0..2 and n_layers >= 1, got {task}")
    d = config["data_seed"]
    arms = set(config.get("arms", ARMS) if n_layers == 1 else config.get("deep_arms", ("scratch", "spt"))) | {"scratch", "spt"}
    unknown = arms - set(ARMS)
    if unknown:
        raise ValueError(f"arms must be among {ARMS}, got {sorted(unknown)}")
    if group:
        arms = {a for a in arms if (a in SPT_ARMS) == (group == 1)}
    dev = train_device(config)
    tensors = _tensors(data, dev)
    cfg = model_config(config, n_layers)
    init_seed = _init_seed(config, s)
    spt_steps = int(config["spt_steps"])
    n_pos = tensors["x_train"].shape[1]
    n_predicted: dict[str, int] = {}
    masked_loss: dict[str, float] = {}
    label_loss: dict[str, list[float]] = {}

    def label(m, row: str, steps: int | None = None) -> float:
        hist = train.train_classifier(m, tensors["x_train"], tensors["y_train"], steps=steps or config["label_steps"],
                                      batch_size=config["batch_size"], lr=config["lr"], generator=_gen(d + 10 * s, dev),
                                      eval_tokens=tensors["x_test"], eval_labels=tensors["y_test"],
                                      eval_every=steps or config["label_steps"], progress=False)
        n_predicted[row] = int(len(np.unique(gates.predicted_labels(m, tensors["x_test"]))))
        label_loss[row] = hist.train_loss
        return hist.final

    def spt(tokens, checkpoints=(), saved=None):
        return spt_run(config, tokens, n_layers, s, spt_steps, checkpoints, saved)

    fresh = lambda: train.build_model(cfg, seed=init_seed, device=dev)  # noqa: E731
    rows: dict[str, float] = {}
    diag: dict[str, float] = {}
    out: dict[str, Any] = {"seed": s, "layers": n_layers, "group": group, "rows": rows, "diag": diag,
                           "n_predicted": n_predicted, "masked_loss": masked_loss, "label_loss": label_loss,
                           "positional_maps": None, "offset_profiles": None, "spt_loss": None,
                           "spt_steps": spt_steps, "copied_qk": []}
    if "scratch" in arms:
        scratch = fresh()
        rows["scratch"] = label(scratch, "scratch")
        diag["scratch, trained"] = positional.diagonal_energy_fraction(positional_product(scratch, n_pos))
    if "scratch_matched" in arms:
        rows["scratch_matched"] = label(fresh(), "scratch_matched", config["label_steps"] + spt_steps)
    if "spt" in arms:
        checkpoints = sorted({int(c) for c in config.get("spt_checkpoints", ())} - {0})
        checkpoints = [c for c in checkpoints if c < spt_steps]
        saved: dict[int, dict] = {}
        source, curve = spt(tensors["x_train"], tuple([0, *checkpoints]), saved)
        masked_loss["spt"] = held_out_loss(source, tensors["x_test"], config)
        init = train.build_model(cfg, seed=0, device=dev)
        init.load_state_dict(saved[0])
        products = {"SPT model, init": positional_product(init, n_pos), "after SPT": positional_product(source, n_pos)}
        for name, prod in products.items():
            diag[name] = positional.diagonal_energy_fraction(prod)
        out["positional_maps"] = {name: prod.mean(0).cpu().numpy() for name, prod in products.items()}  # averaged over heads
        out["offset_profiles"] = {name: positional.offset_profile(prod).mean(0).cpu().numpy()
                                  for name, prod in products.items()}
        out["spt_loss"] = curve
        m = fresh()
        transfer.finetune_init(m, source)
        rows["spt"] = label(m, "spt")
        for c in checkpoints:
            ckpt = train.build_model(cfg, seed=0, device=dev)
            ckpt.load_state_dict(saved[c])
            masked_loss[f"spt_{c}st"] = held_out_loss(ckpt, tensors["x_test"], config)
            m = fresh()
            transfer.finetune_init(m, ckpt)
            rows[f"spt_{c}st"] = label(m, f"spt_{c}st")
    if "qk_only" in arms:
        m = fresh()
        out["copied_qk"] = transfer.hybrid_init(m, source, "qk")
        rows["qk_only"] = label(m, "qk_only")
    if "other_source" in arms:
        other_model, _ = spt(_tensors({"x": other["x_train"]}, dev)["x"])
        held = other.get("x_test", other["x_train"])
        masked_loss["other_source"] = held_out_loss(other_model, _tensors({"x": held}, dev)["x"], config)
        m = fresh()
        transfer.finetune_init(m, other_model)
        rows["other_source"] = label(m, "other_source")
    if "alibi" in arms:
        rows["alibi"] = label(train.build_model(model_config(config, n_layers, alibi=True), seed=init_seed, device=dev),
                              "alibi")
    out["cpu_s"] = time.process_time() - t0
    return out
