"""Estimators of the residual mode uncertainty U(k) of real text, and their positive control.

For two modes with prior weight ``w`` and a visible context ``x_V`` of ``k`` tokens, the residual mode
uncertainty is ``U(k) = E[omega(1 - omega)]`` with ``omega = P(Z = 1 | x_V)`` the mode posterior
({prf:ref}`def-masked-real-residual`). By {prf:ref}`prop-masked-brier-side`, any predictor ``b`` of
``Z`` has Brier score ``E[(Z - b)^2] = U + E[(b - omega)^2] >= U``, so

* a calibrated classifier gives an *upper* bound: the pinning side. Two are used: an L2 logistic
  regression on bag-of-bytes plus hashed n-grams with isotonic calibration (:func:`fit_calibrated_logistic`),
  and the byte n-gram log-likelihood ratio of the two modes with isotonic calibration
  (:func:`fit_calibrated_ngram`); :func:`joint_upper_bound` takes the smaller of their bounds, Bonferroni
  corrected;
* the low-visibility side needs a near-Bayes posterior: an interpolated (Witten-Bell) byte n-gram model
  of each mode, :class:`BackoffNgram`, whose likelihood ratio is the posterior for short ``k``.

The visible context is a span of ``k`` consecutive tokens at a uniformly random offset of a window.
Every estimate comes with a bootstrap over test *documents* (:func:`resample_weights`), and a cell whose
calibration check fails is censored (:func:`censor_reason`). The positive control is a pair of Markov
sources whose ``U(k)`` is exact (:func:`markov_exact_uncertainty`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit, logsumexp

__all__ = ["visible_spans", "BackoffNgram", "ngram_posterior", "span_features", "CalibratedLogistic", "fit_calibrated_logistic",
           "resample_weights", "CellEstimate", "cell_estimate", "censor_reason", "calibration_floor",
           "BRIER_RATIO_MAX", "MarkovPair", "markov_exact_uncertainty", "markov_chernoff_rate", "sample_markov",
           "DecayFit", "fit_decay", "compare_decay", "log_slope", "slope_replicates", "context_for_discrepancy",
           "RICHNESS", "markov_windows", "ngram_cells", "classifier_cells", "CalibratedNgram", "fit_calibrated_ngram",
           "ngram_ratio_cells", "joint_upper_bound", "brier_by_document"]

#: a cell whose Brier score exceeds this multiple of its plug-in U fails the calibration check
BRIER_RATIO_MAX = 2.0
RICHNESS = ("unigram", "bigram", "trigram")


# ----------------------------------------------------------------------------- visible contexts

def visible_spans(windows: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """One span of ``k`` consecutive tokens per window, at a uniformly random offset."""
    windows = np.asarray(windows)
    if windows.ndim != 2:
        raise ValueError(f"windows must be a 2-d array (n, length), got shape {windows.shape}")
    n, length = windows.shape
    if not isinstance(k, (int, np.integer)) or not 1 <= k <= length:
        raise ValueError(f"k must be an integer in [1, {length}] (the window length), got {k!r}")
    offsets = rng.integers(0, length - k + 1, size=n)
    return windows[np.arange(n)[:, None], offsets[:, None] + np.arange(k)[None, :]]


# ----------------------------------------------------------------------------- near-Bayes: n-gram posterior

def _codes(windows: np.ndarray, j: int) -> tuple[np.ndarray, np.ndarray]:
    """(context code of length j, next token) for every position t >= j of every row."""
    n, length = windows.shape
    w = windows.astype(np.int64)
    ctx = np.zeros((n, length - j), dtype=np.int64)
    for i in range(j):
        ctx = ctx * 256 + w[:, i:length - j + i]
    return ctx, w[:, j:]


@dataclass
class BackoffNgram:
    """Interpolated Witten-Bell byte n-gram model of one mode (contexts of up to ``order - 1`` bytes).

    ``P_j(x | h) = (c(h, x) + T(h) P_{j-1}(x | h')) / (c(h) + T(h))`` with ``T(h)`` the number of distinct
    bytes seen after ``h`` and ``h'`` the context without its oldest byte; a context never seen backs off to
    ``P_{j-1}``; ``P_{-1}`` is uniform on 256 bytes. Implements the near-Bayes side of
    {prf:ref}`prop-masked-brier-side`.
    """

    order: int
    tables: list = field(default_factory=list)  # per context length j: (keys, counts, ctx_keys, ctx_counts, ctx_types)

    def __post_init__(self):
        if not isinstance(self.order, (int, np.integer)) or not 1 <= self.order <= 5:
            raise ValueError(f"order must be an integer in [1, 5], got {self.order!r}")

    def fit(self, windows: np.ndarray) -> "BackoffNgram":
        windows = np.asarray(windows)
        if windows.ndim != 2 or windows.shape[1] < self.order:
            raise ValueError(f"windows must be (n, length) with length >= order={self.order}")
        self.tables = []
        for j in range(self.order):
            ctx, nxt = _codes(windows, j)
            keys, counts = np.unique((ctx * 256 + nxt).ravel(), return_counts=True)
            ctx_of_key = keys // 256
            ctx_keys, first, ctx_types = np.unique(ctx_of_key, return_index=True, return_counts=True)
            ctx_counts = np.add.reduceat(counts, first)
            self.tables.append((keys, counts, ctx_keys, ctx_counts, ctx_types))
        return self

    @staticmethod
    def _lookup(keys: np.ndarray, values: np.ndarray, query: np.ndarray) -> np.ndarray:
        i = np.searchsorted(keys, query)
        i = np.minimum(i, keys.size - 1)
        return np.where(keys[i] == query, values[i], 0)

    def token_log_probs(self, spans: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``log P(x_t | in-span context)`` for every position of every span, and the context length reached."""
        if not self.tables:
            raise ValueError("fit the model before using it")
        spans = np.asarray(spans)
        n, k = spans.shape
        prob = np.full((n, k), 1.0 / 256.0)
        reached = np.full((n, k), -1, dtype=np.int64)
        for j, (keys, counts, ctx_keys, ctx_counts, ctx_types) in enumerate(self.tables):
            if j >= k:
                break
            ctx, nxt = _codes(spans, j)
            c_hx = self._lookup(keys, counts, ctx * 256 + nxt)
            c_h = self._lookup(ctx_keys, ctx_counts, ctx)
            t_h = self._lookup(ctx_keys, ctx_types, ctx)
            seen = c_h > 0
            lower = prob[:, j:]
            prob[:, j:] = np.where(seen, (c_hx + t_h * lower) / np.maximum(c_h + t_h, 1), lower)
            reached[:, j:] = np.where(seen, j, reached[:, j:])
        return np.log(prob), reached

    def log_prob(self, spans: np.ndarray) -> np.ndarray:
        """``log P(span)``: the sum of :meth:`token_log_probs`."""
        return self.token_log_probs(spans)[0].sum(axis=1)


def ngram_posterior(model_a: BackoffNgram, model_b: BackoffNgram, spans: np.ndarray, w: float = 0.5
                    ) -> tuple[np.ndarray, float]:
    """Posterior of mode a from the two models' likelihood ratio, and the mean context length reached."""
    lp_a, reached = model_a.token_log_probs(spans)
    lp_b = model_b.log_prob(spans)
    logit = lp_a.sum(axis=1) - lp_b + math.log(w / (1 - w))
    return expit(logit), float(reached.mean())


# ----------------------------------------------------------------------------- upper side: calibrated classifier

def _hash(codes: np.ndarray, n_buckets: int) -> np.ndarray:
    return ((codes * 2654435761) % (2**32)) % n_buckets


def span_features(spans: np.ndarray, richness: str = "bigram", n_buckets: int = 4096) -> np.ndarray:
    """Bag-of-bytes frequencies (256), plus hashed bigram (``"bigram"``) and trigram (``"trigram"``)
    frequencies in ``n_buckets`` buckets each; rows sum to one per block."""
    if richness not in RICHNESS:
        raise ValueError(f"richness must be one of {RICHNESS}, got {richness!r}")
    if not isinstance(n_buckets, (int, np.integer)) or n_buckets < 1:
        raise ValueError(f"n_buckets must be a positive integer, got {n_buckets!r}")
    spans = np.asarray(spans).astype(np.int64)
    n, k = spans.shape
    rows = np.arange(n)[:, None]
    blocks = [np.bincount((rows * 256 + spans).ravel(), minlength=n * 256).reshape(n, 256) / k]
    orders = {"unigram": (), "bigram": (2,), "trigram": (2, 3)}[richness]
    for order in orders:
        if k < order:
            blocks.append(np.zeros((n, n_buckets)))
            continue
        codes = np.zeros((n, k - order + 1), dtype=np.int64)
        for i in range(order):
            codes = codes * 256 + spans[:, i:k - order + 1 + i]
        b = _hash(codes, n_buckets)
        blocks.append(np.bincount((rows * n_buckets + b).ravel(), minlength=n * n_buckets).reshape(n, n_buckets)
                      / (k - order + 1))
    return np.hstack(blocks).astype(np.float32)


@dataclass
class CalibratedLogistic:
    """An L2 logistic regression and the isotonic map fitted on held-out training documents."""

    logistic: object
    isotonic: object

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.clip(self.isotonic.predict(self.logistic.decision_function(X)), 0.0, 1.0)


def _calibration_split(groups: np.ndarray, y: np.ndarray, calib_fraction: float, seed: int) -> np.ndarray:
    """Mask of the training windows whose documents calibrate (the rest fit), each part with both labels."""
    from .corpora import split_by_document

    y = np.asarray(y)
    calib = split_by_document(groups, calib_fraction, seed=seed + 1)
    if calib.all() or not calib.any() or len(np.unique(y[~calib])) < 2 or len(np.unique(y[calib])) < 2:
        raise ValueError("the training documents are too few to split into a fit and a calibration part")
    return calib


def fit_calibrated_logistic(X: np.ndarray, y: np.ndarray, groups: np.ndarray, C: float = 1.0,
                            calib_fraction: float = 0.3, seed: int = 0, max_iter: int = 300) -> CalibratedLogistic:
    """Fit an L2 logistic regression on part of the training documents and scikit-learn's isotonic calibration
    on the rest (split by document, so the calibration sees documents the regression did not)."""
    from sklearn.isotonic import IsotonicRegression
    from sklearn.linear_model import LogisticRegression

    if not C > 0:
        raise ValueError(f"C must be > 0, got {C!r}")
    calib = _calibration_split(groups, y, calib_fraction, seed)
    logistic = LogisticRegression(C=C, max_iter=max_iter, tol=1e-4)
    logistic.fit(X[~calib], y[~calib])
    iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip")
    iso.fit(logistic.decision_function(X[calib]), y[calib])
    return CalibratedLogistic(logistic, iso)


@dataclass
class CalibratedNgram:
    """The log-likelihood ratio of two byte n-gram models (mode 1 over mode 0) and the isotonic map from it to
    ``P(Z = 1)``, fitted on held-out training documents. For spans longer than the models' order the raw ratio
    is over-confident (it treats the bytes as a Markov chain of that order); the isotonic map corrects it."""

    model_a: BackoffNgram
    model_b: BackoffNgram
    isotonic: object

    def log_ratio(self, spans: np.ndarray) -> np.ndarray:
        return self.model_a.log_prob(spans) - self.model_b.log_prob(spans)

    def predict(self, spans: np.ndarray) -> np.ndarray:
        return np.clip(self.isotonic.predict(self.log_ratio(spans)), 0.0, 1.0)


def fit_calibrated_ngram(windows: np.ndarray, y: np.ndarray, groups: np.ndarray, order: int, k: int,
                         rng: np.random.Generator, calib_fraction: float = 0.3, seed: int = 0) -> CalibratedNgram:
    """Fit one n-gram model per mode on part of the training documents, and scikit-learn's isotonic regression of
    the label on their log-likelihood ratio over one random span of ``k`` bytes of each window of the rest (split
    by document, as in :func:`fit_calibrated_logistic`)."""
    windows, y = np.asarray(windows), np.asarray(y)
    models, calib = _fit_mode_models(windows, y, groups, order, calib_fraction, seed)
    return _calibrate_ngram(*models, windows[calib], y[calib], k, rng)


def _fit_mode_models(windows: np.ndarray, y: np.ndarray, groups: np.ndarray, order: int, calib_fraction: float,
                     seed: int) -> tuple[tuple[BackoffNgram, BackoffNgram], np.ndarray]:
    """The n-gram models of modes 1 and 0 on the fit part of the training documents, and the calibration mask."""
    calib = _calibration_split(groups, y, calib_fraction, seed)
    fit, y_fit = windows[~calib], y[~calib]
    return (BackoffNgram(order).fit(fit[y_fit == 1]), BackoffNgram(order).fit(fit[y_fit == 0])), calib


def _calibrate_ngram(model_a: BackoffNgram, model_b: BackoffNgram, windows: np.ndarray, y: np.ndarray, k: int,
                     rng: np.random.Generator) -> CalibratedNgram:
    """The isotonic map of two fitted mode models for spans of ``k`` bytes, on calibration windows."""
    from sklearn.isotonic import IsotonicRegression

    model = CalibratedNgram(model_a, model_b, IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip"))
    model.isotonic.fit(model.log_ratio(visible_spans(windows, int(k), rng)), y)
    return model


# ----------------------------------------------------------------------------- cells, bootstrap, censoring

def resample_weights(groups: np.ndarray, n_boot: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap by document: ``(inverse, W)`` with ``W[b, d]`` how often document ``d`` is drawn in replicate
    ``b`` (documents drawn with replacement, as many as there are) and ``inverse`` each window's document."""
    if not isinstance(n_boot, (int, np.integer)) or n_boot < 10:
        raise ValueError(f"n_boot must be an integer >= 10, got {n_boot!r}")
    unique, inverse = np.unique(np.asarray(groups), return_inverse=True)
    n_docs = unique.size
    draws = rng.integers(0, n_docs, size=(n_boot, n_docs))
    W = np.zeros((n_boot, n_docs))
    np.add.at(W, (np.repeat(np.arange(n_boot), n_docs), draws.ravel()), 1.0)
    return inverse, W


def calibration_floor(n_test_docs: int) -> float:
    """``3 / n``: below it a test set of ``n`` documents cannot resolve U (the rule of three: no error among
    ``n`` documents bounds the per-document error rate by ``3/n`` at 95 %)."""
    if not isinstance(n_test_docs, (int, np.integer)) or n_test_docs < 1:
        raise ValueError(f"n_test_docs must be a positive integer, got {n_test_docs!r}")
    return 3.0 / n_test_docs


def censor_reason(u: float, brier: float, floor: float) -> str:
    """Why a cell is censored ("" if it is not): ``"calibration"`` when ``brier > 2 u`` (or ``u <= 0``),
    ``"floor"`` when ``brier`` or ``u`` lies below the resolution ``floor``."""
    if not floor > 0:
        raise ValueError(f"floor must be > 0, got {floor!r}")
    if u < 0 or brier < 0:
        raise ValueError(f"u and brier must be >= 0, got {u!r}, {brier!r}")
    if brier < floor or u < floor:
        return "floor"
    if u <= 0 or brier > BRIER_RATIO_MAX * u:
        return "calibration"
    return ""


@dataclass
class CellEstimate:
    """U(k) (plug-in mean of p(1 - p)) and the Brier score of one estimator at one k, with bootstrap replicates
    by document. ``side`` is ``"lower"`` (near-Bayes) or ``"upper"`` (calibrated classifier)."""

    k: int
    estimator: str
    side: str
    u: float
    brier: float
    u_boot: np.ndarray
    brier_boot: np.ndarray
    floor: float
    censored: str
    order_reached: float | None = None
    p: np.ndarray | None = field(default=None, repr=False)  # the predictions, one per test window

    def interval(self, what: str = "u", level: float = 0.95) -> tuple[float, float]:
        reps = self.u_boot if what == "u" else self.brier_boot
        lo, hi = np.quantile(reps, [(1 - level) / 2, (1 + level) / 2])
        return float(lo), float(hi)

    def se(self, what: str = "u") -> float:
        return float(np.std(self.u_boot if what == "u" else self.brier_boot, ddof=1))

    def log_se(self, what: str = "u") -> float:
        reps = self.u_boot if what == "u" else self.brier_boot
        return float(np.std(np.log(np.maximum(reps, 1e-300)), ddof=1))

    def upper_bound(self, level: float = 0.95) -> float:
        """An upper confidence bound on U from this cell's Brier score (valid for any predictor), never below
        the resolution floor."""
        return max(self.interval("brier", level)[1], self.floor)


def cell_estimate(k: int, estimator: str, side: str, p: np.ndarray, y: np.ndarray, boot: tuple,
                  floor: float, order_reached: float | None = None) -> CellEstimate:
    """Plug-in U and Brier score of predictions ``p`` of labels ``y``, with document-bootstrap replicates
    from ``boot = resample_weights(...)``."""
    if side not in ("lower", "upper"):
        raise ValueError(f"side must be 'lower' or 'upper', got {side!r}")
    p, y = np.asarray(p, dtype=float), np.asarray(y, dtype=float)
    if p.shape != y.shape or p.ndim != 1:
        raise ValueError("p and y must be 1-d arrays of the same length")
    inverse, W = boot
    if inverse.size != p.size:
        raise ValueError("boot was drawn for another set of windows")
    n_docs = W.shape[1]
    unc, sq = p * (1 - p), (y - p) ** 2
    count = np.bincount(inverse, minlength=n_docs)
    sums_u, sums_b = np.bincount(inverse, unc, n_docs), np.bincount(inverse, sq, n_docs)
    denom = W @ count
    u, b = float(unc.mean()), float(sq.mean())
    return CellEstimate(int(k), estimator, side, u, b, (W @ sums_u) / denom, (W @ sums_b) / denom, floor,
                        censor_reason(u, b, floor), order_reached, p)


def brier_by_document(p: np.ndarray, y: np.ndarray, groups: np.ndarray) -> list[tuple[int, float]]:
    """``(document, share of the summed squared error)`` for every test document, largest share first: where a
    Brier score comes from."""
    p, y, groups = np.asarray(p, dtype=float), np.asarray(y, dtype=float), np.asarray(groups)
    if not p.shape == y.shape == groups.shape or p.ndim != 1:
        raise ValueError("p, y and groups must be 1-d arrays of the same length")
    docs, inverse = np.unique(groups, return_inverse=True)
    sums = np.bincount(inverse, (y - p) ** 2, docs.size)
    total = sums.sum()
    shares = sums / total if total > 0 else np.zeros_like(sums)
    order = np.argsort(-shares, kind="stable")
    return [(int(docs[i]), float(shares[i])) for i in order]


# ----------------------------------------------------------------------------- positive control: Markov sources

@dataclass(frozen=True)
class MarkovPair:
    """Two stationary first-order Markov sources on a small alphabet (rows of ``P`` sum to one), mode weight w."""

    P_a: tuple
    P_b: tuple
    w: float = 0.5

    def matrices(self) -> tuple[np.ndarray, np.ndarray]:
        Pa, Pb = np.asarray(self.P_a, dtype=float), np.asarray(self.P_b, dtype=float)
        for name, P in (("P_a", Pa), ("P_b", Pb)):
            if P.ndim != 2 or P.shape[0] != P.shape[1] or np.any(P <= 0) or not np.allclose(P.sum(1), 1.0):
                raise ValueError(f"{name} must be a square matrix of positive transition probabilities "
                                 "with rows summing to 1")
        if Pa.shape != Pb.shape:
            raise ValueError("P_a and P_b must have the same alphabet")
        if not 0 < self.w < 1:
            raise ValueError(f"w must lie in (0, 1), got {self.w!r}")
        return Pa, Pb


def _stationary(P: np.ndarray) -> np.ndarray:
    vals, vecs = np.linalg.eig(P.T)
    v = np.real(vecs[:, np.argmin(np.abs(vals - 1.0))])
    return v / v.sum()


def markov_exact_uncertainty(pair: MarkovPair, k: int) -> float:
    """Exact ``U(k) = sum_x p(x) omega(x)(1 - omega(x))`` over all ``a^k`` strings of ``k`` consecutive
    tokens of the stationary sources (log domain). Implements {prf:ref}`def-masked-real-residual` for the
    control."""
    Pa, Pb = pair.matrices()
    a = Pa.shape[0]
    if not isinstance(k, (int, np.integer)) or k < 0 or a ** k > 2**24:
        raise ValueError(f"k must be an integer in [0, {int(24 / math.log2(a))}] for an alphabet of {a}, got {k!r}")
    w = pair.w
    if k == 0:
        return w * (1 - w)
    la, lb = np.log(_stationary(Pa)), np.log(_stationary(Pb))
    last = np.arange(a)
    for _ in range(k - 1):
        la = (la[:, None] + np.log(Pa)[last]).ravel()
        lb = (lb[:, None] + np.log(Pb)[last]).ravel()
        last = np.tile(np.arange(a), last.size)
    lwa, lwb = math.log(w) + la, math.log(1 - w) + lb
    lp = np.logaddexp(lwa, lwb)
    # p * omega * (1 - omega) = w p_a (1 - w) p_b / p
    return float(np.exp(logsumexp(lwa + lwb - lp)))


def markov_chernoff_rate(pair: MarkovPair, n_grid: int = 201) -> float:
    """Asymptotic exponential rate of U(k): ``-min_s log rho(P_a^s * P_b^(1-s))`` (entrywise powers, spectral
    radius ``rho``), the Chernoff information per token of the two chains."""
    Pa, Pb = pair.matrices()
    best = math.inf
    for s in np.linspace(0.0, 1.0, n_grid)[1:-1]:
        M = Pa**s * Pb ** (1 - s)
        best = min(best, float(np.max(np.abs(np.linalg.eigvals(M)))))
    return -math.log(best)


def sample_markov(P, n_docs: int, length: int, rng: np.random.Generator) -> np.ndarray:
    """``n_docs`` stationary sequences of ``length`` tokens (uint8)."""
    P = np.asarray(P, dtype=float)
    cum = np.cumsum(P, axis=1)
    pi = _stationary(P)
    x = np.empty((n_docs, length), dtype=np.uint8)
    x[:, 0] = np.searchsorted(np.cumsum(pi), rng.random(n_docs))
    u = rng.random((n_docs, length))
    for t in range(1, length):
        x[:, t] = np.minimum((u[:, t, None] > cum[x[:, t - 1]]).sum(axis=1), P.shape[0] - 1)
    return x


# ----------------------------------------------------------------------------- decay fits

def log_slope(k, u) -> float:
    """Least-squares slope of ``log u`` against ``k`` (an exponential rate is its negative)."""
    k, lu = np.asarray(k, dtype=float), np.log(np.asarray(u, dtype=float))
    return float(np.polyfit(k, lu, 1)[0])


def slope_replicates(k, reps: np.ndarray) -> np.ndarray:
    """:func:`log_slope` of each bootstrap replicate (rows of ``reps``: replicates, columns: the ks)."""
    k = np.asarray(k, dtype=float)
    kc = k - k.mean()
    lr = np.log(np.maximum(reps, 1e-300))
    return (lr - lr.mean(axis=1, keepdims=True)) @ kc / (kc @ kc)


@dataclass
class DecayFit:
    """Weighted least-squares fit of ``log U`` as ``a - rate * k`` (exponential) or ``a - rate * log k``
    (power law), with its leave-one-out error and AIC."""

    law: str
    intercept: float
    rate: float
    loo_rmse: float
    aic: float
    k: np.ndarray

    def predict_log(self, k) -> np.ndarray:
        x = np.asarray(k, dtype=float)
        x = x if self.law == "exponential" else np.log(x)
        return self.intercept - self.rate * x


def fit_decay(k, u, log_se, law: str) -> DecayFit:
    """Fit ``law`` ("exponential" or "power") to the cells ``(k, u)`` with weights ``1 / log_se^2``."""
    if law not in ("exponential", "power"):
        raise ValueError(f"law must be 'exponential' or 'power', got {law!r}")
    k, lu = np.asarray(k, dtype=float), np.log(np.asarray(u, dtype=float))
    s = np.maximum(np.asarray(log_se, dtype=float), 1e-3)
    if k.size < 3:
        raise ValueError(f"need at least 3 uncensored cells to fit, got {k.size}")
    x = k if law == "exponential" else np.log(k)

    def wls(xx, yy, ss):
        A = np.stack([np.ones_like(xx), -xx], axis=1) / ss[:, None]
        coef, *_ = np.linalg.lstsq(A, yy / ss, rcond=None)
        return coef

    a, r = wls(x, lu, s)
    resid = (lu - (a - r * x)) / s
    loo = []
    for i in range(k.size):
        keep = np.arange(k.size) != i
        ai, ri = wls(x[keep], lu[keep], s[keep])
        loo.append(((lu[i] - (ai - ri * x[i])) / s[i]) ** 2)
    aic = float(np.sum(resid**2) + 2 * 2)
    return DecayFit(law, float(a), float(r), float(math.sqrt(np.mean(loo))), aic, k)


def compare_decay(k, u, log_se) -> dict:
    """Both fits and which one has the smaller leave-one-out error (the AIC agrees: same parameter count)."""
    fits = {law: fit_decay(k, u, log_se, law) for law in ("exponential", "power")}
    best = min(fits, key=lambda l: fits[l].loo_rmse)
    return {"fits": fits, "better": best}


def context_for_discrepancy(fit: DecayFit, log_target: float, k_max: float = 1e12) -> float:
    """Smallest ``k`` at which the fitted ``log U(k)`` falls to ``log_target`` (inf if not before ``k_max``)."""
    if fit.rate <= 0:
        return math.inf
    if fit.law == "exponential":
        k = (fit.intercept - log_target) / fit.rate
    else:
        k = math.exp((fit.intercept - log_target) / fit.rate)
    return float(k) if k <= k_max else math.inf


# ----------------------------------------------------------------------------- pipelines the chapter calls

def ngram_cells(train: np.ndarray, y_train: np.ndarray, test: np.ndarray, y_test: np.ndarray, boot: tuple,
                floor: float, ks, order: int, rng: np.random.Generator) -> list[CellEstimate]:
    """Near-Bayes (lower-side) cells: one n-gram model per mode fitted on the training windows, the posterior
    of mode 1 on one random span of each test window, for each ``k`` in ``ks``."""
    model_a = BackoffNgram(order).fit(train[y_train == 1])
    model_b = BackoffNgram(order).fit(train[y_train == 0])
    cells = []
    for k in ks:
        p, reached = ngram_posterior(model_a, model_b, visible_spans(test, int(k), rng))
        cells.append(cell_estimate(int(k), f"{order}-gram", "lower", p, y_test, boot, floor, reached))
    return cells


def classifier_cells(train: np.ndarray, y_train: np.ndarray, groups_train: np.ndarray, test: np.ndarray,
                     y_test: np.ndarray, boot: tuple, floor: float, ks, rng: np.random.Generator,
                     richness: str = "bigram", C: float = 100.0, n_buckets: int = 4096,
                     seed: int = 0) -> list[CellEstimate]:
    """Upper-side cells: a calibrated logistic regression (:func:`fit_calibrated_logistic`) on the features of
    one random span per window, fitted afresh for each ``k``."""
    cells = []
    for k in ks:
        X_train = span_features(visible_spans(train, int(k), rng), richness, n_buckets)
        X_test = span_features(visible_spans(test, int(k), rng), richness, n_buckets)
        model = fit_calibrated_logistic(X_train, y_train, groups_train, C=C, seed=seed)
        cells.append(cell_estimate(int(k), f"logistic-{richness}", "upper", model.predict(X_test), y_test, boot,
                                   floor))
    return cells


def ngram_ratio_cells(train: np.ndarray, y_train: np.ndarray, groups_train: np.ndarray, test: np.ndarray,
                      y_test: np.ndarray, boot: tuple, floor: float, ks, order: int, rng: np.random.Generator,
                      seed: int = 0, calib_fraction: float = 0.3) -> list[CellEstimate]:
    """Upper-side cells of the calibrated n-gram ratio (:func:`fit_calibrated_ngram`): the two mode models are fitted
    once, the isotonic map is refitted for each ``k`` on fresh spans, and each test window is scored on one random span."""
    train, y_train = np.asarray(train), np.asarray(y_train)
    models, calib = _fit_mode_models(train, y_train, groups_train, order, calib_fraction, seed)  # independent of k
    cells = []
    for k in ks:
        model = _calibrate_ngram(*models, train[calib], y_train[calib], int(k), rng)
        cells.append(cell_estimate(int(k), f"{order}-gram ratio", "upper", model.predict(visible_spans(test, int(k), rng)),
                                   y_test, boot, floor))
    return cells


def joint_upper_bound(cells: list[CellEstimate], level: float = 0.95) -> float:
    """The smallest of the upper-side cells' upper bounds on the same ``U(k)``, each at the Bonferroni level
    ``1 - (1 - level) / m`` for ``m`` cells, so that the minimum is still a ``level`` bound (each cell's upper end
    misses with probability at most ``(1 - level) / (2 m)``, by the union bound)."""
    if not cells:
        raise ValueError("cells must hold at least one upper-side cell")
    if any(c.side != "upper" for c in cells):
        raise ValueError("joint_upper_bound takes upper-side cells only (a lower-side U_hat is no bound)")
    if len({c.k for c in cells}) != 1:
        raise ValueError(f"the cells must bound the same U(k), got k = {sorted({c.k for c in cells})}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    return min(c.upper_bound(1 - (1 - level) / len(cells)) for c in cells)


def markov_windows(pair: MarkovPair, n_docs: int, length: int, rng: np.random.Generator
                   ) -> tuple[np.ndarray, np.ndarray]:
    """``n_docs`` documents per source (one window each), labels 1 for source a, 0 for source b."""
    Pa, Pb = pair.matrices()
    x = np.concatenate([sample_markov(Pa, n_docs, length, rng), sample_markov(Pb, n_docs, length, rng)])
    y = np.concatenate([np.ones(n_docs, dtype=np.int64), np.zeros(n_docs, dtype=np.int64)])
    return x, y
