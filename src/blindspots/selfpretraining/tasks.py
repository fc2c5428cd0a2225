"""The synthetic length-100 task: a noisy random walk on Z_4 labelled by its net direction.

A sequence is a walk ``z_{t+1} = z_t + Delta z_t (mod 4)`` with steps
``Delta z_t in {-1, 0, +1}``: 0 with the sequence's stickiness, otherwise +1 or -1 with
a drift drawn symmetrically around zero. Each observed token is replaced by a
noise token with probability ``noise_prob`` (the walk continues underneath).
The label is whether the walk took more +1 steps than -1 steps; ties are
redrawn.

Reversing a sequence negates every step, so it swaps the label, keeps the token
counts and (the drift law being symmetric and the start uniform) keeps the
probability of the sequence. Hence ``Pr(y = 1 | cnt(x)) = 1/2`` exactly: any
bag-of-tokens classifier is at chance, and the label can only be read from the
order of neighbouring tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

N_STATES = 4
NOISE, PAD, MASK, CLS = 4, 5, 6, 7
VOCAB_SIZE = 8


@dataclass(frozen=True)
class WalkTask:
    """Parameters of the random-walk task (defaults: the book's task)."""

    length: int = 100
    noise_prob: float = 0.1
    max_drift: float = 0.5
    stickiness: tuple[float, float] = (0.0, 0.5)

    def __post_init__(self) -> None:
        if self.length < 2:
            raise ValueError(f"length must be >= 2, got {self.length}")
        if not 0.0 <= self.noise_prob < 1.0:
            raise ValueError(f"noise_prob must lie in [0, 1), got {self.noise_prob}")
        if not 0.0 <= self.max_drift <= 1.0:
            raise ValueError(f"max_drift must lie in [0, 1], got {self.max_drift}")
        lo, hi = self.stickiness
        if not 0.0 <= lo <= hi < 1.0:
            raise ValueError(f"stickiness must be a range (lo, hi) with 0 <= lo <= hi < 1, got {self.stickiness}")


def _walk_steps(n: int, task: WalkTask, rng: np.random.Generator) -> np.ndarray:
    drift = rng.uniform(-task.max_drift, task.max_drift, size=(n, 1))
    stick = rng.uniform(*task.stickiness, size=(n, 1))
    u = rng.random((n, task.length - 1))
    up = (1.0 - stick) * (1.0 + drift) / 2.0
    return np.where(u < stick, 0, np.where(u < stick + up, 1, -1))


def _observe(states: np.ndarray, noise_prob: float, rng: np.random.Generator) -> np.ndarray:
    noisy = rng.random(states.shape) < noise_prob
    return np.where(noisy, NOISE, states).astype(np.int64)


def sample_walks(n: int, rng: np.random.Generator, task: WalkTask = WalkTask()
                 ) -> tuple[np.ndarray, np.ndarray]:
    """``n`` sequences ``(n, length)`` of tokens in ``{0..3, NOISE}`` and their labels in ``{0, 1}``."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    tokens, labels, have = [], [], 0
    while have < n:
        steps = _walk_steps(2 * (n - have) + 8, task, rng)
        net = (steps == 1).sum(1) - (steps == -1).sum(1)
        steps = steps[net != 0][: n - have]
        net = net[net != 0][: n - have]
        start = rng.integers(0, N_STATES, size=(len(steps), 1))
        states = np.concatenate([start, start + np.cumsum(steps, axis=1)], axis=1) % N_STATES
        tokens.append(_observe(states, task.noise_prob, rng))
        labels.append((net > 0).astype(np.int64))
        have += len(steps)
    return np.concatenate(tokens), np.concatenate(labels)


def sample_sticky_chain(n: int, rng: np.random.Generator, task: WalkTask = WalkTask()) -> np.ndarray:
    """A different source on the same vocabulary: a sticky chain with uniform jumps.

    Each token repeats the previous state with the sequence's stickiness and
    otherwise jumps to a uniform state; noise as in :func:`sample_walks`. It has
    local correlations but no +-1 walk structure (used to pretrain on another source).
    """
    stick = rng.uniform(*task.stickiness, size=(n, 1))
    jump = rng.random((n, task.length)) >= stick
    fresh = rng.integers(0, N_STATES, size=(n, task.length))
    jump[:, 0] = True
    idx = np.where(jump, np.arange(task.length)[None, :], 0)
    idx = np.maximum.accumulate(idx, axis=1)
    states = np.take_along_axis(fresh, idx, axis=1)
    return _observe(states, task.noise_prob, rng)


def reverse(tokens: np.ndarray) -> np.ndarray:
    """The reversal map of the symmetry argument (label swaps, counts stay)."""
    return tokens[:, ::-1].copy()


def token_counts(tokens: np.ndarray, vocab_size: int = VOCAB_SIZE) -> np.ndarray:
    """Bag-of-tokens features ``(n, vocab_size)``: how often each token occurs."""
    return np.stack([(tokens == v).sum(1) for v in range(vocab_size)], axis=1).astype(np.float64)


def labels_from_clean_tokens(tokens: np.ndarray) -> np.ndarray:
    """The label of noise-free walks, read from the tokens: more +1 than -1 steps (mod 4)."""
    if (tokens >= N_STATES).any():
        raise ValueError("tokens must be noise-free walk states in [0, 3]")
    steps = (np.diff(tokens, axis=1) + 1) % N_STATES - 1  # in {-1, 0, +1, 2}; 2 cannot occur
    return ((steps == 1).sum(1) > (steps == -1).sum(1)).astype(np.int64)
