"""The representation gap: a bounded in-context learner with and without meta-features.

Implements the verification of {prf:ref}`thm-pi-representation-gap`.

Task family (one feature): a latent shape ``s`` is drawn uniformly from two
options; inliers come from a standardised law of that shape, anomalies (rate
``pi``) from the same law with its variance inflated by ``gamma`` (PIQL's GMM
prior inflates covariances the same way {cite}`ding2026piql`). The context ``D``
holds ``n`` unlabelled points; the query is ``(x, y)``. The generator is discrete,
so ``p(y | x, D)`` is exact: it mixes the two shapes with weights ``p(s | D)``.

Model class (the shape of one linear-attention layer): the logit is a linear
read-out of the query features ``phi(x) = (1, x, |x|, x^2)`` times the context
summary ``[1, mean_i psi(x_i)]``, optionally with the meta-features of ``D``
appended to that summary::

    logit(x, D) = phi(x)^T W [1, mean_i psi(x_i), meta(D)].

It is linear in ``W``, so its best population log-loss is a convex logistic
regression, fitted here on a large Monte Carlo sample of tasks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from .metafeatures import meta_features
from .theory import _check_size

SHAPES: tuple[str, ...] = ("gauss", "laplace", "bimodal")
#: The bimodal law is ``(N(-delta, 1 - delta^2) + N(delta, 1 - delta^2)) / 2``: mean 0, variance 1.
BIMODAL_DELTA: float = 0.95
CONTEXT_FEATURES: dict = {
    "x": lambda x: x,
    "x2": lambda x: x ** 2,
    "abs": np.abs,
}


@dataclass(frozen=True)
class TwoShapeTask:
    """Latent ``s in {0, 1}`` picks ``shapes[s]`` with variance ``variances[s]`` (mean 0)."""

    shapes: tuple = ("gauss", "bimodal")
    variances: tuple = (1.0, 1.0)
    anomaly_rate: float = 0.1
    inflation: float = 5.0

    def __post_init__(self) -> None:
        if len(self.shapes) != 2 or any(s not in SHAPES for s in self.shapes):
            raise ValueError(f"shapes must be two of {SHAPES}, got {self.shapes!r}")
        if len(self.variances) != 2 or any(not (float(v) > 0 and np.isfinite(v)) for v in self.variances):
            raise ValueError(f"variances must be two finite numbers > 0, got {self.variances!r}")
        if not 0.0 < float(self.anomaly_rate) < 1.0:
            raise ValueError(f"anomaly_rate must lie in (0, 1), got {self.anomaly_rate!r}")
        if not float(self.inflation) > 1.0:
            raise ValueError(f"inflation must be > 1, got {self.inflation!r}")


def log_density(shape: str, var: float, x: np.ndarray) -> np.ndarray:
    """Log density of the mean-zero law ``shape`` with variance ``var``."""
    if shape == "gauss":
        return -0.5 * np.log(2 * np.pi * var) - 0.5 * x ** 2 / var
    if shape == "laplace":
        b = np.sqrt(var / 2.0)
        return -np.log(2 * b) - np.abs(x) / b
    if shape == "bimodal":
        loc = BIMODAL_DELTA * np.sqrt(var)
        v = (1.0 - BIMODAL_DELTA ** 2) * var
        comp = -0.5 * np.log(2 * np.pi * v) - 0.5 * (np.abs(x) - loc) ** 2 / v
        return comp + np.log(0.5) + np.logaddexp(0.0, -2.0 * loc * np.abs(x) / v)
    raise ValueError(f"shape must be one of {SHAPES}, got {shape!r}")


def _sample_law(shape: str, var: float, size, rng: np.random.Generator) -> np.ndarray:
    if shape == "gauss":
        return np.sqrt(var) * rng.standard_normal(size)
    if shape == "laplace":
        return rng.laplace(0.0, np.sqrt(var / 2.0), size)
    sign = np.where(rng.random(size) < 0.5, -1.0, 1.0)
    return np.sqrt(var) * (BIMODAL_DELTA * sign + np.sqrt(1.0 - BIMODAL_DELTA ** 2) * rng.standard_normal(size))


def _log_joint(task: TwoShapeTask, s: int, x: np.ndarray) -> np.ndarray:
    """``log p(x, y | s)`` for ``y = 0, 1`` on a new last axis."""
    v = float(task.variances[s])
    sh = task.shapes[s]
    return np.stack([np.log1p(-task.anomaly_rate) + log_density(sh, v, x),
                     np.log(task.anomaly_rate) + log_density(sh, task.inflation * v, x)], axis=-1)


def sample_tasks(task: TwoShapeTask, tasks: int, n: int, rng: np.random.Generator) -> dict:
    """``tasks`` draws of ``(s, D, x, y)``: context ``(tasks, n)``, query ``x`` and label ``y`` ``(tasks,)``."""
    if not isinstance(tasks, (int, np.integer)) or tasks < 1:
        raise ValueError(f"tasks must be an integer >= 1, got {tasks!r}")
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    s = (rng.random(tasks) < 0.5).astype(np.int64)
    lab = rng.random((tasks, n + 1)) < task.anomaly_rate
    pts = np.empty((tasks, n + 1))
    for k in (0, 1):
        rows = s == k
        v = np.where(lab[rows], task.inflation, 1.0) * float(task.variances[k])
        pts[rows] = _sample_law(task.shapes[k], 1.0, (int(rows.sum()), n + 1), rng) * np.sqrt(v)
    return {"s": s, "context": pts[:, :n], "x": pts[:, n], "y": lab[:, n].astype(np.int64)}


def label_logprobs_given_generator(task: TwoShapeTask, s: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``log p(y | x, s)``, shape ``(tasks, 2)``."""
    lj = np.where((s == 0)[:, None], _log_joint(task, 0, x), _log_joint(task, 1, x))
    return lj - logsumexp(lj, axis=-1, keepdims=True)


def log_posterior_shape(task: TwoShapeTask, context: np.ndarray) -> np.ndarray:
    """``log p(s | D)`` for ``s = 0, 1`` (uniform prior), shape ``(tasks, 2)``."""
    ll = np.stack([logsumexp(_log_joint(task, k, context), axis=-1).sum(axis=-1) for k in (0, 1)], axis=-1)
    return ll - logsumexp(ll, axis=-1, keepdims=True)


def label_logprobs_given_context(task: TwoShapeTask, context: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The Bayes predictor ``log p(y | x, D)``, shape ``(tasks, 2)``, exact by ``logsumexp`` over ``s``."""
    lps = log_posterior_shape(task, context)
    lj = np.stack([lps[:, k, None] + _log_joint(task, k, x) for k in (0, 1)], axis=0)  # (2, tasks, 2)
    lj = logsumexp(lj, axis=0)
    return lj - logsumexp(lj, axis=-1, keepdims=True)


def query_features(x: np.ndarray) -> np.ndarray:
    """``phi(x) = (1, x, |x|, x^2)``, shape ``(tasks, 4)``."""
    return np.stack([np.ones_like(x), x, np.abs(x), x ** 2], axis=-1)


def context_summary(context: np.ndarray, psi=("x", "x2"), with_meta: bool = False) -> np.ndarray:
    """``[1, mean_i psi(x_i), meta(D)]``, shape ``(tasks, 1 + len(psi) [+ 9])``."""
    bad = [p for p in psi if p not in CONTEXT_FEATURES]
    if bad:
        raise ValueError(f"psi must name features among {sorted(CONTEXT_FEATURES)}, got {bad}")
    parts = [np.ones((context.shape[0], 1))]
    parts += [CONTEXT_FEATURES[p](context).mean(axis=1, keepdims=True) for p in psi]
    if with_meta:
        parts.append(meta_features(context[..., None])[:, 0, :])
    return np.concatenate(parts, axis=1)


def design(context: np.ndarray, x: np.ndarray, psi=("x", "x2"), with_meta: bool = False) -> np.ndarray:
    """Features ``phi(x) (x) [1, mean psi, meta]`` of the bilinear read-out, without the constant."""
    q = query_features(x)
    c = context_summary(context, psi, with_meta)
    return (q[:, :, None] * c[:, None, :]).reshape(len(x), -1)[:, 1:]


def fit_read_out(features: np.ndarray, y: np.ndarray, max_iter: int = 50, tol: float = 1e-10):
    """Best-in-class read-out: unregularised logistic regression solved by damped Newton steps.

    The log-loss is convex in the read-out weights, so Newton's method with step
    halving finds its minimiser over the fitting sample. Features are standardised
    (an affine change of the weights, so the class is unchanged) and an intercept added.
    Returns a function mapping features to ``log q(y | x, D)`` of shape ``(tasks, 2)``; its attribute
    ``optimism`` is Takeuchi's estimate ``tr(H^{-1} K) / (2 N)`` of its expected excess risk on fresh
    tasks over the best rule of the class.
    """
    features = np.asarray(features, dtype=float)
    y = np.asarray(y, dtype=float)
    if features.ndim != 2 or y.shape != (features.shape[0],):
        raise ValueError(f"features must be (tasks, p) and y (tasks,), got {features.shape} and {y.shape}")
    mean = features.mean(axis=0)
    sd = features.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)

    def lift(f):
        return np.concatenate([np.ones((f.shape[0], 1)), (f - mean) / sd], axis=1)

    X = lift(features)
    w = np.zeros(X.shape[1])

    def loss(w):
        z = X @ w
        return float(np.mean(np.logaddexp(0.0, z) - y * z))

    cur = loss(w)
    for _ in range(max_iter):
        z = X @ w
        p = 0.5 * (1.0 + np.tanh(0.5 * z))
        grad = X.T @ (p - y) / len(y)
        hess = (X * (p * (1 - p))[:, None]).T @ X / len(y)
        step = np.linalg.solve(hess + 1e-12 * np.eye(len(w)), grad)
        t = 1.0
        while t > 1e-6:
            new = loss(w - t * step)
            if new <= cur:
                break
            t *= 0.5
        w = w - t * step
        done = cur - new < tol
        cur = new
        if done:
            break

    def predict(f: np.ndarray) -> np.ndarray:
        z = lift(np.asarray(f, dtype=float)) @ w
        return np.stack([-np.logaddexp(0.0, z), -np.logaddexp(0.0, -z)], axis=-1)

    # Takeuchi's term: the expected out-of-sample excess of the fitted read-out over the class's best
    # rule is tr(H^{-1} K) / (2 N) to first order (H: Hessian, K: covariance of per-task gradients),
    # which is p / (2 N) for a well-specified model. Estimated on the fitting sample.
    p = 0.5 * (1.0 + np.tanh(0.5 * (X @ w)))
    grads = X * (p - y)[:, None]
    hess = (X * (p * (1 - p))[:, None]).T @ X / len(y)
    K = grads.T @ grads / len(y)
    predict.optimism = float(np.trace(np.linalg.solve(hess + 1e-12 * np.eye(len(w)), K)) / (2 * len(y)))
    return predict


def _chunk_sizes(total: int, chunk: int | None, name: str) -> list[int]:
    """``total`` split into consecutive pieces of at most ``chunk`` (one piece when ``chunk`` is None)."""
    total = _check_size(name, total, low=2)  # standard errors need two tasks
    if chunk is None or _check_size("chunk", chunk) >= total:
        return [total]
    return [int(chunk)] * (total // chunk) + ([total % chunk] if total % chunk else [])


def representation_gaps(task: TwoShapeTask, n: int, fit_tasks: int, test_tasks: int,
                        rng: np.random.Generator, psi=("x", "x2"), chunk: int | None = None) -> dict:
    """Best population risk of the class with and without meta-features, against the Bayes risks.

    Fits each read-out on ``fit_tasks`` fresh tasks and evaluates it on ``test_tasks`` other
    ones; risks are log-losses of the sampled query labels. Gaps (``gap_*``) are paired
    differences with the exact Bayes loss ``-log p(y | x, D)`` on the same test tasks, excesses
    (``excess_*``) paired differences with ``-log p(y | x, s)``, whose mean estimates
    ``risk - R_G``; standard errors are those of the paired differences.

    Tasks are drawn ``chunk`` at a time (all at once when ``chunk`` is None), and only their
    design rows and per-task losses are kept, so memory grows with ``fit_tasks`` times the
    number of read-out features, not times ``n``. With one chunk per split the draws, and so
    the result, are those of drawing every task at once.
    """
    fit_sizes = _chunk_sizes(fit_tasks, chunk, "fit_tasks")
    test_sizes = _chunk_sizes(test_tasks, chunk, "test_tasks")
    names = (("plain", False), ("meta", True))
    rows_fit = {name: [] for name, _ in names}
    y_fit = []
    for size in fit_sizes:
        t = sample_tasks(task, size, n, rng)
        for name, meta in names:
            rows_fit[name].append(design(t["context"], t["x"], psi, meta))
        y_fit.append(t["y"])
        del t
    y_fit = np.concatenate(y_fit)
    preds = {name: fit_read_out(np.concatenate(rows_fit[name]), y_fit) for name, _ in names}
    del rows_fit

    parts = {key: [] for key in ("d", "g", "plain", "meta")}
    for size in test_sizes:  # fitting draws nothing, so the test tasks are those of drawing all at once
        t = sample_tasks(task, size, n, rng)
        rows = np.arange(size)
        parts["d"].append(-label_logprobs_given_context(task, t["context"], t["x"])[rows, t["y"]])
        parts["g"].append(-label_logprobs_given_generator(task, t["s"], t["x"])[rows, t["y"]])
        for name, meta in names:
            parts[name].append(-preds[name](design(t["context"], t["x"], psi, meta))[rows, t["y"]])
        del t
    loss_d, loss_g = np.concatenate(parts["d"]), np.concatenate(parts["g"])
    se = lambda a: a.std(ddof=1) / np.sqrt(test_tasks)  # noqa: E731
    out = {"R_D": loss_d.mean(), "R_D_se": se(loss_d),
           "R_G": loss_g.mean(), "R_G_se": se(loss_g),
           "info_gap": (loss_d - loss_g).mean(), "info_gap_se": se(loss_d - loss_g)}
    losses = {}
    for name, meta in names:
        loss = np.concatenate(parts[name])
        losses[name] = loss
        out[f"optimism_{name}"] = preds[name].optimism
        out[f"risk_{name}"] = loss.mean()
        out[f"gap_{name}"] = (loss - loss_d).mean()
        out[f"gap_{name}_se"] = se(loss - loss_d)
        out[f"params_{name}"] = design(np.zeros((1, n)), np.zeros(1), psi, meta).shape[1] + 1
        # excess over the generator-aware Bayes loss on the same tasks: its mean estimates
        # risk - R_G, the quantity whose n -> infinity limits the theorem names
        out[f"excess_{name}"] = (loss - loss_g).mean()
        out[f"excess_{name}_se"] = se(loss - loss_g)
    diff = losses["plain"] - losses["meta"]
    out["shrink"] = diff.mean()
    out["shrink_se"] = se(diff)
    return out


# ----------------------------------------------------------------------------- n -> infinity limits
def _quadrature(task: TwoShapeTask, points: int):
    """Grid ``x`` and masses ``p(x, y | s) dx`` for ``s = 0, 1`` (trapezoid on a wide uniform grid).

    The integrands are smooth with Gaussian tails, so the trapezoid rule converges
    geometrically; the grid spans 14 standard deviations of the widest law.
    """
    if not isinstance(points, (int, np.integer)) or points < 101:
        raise ValueError(f"points must be an integer >= 101, got {points!r}")
    half = 14.0 * np.sqrt(max(task.variances) * task.inflation)
    x = np.linspace(-half, half, int(points))
    h = x[1] - x[0]
    return x, [np.exp(_log_joint(task, s, x)) * h for s in (0, 1)]


def _best_in_span(x: np.ndarray, mass: np.ndarray) -> float:
    """``min_w sum_{x,y} mass(x, y) * (-log sigma(+-phi(x)^T w))`` by Newton's method (convex)."""
    phi = query_features(x)
    m0, m1 = mass[:, 0], mass[:, 1]
    w = np.zeros(phi.shape[1])
    for _ in range(200):
        p = 0.5 * (1.0 + np.tanh(0.5 * (phi @ w)))
        grad = phi.T @ (m0 * p - m1 * (1.0 - p))
        hess = (phi * ((m0 + m1) * p * (1.0 - p))[:, None]).T @ phi
        step = np.linalg.solve(hess, grad)
        w = w - step
        if np.abs(step).max() < 1e-12:
            break
    z = phi @ w
    return float((m0 * np.logaddexp(0.0, z) + m1 * np.logaddexp(0.0, -z)).sum())


def bayes_risk_given_shape(task: TwoShapeTask, points: int = 40_001) -> float:
    """``R_G = E[-log p(Y | X, s)]`` (shapes equally likely), by quadrature."""
    x, masses = _quadrature(task, points)
    out = 0.0
    for s, mass in enumerate(masses):
        lj = _log_joint(task, s, x)
        out += 0.5 * float((mass * -(lj - logsumexp(lj, axis=-1, keepdims=True))).sum())
    return out


def shape_blind_excess(task: TwoShapeTask, points: int = 40_001) -> float:
    """The plain class's limit in {prf:ref}`thm-pi-representation-gap` (part 2): the excess risk
    over ``R_G`` of the best *shape-blind* rule ``sigma(phi(x)^T w)``, one ``w`` for both shapes.

    When the pooled context features have the same mean under both shapes, every rule of the
    plain class is, by Jensen's inequality in the logit, no better than this at any ``n``, and
    the class contains the rule itself: its risk is ``R_G`` plus this constant at every ``n``.
    Computed by quadrature (no Monte Carlo).
    """
    x, masses = _quadrature(task, points)
    return _best_in_span(x, 0.5 * (masses[0] + masses[1])) - bayes_risk_given_shape(task, points)


def per_shape_excess(task: TwoShapeTask, points: int = 40_001) -> float:
    """``epsilon_phi`` of {prf:ref}`thm-pi-representation-gap`: the excess risk over ``R_G`` of the
    best rule in ``span phi`` chosen separately for each shape, averaged over shapes.

    It is the limit of the class with meta-features, and a floor for it at every ``n`` (Jensen's
    inequality in the logit, given the shape). Computed by quadrature.
    """
    x, masses = _quadrature(task, points)
    best = 0.5 * sum(_best_in_span(x, mass) for mass in masses)
    return best - bayes_risk_given_shape(task, points)
