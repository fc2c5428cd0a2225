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

from . import digits_seq, listops, pathfinder, positional, train, transfer
from .model import ModelConfig, positional_product
from .protocols import _gen, _rng, train_device  # the same seeding and device as the other training chapters

N_CONTENT = 16
PAD, MASK, CLS = 16, 17, 18
VOCAB_SIZE = 19
N_CLASSES = 10
TASKS: tuple[str, ...] = ("listops", "image", "pathfinder")
# Where each task's cross-task SPT data comes from (the shorter sequences: SPT on 256-token PathFinder costs too much at book scale).
OTHER_SOURCE: dict[str, str] = {"listops": "image", "image": "listops", "pathfinder": "image"}
# Criteria fixed before the book-scale runs. Only effects far larger than the seed spread are claimed:
# at one layer, SPT + fine-tune beats always predicting the majority label by more than this (95% interval
# of the mean paired difference). Comparisons between arms are reported as measured findings, not claimed.
LEARNS_MIN: dict[str, float] = {"listops": 0.05, "image": 0.2}  # PathFinder: none (one exploratory seed at chance)
ARMS: tuple[str, ...] = ("scratch", "spt", "qk_only", "other_source", "alibi")
ARM_LABELS: dict[str, str] = {"scratch": "scratch", "spt": "SPT + fine-tune", "qk_only": "SPT, only W_Q, W_K copied",
                              "other_source": "SPT on another task + fine-tune", "alibi": "scratch + ALiBi bias"}


def listops_task(sizes: Mapping[str, Any]) -> listops.ListOpsTask:
    return listops.ListOpsTask(min_length=sizes["listops_min_length"], max_length=sizes["listops_max_length"],
                               max_depth=sizes["listops_max_depth"], max_args=sizes["listops_max_args"])


def pathfinder_task(sizes: Mapping[str, Any]) -> pathfinder.PathFinderTask:
    return pathfinder.PathFinderTask(size=sizes["pathfinder_size"], path_length=sizes["pathfinder_path_length"],
                                     n_distractors=sizes["pathfinder_distractors"],
                                     distractor_length=sizes["pathfinder_distractor_length"])


def task_data(name: str, sizes: Mapping[str, Any], data_seed: int) -> dict[str, np.ndarray]:
    """Training and test inputs and labels of one task (numpy, shared vocabulary), from ``data_seed``.

    ListOps and PathFinder draw ``n_train + n_test`` distinct examples in one pass and split them, so no
    example is in both splits; the image task splits the 1797 bundled digits (``n_train`` is capped by it).
    """
    n_train, n_test = sizes["n_train"], sizes["n_test"]
    if name == "listops":
        x, y, _ = listops.sample_listops(n_train + n_test, _rng(data_seed, 11), listops_task(sizes), pad_id=PAD)
    elif name == "pathfinder":
        x, y = pathfinder.sample_pathfinder(n_train + n_test, _rng(data_seed, 13), pathfinder_task(sizes))
    elif name == "image":
        x_tr, y_tr, x_te, y_te = digits_seq.digit_split(n_test, _rng(data_seed, 12), sizes.get("image_upsample", 1))
        return {"x_train": x_tr[:n_train], "y_train": y_tr[:n_train], "x_test": x_te, "y_test": y_te}
    else:
        raise ValueError(f"task must be one of {TASKS}, got {name!r}")
    return {"x_train": x[:n_train], "y_train": y[:n_train], "x_test": x[n_train:], "y_test": y[n_train:]}


def model_config(sizes: Mapping[str, Any], n_layers: int, *, alibi: bool = False) -> ModelConfig:
    return ModelConfig(vocab_size=VOCAB_SIZE, n_classes=N_CLASSES, d_model=sizes["d_model"], n_heads=sizes["n_heads"],
                       n_layers=n_layers, max_len=sizes["max_len"], pad_id=PAD, cls_id=CLS, alibi=alibi)


def _tensors(data: Mapping[str, np.ndarray], device: torch.device) -> dict[str, torch.Tensor]:
    return {k: torch.as_tensor(np.array(v)).to(device) for k, v in data.items()}  # a copy: arrays from joblib are read-only


def claimed_gain(task: str) -> float | None:
    """The margin over the majority baseline that chapter 05's claim asks of SPT + fine-tune at one layer."""
    return LEARNS_MIN.get(task)


def majority_accuracy(data: Mapping[str, np.ndarray]) -> float:
    """Test accuracy of always predicting the most frequent training label (the chance level of a task)."""
    top = np.bincount(data["y_train"]).argmax()
    return float((data["y_test"] == top).mean())


#: The headline tables' words for an interval above 0, below 0, and across 0.
PAPER_VERDICTS: tuple[str, str, str] = ("reproduces", "opposite", "not resolved at this scale")
#: The same three cases said of an arm's paired effect over scratch.
SCRATCH_VERDICTS: tuple[str, str, str] = ("above scratch", "below scratch", "not resolved against scratch")


def verdict(effect, labels: tuple[str, str, str] = PAPER_VERDICTS) -> str:
    """Where the 95% interval of a paired effect (a :class:`~blindspots.claims.SeedEffect`) lies:
    ``labels[0]`` when above 0, ``labels[1]`` when below, else ``labels[2]``. The default labels are the
    headline tables' (*reproduces*, *opposite*, *not resolved at this scale*)."""
    if len(labels) != 3:
        raise ValueError(f"labels must name 3 cases (above 0, below 0, across 0), got {labels!r}")
    return labels[0] if effect.low > 0 else (labels[1] if effect.high < 0 else labels[2])


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

    Rows and diagonal fractions are united, CPU times added; everything else comes from the SPT half.
    """
    merged: dict[tuple[int, int], dict[str, Any]] = {}
    for r in results:
        key = (r["layers"], r["seed"])
        if key not in merged:
            merged[key] = {**r, "rows": dict(r["rows"]), "diag": dict(r["diag"])}
            continue
        m = merged[key]
        if set(m["rows"]) & set(r["rows"]):
            raise ValueError(f"jobs of depth {key[0]}, seed {key[1]} both report arms {sorted(set(m['rows']) & set(r['rows']))}")
        rows, diag, cpu = {**m["rows"], **r["rows"]}, {**m["diag"], **r["diag"]}, m["cpu_s"] + r["cpu_s"]
        if r.get("spt_loss") is not None:
            m.update(r)
        m.update(rows=rows, diag=diag, cpu_s=cpu)

    def arm_order(arm: str) -> tuple[int, int]:  # a whole seed's order: scratch, spt, spt_<e>ep by e, qk_only, ...
        e = stopped_epochs(arm)
        return (ARMS.index("spt"), e) if e is not None else (ARMS.index(arm), -1)

    for m in merged.values():
        m.pop("group", None)
        m["rows"] = {a: m["rows"][a] for a in sorted(m["rows"], key=arm_order)}
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
                   epochs: int) -> float:
    """Largest weight difference between SPT's checkpoint after ``epochs`` epochs, taken from the run of
    ``config["spt_epochs"]`` epochs that :func:`lra_seed` fine-tunes from, and a separate run stopped there.

    The learning rate is constant and the batches and masks come from one stream, so the two are the same
    computation: the gap is 0 up to round-off, unless a checkpoint is not what the sweep says it is (an alias
    of the live weights, a wrong step count).
    """
    per_epoch = max(1, len(data["x_train"]) // config["batch_size"])
    if not 1 <= epochs < config["spt_epochs"]:
        raise ValueError(f"epochs must lie in [1, spt_epochs={config['spt_epochs']}), got {epochs}")
    tokens = _tensors({"x": data["x_train"]}, train_device(config))["x"]
    saved: dict[int, dict] = {}
    spt_run(config, tokens, n_layers, seed, config["spt_epochs"] * per_epoch, (epochs * per_epoch,), saved)
    short, _ = spt_run(config, tokens, n_layers, seed, epochs * per_epoch)
    ref = short.state_dict()
    return max(float((saved[epochs * per_epoch][k].double() - v.double()).abs().max()) for k, v in ref.items())


def stopped_epochs(row: str) -> int | None:
    """The SPT epochs behind a sweep row named ``spt_<e>ep`` (:func:`sweep_points`), or None for any other row."""
    digits = row[4:-2] if row.startswith("spt_") and row.endswith("ep") else ""
    return int(digits) if digits.isdigit() else None


def sweep_points(config: Mapping[str, Any]) -> dict[int, str]:
    """The rows of a pretraining-length sweep (chapters 07 and 09), SPT epochs -> :func:`lra_seed`'s row name:
    0 is ``scratch``, each of ``spt_checkpoints`` is ``spt_<e>ep`` and ``spt_epochs`` is ``spt``."""
    total = int(config["spt_epochs"])
    stops = sorted({int(e) for e in config.get("spt_checkpoints", ())})
    if total < 1 or any(not 1 <= e < total for e in stops):
        raise ValueError(f"spt_checkpoints must lie in [1, spt_epochs) with spt_epochs >= 1, got {stops} and {total}")
    return {0: "scratch", **{e: f"spt_{e}ep" for e in stops}, total: "spt"}


def sweep_accuracies(results: list[dict[str, Any]], config: Mapping[str, Any], depths, seeds) -> dict[tuple[int, int], np.ndarray]:
    """Test accuracies of a sweep, ``(n_layers, SPT epochs) -> array over seeds`` (in the order of ``seeds``),
    from :func:`merge_lra_jobs`'s records; every (depth, seed) must be there."""
    by = {(r["layers"], r["seed"]): r["rows"] for r in results}
    missing = [(int(L), int(s)) for L in depths for s in seeds if (int(L), int(s)) not in by]
    if missing:
        raise ValueError(f"results lack (depth, seed) pairs {missing}")
    return {(int(L), e): np.array([by[(int(L), int(s))][row] for s in seeds])
            for L in depths for e, row in sweep_points(config).items()}


def lra_seed(task: int, config: Mapping[str, Any], data: Mapping[str, np.ndarray],
             other: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """One seed of one task: ``task = 1000 * group + 100 * n_layers + seed`` (see :func:`lra_job_ids`).

    Returns each arm's test accuracy. ``data``: the task's arrays; ``other``: the training inputs of
    :data:`OTHER_SOURCE`'s task (``other["x_train"]``). ``config``: the chapter's sizes plus ``data_seed`` and
    ``arms`` (a subset of :data:`ARMS`; ``scratch`` and ``spt`` are always run). With ``spt_checkpoints``
    (epochs), fine-tuning also starts from SPT stopped after each of them (rows ``spt_<e>ep``). Also returns
    the diagonal energy fraction of the positional product (:func:`~.model.positional_product`) at
    initialisation, after SPT and after scratch training, the head-averaged product and its offset profile at
    initialisation and after SPT, and SPT's loss curve. Group 1 runs only the SPT model and the arms that
    start from it, group 2 only the others (their records have ``spt_loss = None``); group 0 runs all.
    """
    t0 = time.process_time()
    group, n_layers, s = int(task) // 1000, int(task) % 1000 // 100, int(task) % 100
    if group not in (0, 1, 2) or n_layers < 1:
        raise ValueError(f"task must be 1000 * group + 100 * n_layers + seed with group in 0..2 and n_layers >= 1, got {task}")
    d = config["data_seed"]
    arms = set(config.get("arms", ARMS) if n_layers == 1 else config.get("deep_arms", ("scratch", "spt"))) | {"scratch", "spt"}
    if group:
        arms = {a for a in arms if (a in SPT_ARMS) == (group == 1)}
    dev = train_device(config)
    tensors = _tensors(data, dev)
    cfg = model_config(config, n_layers)
    init_seed = _init_seed(config, s)
    steps_per_epoch = max(1, len(data["x_train"]) // config["batch_size"])
    spt_steps = config["spt_epochs"] * steps_per_epoch
    n_pos = tensors["x_train"].shape[1]

    def label(m) -> float:
        return train.train_classifier(m, tensors["x_train"], tensors["y_train"], steps=config["label_steps"],
                                      batch_size=config["batch_size"], lr=config["lr"], generator=_gen(d + 10 * s, dev),
                                      eval_tokens=tensors["x_test"], eval_labels=tensors["y_test"],
                                      eval_every=config["label_steps"], progress=False).final

    def spt(tokens, checkpoints=(), saved=None):
        return spt_run(config, tokens, n_layers, s, spt_steps, checkpoints, saved)

    fresh = lambda: train.build_model(cfg, seed=init_seed, device=dev)  # noqa: E731
    rows: dict[str, float] = {}
    diag: dict[str, float] = {}
    out: dict[str, Any] = {"seed": s, "layers": n_layers, "group": group, "rows": rows, "diag": diag,
                           "positional_maps": None, "offset_profiles": None, "spt_loss": None,
                           "spt_steps": spt_steps, "copied_qk": []}
    if "scratch" in arms:
        scratch = fresh()
        rows["scratch"] = label(scratch)
        diag["scratch, trained"] = positional.diagonal_energy_fraction(positional_product(scratch, n_pos))
    if "spt" in arms:
        checkpoints = sorted({int(e) * steps_per_epoch for e in config.get("spt_checkpoints", ())} - {0})
        checkpoints = [c for c in checkpoints if c < spt_steps]
        saved: dict[int, dict] = {}
        source, curve = spt(tensors["x_train"], tuple([0, *checkpoints]), saved)
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
        rows["spt"] = label(m)
        for c in checkpoints:
            ckpt = train.build_model(cfg, seed=0, device=dev)
            ckpt.load_state_dict(saved[c])
            m = fresh()
            transfer.finetune_init(m, ckpt)
            rows[f"spt_{c // steps_per_epoch}ep"] = label(m)
    if "qk_only" in arms:
        m = fresh()
        out["copied_qk"] = transfer.hybrid_init(m, source, "qk")
        rows["qk_only"] = label(m)
    if "other_source" in arms:
        other_model, _ = spt(_tensors({"x": other["x_train"]}, dev)["x"])
        m = fresh()
        transfer.finetune_init(m, other_model)
        rows["other_source"] = label(m)
    if "alibi" in arms:
        rows["alibi"] = label(train.build_model(model_config(config, n_layers, alibi=True), seed=init_seed, device=dev))
    out["cpu_s"] = time.process_time() - t0
    return out
