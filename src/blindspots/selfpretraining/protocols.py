"""Per-seed training protocols of the Part II chapters, run in worker processes.

Each function takes a seed first and a plain ``config`` dict (the chapter's sizes plus
``data_seed``), builds the data from ``data_seed`` (the same data for every seed), and trains
on ``config['device']`` (the chapter's ``run.device``; the CPU when absent) with one generator per run, on
that device, seeded from ``data_seed`` and the seed. They are meant
for :func:`blindspots.runtime.map_seeds`, which runs seeds in parallel with one torch thread
each and deterministic kernels on: a training claim is a statistic over the returned per-seed
values (:func:`blindspots.claims.claim_effect`), never one seed's outcome.

Seeds and streams (``d = data_seed``, ``s = seed``): training inputs ``child_rng(d, 1)``, test
``child_rng(d, 2)``, other source ``child_rng(d, 3)``; initial weights of the classifier
``1000 d + 10 s``, of the SPT model ``1000 d + 10 s + 1``; mini-batch order of label runs
``d + 10 s``, of SPT ``d + 10 s + 1`` (fine-tuning in chapter 02: ``d + 10 s + 2``; chapter 02's
compute-matched scratch run reuses the scratch seeds, so its first ``label_steps`` steps are the scratch run).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Iterable, Mapping

import numpy as np
import torch

from .. import runtime
from . import gates, proximity, tasks, train, transfer
from .model import ModelConfig

# Criteria of the training claims, fixed before the book-scale runs (chapters 02-03).
# ch. 02: the 95% interval of the mean paired gain of SPT + fine-tune over scratch lies above SPT_GAIN_MIN,
# and that of local mass / Toeplitz score after SPT over trained scratch above PROXIMITY_GAIN_MIN.
SPT_GAIN_MIN = 0.1
PROXIMITY_GAIN_MIN = 0.1
# ch. 02, compute-matched control, written before its first book-scale run: scratch given spt_steps +
# label_steps label steps. "Extra optimiser steps explain the gain" predicts a gain <= 0 over this arm, so
# the claim is that the 95% interval of the mean paired gain of SPT + fine-tune over it lies above 0.
MATCHED_GAIN_MIN = 0.0
DEPTH_GAIN_MIN = 0.1  # ch. 03: the same criterion as SPT_GAIN_MIN, at every depth (fixed before the run)
CHANCE_Z = 3.0  # ch. 03: "at chance" is 1/2 within CHANCE_Z binomial standard errors of the test set

# ch. 03, two layers. The exploratory book-scale run (seeds 0-4) FAILED the 0.1 criterion: its record is
# kept here so the chapter can show it. The two-layer claim is now tested on FRESH seeds, with the weaker
# criterion (interval above 0) written down after that run and before this one: a confirmatory run, not
# a criterion moved on the data it judges.
DEPTH_EXPLORATORY: dict[int, dict[str, list[float]]] = {
    2: {"seeds": [0, 1, 2, 3, 4],
        "scratch": [0.474, 0.478, 0.524, 0.474, 0.470],
        "spt": [0.782, 0.598, 0.778, 0.598, 0.634]},
}
DEPTH_CONFIRMATORY: dict[int, dict[str, float]] = {2: {"first_seed": 5, "exceeds": 0.0}}


# ch. 03, one layer. The first full-scale run (seeds 0-7) gated every ablation row on "scratch leaves the
# one-class accuracy"; on this task scratch never does (the blindness of chapter 01), so no row was tested.
# The gate is now the positive control (CONTROL_LEARNS), chosen after that run: the full-scale run that
# applies it takes fresh seeds from ABLATION_CONFIRMATORY_FIRST_SEED on (presets: first_seed).
ABLATION_EXPLORATORY_SEEDS = list(range(8))
ABLATION_CONFIRMATORY_FIRST_SEED = 8


def depth_seeds(n_layers: int, n_seeds: int) -> list[int]:
    """Seeds of chapter 03's depth runs at ``n_layers``: 0, 1, ... or, for a confirmatory depth, fresh ones
    after the exploratory run's."""
    first = int(DEPTH_CONFIRMATORY.get(n_layers, {}).get("first_seed", 0))
    return list(range(first, first + n_seeds))


def depth_gain_threshold(n_layers: int) -> float:
    """The gain the 95% interval's lower end must clear at ``n_layers`` (see DEPTH_CONFIRMATORY)."""
    return float(DEPTH_CONFIRMATORY.get(n_layers, {}).get("exceeds", DEPTH_GAIN_MIN))


def _rng(data_seed: int, offset: int) -> np.random.Generator:
    return np.random.default_rng([int(data_seed), offset])


def train_device(config: Mapping[str, Any]) -> torch.device:
    """The device a seed trains on: ``config['device']`` (``"cpu"`` or ``"cuda"``), the CPU when absent.

    Chapters pass ``str(run.device)``, so full scale trains on CUDA when the runtime found it. A generator
    on CUDA draws other numbers than one on the CPU, so CPU runs are the ones whose numbers are committed.
    Checked by :func:`blindspots.runtime.resolve_device`, as the chapter's own ``device`` is.
    """
    try:
        return runtime.resolve_device(config.get("device", "cpu"))
    except ValueError as err:
        raise ValueError(f"config['device']: {err}") from err


def _gen(seed: int, device: torch.device | str = "cpu") -> torch.Generator:
    g = torch.Generator(device=device)
    g.manual_seed(int(seed))
    return g


def model_config(config: Mapping[str, Any], n_layers: int | None = None) -> ModelConfig:
    """The chapter's :class:`ModelConfig` from its sizes (``n_layers`` overrides the preset)."""
    return ModelConfig(vocab_size=tasks.VOCAB_SIZE, d_model=config["d_model"], n_heads=config["n_heads"],
                       n_layers=config["n_layers"] if n_layers is None else n_layers,
                       max_len=config["max_len"], pad_id=tasks.PAD, cls_id=tasks.CLS)


def walk_data(config: Mapping[str, Any]) -> dict[str, torch.Tensor]:
    """Training and test walks (and the other source) from ``config['data_seed']``, as tensors."""
    d, dev = config["data_seed"], train_device(config)
    task = tasks.WalkTask(length=config["length"])
    x_train, y_train = tasks.sample_walks(config["n_train"], _rng(d, 1), task)
    x_test, y_test = tasks.sample_walks(config["n_test"], _rng(d, 2), task)
    out = dict(zip(("x_train", "y_train", "x_test", "y_test"),
                   train.to_device(x_train, y_train, x_test, y_test, device=dev)))
    if config.get("other_source"):
        out["x_other"] = torch.as_tensor(tasks.sample_sticky_chain(config["n_train"], _rng(d, 3), task)).to(dev)
    return out


def _label_run(model, data, config, gen_seed: int, *, eval_every: int | None = None) -> train.History:
    return train.train_classifier(model, data["x_train"], data["y_train"], steps=config["label_steps"],
                                  batch_size=config["batch_size"], lr=config["lr"], generator=_gen(gen_seed, data["x_train"].device),
                                  eval_tokens=data["x_test"], eval_labels=data["y_test"],
                                  eval_every=eval_every or config["label_steps"], progress=False)


def _pretrain(model, tokens, config, steps: int, gen_seed: int, checkpoints=(), saved=None) -> list[float]:
    return train.pretrain(model, tokens, steps=steps, batch_size=config["batch_size"], lr=config["lr"],
                          mask_id=tasks.MASK, mlm_prob=config["mlm_prob"], generator=_gen(gen_seed, tokens.device),
                          progress=False, checkpoints=checkpoints, saved=saved)


def scratch_vs_spt(seed: int, config: Mapping[str, Any]) -> dict[str, Any]:
    """One seed of chapter 02: scratch label training, SPT, fine-tuning from SPT (same label steps), and
    scratch given as many label steps as SPT + fine-tune takes in all (``spt_steps + label_steps``).

    Returns the accuracy curves (``steps``, ``scratch``, ``spt``; ``steps_matched``, ``matched``), the final
    accuracies ``acc_scratch``, ``acc_spt`` and ``acc_matched``, the SPT loss curve, the proximity summaries
    of the stages and, for the figure, each stage's attention averaged over probe sequences and heads
    (``maps``, ``(zoom, zoom)``) and by offset (``offset_profile``). Every label run starts from the same
    initial weights; the compute-matched run also draws the scratch run's mini-batches, so its first
    ``label_steps`` steps are the scratch run (constant learning rate), and the arms are paired by seed.
    Implements {prf:ref}`def-sp-protocols`.
    """
    if config["label_steps"] % config["eval_every"]:
        raise ValueError(f"config['eval_every'] must divide config['label_steps'] (the compute-matched "
                         f"curve is read there), got {config['eval_every']} and {config['label_steps']}")
    d, s = config["data_seed"], int(seed)
    data = walk_data(config)
    dev = data["x_train"].device
    cfg = model_config(config)
    init_seed = 1000 * d + 10 * s
    probe = data["x_test"][: config["n_maps"]]
    k = config["local_k"]
    stages: dict[str, Any] = {}

    def look(name, m):
        stages[name] = proximity.proximity_summary(m, probe, k)
        probs = proximity.attention_snapshot(m, probe)[1]
        maps[name] = probs.double().mean((0, 1))[: config["zoom"], : config["zoom"]].cpu().numpy()
        offsets[name] = proximity.mean_attention_by_offset(probs, config["max_offset"]).cpu().numpy()

    maps: dict[str, np.ndarray] = {}
    offsets: dict[str, np.ndarray] = {}
    scratch = train.build_model(cfg, seed=init_seed, device=dev)
    look("scratch, init", scratch)
    h_scratch = _label_run(scratch, data, config, d + 10 * s, eval_every=config["eval_every"])
    source = train.build_model(cfg, seed=init_seed + 1, device=dev)
    spt_loss = _pretrain(source, data["x_train"], config, config["spt_steps"], d + 10 * s + 1)
    tuned = train.build_model(cfg, seed=init_seed, device=dev)
    copied = transfer.finetune_init(tuned, source)
    h_spt = _label_run(tuned, data, config, d + 10 * s + 2, eval_every=config["eval_every"])
    matched = train.build_model(cfg, seed=init_seed, device=dev)
    total = {**config, "label_steps": config["spt_steps"] + config["label_steps"]}
    h_matched = _label_run(matched, data, total, d + 10 * s, eval_every=config["eval_every"])
    for name, m in (("scratch, trained", scratch), ("after SPT", source), ("SPT + fine-tune", tuned),
                    ("scratch, matched", matched)):
        look(name, m)
    return {"seed": s, "steps": list(h_scratch.steps), "scratch": list(h_scratch.accuracy),
            "spt": list(h_spt.accuracy), "acc_scratch": h_scratch.final, "acc_spt": h_spt.final,
            "steps_matched": list(h_matched.steps), "matched": list(h_matched.accuracy),
            "acc_matched": h_matched.final,
            "spt_loss": spt_loss, "proximity": stages, "maps": maps, "offset_profile": offsets,
            "copied": copied, "not_copied": sorted(set(source.state_dict()) - set(copied))}


def no_attention_baseline(seed: int, config: Mapping[str, Any]) -> float:
    """Test accuracy of the no-attention model after the chapter's label steps (one seed)."""
    d, s = config["data_seed"], int(seed)
    data = walk_data(config)
    m = train.build_model(model_config(config), seed=1000 * d + 10 * s + 9, device=data["x_train"].device,
                          attention=False)
    return _label_run(m, data, config, d + 10 * s + 9).final


HYBRIDS: dict[str, Any] = {
    "hybrid: QK only": "qk",
    "hybrid: all attention": "attention",
    "hybrid: MLP only": "mlp",
}
FROZEN = "frozen random attention"
# ch. 03's positive control: scratch with ALiBi's fixed score bias -lambda_h |i - j| (Press et al.) at slopes
# sized to the walk task, whose label is read from adjacent tokens: the first head's weight falls e-fold per
# position, each further head's half as fast. Pilot before the run that gates on it (seed 0, the full-scale
# data, one layer, 1500 label steps): Press et al.'s slopes (1/16, 1/256) stayed at 0.487, as scratch did;
# (1, 1/2) reached 0.901 and (3, 1) 0.918. At 200 label steps (book scale) all three stayed at 0.487-0.488.
CONTROL = "positive control (proximity bias)"  # scratch with the bias
OTHER_SOURCE = "SPT on sticky chain (other source)"
MATCHED = "scratch, compute-matched"


def walk_control_slopes(n_heads: int) -> tuple[float, ...]:
    """The control's ALiBi slopes on the walk task: ``lambda_h = 2^-(h-1)``, ``h = 1..n_heads`` (1, 1/2, ...)."""
    if n_heads < 1:
        raise ValueError(f"n_heads must be >= 1, got {n_heads}")
    return tuple(2.0 ** -h for h in range(n_heads))


def _n_labels(model, tokens: torch.Tensor) -> int:
    """How many distinct labels ``model`` predicts on ``tokens`` (1: it predicts a constant)."""
    return int(np.unique(gates.predicted_labels(model, tokens)).size)


def _held_out_loss(model, tokens: torch.Tensor, config: Mapping[str, Any]) -> float:
    """Held-out masked loss with masks drawn from ``data_seed`` alone: the same masks for every model."""
    return gates.held_out_masked_loss(model, tokens, mask_id=tasks.MASK, mlm_prob=config["mlm_prob"],
                                      pad_id=tasks.PAD, seed=int(config["data_seed"]))


def _transfer_check(target, source, copied: list[str]) -> dict[str, float | int]:
    """Largest difference between a copied tensor and the checkpoint, smallest difference of a
    reconstruction-head tensor (which must stay fresh), and how many tensors each side has."""
    src_state, tgt_state = source.state_dict(), target.state_dict()
    head = [k for k in tgt_state if k.startswith(transfer.HEAD_PREFIX)]
    return {"copied_err": max(float((tgt_state[k] - src_state[k]).abs().max()) for k in copied),
            "head_gap": min(float((tgt_state[k] - src_state[k]).abs().max()) for k in head),
            "n_copied": len(copied), "n_head": len(head)}


def ablation_seed(seed: int, config: Mapping[str, Any]) -> dict[str, Any]:
    """One seed of chapter 03's one-layer runs: every row of the ablation table.

    Rows: ``scratch``; fine-tuning from SPT after each step count of ``config['spt_checkpoints']``
    (``SPT <c> steps``, one SPT run checkpointed); :data:`FROZEN`; the hybrids of :data:`HYBRIDS` (from the
    longest SPT checkpoint); with ``config['other_source']``, :data:`OTHER_SOURCE` (fine-tuning from SPT on
    the sticky chain, as many steps as the longest walk SPT); with ``config['scratch_matched']``,
    :data:`MATCHED` (scratch given the longest SPT's steps on top of its label steps, on the scratch run's
    mini-batches); and :data:`CONTROL`, scratch with the fixed proximity bias of
    :func:`walk_control_slopes` (the positive control of the table's gates). Every label run of the seed
    sees the same mini-batches, every fresh model the same initial weights, so rows are paired by seed.

    Returns per row the test accuracy (``rows``) and the number of distinct labels predicted on the test set
    (``n_predicted``); the held-out masked loss of each SPT checkpoint and of the other source's SPT on
    held-out sticky chains (``masked_loss``, by row); the SPT loss curve; the copied tensor names of each
    hybrid; their local attention mass at initialisation; and the transfer check of the longest checkpoint
    (``copied_err``, ``head_gap``, ``n_copied``, ``n_head``; see :func:`depth_seed`).
    """
    t0 = time.process_time()
    d, s = config["data_seed"], int(seed)
    data = walk_data(config)
    dev = data["x_train"].device
    cfg = model_config(config)
    init_seed = 1000 * d + 10 * s
    checkpoints = sorted(set(int(c) for c in config["spt_checkpoints"]) | {0})
    longest = max(checkpoints)
    rows: dict[str, float] = {}
    n_predicted: dict[str, int] = {}
    masked: dict[str, float] = {}
    fresh = lambda: train.build_model(cfg, seed=init_seed, device=dev)  # noqa: E731

    def label(name: str, m, run_config: Mapping[str, Any] = config) -> None:
        rows[name] = _label_run(m, data, run_config, d + 10 * s).final
        n_predicted[name] = _n_labels(m, data["x_test"])

    saved: dict[int, dict] = {}
    source = train.build_model(cfg, seed=init_seed + 1, device=dev)
    curve = _pretrain(source, data["x_train"], config, longest, d + 10 * s + 1,
                      checkpoints=tuple(checkpoints), saved=saved)
    check: dict[str, float | int] = {}
    for c in checkpoints:
        m = fresh()
        name = "scratch" if c == 0 else f"SPT {c} steps"
        if c > 0:
            ckpt = train.build_model(cfg, seed=0, device=dev)
            ckpt.load_state_dict(saved[c])
            copied_all = transfer.finetune_init(m, ckpt)
            masked[name] = _held_out_loss(ckpt, data["x_test"], config)
            if c == longest:
                check = _transfer_check(m, ckpt, copied_all)
        label(name, m)
    m = fresh()
    transfer.freeze_attention(m)
    label(FROZEN, m)
    copied = {}
    local = {}
    for name, group in HYBRIDS.items():
        m = fresh()
        copied[name] = transfer.hybrid_init(m, source, group)
        local[name] = proximity.proximity_summary(m, data["x_test"][:64], config["local_k"])["local_mass"]
        label(name, m)
    if config.get("other_source"):
        other = train.build_model(cfg, seed=init_seed + 1, device=dev)
        _pretrain(other, data["x_other"], config, longest, d + 10 * s + 1)
        walk = tasks.WalkTask(length=config["length"])
        held_out = tasks.sample_sticky_chain(config["n_test"], _rng(d, 4), walk)
        masked[OTHER_SOURCE] = _held_out_loss(other, torch.as_tensor(held_out).to(dev), config)
        m = fresh()
        transfer.finetune_init(m, other)
        label(OTHER_SOURCE, m)
    if config.get("scratch_matched"):
        label(MATCHED, fresh(), {**config, "label_steps": config["label_steps"] + longest})
    # the bias is no tensor of the state dict: same initial weights as scratch
    biased = dataclasses.replace(cfg, alibi=True, alibi_slopes=walk_control_slopes(cfg.n_heads))
    label(CONTROL, train.build_model(biased, seed=init_seed, device=dev))
    return {"seed": s, "layers": cfg.n_layers, "rows": rows, "n_predicted": n_predicted,
            "masked_loss": masked, "spt_loss": curve, "copied": copied, "local_mass_at_init": local, **check,
            "cpu_s": time.process_time() - t0}


def depth_seed(seed: int, config: Mapping[str, Any], n_layers: int) -> dict[str, Any]:
    """One seed of chapter 03's depth runs at ``n_layers``: scratch and SPT + fine-tune accuracies.

    Also returns how many distinct labels each arm predicts on the test set (``n_predicted``), the held-out
    masked loss of the SPT model (``masked_loss``), and checks the transfer exactly: the largest difference
    between a copied tensor and the checkpoint, and the smallest difference of a reconstruction-head tensor
    (which must stay fresh). With ``config['scratch_matched']``, also scratch given ``spt_steps`` more label
    steps on the scratch run's mini-batches (``acc_matched``).
    """
    t0 = time.process_time()
    d, s = config["data_seed"], int(seed)
    data = walk_data(config)
    dev = data["x_train"].device
    cfg = model_config(config, n_layers)
    init_seed = 1000 * d + 10 * s
    scratch = train.build_model(cfg, seed=init_seed, device=dev)
    acc_scratch = _label_run(scratch, data, config, d + 10 * s).final
    n_predicted = {"scratch": _n_labels(scratch, data["x_test"])}
    source = train.build_model(cfg, seed=init_seed + 1, device=dev)
    curve = _pretrain(source, data["x_train"], config, config["spt_steps"], d + 10 * s + 1)
    m = train.build_model(cfg, seed=init_seed, device=dev)
    check = _transfer_check(m, source, transfer.finetune_init(m, source))
    acc_spt = _label_run(m, data, config, d + 10 * s).final
    n_predicted["spt"] = _n_labels(m, data["x_test"])
    out = {"seed": s, "layers": n_layers, "acc_scratch": acc_scratch, "acc_spt": acc_spt, "spt_loss": curve,
           "masked_loss": _held_out_loss(source, data["x_test"], config), "n_predicted": n_predicted, **check}
    if config.get("scratch_matched"):
        matched = train.build_model(cfg, seed=init_seed, device=dev)
        total = {**config, "label_steps": config["label_steps"] + config["spt_steps"]}
        out["acc_matched"] = _label_run(matched, data, total, d + 10 * s).final
        n_predicted[MATCHED] = _n_labels(matched, data["x_test"])
    return {**out, "cpu_s": time.process_time() - t0}


def ablation_or_depth_seed(task: int, config: Mapping[str, Any]) -> dict[str, Any]:
    """One task of chapter 03's pool, ``task = 100 * n_layers + seed`` (so that depths and seeds share one
    pool of workers): at one layer :func:`ablation_seed`, whose ``scratch`` and longest-SPT rows are the
    one-layer depth result; deeper, :func:`depth_seed` with as many SPT steps as the longest checkpoint."""
    n_layers, seed = divmod(int(task), 100)
    if n_layers < 1 or seed < 0:
        raise ValueError(f"task must be 100 * n_layers + seed with n_layers >= 1 and 0 <= seed < 100, "
                         f"got {task}")
    if n_layers == 1:
        return ablation_seed(seed, {**config, "n_layers": 1})
    return depth_seed(seed, {**config, "spt_steps": max(int(c) for c in config["spt_checkpoints"])}, n_layers)


# ----------------------------------------------------------------------------- statistics of the claims
def binomial_se(n_test: int, p: float = 0.5) -> float:
    """Binomial standard error ``sqrt(p (1 - p) / n_test)`` of one test accuracy (at chance by default)."""
    if n_test < 1:
        raise ValueError(f"n_test must be >= 1, got {n_test}")
    return float(np.sqrt(p * (1 - p) / n_test))


def chance_tolerance(accuracies, n_test: int, z: float = 3.0) -> float:
    """``z sqrt(se_b^2 + sd_seed^2 / n_seeds)``: how far the mean over ``n_seeds`` seeds of a model at chance may
    lie from 1/2.

    Every seed is scored on the same test set, so its binomial error ``se_b`` (:func:`binomial_se`)
    is shared by all seeds and does not shrink with ``n_seeds``; the seed-to-seed spread ``sd_seed`` (sample
    standard deviation) does.
    """
    a = np.asarray(accuracies, dtype=float)
    s2 = float(a.var(ddof=1)) if a.size > 1 else 0.0
    return float(z * np.sqrt(binomial_se(n_test) ** 2 + s2 / a.size))


def recovered_fractions(row, scratch, full) -> np.ndarray:
    """Per-seed recovered fraction ``(row_s - scratch_s) / (full_s - scratch_s)`` of the SPT gain.

    NaN for a seed without gain. For display: a ratio of noisy differences is unstable where a seed's
    gain is small, so the table's rows use the linear contrast with ``(full + scratch)/2`` instead
    (:func:`ablation_rows`).
    """
    row, scratch, full = (np.asarray(v, dtype=float) for v in (row, scratch, full))
    gain = full - scratch
    out = np.full(gain.shape, np.nan)
    np.divide(row - scratch, gain, out=out, where=gain != 0)
    return out


# What the paper finds for the rows of chapter 03's ablation table, written before the runs: copying W_Q, W_K
# or all of attention recovers most of the SPT gain, copying the MLP little of it, SPT on another source and
# SPT stopped after one to ten epochs keep a large part of it. "Most" / "a large part" is read as at least
# half of the same seed's gain, "little" as less than half.
AT_LEAST_HALF, LESS_THAN_HALF = "at least half", "less than half"
ABLATION_PREDICTIONS: dict[str, str] = {
    "hybrid: QK only": AT_LEAST_HALF,
    "hybrid: all attention": AT_LEAST_HALF,
    "hybrid: MLP only": LESS_THAN_HALF,
    OTHER_SOURCE: AT_LEAST_HALF,
}
SHORT_SPT_PREDICTION = AT_LEAST_HALF  # every "SPT <c> steps" row shorter than the longest
# The gate that the label budget lets a model with proximal attention learn: the positive control's accuracy
# lies above the one-class accuracy. (The first full-scale run asked it of scratch, which never moves here.)
CONTROL_LEARNS = "positive control leaves the one-class accuracy"


def ablation_rows(acc: Mapping[str, Any], n_predicted: Mapping[str, Any], *, full: str,
                  scratch: str = "scratch", common: Iterable[gates.Gate] = (),
                  extra: Mapping[str, Iterable[gates.Gate]] | None = None) -> list[gates.Row]:
    """The rows of chapter 03's ablation table, before their verdicts (:func:`gates.comparison_table`).

    A row compares, seed by seed, a row's accuracy with half of that seed's SPT gain,
    ``half_s = (acc[full]_s + acc[scratch]_s) / 2``, oriented so that a positive effect is what the paper
    finds (:data:`ABLATION_PREDICTIONS`; shorter SPT rows :data:`SHORT_SPT_PREDICTION`): ``row - half`` where
    it finds at least half, ``half - row`` where it finds less. Rows without a prediction (scratch, the
    longest SPT, frozen attention, compute-matched scratch, the positive control) are left out.

    Gates of each row: no run of the row or of scratch predicts a constant (:func:`gates.constant_gate` on
    ``n_predicted``, distinct labels per seed), then ``common`` (the table's shared gates), then
    ``extra[row]``. A row whose gate fails cannot say whether the weights it copies carry the gain: a
    copy that breaks the model, and one that only learns more slowly than the label budget allows,
    would both sit at the one-class accuracy.
    """
    if full not in acc or scratch not in acc:
        raise ValueError(f"acc must hold the rows full={full!r} and scratch={scratch!r}, got {sorted(acc)}")
    half = (np.asarray(acc[full], dtype=float) + np.asarray(acc[scratch], dtype=float)) / 2
    common, extra = list(common), dict(extra or {})
    out = []
    for name, a in acc.items():
        shorter = name.startswith("SPT ") and name.endswith(" steps") and name != full
        prediction = ABLATION_PREDICTIONS.get(name, SHORT_SPT_PREDICTION if shorter else None)
        if prediction is None:
            continue
        a = np.asarray(a, dtype=float)
        treated, control = (a, half) if prediction == AT_LEAST_HALF else (half, a)
        row_gates = [gates.constant_gate([*n_predicted[scratch], *n_predicted[name]]), *common,
                     *extra.get(name, ())]
        out.append(gates.paired_row(f"{name}: recovers {prediction} of the gain", treated, control,
                                    row_gates))
    return out
