"""PIQL's synthetic task priors: GMM, random-MLP SCM, copula, and their mixture.

Implements the training priors of {cite}`ding2026piql` for the foundation-model chapter. A prior is a
seeded generator of *tasks*; a task is

* a labelled context (points with inlier/anomaly labels, 1 = anomaly),
* labelled query points from the same generator,
* the generator itself, a small frozen dataclass that :mod:`blindspots.privileged.program`
  serialises to a DSL program (the generator privileged information).

Features are padded with zeros to ``d_max`` columns and a boolean feature mask says which are real.
Every random draw comes from the ``numpy.random.Generator`` passed in, so a seed fixes a task.

Families
--------
GMM
    ``d`` in ``[d_min, d_max]``; 2-5 equal-weight components; mean entries ``U(0,1) * randint(-M, M)``
    and diagonal variances ``max(U(0,1), 0.01) * randint(1, V)`` with ``M, V`` drawn in 2-5
    (``randint`` excludes its upper end, as numpy's and torch's do; the 0.01 floor keeps every variance
    positive after the DSL's rounding to 3 decimals). Anomalies come from the same mixture with the
    covariance inflated 5x on a random subset ``S`` of the dimensions (size uniform in ``1..d``).
    **Label rule** (PIQL's ``data_prior/GMM.py``): with ``r^2(x) = min_k`` squared Mahalanobis distance
    of ``x_S`` to component ``k`` (uninflated covariance, dimensions ``S`` only), a point drawn as an
    inlier is kept only if ``r^2 < chi2_{|S|}.ppf(0.85)`` and a point drawn as an anomaly only if
    ``r^2 > chi2_{|S|}.ppf(0.95)``; points in the band between are *discarded and redrawn* (rejection
    sampling), so the two classes are separated by that band by construction and each label's count is
    the one asked for.
SCM
    A random MLP structural causal model: ``L`` in 3-7 layers of ``w`` in 20-40 nodes; layer 0 is
    standard-normal root noise; node ``j`` of layer ``l`` is ``tanh(sum_i W_ij h_i + b_j) + noise_std * e``
    with each edge kept with probability 0.6. The ``d`` observed features are distinct random nodes of
    layers ``1..L-1``. Anomalies multiply the noise of a random non-empty subset of the feature nodes by
    ``anomaly_scale`` (the change propagates to their descendants). The weights are drawn from
    ``weight_seed``, which the program records, so a program fixes the generator.
Copula
    ``d`` in ``[max(d_min, 2), d_max]`` features with a Gaussian copula (a random correlation matrix with
    smallest eigenvalue bounded away from 0) or a Clayton copula (``theta`` in 1-5), and non-Gaussian
    marginals (lognormal, gamma, Student t, Weibull) with a location and scale. Anomalies draw ``u`` from
    the same copula and reflect it, ``u -> 1 - u``, on a random subset of 1..d-1 features: every
    marginal law is unchanged, only the dependence between the reflected and the other features is broken.
Mixture
    Each task's family drawn with the given weights (equal by default).

SCM and copula labels are correct by construction (which law drew the point); only the GMM has a
label filter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
from scipy import stats

FAMILIES: tuple[str, ...] = ("gmm", "scm", "copula")
MARGINALS: tuple[str, ...] = ("lognormal", "gamma", "t", "weibull")
#: Shape-parameter range of each marginal law (scipy's ``s``, ``a``, ``df``, ``c``).
MARGINAL_SHAPE: dict = {"lognormal": (0.25, 1.0), "gamma": (0.5, 3.0), "t": (2.5, 6.0), "weibull": (0.6, 2.0)}
_MAX_REJECTION_ROUNDS = 200
_U_CLIP = 1e-9


# ----------------------------------------------------------------------------- validation and padding
def _int_in(name: str, value, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < low or (high is not None and value > high):
        valid = f"lie in [{low}, {high}]" if high is not None else f"be >= {low}"
        raise ValueError(f"{name} must {valid}, got {value!r}")
    return int(value)


def _range(name: str, value, low: float, high: float | None = None, integer: bool = False) -> tuple:
    try:
        a, b = value
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair (low, high), got {value!r}") from None
    if integer:
        a, b = _int_in(f"{name}[0]", a, int(low)), _int_in(f"{name}[1]", b, int(low))
    if not (np.isfinite(a) and np.isfinite(b)) or a > b or a < low or (high is not None and b > high):
        hi = f", high <= {high}" if high is not None else ""
        raise ValueError(f"{name} must satisfy {low} <= low <= high{hi}, got {value!r}")
    return (a, b)


def _rate(name: str, value: float) -> float:
    value = float(value)
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must lie in (0, 1), got {value!r}")
    return value


def check_features(x, d_max: int, name: str = "context_x") -> np.ndarray:
    """``x`` as a float array of shape ``(n, d)`` with ``n >= 1``, ``1 <= d <= d_max`` and no NaN/inf.

    Raises ``ValueError`` naming ``name`` and the valid range otherwise.
    """
    d_max = _int_in("d_max", d_max, 1)
    x = np.asarray(x, dtype=float)
    if x.ndim != 2:
        raise ValueError(f"{name} must have shape (points, features), got an array of shape {x.shape}")
    if x.shape[0] < 1:
        raise ValueError(f"{name} must hold at least one point (an empty context has nothing to condition on), "
                         f"got shape {x.shape}")
    if not 1 <= x.shape[1] <= d_max:
        raise ValueError(f"{name} must have between 1 and d_max = {d_max} features, got {x.shape[1]}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} must be finite: found NaN or inf in {int((~np.isfinite(x)).sum())} entries")
    return x


def pad_features(x, d_max: int, name: str = "context_x") -> tuple[np.ndarray, np.ndarray]:
    """Zero-pad ``x`` ``(n, d)`` to ``(n, d_max)``; returns ``(padded, feature_mask)`` (mask ``(d_max,)`` bool)."""
    x = check_features(x, d_max, name)
    padded = np.zeros((x.shape[0], d_max))
    padded[:, :x.shape[1]] = x
    mask = np.zeros(d_max, dtype=bool)
    mask[:x.shape[1]] = True
    return padded, mask


def _labels(name: str, y, n: int) -> np.ndarray:
    y = np.asarray(y)
    if y.shape != (n,) or not np.all((y == 0) | (y == 1)):
        raise ValueError(f"{name} must be {n} labels in {{0, 1}} (1 = anomaly), got shape {y.shape}")
    return y.astype(np.int64)


# ----------------------------------------------------------------------------- tasks
@dataclass(frozen=True)
class Task:
    """One task: padded context and query points with labels, the feature mask and the generator.

    ``generator`` is ``None`` for a task built from real data (:func:`make_task`).
    """

    context_x: np.ndarray
    context_y: np.ndarray
    query_x: np.ndarray
    query_y: np.ndarray
    feature_mask: np.ndarray
    generator: object = None

    @property
    def family(self) -> str:
        return getattr(self.generator, "family", "real")

    @property
    def dim(self) -> int:
        return int(self.feature_mask.sum())


def make_task(context_x, context_y, query_x, query_y=None, *, d_max: int, generator=None) -> Task:
    """A :class:`Task` from raw arrays (e.g. a real dataset), validated and padded to ``d_max``.

    ``query_y`` may be ``None`` (unknown labels; stored as -1). Context and query must have the same
    number of features, at most ``d_max``, and no NaN.
    """
    cx, mask = pad_features(context_x, d_max, "context_x")
    qx, qmask = pad_features(query_x, d_max, "query_x")
    if not np.array_equal(mask, qmask):
        raise ValueError(f"query_x must have the same number of features as context_x ({mask.sum()}), "
                         f"got {qmask.sum()}")
    cy = _labels("context_y", context_y, len(cx))
    qy = np.full(len(qx), -1, dtype=np.int64) if query_y is None else _labels("query_y", query_y, len(qx))
    return Task(cx, cy, qx, qy, mask, generator)


@dataclass(frozen=True)
class TaskBatch:
    """Tasks of one prior stacked: ``context_x (B, n, d_max)``, ``context_y (B, n)``, ``query_x (B, m, d_max)``,
    ``query_y (B, m)``, ``feature_mask (B, d_max)``, and the ``generators`` (a tuple of ``B``)."""

    context_x: np.ndarray
    context_y: np.ndarray
    query_x: np.ndarray
    query_y: np.ndarray
    feature_mask: np.ndarray
    generators: tuple = field(default=())

    @property
    def families(self) -> tuple[str, ...]:
        return tuple(g.family for g in self.generators)

    def __len__(self) -> int:
        return len(self.context_x)


def stack_tasks(tasks: Sequence[Task]) -> TaskBatch:
    """Stack tasks of equal sizes into a :class:`TaskBatch`."""
    if len(tasks) == 0:
        raise ValueError("tasks must hold at least one task, got 0")
    shapes = {(t.context_x.shape, t.query_x.shape) for t in tasks}
    if len(shapes) != 1:
        raise ValueError(f"tasks must share context and query shapes to be stacked, got {sorted(shapes)}")
    return TaskBatch(*(np.stack([getattr(t, k) for t in tasks]) for k in
                       ("context_x", "context_y", "query_x", "query_y", "feature_mask")),
                     generators=tuple(t.generator for t in tasks))


# ----------------------------------------------------------------------------- generators
@dataclass(frozen=True)
class GMMGenerator:
    """A diagonal Gaussian mixture with equal weights and its anomaly rule (see the module docstring)."""

    means: tuple          # k tuples of d floats
    variances: tuple      # k tuples of d floats > 0
    sub_dims: tuple       # inflated dimensions, sorted, non-empty
    inflation: float = 5.0
    inlier_quantile: float = 0.85
    anomaly_quantile: float = 0.95
    family: str = field(default="gmm", init=False)

    @property
    def dim(self) -> int:
        return len(self.means[0])

    @property
    def components(self) -> int:
        return len(self.means)

    def thresholds(self) -> tuple[float, float]:
        """``chi2_{|S|}`` quantiles: inliers need ``r^2`` below the first, anomalies above the second."""
        df = len(self.sub_dims)
        return float(stats.chi2.ppf(self.inlier_quantile, df)), float(stats.chi2.ppf(self.anomaly_quantile, df))

    def min_sq_mahalanobis(self, x: np.ndarray) -> np.ndarray:
        """``r^2(x) = min_k sum_{j in S} (x_j - mu_kj)^2 / var_kj`` for ``x`` of shape ``(n, d)``."""
        s = list(self.sub_dims)
        mu, var = np.asarray(self.means)[:, s], np.asarray(self.variances)[:, s]
        return (((x[:, None, s] - mu) ** 2) / var).sum(axis=-1).min(axis=1)

    def _draw(self, n: int, anomalous: bool, rng) -> np.ndarray:
        mu, var = np.asarray(self.means), np.asarray(self.variances).copy()
        if anomalous:
            var[:, list(self.sub_dims)] *= self.inflation
        k = rng.integers(0, len(mu), size=n)
        return mu[k] + np.sqrt(var[k]) * rng.standard_normal((n, self.dim))

    def sample(self, labels, rng: np.random.Generator) -> np.ndarray:
        """Points ``(n, d)`` with the given labels, by rejection from the chi-square label rule."""
        labels = np.asarray(labels)
        x = np.empty((len(labels), self.dim))
        lo, hi = self.thresholds()
        for label in (0, 1):
            rows = np.flatnonzero(labels == label)
            got = []
            need = len(rows)
            for _ in range(_MAX_REJECTION_ROUNDS):
                if need == 0:
                    break
                cand = self._draw(max(2 * need, 16), bool(label), rng)
                r2 = self.min_sq_mahalanobis(cand)
                keep = cand[r2 > hi] if label else cand[r2 < lo]
                got.append(keep[:need])
                need -= len(got[-1])
            if need:
                raise RuntimeError(f"GMM rejection sampling found too few {'anomalies' if label else 'inliers'} "
                                   f"in {_MAX_REJECTION_ROUNDS} rounds")
            if len(rows):
                x[rows] = np.concatenate(got)
        return x


@dataclass(frozen=True)
class SCMGenerator:
    """A random-MLP structural causal model; its weights are drawn from ``weight_seed``."""

    layers: int
    width: int
    keep_prob: float
    noise_std: float
    weight_seed: int
    feature_nodes: tuple   # flat node ids l * width + j, layers 1..L-1
    anomaly_nodes: tuple   # subset of feature_nodes whose noise anomalies scale
    anomaly_scale: float
    family: str = field(default="scm", init=False)

    @property
    def dim(self) -> int:
        return len(self.feature_nodes)

    def weights(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per layer transition ``(W (w, w) with dropped edges set to 0, b (w,))``, from ``weight_seed``."""
        rng = np.random.default_rng([self.weight_seed, 7])
        out = []
        for _ in range(self.layers - 1):
            keep = rng.random((self.width, self.width)) < self.keep_prob
            w = rng.standard_normal((self.width, self.width)) * keep * (1.5 / np.sqrt(self.width * self.keep_prob))
            out.append((w, 0.3 * rng.standard_normal(self.width)))
        return out

    def sample(self, labels, rng: np.random.Generator) -> np.ndarray:
        """Points ``(n, d)``: the feature nodes, with anomalous rows' noise scaled on ``anomaly_nodes``."""
        labels = np.asarray(labels)
        n, w = len(labels), self.width
        scale = np.ones((n, self.layers * w))
        scale[:, w:] = self.noise_std
        anom = np.asarray(self.anomaly_nodes, dtype=int)
        scale[np.ix_(labels == 1, anom)] *= self.anomaly_scale
        eps = rng.standard_normal((n, self.layers * w)) * scale
        h = [eps[:, :w]]
        for l, (wt, b) in enumerate(self.weights(), start=1):
            h.append(np.tanh(h[-1] @ wt + b) + eps[:, l * w:(l + 1) * w])
        return np.concatenate(h, axis=1)[:, list(self.feature_nodes)]


@dataclass(frozen=True)
class CopulaGenerator:
    """A Gaussian or Clayton copula with per-feature marginals ``(name, shape, loc, scale)``."""

    kind: str                 # "gaussian" | "clayton"
    marginals: tuple          # d tuples (name, shape, loc, scale)
    reflect_dims: tuple       # features whose u anomalies reflect
    correlation: tuple = ()   # gaussian: d x d correlation as nested tuples
    theta: float = 0.0        # clayton: theta > 0
    family: str = field(default="copula", init=False)

    @property
    def dim(self) -> int:
        return len(self.marginals)

    def uniforms(self, n: int, rng) -> np.ndarray:
        """``u (n, d)`` from the copula."""
        d = self.dim
        if self.kind == "gaussian":
            chol = np.linalg.cholesky(np.asarray(self.correlation))
            return stats.norm.cdf(rng.standard_normal((n, d)) @ chol.T)
        if self.kind == "clayton":  # Marshall-Olkin: V ~ Gamma(1/theta), u_j = (1 + E_j / V)^(-1/theta)
            v = rng.gamma(1.0 / self.theta, 1.0, size=(n, 1))
            return (1.0 + rng.exponential(size=(n, d)) / v) ** (-1.0 / self.theta)
        raise ValueError(f"kind must be 'gaussian' or 'clayton', got {self.kind!r}")

    def sample(self, labels, rng: np.random.Generator) -> np.ndarray:
        labels = np.asarray(labels)
        u = self.uniforms(len(labels), rng)
        refl = np.asarray(self.reflect_dims, dtype=int)
        u[np.ix_(labels == 1, refl)] = 1.0 - u[np.ix_(labels == 1, refl)]
        u = np.clip(u, _U_CLIP, 1.0 - _U_CLIP)
        x = np.empty_like(u)
        for j, (name, shape, loc, scale) in enumerate(self.marginals):
            x[:, j] = loc + scale * marginal_ppf(name, shape, u[:, j])
        return x


def marginal_ppf(name: str, shape: float, u: np.ndarray) -> np.ndarray:
    """Quantile function of the standard marginal ``name`` at ``u``: the special functions scipy.stats itself
    evaluates, called directly because building a frozen distribution per task cost more than the sampling."""
    from scipy import special

    u = np.asarray(u, dtype=float)
    if name == "lognormal":
        return np.exp(shape * special.ndtri(u))
    if name == "gamma":
        return special.gammaincinv(shape, u)
    if name == "t":
        return special.stdtrit(shape, u)
    if name == "weibull":
        return np.power(-np.log1p(-u), 1.0 / shape)
    raise ValueError(f"marginal must be one of {MARGINALS}, got {name!r}")


def _marginal(name: str, shape: float):
    if name == "lognormal":
        return stats.lognorm(shape)
    if name == "gamma":
        return stats.gamma(shape)
    if name == "t":
        return stats.t(shape)
    if name == "weibull":
        return stats.weibull_min(shape)
    raise ValueError(f"marginal must be one of {MARGINALS}, got {name!r}")


# ----------------------------------------------------------------------------- priors
@dataclass(frozen=True)
class _PriorBase:
    d_max: int = 8
    n_context: int = 64
    n_query: int = 32
    anomaly_rate: float = 0.1
    d_min: int = 1
    #: anomaly rate of the (labelled) context; ``None``: the same as the queries' ``anomaly_rate``.
    #: 0 gives clean contexts, the novelty-detection protocol of the real-data benchmarks.
    context_anomaly_rate: float | None = None

    def __post_init__(self):
        _int_in("d_max", self.d_max, 1)
        _int_in("d_min", self.d_min, 1, self.d_max)
        _int_in("n_context", self.n_context, 1)
        _int_in("n_query", self.n_query, 1)
        _rate("anomaly_rate", self.anomaly_rate)
        if self.context_anomaly_rate is not None and not 0.0 <= float(self.context_anomaly_rate) < 1.0:
            raise ValueError(f"context_anomaly_rate must be None or lie in [0, 1), got {self.context_anomaly_rate!r}")

    def sample_generator(self, rng: np.random.Generator):  # pragma: no cover - abstract
        raise NotImplementedError

    def sample_task(self, rng: np.random.Generator, generator=None) -> Task:
        """A task: a fresh generator (or the one given), binomial anomaly counts, padded points."""
        g = self.sample_generator(rng) if generator is None else generator
        c_rate = self.anomaly_rate if self.context_anomaly_rate is None else float(self.context_anomaly_rate)
        cy = (rng.random(self.n_context) < c_rate).astype(np.int64)
        qy = (rng.random(self.n_query) < self.anomaly_rate).astype(np.int64)
        x = g.sample(np.concatenate([cy, qy]), rng)
        return make_task(x[:self.n_context], cy, x[self.n_context:], qy, d_max=self.d_max, generator=g)

    def sample_batch(self, tasks: int, rng: np.random.Generator) -> TaskBatch:
        """``tasks`` independent tasks stacked (:class:`TaskBatch`)."""
        _int_in("tasks", tasks, 1)
        return stack_tasks([self.sample_task(rng) for _ in range(tasks)])

    def _dim(self, rng, low: int) -> int:
        return int(rng.integers(max(self.d_min, low), self.d_max + 1))


@dataclass(frozen=True)
class GMMPrior(_PriorBase):
    """PIQL's GMM prior (module docstring); ranges are inclusive pairs."""

    components: tuple = (2, 5)
    mean_scale: tuple = (2, 5)
    var_scale: tuple = (2, 5)
    inflation: float = 5.0
    inlier_quantile: float = 0.85
    anomaly_quantile: float = 0.95

    def __post_init__(self):
        super().__post_init__()
        _range("components", self.components, 1, integer=True)
        _range("mean_scale", self.mean_scale, 1, integer=True)
        _range("var_scale", self.var_scale, 2, integer=True)
        if not self.inflation > 1:
            raise ValueError(f"inflation must be > 1, got {self.inflation!r}")
        if not 0 < self.inlier_quantile <= self.anomaly_quantile < 1:
            raise ValueError("inlier_quantile and anomaly_quantile must satisfy 0 < inlier <= anomaly < 1, "
                             f"got {self.inlier_quantile!r}, {self.anomaly_quantile!r}")

    def sample_generator(self, rng: np.random.Generator) -> GMMGenerator:
        d = self._dim(rng, 1)
        k = int(rng.integers(self.components[0], self.components[1] + 1))
        m = int(rng.integers(self.mean_scale[0], self.mean_scale[1] + 1))
        v = int(rng.integers(self.var_scale[0], self.var_scale[1] + 1))
        means = rng.random((k, d)) * rng.integers(-m, m, size=(k, d))
        variances = np.maximum(rng.random((k, d)), 0.01) * rng.integers(1, v, size=(k, d))
        s = np.sort(rng.permutation(d)[:int(rng.integers(1, d + 1))])
        return GMMGenerator(_nested(means), _nested(variances), tuple(int(i) for i in s), float(self.inflation),
                            float(self.inlier_quantile), float(self.anomaly_quantile))


@dataclass(frozen=True)
class SCMPrior(_PriorBase):
    """Random-MLP SCM prior (module docstring)."""

    layers: tuple = (3, 7)
    width: tuple = (20, 40)
    keep_prob: float = 0.6
    noise_std: tuple = (0.1, 0.3)
    anomaly_scale: tuple = (3.0, 6.0)

    def __post_init__(self):
        super().__post_init__()
        _range("layers", self.layers, 2, integer=True)
        _range("width", self.width, 1, integer=True)
        _rate("keep_prob", self.keep_prob)
        _range("noise_std", self.noise_std, 1e-3)
        _range("anomaly_scale", self.anomaly_scale, 1.0)
        if (self.layers[0] - 1) * self.width[0] < self.d_max:
            raise ValueError(f"layers and width must give at least d_max = {self.d_max} non-root nodes, "
                             f"got (layers[0] - 1) * width[0] = {(self.layers[0] - 1) * self.width[0]}")

    def sample_generator(self, rng: np.random.Generator) -> SCMGenerator:
        d = self._dim(rng, 1)
        layers = int(rng.integers(self.layers[0], self.layers[1] + 1))
        width = int(rng.integers(self.width[0], self.width[1] + 1))
        nodes = np.sort(width + rng.permutation((layers - 1) * width)[:d])
        anom = np.sort(rng.permutation(nodes)[:int(rng.integers(1, d + 1))])
        return SCMGenerator(layers, width, float(self.keep_prob), _r3(rng.uniform(*self.noise_std)),
                            int(rng.integers(0, 10 ** 6)), tuple(int(i) for i in nodes),
                            tuple(int(i) for i in anom), _r3(rng.uniform(*self.anomaly_scale)))


@dataclass(frozen=True)
class CopulaPrior(_PriorBase):
    """Gaussian/Clayton copula prior with non-Gaussian marginals (module docstring); needs ``d_max >= 2``."""

    kinds: tuple = ("gaussian", "clayton")
    theta: tuple = (1.0, 5.0)

    def __post_init__(self):
        super().__post_init__()
        if self.d_max < 2:
            raise ValueError(f"d_max must be >= 2 for the copula prior (dependence needs two features), "
                             f"got {self.d_max}")
        if not self.kinds or set(self.kinds) - {"gaussian", "clayton"}:
            raise ValueError(f"kinds must be a non-empty subset of ('gaussian', 'clayton'), got {self.kinds!r}")
        _range("theta", self.theta, 1e-3)

    def sample_generator(self, rng: np.random.Generator) -> CopulaGenerator:
        d = self._dim(rng, 2)
        kind = self.kinds[int(rng.integers(len(self.kinds)))]
        margins = []
        for _ in range(d):
            name = MARGINALS[int(rng.integers(len(MARGINALS)))]
            margins.append((name, _r3(rng.uniform(*MARGINAL_SHAPE[name])), _r3(rng.uniform(-2, 2)),
                            _r3(rng.uniform(0.5, 2.0))))
        refl = tuple(int(i) for i in np.sort(rng.permutation(d)[:int(rng.integers(1, d))]))
        if kind == "gaussian":
            return CopulaGenerator(kind, tuple(margins), refl, correlation=_random_correlation(d, rng))
        return CopulaGenerator(kind, tuple(margins), refl, theta=_r3(rng.uniform(*self.theta)))


@dataclass(frozen=True)
class MixturePrior(_PriorBase):
    """Each task from the GMM, SCM or copula prior (same sizes), family drawn with ``weights``.

    ``d_max`` must be >= 2 when the copula family has positive weight.
    """

    families: tuple = FAMILIES
    weights: tuple | None = None

    def __post_init__(self):
        super().__post_init__()
        if not self.families or set(self.families) - set(FAMILIES):
            raise ValueError(f"families must be a non-empty subset of {FAMILIES}, got {self.families!r}")
        w = self._weights()
        if len(w) != len(self.families) or np.any(w < 0) or not w.sum() > 0:
            raise ValueError(f"weights must be {len(self.families)} non-negative numbers with a positive sum, "
                             f"got {self.weights!r}")
        if self.d_max < 2 and any(f == "copula" and p > 0 for f, p in zip(self.families, w)):
            raise ValueError(f"d_max must be >= 2 when the copula family has positive weight, got {self.d_max}")

    def _weights(self) -> np.ndarray:
        w = np.ones(len(self.families)) if self.weights is None else np.asarray(self.weights, dtype=float)
        return w / w.sum() if w.size and w.sum() > 0 else w

    def component(self, family: str) -> _PriorBase:
        """The prior of one family with this prior's sizes."""
        cls = {"gmm": GMMPrior, "scm": SCMPrior, "copula": CopulaPrior}[family]
        return cls(d_max=self.d_max, n_context=self.n_context, n_query=self.n_query,
                   anomaly_rate=self.anomaly_rate, d_min=self.d_min, context_anomaly_rate=self.context_anomaly_rate)

    def sample_generator(self, rng: np.random.Generator):
        family = self.families[int(rng.choice(len(self.families), p=self._weights()))]
        return self.component(family).sample_generator(rng)


def _nested(a: np.ndarray) -> tuple:
    return tuple(tuple(float(v) for v in row) for row in a)


def _r3(v: float) -> float:
    """Parameters the prior draws itself are kept at the DSL's 3 decimals, so a program is exact for them."""
    return round(float(v), 3)  # the double nearest the 3-decimal value, as the DSL parser reads it


def _random_correlation(d: int, rng) -> tuple:
    """A correlation matrix ``W W^T + diag`` normalised.

    Its smallest eigenvalue is at least ``min_j diag_j / cov_jj > 0``, far above 3-decimal rounding.
    """
    w = rng.standard_normal((d, max(1, d // 2)))
    cov = w @ w.T + np.diag(rng.uniform(0.3, 1.0, size=d))
    s = np.sqrt(np.diag(cov))
    corr = np.vectorize(_r3)(cov / np.outer(s, s))
    np.fill_diagonal(corr, 1.0)
    return _nested(corr)
