"""Gates and verdicts: when a comparison of training arms can answer, and what it then says.

A comparison of two arms is a small experiment. Before its interval means anything, gates show that the
arms did what the comparison assumes (Implements {prf:ref}`def-sp-gates`):

- **SPT left its plateau**: the held-out masked loss is at least :data:`PLATEAU_MARGIN` nats below the
  unigram entropy of the masked tokens, for every seed (:func:`plateau_gate`). At the entropy, the model
  predicts each masked token from the token frequencies alone and has learned nothing about context.
- **The best arm beats the task's shortcut**: the 95% interval of the best arm's mean accuracy minus the
  accuracy of a logistic regression on the task's shortcut features lies above 0 (:func:`shortcut_gate`,
  :func:`shortcut_accuracy`).
- **No run predicts a constant** (:func:`constant_gate`).
- **The positive control learns**: scratch with a fixed bias toward neighbours beats the shortcut the same
  way (:func:`shortcut_gate` on the control arm).

A row whose gates all pass is *tested*; the tested rows of a table are one family, and Holm's correction
decides their verdicts (:func:`comparison_table`): *reproduces* or *opposite* when the adjusted p-value is
below :data:`ALPHA`, else *not resolved*, with the smallest effect the design could have detected at 80 %
power (:func:`detectable_effect`). A row with a failed gate reads *not tested*, and names the gate.

The criteria here were written before the runs they judge.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from .. import claims

PLATEAU_MARGIN = 0.1  # nats below the unigram entropy of the masked tokens
ALPHA = 0.05  # family-wise level of a table's tested rows (Holm)
POWER = 0.8  # power at which a null states its detectable effect
VERDICTS: tuple[str, str, str, str] = ("reproduces", "opposite", "not resolved", "not tested")

#: The gates' names, as tables print them.
PLATEAU = "SPT left its plateau"
SHORTCUT = "best arm beats the shortcut"
CONSTANT = "no run predicts a constant"
CONTROL = "positive control learns"


@dataclass(frozen=True)
class Gate:
    """One gate: its name, whether it passed, and what was measured against what."""

    name: str
    passed: bool
    measured: float
    threshold: float
    detail: str
    relation: str = ">="  # passed means: measured <relation> threshold

    def __str__(self) -> str:
        return f"{'pass' if self.passed else 'FAIL'}: {self.name} ({self.detail})"


def unigram_entropy(tokens: np.ndarray, *, exclude: Iterable[int] = ()) -> float:
    """Entropy in nats of the empirical distribution of ``tokens`` with the ids in ``exclude`` left out.

    Masked reconstruction masks every non-padding position with the same probability, so the masked
    targets follow this distribution: it is the loss of a model that predicts every masked token from the
    token frequencies alone (the SPT loss's plateau).
    """
    t = np.asarray(tokens).ravel()
    if t.size == 0 or t.min() < 0:
        raise ValueError("tokens must be a non-empty array of non-negative token ids")
    counts = np.bincount(t)
    for i in exclude:
        if 0 <= int(i) < counts.size:
            counts[int(i)] = 0
    if counts.sum() == 0:
        raise ValueError(f"tokens hold no id outside exclude={sorted(int(i) for i in exclude)}")
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())


def held_out_masked_loss(model, tokens, *, mask_id: int, mlm_prob: float, pad_id: int, seed: int,
                         batch_size: int = 256) -> float:
    """Mean masked-reconstruction cross-entropy (nats per masked token) of ``model`` on ``tokens``.

    Masks come from one generator seeded with ``seed`` on the tokens' device, so the value is the same for
    every model evaluated with that seed; dropout-free eval mode, no gradient.
    """
    import torch

    from .masking import mask_tokens

    if len(tokens) == 0:
        raise ValueError("tokens must hold at least one sequence")
    g = torch.Generator(device=tokens.device)
    g.manual_seed(int(seed))
    was = model.training
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for start in range(0, tokens.shape[0], batch_size):
            inputs, targets = mask_tokens(tokens[start:start + batch_size], mask_id=mask_id, mlm_prob=mlm_prob,
                                          pad_id=pad_id, generator=g)
            logits = model.reconstruct(inputs)
            keep = targets.ne(-100)
            if keep.any():
                total += float(torch.nn.functional.cross_entropy(logits[keep], targets[keep], reduction="sum"))
                count += int(keep.sum())
    model.train(was)
    if count == 0:
        raise ValueError("no position was masked: raise mlm_prob or pass longer sequences")
    return total / count


def neighbourhood_masked_loss(x_train: np.ndarray, x_test: np.ndarray, *, side: int, mlm_prob: float,
                              seed: int, radius: int = 1) -> float:
    """Held-out masked loss (nats) of a predictor that sees only the visible ``(2 radius + 1)^2`` window
    around each masked pixel of ``side x side`` images, and the pixel's position.

    Each image's pixels are masked independently with probability ``mlm_prob`` (one stream from ``seed``:
    training images first, then test images); a gradient-boosted tree ensemble
    (scikit-learn's ``HistGradientBoostingClassifier``, the window's pixels as categories: their values,
    *masked* or *outside the image*) is fitted on the training images' masked pixels and scored on the test
    images'. It is a reference for the plateau gate on images: a loss at least :data:`PLATEAU_MARGIN` below
    the unigram entropy shows that the gate can be passed from local context alone.
    """
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import log_loss

    if side < 2 or not 1 <= radius < side:
        raise ValueError(f"side must be >= 2 and radius in [1, side), got side={side}, radius={radius}")
    if not 0 < mlm_prob < 1:
        raise ValueError(f"mlm_prob must lie in (0, 1), got {mlm_prob}")
    rng = np.random.default_rng(seed)

    def windows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = np.asarray(x)
        if x.ndim != 2 or x.shape[1] != side * side:
            raise ValueError(f"images must have shape (n, side * side = {side * side}), got {x.shape}")
        img = x.reshape(-1, side, side).astype(np.int64)
        top = int(img.max()) + 1
        masked = rng.random(img.shape) < mlm_prob
        seen = np.pad(np.where(masked, top, img), ((0, 0), (radius, radius), (radius, radius)),
                      constant_values=top + 1)  # top: masked; top + 1: outside the image
        i, r, c = np.nonzero(masked)
        cols = [seen[i, r + dr + radius, c + dc + radius] for dr in range(-radius, radius + 1)
                for dc in range(-radius, radius + 1) if (dr, dc) != (0, 0)]
        return np.column_stack(cols + [r, c]), img[i, r, c]

    f_train, y_train = windows(x_train)
    f_test, y_test = windows(x_test)
    unseen = sorted(set(np.unique(y_test)) - set(np.unique(y_train)))
    if unseen:
        raise ValueError(f"test pixels take values {unseen} that no masked training pixel takes")
    n_window = f_train.shape[1] - 2
    # early stopping on a tenth of the training pixels at every size: a reference that over-fits would
    # understate what local context gives
    model = HistGradientBoostingClassifier(categorical_features=list(range(n_window)), early_stopping=True,
                                           random_state=0)
    model.fit(f_train, y_train)
    return float(log_loss(y_test, model.predict_proba(f_test), labels=model.classes_))


def plateau_gate(masked_losses: Sequence[float], entropy: float, margin: float = PLATEAU_MARGIN) -> Gate:
    """SPT left its plateau: every seed's held-out masked loss is at least ``margin`` nats below ``entropy``."""
    losses = np.asarray(masked_losses, dtype=float).ravel()
    if losses.size == 0 or not np.all(np.isfinite(losses)):
        raise ValueError("masked_losses must be a non-empty array of finite losses")
    if margin < 0:
        raise ValueError(f"margin must be >= 0 nats, got {margin}")
    gap = float(entropy - losses.max())  # the worst seed
    return Gate(PLATEAU, gap >= margin, gap, margin,
                f"worst seed {losses.max():.3f} nats against unigram entropy {entropy:.3f}: "
                f"{gap:+.3f} below, needs {margin:.1f}")


def shortcut_gate(accuracies: Sequence[float], shortcut: float, *, name: str = SHORTCUT,
                  arm: str = "best arm", confidence: float = 0.95) -> Gate:
    """``arm`` beats the shortcut: the ``confidence`` interval of its mean accuracy minus ``shortcut``
    (the seed spread in its error) lies above 0."""
    acc = np.asarray(accuracies, dtype=float).ravel()
    if acc.size < 2:
        raise ValueError(f"accuracies need at least 2 seeds, got {acc.size}")
    if not 0 <= shortcut <= 1:
        raise ValueError(f"shortcut must be an accuracy in [0, 1], got {shortcut}")
    eff = _one_sample(acc - shortcut, confidence)
    return Gate(name, eff.low > 0, eff.low, 0.0,
                f"{arm} {acc.mean():.3f} against shortcut {shortcut:.3f}: "
                f"{eff.difference:+.3f} [{eff.low:+.3f}, {eff.high:+.3f}]", ">")


def constant_gate(n_predicted: Iterable[int]) -> Gate:
    """No run predicts a constant: every run's predictions on the test set take at least two labels."""
    n = np.asarray(list(n_predicted), dtype=int)
    if n.size == 0 or n.min() < 1:
        raise ValueError("n_predicted must list, for every run, how many distinct labels it predicted (>= 1)")
    constant = int((n == 1).sum())
    return Gate(CONSTANT, constant == 0, float(constant), 0.0, f"{constant} of {n.size} runs predict one label",
                "<=")


#: What each gate asks, in the words of a claim's statement (the criterion, fixed before the run).
CRITERIA: dict[str, str] = {
    PLATEAU: f"every seed's held-out masked loss at least {PLATEAU_MARGIN} nats below the unigram entropy "
             "(worst seed's distance below it)",
    SHORTCUT: "95% interval of the best arm's accuracy minus the shortcut's above 0 (its lower end)",
    CONSTANT: "no run predicts a single label on the test set (runs that do)",
    CONTROL: "95% interval of the positive control's accuracy minus the shortcut's above 0 (its lower end)",
}


def claim_gates(named: Mapping[str, Gate], *, kind: str = "sanity") -> None:
    """Claim every gate, ``claim id -> gate``, where a run decides the comparisons (full scale).

    A gate is a premise of the comparisons after it, hence ``kind="sanity"``. Every claim is made before one
    :class:`~blindspots.claims.ClaimFailed` names those that failed.
    """
    with claims.all_hold():
        for cid, g in named.items():
            claims.claim_bound(cid, f"{g.name}: {CRITERIA[g.name]}", g.measured, g.relation, g.threshold,
                               kind=kind, show="pass")


def _one_sample(d: np.ndarray, confidence: float = 0.95) -> claims.SeedEffect:
    return claims.seed_effect(d, np.zeros_like(d), paired=True, confidence=confidence)


def predicted_labels(model, tokens, batch_size: int = 1000) -> np.ndarray:
    """The labels ``model.classify`` predicts for ``tokens`` (numpy, on the CPU)."""
    import torch

    was = model.training
    model.eval()
    out = []
    with torch.no_grad():
        for start in range(0, tokens.shape[0], batch_size):
            out.append(model.classify(tokens[start:start + batch_size]).argmax(-1).cpu().numpy())
    model.train(was)
    return np.concatenate(out)


# ----------------------------------------------------------------------------
# Shortcut baselines

def _side(x: np.ndarray) -> int:
    side = int(round(math.sqrt(x.shape[1])))
    if side * side != x.shape[1]:
        raise ValueError(f"PathFinder sequences must be square images read row by row, got length {x.shape[1]}")
    return side


def endpoint_offsets(x: np.ndarray) -> np.ndarray:
    """``(|row difference|, |column difference|)`` of the two endpoints (token 2) of each PathFinder image, read
    from the token positions of the row-major sequences ``x``: ``(n, 2)`` ints."""
    x = np.asarray(x)
    side = _side(x)
    counts = (x == 2).sum(1)
    if (counts != 2).any():
        raise ValueError(f"a PathFinder image must hold exactly two endpoints (token 2), got {int(counts[counts != 2][0])}")
    ends = np.nonzero(x == 2)[1].reshape(-1, 2)  # positions, two per row, in row order
    return np.abs(np.stack([ends[:, 0] // side - ends[:, 1] // side, ends[:, 0] % side - ends[:, 1] % side], 1))


def shortcut_features(task: str, x: np.ndarray, *, pad_id: int = 16, n_content: int = 16) -> np.ndarray:
    """The features a linear model would use instead of the task, one row per sequence.

    - ``listops``: the root operator (one-hot of the first token) and the count of each content token;
    - ``pathfinder``: the Euclidean and Chebyshev distances between the two endpoints (token 2), and a
      one-hot of the Chebyshev distance (so a non-monotone dependence on distance is linear too);
    - ``image``: the bag of pixels, the count of each grey level (positions dropped).
    """
    x = np.asarray(x)
    if x.ndim != 2 or x.shape[0] == 0:
        raise ValueError(f"x must be a non-empty (n, length) array of token ids, got shape {x.shape}")
    counts = np.stack([(x == v).sum(1) for v in range(n_content)], 1).astype(float)
    if task == "listops":
        root = np.eye(n_content)[np.clip(x[:, 0], 0, n_content - 1)]
        return np.concatenate([root, counts], 1)
    if task == "image":
        return counts
    if task == "pathfinder":
        side = _side(x)
        feats = []
        for dr, dc in endpoint_offsets(x):
            cheb = max(dr, dc)
            feats.append([math.hypot(dr, dc), cheb, *np.eye(side)[min(cheb, side - 1)]])
        return np.array(feats, dtype=float)
    raise ValueError(f"task must be one of ('listops', 'image', 'pathfinder'), got {task!r}")


def shortcut_accuracy(task: str, data: Mapping[str, np.ndarray], **kw: Any) -> float:
    """Test accuracy of a logistic regression on :func:`shortcut_features` (fitted on the training split)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000))
    clf.fit(shortcut_features(task, data["x_train"], **kw), data["y_train"])
    return float(clf.score(shortcut_features(task, data["x_test"], **kw), data["y_test"]))


# ----------------------------------------------------------------------------
# Verdicts

def detectable_effect(sd: float, n: int, alpha: float = ALPHA, power: float = POWER) -> float:
    """Smallest mean paired difference a two-sided paired t test on ``n`` seeds at level ``alpha`` detects
    with probability ``power``, when the per-seed differences have standard deviation ``sd``
    (:func:`blindspots.claims.detectable_effect`, with this module's level and power as defaults)."""
    return claims.detectable_effect(sd, n, alpha, power)


@dataclass
class Row:
    """One comparison: ``treated`` against ``control`` over paired seeds, with its gates and verdict."""

    name: str
    effect: claims.SeedEffect
    p: float
    gates: list[Gate] = field(default_factory=list)
    p_holm: float | None = None
    detectable: float | None = None
    verdict: str = ""

    @property
    def tested(self) -> bool:
        return all(g.passed for g in self.gates)

    @property
    def failed(self) -> list[str]:
        return [g.name for g in self.gates if not g.passed]


def paired_row(name: str, treated: Sequence[float], control: Sequence[float], gates: Iterable[Gate] = ()) -> Row:
    """A row of a comparison table: the paired effect of ``treated`` over ``control`` and its t test."""
    eff = claims.seed_effect(treated, control, paired=True)
    return Row(name, eff, eff.p_value(), list(gates))


def comparison_table(rows: Sequence[Row], *, alpha: float = ALPHA, power: float = POWER, where: str = "",
                     budget: bool = False) -> list[Row]:
    """Verdicts of a table's rows: the rows whose gates pass are one family (Holm at ``alpha``).

    A tested row reads *reproduces* (adjusted p < alpha, effect > 0), *opposite* (adjusted p < alpha, effect
    < 0) or *not resolved (could have detected ≥ x)*, with x from :func:`detectable_effect` at level
    ``alpha / m`` (Holm's first, strictest step; m tested rows) and its seeds' spread. A row with a failed
    gate reads *not tested* ``where`` (e.g. ``"at book scale"``), naming the gates that failed; with
    ``budget``, *not tested (budget; gate failed: ...)*: the caller has shown that the gates can be passed,
    but not by this run within its budget (:func:`.spt_length.budget_limited`).
    """
    tested = [r for r in rows if r.tested]
    family = claims.family_verdicts([r.effect for r in tested], alpha=alpha, power=power, words=VERDICTS[:3])
    for r, v in zip(tested, family):
        r.p_holm, r.detectable, r.verdict = v.p_holm, v.detectable, v.verdict
    for r in rows:
        if not r.tested:
            why = f"{'budget; ' if budget else ''}gate failed: {'; '.join(r.failed)}"
            r.verdict = f"{VERDICTS[3]}{' ' + where if where else ''} ({why})"
    return list(rows)


def verdict_word(row: Row) -> str:
    """The verdict's first words (one of :data:`VERDICTS`), for prose and scorecards."""
    return next(v for v in VERDICTS if row.verdict.startswith(v))


def html_table(records: Sequence[Mapping[str, Any]], digits: int = 3) -> str:
    """An HTML table of ``records`` (the first record's keys; floats with ``digits`` decimals), for
    ``IPython.display.HTML``: wide tables of gates and verdicts stay readable where printed text would wrap."""
    import html

    if not records:
        return "<p>(no rows)</p>"
    keys = list(records[0])

    def cell(v: Any) -> str:
        text = f"{v:.{digits}f}" if isinstance(v, (float, np.floating)) else str(v)
        return f"<td>{html.escape(text)}</td>"

    head = "".join(f"<th>{html.escape(str(k))}</th>" for k in keys)
    body = "".join("<tr>" + "".join(cell(r.get(k, "")) for k in keys) + "</tr>" for r in records)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
