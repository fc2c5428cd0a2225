"""Training loops: self-pretraining (masked reconstruction) and label training.

Mini-batches are drawn with an explicit ``torch.Generator`` (on the data's
device), so a run is reproducible from its seed. Progress is shown with a
compact ``tqdm`` bar on stderr.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from tqdm.std import tqdm

from .masking import masked_reconstruction_loss

#: Training losses are read every this many steps (and at the last); a float() per step would sync a GPU.
RECORD_EVERY = 10


def _read_loss(losses: list[float], loss: torch.Tensor, step: int, steps: int) -> None:
    """Append step ``step``'s loss: read on :func:`recorded_steps`, the last reading repeated between."""
    losses.append(float(loss.detach()) if step % RECORD_EVERY == 0 or step == steps - 1 else losses[-1])


def recorded_steps(n: int) -> np.ndarray:
    """The 0-based steps of an ``n``-step loss list whose values were read (the others repeat them)."""
    return np.unique(np.r_[np.arange(0, n, RECORD_EVERY), n - 1])


@dataclass
class History:
    """What a training run recorded: steps at which it evaluated, and the values."""

    steps: list[int] = field(default_factory=list)
    accuracy: list[float] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    #: The mini-batch loss at every optimiser step, read every :data:`RECORD_EVERY` steps and at the last
    #: (repeated between), as :func:`pretrain` returns its losses.
    train_loss: list[float] = field(default_factory=list)

    @property
    def final(self) -> float:
        return self.accuracy[-1] if self.accuracy else float("nan")


def _bar(steps: int, desc: str, progress: bool):
    return tqdm(range(steps), desc=desc, disable=not progress or steps == 0, file=sys.stderr,
                mininterval=5.0, ncols=80, leave=True,
                bar_format="{desc}: {n_fmt}/{total_fmt} [{elapsed}] {postfix}")


def _optimizer(model: torch.nn.Module, lr: float, weight_decay: float):
    params = [p for p in model.parameters() if p.requires_grad]
    return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)


def _batch(n: int, batch_size: int, generator: torch.Generator, device) -> torch.Tensor:
    return torch.randint(0, n, (batch_size,), generator=generator, device=device)


def pretrain(model, tokens: torch.Tensor, *, steps: int, batch_size: int, lr: float,
             mask_id: int, generator: torch.Generator, mlm_prob: float = 0.5,
             pad_id: int | None = None, weight_decay: float = 0.0, desc: str = "SPT",
             progress: bool = True, checkpoints=(), saved: dict | None = None) -> list[float]:
    """Self-pretraining: ``steps`` Adam steps on the masked reconstruction loss. Returns the losses.

    For every step count ``c`` in ``checkpoints`` (0 included), a copy of the
    state dict after ``c`` steps is stored in ``saved[c]``.
    """
    if checkpoints and saved is None:
        raise ValueError("saved must be a dict when checkpoints are asked for")
    bad = [c for c in checkpoints if not 0 <= c <= steps]
    if bad:
        raise ValueError(f"checkpoints must lie in [0, steps={steps}], got {bad}")

    def keep(count: int) -> None:
        if count in checkpoints:
            saved[count] = {k: v.detach().clone() for k, v in model.state_dict().items()}

    keep(0)
    model.train()
    opt = _optimizer(model, lr, weight_decay)
    losses = []
    bar = _bar(steps, desc, progress)
    for step in bar:
        idx = _batch(tokens.shape[0], batch_size, generator, tokens.device)
        loss = masked_reconstruction_loss(model, tokens[idx], mask_id=mask_id, mlm_prob=mlm_prob,
                                          pad_id=pad_id, generator=generator)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        _read_loss(losses, loss, step, steps)
        keep(step + 1)
        if step % 50 == 0:
            bar.set_postfix_str(f"loss {losses[-1]:.3f}", refresh=False)
    bar.close()
    return losses


@torch.no_grad()
def accuracy(model, tokens: torch.Tensor, labels: torch.Tensor, batch_size: int = 1000) -> float:
    """Classification accuracy of ``model.classify``."""
    was = model.training
    model.eval()
    correct = 0
    for start in range(0, tokens.shape[0], batch_size):
        logits = model.classify(tokens[start:start + batch_size])
        correct += int((logits.argmax(-1) == labels[start:start + batch_size]).sum())
    model.train(was)
    return correct / tokens.shape[0]


def train_classifier(model, tokens: torch.Tensor, labels: torch.Tensor, *, steps: int,
                     batch_size: int, lr: float, generator: torch.Generator,
                     eval_tokens: torch.Tensor, eval_labels: torch.Tensor, eval_every: int,
                     weight_decay: float = 0.0, desc: str = "labels",
                     progress: bool = True) -> History:
    """Label training: ``steps`` Adam steps on the cross-entropy of ``model.classify``.

    Accuracy on the evaluation set is recorded at step 0, every ``eval_every``
    steps and at the end; the mini-batch loss in ``train_loss`` (see :class:`History`).
    """
    if eval_every < 1:
        raise ValueError(f"eval_every must be >= 1, got {eval_every}")
    model.train()
    opt = _optimizer(model, lr, weight_decay)
    hist = History()
    hist.steps.append(0)
    hist.accuracy.append(accuracy(model, eval_tokens, eval_labels))
    hist.loss.append(float("nan"))
    bar = _bar(steps, desc, progress)
    for step in bar:
        idx = _batch(tokens.shape[0], batch_size, generator, tokens.device)
        loss = F.cross_entropy(model.classify(tokens[idx]), labels[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        _read_loss(hist.train_loss, loss, step, steps)
        if (step + 1) % eval_every == 0 or step == steps - 1:
            hist.steps.append(step + 1)
            hist.accuracy.append(accuracy(model, eval_tokens, eval_labels))
            hist.loss.append(float(loss.detach()))
            bar.set_postfix_str(f"acc {hist.accuracy[-1]:.3f}", refresh=False)
    bar.close()
    return hist


def bag_of_tokens_accuracy(train_counts: np.ndarray, train_labels: np.ndarray,
                           test_counts: np.ndarray, test_labels: np.ndarray) -> float:
    """Test accuracy of a logistic regression on token counts (the bag-of-tokens baseline)."""
    from sklearn.linear_model import LogisticRegression

    mean, std = train_counts.mean(0), train_counts.std(0) + 1e-9
    clf = LogisticRegression(max_iter=2000)
    clf.fit((train_counts - mean) / std, train_labels)
    return float(clf.score((test_counts - mean) / std, test_labels))


def build_model(config, seed: int, device, *, attention: bool = True):
    """A freshly initialised :class:`~.model.Encoder` (or the no-attention baseline).

    The initial weights are drawn on the CPU from ``seed`` (the global torch state
    is saved and restored), then moved to ``device``: the same seed gives the same
    model on every device.
    """
    from .model import Encoder, NoAttentionEncoder

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = (Encoder if attention else NoAttentionEncoder)(config)
    return model.to(device)


def to_device(*arrays: np.ndarray, device) -> tuple[torch.Tensor, ...]:
    """Numpy arrays as tensors on ``device``."""
    return tuple(torch.as_tensor(a).to(device) for a in arrays)
