"""Annealed teacher forcing of generator PI, in the exact Gaussian setting.

Implements the demonstration of {prf:ref}`thm-pi-no-leakage`. PIQL
{cite}`ding2026piql` passes the generator program to its model through a prefix
embedding; at test time the program is unknown, so a student network predicts the
embedding from the context. During training the model sees the mixture

    x_g = (1 - alpha) * student(D) + alpha * teacher(G),

with ``alpha`` annealed (:func:`teacher_forcing_weight`): 1 for the first 10 % of
training, a cosine decay to 0 at 40 %, then 0. Here the teacher embedding of
``G = (mu, sigma^2)`` is ``(mu_j, log sigma_j)`` per coordinate, the student is a
mean-pooling set network of the labelled context, and the head maps
``[x, x_g]`` to the anomaly logit. The whole model is a function of ``(x, D)`` at
test time, so its risk is at least ``R_D``.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np
import torch
from torch import nn

from .theory import GaussianAnomalyPrior, sample_generators, sample_points

WARMUP_END: float = 0.10
DECAY_END: float = 0.40


def teacher_forcing_weight(progress: float, warmup_end: float = WARMUP_END, decay_end: float = DECAY_END) -> float:
    """PIQL's annealed weight ``alpha`` at training ``progress`` in [0, 1].

    ``alpha = 1`` for ``progress <= warmup_end``; ``alpha = (1 + cos(pi u)) / 2`` with
    ``u = (progress - warmup_end) / (decay_end - warmup_end)`` up to ``decay_end``; 0 after.
    """
    progress = float(progress)
    if not 0.0 <= progress <= 1.0 or math.isnan(progress):
        raise ValueError(f"progress must lie in [0, 1], got {progress!r}")
    if not 0.0 <= warmup_end < decay_end <= 1.0:
        raise ValueError(f"warmup_end and decay_end must satisfy 0 <= warmup_end < decay_end <= 1, "
                         f"got {warmup_end!r}, {decay_end!r}")
    if progress <= warmup_end:
        return 1.0
    if progress >= decay_end:
        return 0.0
    u = (progress - warmup_end) / (decay_end - warmup_end)
    return 0.5 * (1.0 + math.cos(math.pi * u))


def mix_embeddings(student: torch.Tensor, teacher: torch.Tensor, alpha: float) -> torch.Tensor:
    """``x_g = (1 - alpha) * student + alpha * teacher``, with ``alpha`` in [0, 1]."""
    if not 0.0 <= float(alpha) <= 1.0:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha!r}")
    return (1.0 - alpha) * student + alpha * teacher


def generator_embedding(mu: np.ndarray, var: np.ndarray) -> np.ndarray:
    """The teacher's embedding of ``G``: ``(mu_1..mu_d, log sigma_1..log sigma_d)``."""
    return np.concatenate([mu, 0.5 * np.log(var)], axis=-1)


@contextlib.contextmanager
def _single_thread(device):
    """Run a tiny CPU model on one intra-op thread, restoring the setting afterwards.

    The detector has about ten thousand parameters; splitting its small matrix products
    across threads only adds synchronisation, which on a shared 2-core machine made a
    training step 10-20 times slower. On CUDA nothing changes.
    """
    if torch.device(device).type != "cpu":
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _mlp(sizes, device) -> nn.Sequential:
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b, device=device))
        if i < len(sizes) - 2:
            layers.append(nn.GELU())
    return nn.Sequential(*layers)


class PrivilegedDetector(nn.Module):
    """Student (set network ``D -> g_hat``) and head (``[x, x_g] -> logit``)."""

    def __init__(self, d: int, hidden: int, device, generator: torch.Generator):
        super().__init__()
        if not isinstance(d, int) or d < 1:
            raise ValueError(f"d must be an integer >= 1, got {d!r}")
        if not isinstance(hidden, int) or hidden < 1:
            raise ValueError(f"hidden must be an integer >= 1, got {hidden!r}")
        self.d = d
        self.point = _mlp([d + 1, hidden, hidden], device)
        self.pool = _mlp([hidden, hidden, 2 * d], device)
        self.head = _mlp([3 * d, hidden, hidden, 1], device)
        with torch.no_grad():  # PyTorch's default Linear init, drawn from an explicit generator
            for m in self.modules():
                if isinstance(m, nn.Linear):
                    bound = 1.0 / math.sqrt(m.in_features)
                    m.weight.uniform_(-bound, bound, generator=generator)
                    m.bias.uniform_(-bound, bound, generator=generator)

    def student(self, cx: torch.Tensor, cy: torch.Tensor) -> torch.Tensor:
        """Predicted generator embedding from the labelled context ``(tasks, n, d)``, ``(tasks, n)``."""
        h = self.point(torch.cat([cx, cy[..., None]], dim=-1)).mean(dim=1)
        return self.pool(h)

    def logit(self, x: torch.Tensor, xg: torch.Tensor) -> torch.Tensor:
        return self.head(torch.cat([x, xg], dim=-1))[:, 0]

    def forward(self, cx, cy, x):
        return self.logit(x, self.student(cx, cy))


def sample_batch(prior: GaussianAnomalyPrior, tasks: int, n: int, rng: np.random.Generator) -> dict:
    """Tasks with a labelled context of ``n`` points, one query, and the true generator."""
    mu, var = sample_generators(prior, tasks, rng)
    x, y = sample_points(prior, mu, var, n + 1, rng)
    return {"mu": mu, "var": var, "cx": x[:, :n], "cy": y[:, :n], "x": x[:, n], "y": y[:, n],
            "g": generator_embedding(mu, var)}


def to_torch(batch: dict, device) -> dict:
    return {k: torch.as_tensor(v, dtype=torch.float32, device=device) for k, v in batch.items()}


@torch.no_grad()
def label_logprobs(model: PrivilegedDetector, batch: dict, device, chunk: int = 20_000,
                   alpha: float = 0.0) -> np.ndarray:
    """``log q(y | x, D)`` of a trained model, shape ``(tasks, 2)``.

    ``alpha = 0`` (the default) is the deployable model: the head sees the student's
    embedding only. ``alpha = 1`` feeds the teacher embedding of the true generator,
    which is available at training time only.
    """
    with _single_thread(device):
        return _label_logprobs(model, batch, device, chunk, alpha)


def _label_logprobs(model, batch, device, chunk, alpha):
    out = []
    for i in range(0, len(batch["x"]), chunk):
        part = to_torch({k: batch[k][i:i + chunk] for k in ("cx", "cy", "x", "g")}, device)
        xg = mix_embeddings(model.student(part["cx"], part["cy"]), part["g"], alpha)
        z = model.logit(part["x"], xg).double()
        out.append(torch.stack([-nn.functional.softplus(z), -nn.functional.softplus(-z)], dim=-1).cpu().numpy())
    return np.concatenate(out)


def train(prior: GaussianAnomalyPrior, n: int, *, steps: int, batch: int, hidden: int, lr: float,
          teacher_forcing: bool, embed_weight: float, rng: np.random.Generator,
          generator: torch.Generator, device, checkpoints=(), on_checkpoint=None,
          embed_loss: bool | None = None) -> PrivilegedDetector:
    """Train one detector on fresh tasks at every step.

    With ``teacher_forcing`` the head sees ``x_g = (1 - alpha) g_hat + alpha g`` under PIQL's
    schedule and the student also regresses the teacher embedding (weight ``embed_weight``);
    without it (the scratch model) ``alpha = 0`` and there is no embedding loss.
    ``embed_loss`` overrides whether the embedding loss is added (default: ``teacher_forcing``);
    ``teacher_forcing=False, embed_loss=True`` is the ablation with ``alpha = 0`` throughout
    but the student still regressing the teacher embedding.
    ``on_checkpoint(step, model)`` is called after each step listed in ``checkpoints``.
    """
    for name, v in (("n", n), ("steps", steps), ("batch", batch)):
        if not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got {lr!r}")
    if not embed_weight >= 0:
        raise ValueError(f"embed_weight must be >= 0, got {embed_weight!r}")
    with _single_thread(device):
        return _train(prior, n, steps, batch, hidden, lr, teacher_forcing, embed_weight, rng, generator,
                      device, checkpoints, on_checkpoint,
                      teacher_forcing if embed_loss is None else bool(embed_loss))


def _train(prior, n, steps, batch, hidden, lr, teacher_forcing, embed_weight, rng, generator, device,
           checkpoints, on_checkpoint, embed_loss):
    model = PrivilegedDetector(prior.d, hidden, device, generator)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    checkpoints = set(int(c) for c in checkpoints)
    for step in range(steps):
        alpha = teacher_forcing_weight(step / steps) if teacher_forcing else 0.0
        b = to_torch(sample_batch(prior, batch, n, rng), device)
        g_hat = model.student(b["cx"], b["cy"])
        xg = mix_embeddings(g_hat, b["g"], alpha)
        loss = nn.functional.binary_cross_entropy_with_logits(model.logit(b["x"], xg), b["y"])
        if embed_loss and embed_weight > 0:
            loss = loss + embed_weight * ((g_hat - b["g"]) ** 2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if step + 1 in checkpoints and on_checkpoint is not None:
            model.eval()
            on_checkpoint(step + 1, model)
            model.train()
    model.eval()
    return model


# ----------------------------------------------------------------------------- seeds and arms
#: The arms of the teacher-forcing comparison: name -> (annealed teacher forcing, embedding loss).
#: "student" has both, "schedule only" the schedule without the embedding-regression loss, "embed loss
#: only" the loss with ``alpha = 0`` throughout, "scratch" neither: a 2 x 2 design.
ARMS: dict = {"student": (True, True), "scratch": (False, False), "embed loss only": (False, True),
              "schedule only": (True, False)}


def train_arms(seed: int, *, prior: dict, n: int, steps: int, batch: int, hidden: int, lr: float,
               embed_weight: float, test_tasks: int, curve_points: int = 0, curve_tasks: int = 1,
               arms: dict | None = None, device="cpu") -> dict:
    """One seed of the comparison: every arm trained on the same tasks from the same initialisation.

    The seed fixes the training tasks (``numpy`` stream ``[seed, 200]``), the initial weights
    (``torch`` generator ``seed + 300``) and a held-out test set (stream ``[seed, 100]``) shared by
    the arms, so arms are *paired* within a seed. Meant for :func:`blindspots.runtime.map_seeds`.

    Returns per arm the mean excess ``risk - R_D`` on the seed's test tasks (paired with the exact
    ``-log p(y|x,D)``) and its within-seed standard error; ``"with program"`` is the student's head
    fed the true generator embedding (``alpha = 1``); also ``R_D``, ``R_G``, ``gap`` (``R_D - R_G``)
    with SEs, and, if ``curve_points``, excess curves at ``checkpoints`` on the first ``curve_tasks``.
    """
    arms = ARMS if arms is None else arms
    pr = GaussianAnomalyPrior(**prior)
    from .theory import label_logprobs_given_context, label_logprobs_given_generator, posterior

    test = sample_batch(pr, test_tasks, n, np.random.default_rng([seed, 100]))
    rows = np.arange(test_tasks)
    loss_d = -label_logprobs_given_context(pr, posterior(pr, test["cx"], test["cy"]), test["x"])[rows, test["y"]]
    loss_g = -label_logprobs_given_generator(pr, test["mu"], test["var"], test["x"])[rows, test["y"]]

    def se(v):
        return float(v.std(ddof=1) / np.sqrt(len(v)))

    out = {"seed": int(seed), "R_D": float(loss_d.mean()), "R_G": float(loss_g.mean()),
           "gap": float((loss_d - loss_g).mean()), "gap_se": se(loss_d - loss_g), "excess": {}, "excess_se": {},
           "curves": {}, "checkpoints": []}
    m = min(curve_tasks, test_tasks)
    val = {k: v[:m] for k, v in test.items()}
    checkpoints = (np.unique(np.linspace(0, steps, curve_points + 1)[1:].astype(int)).tolist()
                   if curve_points else [])
    out["checkpoints"] = checkpoints

    def val_excess(model, alpha=0.0):
        lq = -label_logprobs(model, val, device, alpha=alpha)[np.arange(m), val["y"]]
        return float((lq - loss_d[:m]).mean())

    for name, (forced, embed) in arms.items():
        curve, program_curve = [], []

        def record(step, model, curve=curve, program_curve=program_curve, fed=name == "student"):
            curve.append(val_excess(model))
            if fed:
                program_curve.append(val_excess(model, alpha=1.0))

        model = train(pr, n, steps=steps, batch=batch, hidden=hidden, lr=lr, teacher_forcing=forced,
                      embed_loss=embed, embed_weight=embed_weight, rng=np.random.default_rng([seed, 200]),
                      generator=torch.Generator(device=device).manual_seed(int(seed) + 300), device=device,
                      checkpoints=checkpoints, on_checkpoint=record)
        loss = -label_logprobs(model, test, device)[rows, test["y"]]
        out["excess"][name] = float((loss - loss_d).mean())
        out["excess_se"][name] = se(loss - loss_d)
        out["curves"][name] = curve
        if name == "student":
            fed = -label_logprobs(model, test, device, alpha=1.0)[rows, test["y"]]
            out["excess"]["with program"] = float((fed - loss_d).mean())
            out["excess_se"]["with program"] = se(fed - loss_d)
            out["excess"]["with program - R_G"] = float((fed - loss_g).mean())
            out["excess_se"]["with program - R_G"] = se(fed - loss_g)
            out["curves"]["with program"] = program_curve
    return out


#: Training-effect claims: id -> (treated, control) per-seed quantities; each claim is that the
#: paired mean of ``treated - control`` over seeds has a 95 % interval above 0. Fixed before the book
#: run; "pi-tf-schedule-only-effect" and the speed claims after a two-seed pilot of the schedule-only arm
#: (seeds 100 and 101, not the book's).
TRAINING_EFFECTS: dict = {
    "pi-tf-student-below-scratch": "scratch - student",
    "pi-tf-aux-loss-effect": "scratch - embed loss only",
    "pi-tf-schedule-only-effect": "scratch - schedule only",
    "pi-tf-schedule-below-aux": "(scratch - embed loss only) - (embed loss only - student)",
    "pi-tf-program-below-rd": "R_D - with program",
}
#: The premise among them: the head fed the true program does better than R_D (the privileged
#: information can be used at all). A sanity record; the other effects are verifications.
PREMISE_EFFECTS = ("pi-tf-program-below-rd",)


def effect_kind(cid: str) -> str:
    """``"sanity"`` for a premise (:data:`PREMISE_EFFECTS`), ``"verification"`` for the other effects."""
    if cid not in TRAINING_EFFECTS:
        raise ValueError(f"cid must be one of {sorted(TRAINING_EFFECTS)}, got {cid!r}")
    return "sanity" if cid in PREMISE_EFFECTS else "verification"


def effect_samples(results: list, cid: str):
    """Per-seed ``(treated, control)`` arrays for the training-effect claim ``cid`` (paired by seed).

    ``results`` is the list of :func:`train_arms` outputs, one per seed.
    """
    if cid not in TRAINING_EFFECTS:
        raise ValueError(f"cid must be one of {sorted(TRAINING_EFFECTS)}, got {cid!r}")
    ex = {k: np.array([r["excess"][k] for r in results]) for k in results[0]["excess"]}
    if cid == "pi-tf-student-below-scratch":
        return ex["scratch"], ex["student"]
    if cid == "pi-tf-aux-loss-effect":
        return ex["scratch"], ex["embed loss only"]
    if cid == "pi-tf-schedule-only-effect":
        return ex["scratch"], ex["schedule only"]
    if cid == "pi-tf-schedule-below-aux":
        return ex["scratch"] - ex["embed loss only"], ex["embed loss only"] - ex["student"]
    return np.zeros(len(results)), ex["with program"]  # R_D - risk = 0 - excess


# ----------------------------------------------------------------------------- speed: steps to a loss level
#: Target levels of the speed comparison, fixed before the run: on each seed, scratch's own held-out
#: excess risk at these fractions of its training (read off its curve at that checkpoint).
SPEED_LEVELS: tuple = (0.5, 0.75, 1.0)
#: The arms timed against scratch.
SPEED_ARMS: tuple = ("student", "schedule only", "embed loss only")


def speed_targets(result: dict, levels=SPEED_LEVELS, baseline: str = "scratch") -> list:
    """Target levels of one seed: ``baseline``'s held-out excess at each fraction in ``levels`` of training.

    ``result`` is one :func:`train_arms` output with curves; each fraction is read at the last checkpoint
    at or before it (:func:`.speed.target_index`, chapter 03's rule; exact at book and full scale, where
    the fractions fall on checkpoints).
    """
    from .speed import target_index

    checkpoints = np.asarray(result["checkpoints"], dtype=float)
    if checkpoints.size == 0:
        raise ValueError("result has no curve: train with curve_points >= 1")
    out = []
    for f in levels:
        if not 0 < f <= 1:
            raise ValueError(f"levels must lie in (0, 1], got {f!r}")
        out.append(float(result["curves"][baseline][target_index(checkpoints, f)]))
    return out


def speed_samples(results: list, arm: str, level: float, baseline: str = "scratch") -> dict:
    """Per-seed times to ``baseline``'s level ``level`` for ``baseline`` and ``arm``, and the speedups.

    Returns arrays ``t_base``, ``base_censored``, ``t_arm``, ``arm_censored`` and the per-seed
    speedup bounds ``low``, ``high`` (:func:`blindspots.privileged.speed.speedup_bounds`): a run that
    never reaches the level is censored at the budget, never imputed.
    """
    from .speed import speedup_bounds, steps_to_target

    cols = {k: [] for k in ("target", "t_base", "base_censored", "t_arm", "arm_censored", "low", "high")}
    for r in results:
        target = speed_targets(r, (level,), baseline)[0]
        tb, cb = steps_to_target(r["curves"][baseline], r["checkpoints"], target)
        ta, ca = steps_to_target(r["curves"][arm], r["checkpoints"], target)
        lo, hi = speedup_bounds(tb, cb, ta, ca)
        for k, v in zip(cols, (target, tb, cb, ta, ca, lo, hi)):
            cols[k].append(v)
    return {k: np.array(v) for k, v in cols.items()}


def speed_table(results: list, arms=SPEED_ARMS, levels=SPEED_LEVELS, baseline: str = "scratch",
                confidence: float = 0.95) -> dict:
    """``{(arm, level): (samples, MedianInterval)}``: the median speedup over seeds of each arm at each level.

    The interval is distribution-free and accepts censored seeds
    (:func:`blindspots.privileged.speed.median_interval`).
    """
    from .speed import median_interval

    out = {}
    for arm in arms:
        for level in levels:
            s = speed_samples(results, arm, level, baseline)
            out[(arm, level)] = (s, median_interval(s["low"], s["high"], confidence))
    return out


#: Speed claims, fixed before the book-scale run: id -> (arm, levels). Each claims that at every listed
#: level of :data:`SPEED_LEVELS` the lower end of the >= 95 % interval for the arm's median speedup over
#: scratch is above 1. The schedule-only arm's speed is shown, not claimed: at scratch's final level its
#: lower end is one 50-step checkpoint above 1 (1.03 at book scale), a margin another machine's rounding can flip.
SPEED_EFFECTS: dict = {
    "pi-tf-speed-student": ("student", SPEED_LEVELS),
    "pi-tf-speed-embed-loss": ("embed loss only", SPEED_LEVELS),
}


def speed_claim_value(table: dict, cid: str) -> float:
    """The number a speed claim bounds: the smallest lower interval end over the claim's levels."""
    if cid not in SPEED_EFFECTS:
        raise ValueError(f"cid must be one of {sorted(SPEED_EFFECTS)}, got {cid!r}")
    arm, levels = SPEED_EFFECTS[cid]
    return min(table[(arm, level)][1].low for level in levels)
