"""A task prior with exact posteriors, for the information gap of generator PI.

Implements the setting of {prf:ref}`thm-pi-information-gap`: PIQL's GMM prior
{cite}`ding2026piql` reduced to one cluster, with a conjugate prior on its
parameters so that every posterior is exact.

* Generator ``G = (mu, sigma^2)``, one pair per coordinate ``j = 1..d``, drawn
  from a normal-inverse-gamma prior: ``sigma_j^2 ~ IG(a0, b0)``,
  ``mu_j | sigma_j^2 ~ N(m0, sigma_j^2 / k0)``.
* Label ``y ~ Bernoulli(pi)`` (1 = anomaly); given ``y`` the coordinates are
  independent, ``x_j ~ N(mu_j, c_y sigma_j^2)`` with ``c_0 = 1`` and ``c_1 = gamma``,
  the anomaly inflation (PIQL's code inflates the anomalies' covariance by ``inflate_scale``, default 5,
  in ``data_prior/GMM.py`` of ``xyvivian/PIQL``; it inflates a random subset of coordinates and filters by
  a chi-square quantile, which this one-cluster prior does not). The labelled context is this book's
  departure from PIQL's zero-shot (unlabelled) contexts.
* Context ``D``: ``n`` labelled points ``(x_i, y_i)`` from the same generator.
  Labels keep the posterior conjugate: a point of scale ``c`` is a Gaussian
  observation of ``mu`` with precision weight ``1/c``.

Every probability is computed in the log domain; label posteriors are
normalised with :func:`scipy.special.logsumexp`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln, logsumexp

LOG_2PI = float(np.log(2.0 * np.pi))


def _positive(name: str, value: float) -> float:
    value = float(value)
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return value


@dataclass(frozen=True)
class GaussianAnomalyPrior:
    """The task prior of {prf:ref}`def-pi-task-prior`.

    Parameters
    ----------
    d : number of coordinates (features), ``d >= 1``.
    anomaly_rate : ``pi`` in (0, 1), the known probability that a point is an anomaly.
    inflation : ``gamma > 1``, the variance inflation of anomalies (written γ in the book).
    m0, k0, a0, b0 : normal-inverse-gamma hyper-parameters (``k0, a0, b0 > 0``).
    """

    d: int = 2
    anomaly_rate: float = 0.1
    inflation: float = 5.0
    m0: float = 0.0
    k0: float = 1.0
    a0: float = 3.0
    b0: float = 2.0

    def __post_init__(self) -> None:
        if not isinstance(self.d, (int, np.integer)) or self.d < 1:
            raise ValueError(f"d must be an integer >= 1, got {self.d!r}")
        if not 0.0 < float(self.anomaly_rate) < 1.0:
            raise ValueError(f"anomaly_rate must lie in (0, 1), got {self.anomaly_rate!r}")
        if not float(self.inflation) > 1.0 or not np.isfinite(self.inflation):
            raise ValueError(f"inflation must be a finite number > 1, got {self.inflation!r}")
        if not np.isfinite(self.m0):
            raise ValueError(f"m0 must be finite, got {self.m0!r}")
        for name in ("k0", "a0", "b0"):
            _positive(name, getattr(self, name))

    @property
    def scales(self) -> np.ndarray:
        """``(c_0, c_1) = (1, gamma)``: variance multipliers of inliers and anomalies."""
        return np.array([1.0, float(self.inflation)])

    @property
    def log_prior_labels(self) -> np.ndarray:
        """``(log(1 - pi), log(pi))``."""
        return np.log(np.array([1.0 - self.anomaly_rate, self.anomaly_rate]))


@dataclass
class NIGPosterior:
    """Normal-inverse-gamma posterior, arrays of shape ``(tasks, d)``."""

    m: np.ndarray
    k: np.ndarray
    a: np.ndarray
    b: np.ndarray


def _check_size(name: str, value: int, low: int = 1) -> int:
    if not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


# ----------------------------------------------------------------------------- sampling
def sample_generators(prior: GaussianAnomalyPrior, tasks: int, rng: np.random.Generator):
    """Draw ``tasks`` generators ``(mu, var)``, each of shape ``(tasks, d)``."""
    tasks = _check_size("tasks", tasks)
    var = prior.b0 / rng.gamma(prior.a0, 1.0, size=(tasks, prior.d))
    mu = prior.m0 + np.sqrt(var / prior.k0) * rng.standard_normal((tasks, prior.d))
    return mu, var


def sample_points(prior: GaussianAnomalyPrior, mu: np.ndarray, var: np.ndarray, n: int,
                  rng: np.random.Generator):
    """Draw ``n`` labelled points per task: ``x`` of shape ``(tasks, n, d)``, ``y`` of ``(tasks, n)``."""
    n = _check_size("n", n)
    tasks = mu.shape[0]
    y = (rng.random((tasks, n)) < prior.anomaly_rate).astype(np.int64)
    sd = np.sqrt(prior.scales[y][..., None] * var[:, None, :])
    x = mu[:, None, :] + sd * rng.standard_normal((tasks, n, prior.d))
    return x, y


# ----------------------------------------------------------------------------- posteriors
def posterior_from_class_stats(prior: GaussianAnomalyPrior, counts: np.ndarray, means: np.ndarray,
                               m2: np.ndarray) -> NIGPosterior:
    """Exact NIG posterior from per-class sufficient statistics.

    ``counts``: ``(tasks, 2)`` numbers of inliers and anomalies; ``means``: ``(tasks, 2, d)``
    per-class sample means (any value where the count is 0); ``m2``: ``(tasks, 2, d)``
    per-class centred sums of squares. A point of scale ``c`` has weight ``w = 1/c``::

        k_n = k0 + sum w,  m_n = (k0 m0 + sum w x) / k_n,  a_n = a0 + n / 2,
        b_n = b0 + (1/2) [sum w (x - xbar_w)^2 + k0 Lambda / k_n (xbar_w - m0)^2],

    with ``Lambda = sum w`` (the total precision weight) and ``xbar_w`` the weighted mean (centred sums avoid
    cancellation).
    """
    w = 1.0 / prior.scales  # (2,)
    cw = counts * w  # (tasks, 2)
    W = cw.sum(axis=1)[:, None]  # (tasks, 1)
    safe_means = np.where(counts[..., None] > 0, means, 0.0)
    swx = (cw[..., None] * safe_means).sum(axis=1)  # (tasks, d)
    xbar = np.where(W > 0, swx / np.where(W > 0, W, 1.0), prior.m0)
    within = (w[None, :, None] * m2).sum(axis=1) + (cw[..., None] * (safe_means - xbar[:, None, :]) ** 2).sum(axis=1)
    k = prior.k0 + W
    m = (prior.k0 * prior.m0 + swx) / k
    n = counts.sum(axis=1)[:, None]
    a = prior.a0 + 0.5 * n + np.zeros_like(m)
    b = prior.b0 + 0.5 * (within + prior.k0 * W / k * (xbar - prior.m0) ** 2)
    return NIGPosterior(m=m, k=k + np.zeros_like(m), a=a, b=b)


def posterior(prior: GaussianAnomalyPrior, x: np.ndarray, y: np.ndarray) -> NIGPosterior:
    """Exact posterior of ``G`` given a labelled context ``x: (tasks, n, d)``, ``y: (tasks, n)``."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y)
    if x.ndim != 3 or x.shape[2] != prior.d:
        raise ValueError(f"x must have shape (tasks, n, d={prior.d}), got {x.shape}")
    if y.shape != x.shape[:2] or not np.isin(y, (0, 1)).all():
        raise ValueError(f"y must be 0/1 labels of shape {x.shape[:2]}")
    tasks = x.shape[0]
    counts = np.zeros((tasks, 2))
    means = np.zeros((tasks, 2, prior.d))
    m2 = np.zeros((tasks, 2, prior.d))
    for c in (0, 1):
        mask = (y == c)[..., None]
        cnt = mask.sum(axis=1)  # (tasks, 1)
        counts[:, c] = cnt[:, 0]
        mean = (x * mask).sum(axis=1) / np.maximum(cnt, 1)
        means[:, c] = mean
        m2[:, c] = (((x - mean[:, None, :]) * mask) ** 2).sum(axis=1)
    return posterior_from_class_stats(prior, counts, means, m2)


def log_student_t(x: np.ndarray, df: np.ndarray, loc: np.ndarray, scale2: np.ndarray) -> np.ndarray:
    """Log density of a Student-t with ``df`` degrees of freedom, location ``loc``, squared scale ``scale2``."""
    z2 = (x - loc) ** 2 / (df * scale2)
    return (gammaln(0.5 * (df + 1.0)) - gammaln(0.5 * df) - 0.5 * np.log(np.pi * df * scale2)
            - 0.5 * (df + 1.0) * np.log1p(z2))


def log_predictive(prior: GaussianAnomalyPrior, post: NIGPosterior, x: np.ndarray) -> np.ndarray:
    """``log p(x | y, D)`` for ``y = 0, 1``: shape ``(tasks, 2)``; ``x`` has shape ``(tasks, d)``.

    Given ``D``, a new point of scale ``c`` is Student-t per coordinate with
    ``2 a_n`` degrees of freedom, location ``m_n`` and squared scale ``(b_n/a_n)(c + 1/k_n)``.
    """
    out = []
    for c in prior.scales:
        s2 = post.b / post.a * (c + 1.0 / post.k)
        out.append(log_student_t(x, 2.0 * post.a, post.m, s2).sum(axis=-1))
    return np.stack(out, axis=-1)


def log_likelihood_given_generator(prior: GaussianAnomalyPrior, mu: np.ndarray, var: np.ndarray,
                                   x: np.ndarray) -> np.ndarray:
    """``log p(x | y, G)`` for ``y = 0, 1``: shape ``(tasks, 2)``."""
    out = []
    for c in prior.scales:
        v = c * var
        out.append((-0.5 * (LOG_2PI + np.log(v)) - 0.5 * (x - mu) ** 2 / v).sum(axis=-1))
    return np.stack(out, axis=-1)


def _normalise(log_joint: np.ndarray) -> np.ndarray:
    return log_joint - logsumexp(log_joint, axis=-1, keepdims=True)


def label_logprobs_given_context(prior: GaussianAnomalyPrior, post: NIGPosterior, x: np.ndarray) -> np.ndarray:
    """``log p(y | x, D)``, shape ``(tasks, 2)`` (the Bayes predictor from the context alone)."""
    return _normalise(prior.log_prior_labels + log_predictive(prior, post, x))


def label_logprobs_given_generator(prior: GaussianAnomalyPrior, mu: np.ndarray, var: np.ndarray,
                                   x: np.ndarray) -> np.ndarray:
    """``log p(y | x, G)``, shape ``(tasks, 2)`` (the Bayes predictor that knows the generator)."""
    return _normalise(prior.log_prior_labels + log_likelihood_given_generator(prior, mu, var, x))


def bernoulli_kl(logp: np.ndarray, logq: np.ndarray) -> np.ndarray:
    """``KL(p || q)`` between label distributions given as log-probabilities over the last axis."""
    return (np.exp(logp) * (logp - logq)).sum(axis=-1)


def entropy(logp: np.ndarray) -> np.ndarray:
    """Entropy (nats) of label distributions given as log-probabilities over the last axis."""
    return -(np.exp(logp) * logp).sum(axis=-1)


# ----------------------------------------------------------------------------- the gap curve
def _merge(count, mean, m2, cnt_b, mean_b, m2_b):
    """Chan et al.'s pairwise update of (count, mean, centred sum of squares)."""
    tot = count + cnt_b
    safe = np.where(tot > 0, tot, 1.0)
    delta = mean_b - mean
    new_mean = np.where(tot > 0, mean + delta * cnt_b / safe, 0.0)
    new_m2 = m2 + m2_b + delta ** 2 * count * cnt_b / safe
    return tot, new_mean, new_m2


def information_gap_curve(prior: GaussianAnomalyPrior, ns, tasks: int, rng: np.random.Generator,
                          chunk: int = 50_000) -> dict:
    """Monte Carlo of ``R_D``, ``R_G`` and the gap ``I(Y; G | X, D)`` at each context size in ``ns``.

    Implements the verification of {prf:ref}`thm-pi-information-gap`. For each task:
    draw ``G``, one query ``(x, y)`` and a context of ``max(ns)`` labelled points whose
    first ``n`` points form ``D_n`` (nested contexts: common random numbers across ``n``).
    The contexts are drawn through their exact sufficient statistics (class counts are
    binomial, class sums normal, centred sums of squares ``c sigma^2 chi^2``), so the cost
    does not grow with ``n``.

    Two estimators of the gap are recorded per task, from the same draws:

    * **KL estimator** (label averaged out exactly given ``(x, G)``):
      ``KL(p(.|x,G) || p(.|x,D_n))``, i.e. ``I(Y; G | X, D_n)`` of the theorem;
    * **sampled-label estimator**: the query's drawn label ``y`` scored by both exact
      predictors, ``-log p(y|x,D_n)`` and ``-log p(y|x,G)``, whose means are ``R_D`` and
      ``R_G`` as defined ({prf:ref}`def-pi-bayes-risks`), so ``R_D - R_G`` is estimated
      without using the KL.

    Their per-task difference ``check = (-log p(y|x,D_n) + log p(y|x,G)) - KL`` has mean 0
    for *any* predictor in place of ``p(y|x,D_n)``, since ``y`` is drawn from ``p(.|x,G)``: it
    checks the simulation, not the posterior (a consistency check).

    **Calibration of the context posterior** (what part 1 of the theorem rests on:
    ``p(y|x,D) = E[p(y|x,G) | x, D]``). Tasks are drawn from the prior, so given ``(x, D_n)``
    the drawn label has law ``p(.|x,D_n)`` exactly when the posterior predictive is right.
    Two per-task statistics then have mean 0: the residual ``y - p(1|x,D_n)`` (``calib``) and
    the log-loss minus the predictive's own entropy, ``-log p(y|x,D_n) - H(p(.|x,D_n))``
    (``calib_ll``). A wrong ``p(.|x,D)`` (a shifted logit, a wrong posterior) moves them.

    Returns a dict with ``ns``, ``tasks``; ``gap`` (KL means), ``gap_cov`` (covariance of
    the KL means across ``ns``), ``gap_se``; ``R_D``, ``R_D_se`` (sampled-label, per ``n``),
    ``R_G``, ``R_G_se`` (sampled-label); ``gap_sampled``, ``gap_sampled_se`` (paired
    ``R_D - R_G``); ``check``, ``check_se`` (mean and SE of the paired difference of the two
    estimators); ``H_G`` (the mean entropy of ``p(.|x,G)``, the label-averaged ``R_G``);
    ``calib``, ``calib_se``, ``calib_ll``, ``calib_ll_se`` (per ``n``: means and SEs of the two
    calibration statistics).
    """
    ns = np.asarray(ns)
    if ns.ndim != 1 or ns.size == 0 or not np.issubdtype(ns.dtype, np.integer) or ns.min() < 1 \
            or np.any(np.diff(ns) <= 0):
        raise ValueError(f"ns must be a strictly increasing sequence of integers >= 1, got {ns!r}")
    tasks = _check_size("tasks", tasks)
    chunk = _check_size("chunk", chunk)
    G, d = ns.size, prior.d
    steps = np.diff(np.concatenate([[0], ns]))
    s_gap = np.zeros(G)
    s_gap2 = np.zeros((G, G))
    s_rg = s_rg2 = s_hg = 0.0
    s_rd = np.zeros(G)
    s_rd2 = np.zeros(G)
    s_ds = np.zeros(G)
    s_ds2 = np.zeros(G)
    s_ck = np.zeros(G)
    s_ck2 = np.zeros(G)
    s_ca = np.zeros(G)
    s_ca2 = np.zeros(G)
    s_cl = np.zeros(G)
    s_cl2 = np.zeros(G)
    done = 0
    while done < tasks:
        t = min(chunk, tasks - done)
        mu, var = sample_generators(prior, t, rng)
        yq = (rng.random(t) < prior.anomaly_rate).astype(np.int64)
        xq = mu + np.sqrt(prior.scales[yq][:, None] * var) * rng.standard_normal((t, d))
        lp_g = label_logprobs_given_generator(prior, mu, var, xq)
        h_g = entropy(lp_g)
        rows = np.arange(t)
        nll_g = -lp_g[rows, yq]
        nll_d = np.empty((t, G))
        counts = np.zeros((t, 2))
        means = np.zeros((t, 2, d))
        m2 = np.zeros((t, 2, d))
        kl = np.empty((t, G))
        ca = np.empty((t, G))
        cl = np.empty((t, G))
        for gi, step in enumerate(steps):
            n1 = rng.binomial(step, prior.anomaly_rate, size=t).astype(float)
            inc = np.stack([step - n1, n1], axis=1)  # (t, 2)
            for c in (0, 1):
                m = inc[:, c][:, None]
                sd = np.sqrt(prior.scales[c] * var)
                mean_b = mu + sd / np.sqrt(np.maximum(m, 1.0)) * rng.standard_normal((t, d))
                dof = np.maximum(m - 1.0, 0.0)
                chi2 = np.where(dof > 0, rng.chisquare(np.maximum(dof, 1.0) * np.ones((t, d))), 0.0)
                m2_b = prior.scales[c] * var * chi2
                cnt, mn, mm = _merge(counts[:, c][:, None], means[:, c], m2[:, c], m, mean_b, m2_b)
                counts[:, c] = cnt[:, 0]
                means[:, c] = mn
                m2[:, c] = mm
            post = posterior_from_class_stats(prior, counts, means, m2)
            lp_d = label_logprobs_given_context(prior, post, xq)
            kl[:, gi] = bernoulli_kl(lp_g, lp_d)
            nll_d[:, gi] = -lp_d[rows, yq]
            ca[:, gi] = yq - np.exp(lp_d[:, 1])
            cl[:, gi] = nll_d[:, gi] - entropy(lp_d)
        ds = nll_d - nll_g[:, None]  # sampled-label estimate of R_D - R_G, per task
        ck = ds - kl  # difference of the two estimators, per task
        s_gap += kl.sum(axis=0)
        s_gap2 += kl.T @ kl
        s_rg += nll_g.sum()
        s_rg2 += (nll_g ** 2).sum()
        s_hg += h_g.sum()
        s_rd += nll_d.sum(axis=0)
        s_rd2 += (nll_d ** 2).sum(axis=0)
        s_ds += ds.sum(axis=0)
        s_ds2 += (ds ** 2).sum(axis=0)
        s_ck += ck.sum(axis=0)
        s_ck2 += (ck ** 2).sum(axis=0)
        s_ca += ca.sum(axis=0)
        s_ca2 += (ca ** 2).sum(axis=0)
        s_cl += cl.sum(axis=0)
        s_cl2 += (cl ** 2).sum(axis=0)
        done += t
    gap = s_gap / tasks
    cov = (s_gap2 / tasks - np.outer(gap, gap)) * tasks / max(tasks - 1, 1) / tasks
    rg = s_rg / tasks
    rd = s_rd / tasks
    dsm = s_ds / tasks
    ckm = s_ck / tasks

    def _se(s2, m):
        return np.sqrt(np.maximum(s2 / tasks - m ** 2, 0.0) / max(tasks - 1, 1))

    return {
        "ns": ns, "tasks": tasks, "gap": gap, "gap_cov": cov, "gap_se": np.sqrt(np.diag(cov)),
        "R_G": rg, "R_G_se": float(_se(s_rg2, rg)), "H_G": s_hg / tasks,
        "R_D": rd, "R_D_se": _se(s_rd2, rd),
        "gap_sampled": dsm, "gap_sampled_se": _se(s_ds2, dsm),
        "check": ckm, "check_se": _se(s_ck2, ckm),
        "calib": s_ca / tasks, "calib_se": _se(s_ca2, s_ca / tasks),
        "calib_ll": s_cl / tasks, "calib_ll_se": _se(s_cl2, s_cl / tasks),
    }


def asymptotic_gap_constant(prior: GaussianAnomalyPrior, samples: int, rng: np.random.Generator):
    """The constant ``C`` in ``I(Y; G | X, D_n) = C / n + o(1/n)``, by Monte Carlo.

    Implements the rate of {prf:ref}`thm-pi-information-gap`:
    ``C = (1/2) E[ p(1-p) grad(eta)^T 𝓘^{-1} grad(eta) ]`` where ``eta`` is the log-odds
    of ``p(y=1|x,G)``, ``𝓘`` the Fisher information of one labelled context point about
    ``(mu_j, sigma_j^2)``, and ``p = p(y=1|x,G)``. In standardised coordinates
    ``z_j = (x_j - mu_j)/sigma_j`` this is
    ``C = (1/2) E[ p(1-p) sum_j a^2 (4 z_j^2 / wbar + 2 z_j^4) ]`` with
    ``a = (1 - 1/gamma)/2`` and ``wbar = 1 - pi + pi/gamma``: it does not depend on
    ``(m0, k0, a0, b0)``. Returns ``(C, standard error)``.
    """
    samples = _check_size("samples", samples)
    y = (rng.random(samples) < prior.anomaly_rate).astype(np.int64)
    z = np.sqrt(prior.scales[y])[:, None] * rng.standard_normal((samples, prior.d))
    zero = np.zeros_like(z)
    lp = label_logprobs_given_generator(prior, zero, np.ones_like(z), z)
    p = np.exp(lp[:, 1])
    a = 0.5 * (1.0 - 1.0 / prior.inflation)
    wbar = 1.0 - prior.anomaly_rate + prior.anomaly_rate / prior.inflation
    term = 0.5 * p * (1.0 - p) * (a ** 2 * (4.0 * z ** 2 / wbar + 2.0 * z ** 4)).sum(axis=1)
    return float(term.mean()), float(term.std(ddof=1) / np.sqrt(samples))


def fit_loglog_slope(ns, means, cov, n_min: int):
    """Least-squares slope of ``log gap`` on ``log n`` over ``n >= n_min``, with its standard error.

    The error propagates the full covariance of the Monte Carlo means across ``n``
    (nested contexts make them correlated) through the delta method:
    ``Var(log g_k, log g_l) = cov_kl / (g_k g_l)``. Returns ``(slope, se, intercept)``.
    """
    ns = np.asarray(ns, dtype=float)
    means = np.asarray(means, dtype=float)
    sel = ns >= n_min
    if sel.sum() < 2:
        raise ValueError(f"n_min must leave at least two context sizes, got n_min={n_min!r}")
    if np.any(means[sel] <= 0):
        raise ValueError("means must be > 0 on the fitted range")
    lx = np.log(ns[sel])
    ly = np.log(means[sel])
    xc = lx - lx.mean()
    c = xc / (xc ** 2).sum()  # slope = c @ ly
    slope = float(c @ ly)
    J = c / means[sel]
    var = float(J @ np.asarray(cov)[np.ix_(sel, sel)] @ J)
    intercept = float(ly.mean() - slope * lx.mean())
    return slope, float(np.sqrt(max(var, 0.0))), intercept


def fit_two_term(ns, means, cov, n_min: int):
    """Fit ``gap(n) = C / n + B / n^2`` on ``n >= n_min`` by least squares on ``n * gap = C + B / n``.

    The second term is the next order of the expansion behind
    {prf:ref}`thm-pi-information-gap`; ``C`` is to be compared with
    :func:`asymptotic_gap_constant`. Standard errors propagate the full covariance of the
    Monte Carlo means. Returns ``(C, C_se, B, B_se)``.
    """
    ns = np.asarray(ns, dtype=float)
    sel = ns >= n_min
    if sel.sum() < 2:
        raise ValueError(f"n_min must leave at least two context sizes, got n_min={n_min!r}")
    X = np.stack([np.ones(sel.sum()), 1.0 / ns[sel]], axis=1)
    L = np.linalg.pinv(X)  # (2, k): coefficients = L @ (n * gap)
    target = ns[sel] * np.asarray(means, dtype=float)[sel]
    coef = L @ target
    A = L * ns[sel][None, :]
    V = A @ np.asarray(cov)[np.ix_(sel, sel)] @ A.T
    return float(coef[0]), float(np.sqrt(max(V[0, 0], 0.0))), float(coef[1]), float(np.sqrt(max(V[1, 1], 0.0)))


def asymptotic_gap_bound(prior: GaussianAnomalyPrior) -> float:
    """A closed-form bound ``C <= c_1 d`` on the constant of :func:`asymptotic_gap_constant`.

    Uses ``p(1-p) <= 1/4`` and the moments of the standardised query,
    ``E z^2 = 1 - pi + pi gamma`` and ``E z^4 = 3 (1 - pi + pi gamma^2)``::

        C <= (d / 8) a^2 (4 E z^2 / wbar + 2 E z^4).

    It makes the ``O(d/n)`` rate of {prf:ref}`thm-pi-information-gap` explicit.
    """
    pi, gamma = prior.anomaly_rate, prior.inflation
    a = 0.5 * (1.0 - 1.0 / gamma)
    wbar = 1.0 - pi + pi / gamma
    ez2 = 1.0 - pi + pi * gamma
    ez4 = 3.0 * (1.0 - pi + pi * gamma ** 2)
    return prior.d / 8.0 * a ** 2 * (4.0 * ez2 / wbar + 2.0 * ez4)
