"""Training the mode weight: population gradient descent, minibatch SGD, and what low-visibility mass costs.

The trainable model is the witness family ``q_lam`` of {prf:ref}`def-masked-witness-family` with
``lam = sigmoid(alpha)``; only the scalar ``alpha`` is trained. Every masked conditional comes from the same
joint ``q_lam``, so for a masked example ``(x, V)`` with mode ``z = 1{S(x) > 0}`` the loss is

    l(alpha; x, V) = -log q_lam(x_K | x_V)
                   = -[z log lam + (1 - z) log(1 - lam)] + log(lam h+(x_V) + (1 - lam) h-(x_V)) + const,

and its derivative is ``dl/dalpha = omega_{V,lam}(x_V) - z`` with ``logit omega_{V,lam} = alpha + log h+ - log h-``
(the model's posterior of the + mode given the visible block). Its mean over ``x ~ p`` is the derivative of the
schedule discrepancy, ``E[omega_{V,lam} - omega_V] = dD_mu/dalpha``, and near the truth it is ``U_mu (alpha - logit w)``:
gradient flow halves ``|lam - w|`` in time ``ln 2 / (eta U_mu)`` ({prf:ref}`prop-masked-gd-half-time`).

The per-example excess loss ``X = log p(x_K|x_V) - log q_lam(x_K|x_V)`` is, given ``x_V``, a two-point variable:
``log(omega/omega_lam)`` with probability ``omega`` and ``log((1-omega)/(1-omega_lam))`` otherwise. Its mean is
``D_mu(lam)`` and its exact second moment is :func:`excess_loss_moments`; ``n* = Var X / (E X)^2`` is the number of
examples needed to see the discrepancy at one standard error ({prf:ref}`prop-masked-detection-cost`).

Everything here is numpy. Sampling uses the spins' counts only: under ``p^+`` of law P, the visible and hidden
plus-counts are independent binomials conditioned on ``S > 0`` (rejection), which is exactly the law of the
counts of a uniformly placed visible block of a product law conditioned on its total.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln, logsumexp

from . import exact
from .exact import _sigmoid  # the same overflow-safe logistic the engine uses
from .laws import Law, ProductLaw, check_m, check_N, check_unit
from .schedules import Schedule

__all__ = [
    "PREDICTED_ERROR_SLOPE", "SLOPE_BAND", "BLIND_MIN_ERROR", "RECOVERY_MAX_ERROR", "CONFIDENCE", "MC_Z",
    "model_log_odds", "example_loss", "example_gradient", "population_gradient", "predicted_half_time",
    "halving_time_interval", "population_gd", "GDRuns", "sample_counts", "sgd_seed", "error_slope",
    "excess_loss_moments", "ExcessMoments", "detection_cost", "detection_cost_interval", "raw_loss_moments",
    "mixture_loss_variance", "simulate_losses", "predicted_error_slope",
]

#: Predicted slope of log(final error) against log(pi) for SGD with low-visibility mass pi (error ~ pi^-1/2).
PREDICTED_ERROR_SLOPE = -0.5
#: Criterion fixed before the runs: the bootstrap interval of the fitted slope lies inside this band.
SLOPE_BAND = (-0.65, -0.35)
#: Criterion fixed before the runs: a blind schedule leaves the mean final |lam - w| above this.
BLIND_MIN_ERROR = 0.1
#: Criterion fixed before the runs: with the largest boost the mean final |lam - w| stays below this.
RECOVERY_MAX_ERROR = 0.05
#: Two-sided confidence of every interval over seeds (t intervals and bootstrap percentiles).
CONFIDENCE = 0.95
#: z-value of Monte Carlo checks against exact moments (two-sided 6e-5 each; Bonferroni-safe for a few dozen checks).
MC_Z = 4.0


def predicted_error_slope() -> float:
    """The predicted slope ``-1/2`` of ``log |lam_hat - w|`` against ``log pi`` (Fisher information ``~ pi U_s``)."""
    return PREDICTED_ERROR_SLOPE


# --------------------------------------------------------------------------
# model, loss and gradients
# --------------------------------------------------------------------------

def _softplus(x):
    x = np.asarray(x, dtype=float)
    return np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x)))


def model_log_odds(law: Law, N: int, m: int) -> np.ndarray:
    """``log h+(a) - log h-(a)``, ``a = 0..m``: the log-likelihood ratio of the modes given ``a`` visible plus-ones.

    The model's posterior logit is ``alpha + model_log_odds[a]``; it does not involve the true weight ``w``.
    """
    lh = exact.log_mode_weights(law, check_N(N), check_m(m, N))
    with np.errstate(invalid="ignore"):
        return lh - lh[::-1]


def example_loss(alpha, log_hp, log_hm, z):
    """The ``alpha``-dependent part of ``-log q_lam(x_K | x_V)`` (log domain, no overflow).

    ``-[z log lam + (1-z) log(1-lam)] + log(lam h+ + (1-lam) h-)`` with ``lam = sigmoid(alpha)``.
    """
    alpha = np.asarray(alpha, dtype=float)
    z = np.asarray(z, dtype=float)
    log_lam, log_1m = -_softplus(-alpha), -_softplus(alpha)
    mix = np.logaddexp(log_lam + log_hp, log_1m + log_hm)
    return -(z * log_lam + (1.0 - z) * log_1m) + mix


def example_gradient(alpha, log_odds, z):
    """``d example_loss / d alpha = sigmoid(alpha + log_odds) - z`` (the model's posterior minus the mode)."""
    return _sigmoid(np.asarray(alpha, dtype=float) + log_odds) - np.asarray(z, dtype=float)


def _schedule_tables(law: Law, N: int, schedule: Schedule, w: float):
    ms, wt = schedule.support(N)
    out = []
    for m, mass in zip(ms, wt):
        tab = exact.posterior_table(law, N, int(m), w)
        out.append((float(mass), tab))
    return out


def population_gradient(law: Law, N: int, schedule: Schedule, w: float, alpha) -> np.ndarray:
    """``E_{V~mu, x~p}[sigmoid(alpha + log_odds) - z] = sum_m mu(m) E_r[sigmoid(l_r + t) - sigmoid(l_r)]``,
    ``t = alpha - logit w``: the derivative of ``D_mu(sigmoid(alpha))`` in ``alpha``.

    Implements the gradient of {prf:ref}`prop-masked-gd-half-time`.
    """
    w = check_unit("w", w)
    alpha = np.atleast_1d(np.asarray(alpha, dtype=float))
    t = alpha - math.log(w / (1.0 - w))
    g = np.zeros_like(t)
    for mass, tab in _schedule_tables(law, N, schedule, w):
        p = np.exp(tab.log_prob)
        b = tab.beta
        g += mass * ((_sigmoid(tab.logit[:, None] + t[None, :]) - b[:, None]) * p[:, None]).sum(axis=0)
    return g


# --------------------------------------------------------------------------
# population gradient descent: half-times
# --------------------------------------------------------------------------

def predicted_half_time(eta: float, u_eff) -> np.ndarray | float:
    """``ln 2 / (eta U_eff)``: steps for gradient descent to halve ``|lam - w|`` near the truth.

    Implements {prf:ref}`prop-masked-gd-half-time`.
    """
    if not eta > 0:
        raise ValueError(f"eta must be > 0, got {eta!r}")
    return math.log(2.0) / (eta * np.asarray(u_eff, dtype=float))


def _phi_minus(x):
    x = np.asarray(x, dtype=float)
    return np.where(x > 0, -np.expm1(-x) / np.where(x > 0, x, 1.0), 1.0)


def _phi_plus(x):
    x = np.asarray(x, dtype=float)
    return np.where(x > 0, np.expm1(x) / np.where(x > 0, x, 1.0), 1.0)


def _logit_gap(w: float, lam) -> np.ndarray:
    lam = np.asarray(lam, dtype=float)
    return np.log(lam / (1 - lam)) - math.log(w / (1 - w))


def halving_time_interval(w: float, delta0: float, eta: float, u_eff, side: float = 1.0):
    """Interval ``(lo, hi)`` for (measured half-time) / ``predicted_half_time(eta, U)``.

    The half-time is the (log-interpolated) number of steps from ``|lam - w| = delta0`` to ``delta0 / 2``,
    approached from ``side`` (+1 from above, -1 from below). With ``t = logit lam - logit w`` the gradient is
    ``kappa t`` with ``kappa`` between ``U phi_-(|t|)`` and ``U phi_+(|t|)``, ``phi_-(x) = (1 - e^-x)/x``,
    ``phi_+(x) = (e^x - 1)/x`` (``sigmoid'`` changes by at most ``e^|u|`` over a shift ``u``). One step
    multiplies ``t`` by ``1 - eta kappa``; ``-log(1 - y)`` lies in ``[y, y / (1 - y)]``. Over the window
    ``|t| <= 2 |t_a|`` (a step at most halves ``t`` while ``eta kappa <= 1/2``) the log-interpolated time from
    ``t_a`` to ``t_b`` lies in ``[L (1 - y+)/y+, L / y-]`` with ``L = log(t_a / t_b)``, ``y+- = eta U phi_+-``.
    (The book writes ``delta0`` as ``Delta lambda_0``, ``kappa`` as ``bar kappa``, ``phi_+-`` as ``psi_+-`` and
    ``y+-`` as ``k_+-``, and spells ``L`` out.)
    Implements the bound of {prf:ref}`prop-masked-gd-half-time`.
    """
    w = float(check_unit("w", w))
    if not 0 < delta0 < min(w, 1 - w):
        raise ValueError(f"delta0 must lie in (0, min(w, 1-w)), got {delta0!r}")
    u = np.asarray(u_eff, dtype=float)
    ta = abs(float(_logit_gap(w, w + side * delta0)))
    tb = abs(float(_logit_gap(w, w + side * delta0 / 2)))
    L = math.log(ta / tb)
    x = 2.0 * ta
    yp, ym = eta * u * _phi_plus(x), eta * u * _phi_minus(x)
    if np.any(yp > 0.5):
        raise ValueError(f"eta * U_eff * phi_+ must be <= 1/2 for the interval, got {float(np.max(yp))!r}")
    pred = math.log(2.0) / (eta * u)
    return L * (1.0 - yp) / yp / pred, L / ym / pred


@dataclass(frozen=True)
class GDRuns:
    """Population gradient descent runs (one per row of the inputs).

    ``half_time``: log-interpolated steps from ``|lam - w| = delta0`` to ``delta0/2`` (NaN if censored: not reached
    within ``steps``); ``side``: +1 if approached from above; ``final_gap``: ``|lam - w|`` after the run.
    """

    half_time: np.ndarray
    side: np.ndarray
    final_gap: np.ndarray
    censored: np.ndarray
    steps: int


def _crossing(prev_log, cur_log, level, k):
    """Fractional step at which log|t| crosses ``level`` between steps ``k-1`` and ``k``."""
    return (k - 1) + (prev_log - level) / (prev_log - cur_log)


def population_gd(law: Law, N: int, w: float, schedules: list[Schedule], lam0, eta: float, steps: int,
                  delta0: float, progress: bool = False) -> GDRuns:
    """Population gradient descent on ``alpha`` for each ``(schedule, lam0)`` pair, vectorised over runs.

    Each step ``alpha <- alpha - eta * population_gradient``; a run stops once it has halved ``|lam - w|``
    from ``delta0``. The gradient is evaluated from the posterior classes of each visible size (exact, no sampling).
    """
    w = float(check_unit("w", w))
    lam0 = np.asarray(lam0, dtype=float)
    R = len(schedules)
    if lam0.shape != (R,):
        raise ValueError(f"lam0 must have one entry per schedule ({R}), got shape {lam0.shape}")
    cache = {}
    rows = []
    for sch in schedules:
        ms, wt = sch.support(N)
        cls_l, cls_w = [], []
        for m, mass in zip(ms, wt):
            m = int(m)
            if m not in cache:
                cache[m] = exact.posterior_table(law, N, m, w)
            tab = cache[m]
            cls_l.append(tab.logit)
            cls_w.append(mass * np.exp(tab.log_prob))
        rows.append((np.concatenate(cls_l), np.concatenate(cls_w)))
    C = max(r[0].size for r in rows)
    Lg = np.zeros((R, C))
    Wt = np.zeros((R, C))
    for i, (l, wt) in enumerate(rows):
        Lg[i, :l.size], Wt[i, :l.size] = l, wt
    Lg = np.clip(Lg, -745.0, 745.0)
    S0 = _sigmoid(Lg)
    lw = math.log(w / (1 - w))
    t = _logit_gap(w, lam0)
    side = np.sign(lam0 - w)
    ta = np.abs(_logit_gap(w, w + side * delta0))
    tb = np.abs(_logit_gap(w, w + side * delta0 / 2))
    la, lb = np.log(ta), np.log(tb)
    t_start = np.full(R, np.nan)
    t_end = np.full(R, np.nan)
    active = np.arange(R)
    logt = np.log(np.abs(t))
    # a run that starts inside the window has no start crossing: it is censored
    started = logt <= la
    iterator = range(1, steps + 1)
    if progress:
        from tqdm import tqdm  # the console bar: tqdm.auto warns in a notebook without ipywidgets
        iterator = tqdm(iterator, desc="population GD", leave=False, mininterval=1.0)
    for k in iterator:
        if active.size == 0:
            break
        ta_ = t[active]
        g = np.einsum("rc,rc->r", Wt[active], _sigmoid(Lg[active] + ta_[:, None]) - S0[active])
        new = ta_ - eta * g
        t[active] = new
        prev = logt[active]
        cur = np.log(np.abs(new))
        logt[active] = cur
        hit_a = np.isnan(t_start[active]) & ~started[active] & (cur <= la[active])
        idx = active[hit_a]
        t_start[idx] = _crossing(prev[hit_a], cur[hit_a], la[idx], k)
        hit_b = ~np.isnan(t_start[active]) & (cur <= lb[active])
        idx = active[hit_b]
        t_end[idx] = _crossing(prev[hit_b], cur[hit_b], lb[idx], k)
        active = active[~hit_b & ~(started[active])]
    half = t_end - t_start
    lam = _sigmoid(lw + t)
    return GDRuns(half_time=half, side=side, final_gap=np.abs(lam - w), censored=np.isnan(half), steps=steps)


# --------------------------------------------------------------------------
# sampling masked examples (law P)
# --------------------------------------------------------------------------

def sample_counts(rng: np.random.Generator, law: ProductLaw, N: int, w: float, m: np.ndarray):
    """Counts of masked examples ``x ~ p``, visible block of size ``m`` (array), placed uniformly.

    Returns ``(a, t, z)``: visible plus-count, total plus-count, and mode ``z = 1{S > 0}``. Under ``p^+`` the
    visible and hidden counts are independent ``Bin(m, rho)`` and ``Bin(N - m, rho)`` conditioned on
    ``2 (a + j) > N`` (rejection); the ``-`` mode is the mirror image.
    """
    if not isinstance(law, ProductLaw):
        raise ValueError(f"law must be a ProductLaw (law P) for count sampling, got {law!r}")
    m = np.asarray(m, dtype=np.int64)
    rho = law.rho
    a = rng.binomial(m, rho)
    j = rng.binomial(N - m, rho)
    bad = 2 * (a + j) <= N
    while np.any(bad):
        a[bad] = rng.binomial(m[bad], rho)
        j[bad] = rng.binomial(N - m[bad], rho)
        bad = 2 * (a + j) <= N
    z = rng.random(m.shape) < w
    t = np.where(z, a + j, N - (a + j))
    a = np.where(z, a, m - a)
    return a, t, z


# --------------------------------------------------------------------------
# minibatch SGD, one seed
# --------------------------------------------------------------------------

def sgd_seed(seed: int, *, theta: float, N: int, w: float, m_base: int, s: int, pis, lam0_range,
             eta: float, batch: int, steps: int, tail: float, replicas: int, n_val: int,
             val_seed: int = 10_000, progress: bool = False) -> dict:
    """Minibatch SGD on ``alpha`` under ``(1 - pi) delta_{m_base} + pi delta_s`` for every ``pi`` (vectorised).

    Each of ``replicas`` independent chains per ``pi`` starts from ``lam0 ~ U(lam0_range)`` (drawn from the seed),
    takes ``steps`` steps of size ``eta`` on batches of ``batch`` fresh examples, and returns the Polyak-Ruppert
    average of ``alpha`` over the last ``tail`` fraction of steps. Returns per-``pi`` arrays over chains:
    ``error = |sigmoid(alpha_bar) - w|``, ``lam0``, and the excess loss on a fixed validation stream
    (``n_val`` examples per ``pi`` from ``val_seed``, the same for every seed).
    """
    law = ProductLaw(theta)
    pis = np.asarray(pis, dtype=float)
    P, R, B = pis.size, int(replicas), int(batch)
    rng = np.random.default_rng([int(seed), 1])
    lo, hi = lam0_range
    lam0 = lo + (hi - lo) * rng.random((P, R))
    alpha = np.log(lam0 / (1 - lam0))
    odds = {m: np.clip(model_log_odds(law, N, m), -700, 700) for m in (m_base, s)}
    table = np.concatenate([odds[s], odds[m_base]])
    off_base = odds[s].size
    start_avg = int(steps * (1.0 - tail))
    acc = np.zeros((P, R))
    n_acc = 0
    iterator = range(steps)
    if progress:
        from tqdm import tqdm  # the console bar: tqdm.auto warns in a notebook without ipywidgets
        iterator = tqdm(iterator, desc=f"SGD seed {seed}", leave=False, mininterval=1.0)
    shape = (P, R, B)
    for k in iterator:
        boost = rng.random(shape) < pis[:, None, None]
        m = np.where(boost, s, m_base)
        a, _, z = sample_counts(rng, law, N, w, m)
        idx = np.where(boost, a, off_base + a)
        grad = (_sigmoid(alpha[:, :, None] + table[idx]) - z).mean(axis=2)
        alpha = alpha - eta * grad
        if k >= start_avg:
            acc += alpha
            n_acc += 1
    alpha_bar = acc / n_acc
    lam_hat = _sigmoid(alpha_bar)
    # fixed validation stream: excess loss of the averaged model
    vrng = np.random.default_rng([int(val_seed), 2])
    val = np.empty((P, R))
    for i, pi in enumerate(pis):
        sch_m = np.where(vrng.random(n_val) < pi, s, m_base)
        a, _, z = sample_counts(vrng, law, N, w, sch_m)
        lo_ = np.where(sch_m == s, odds[s][np.minimum(a, s)], odds[m_base][np.minimum(a, m_base)])
        for r in range(R):
            val[i, r] = float(np.mean(_excess_from_odds(lo_, z, w, lam_hat[i, r])))
    return {"seed": int(seed), "pis": pis, "error": np.abs(lam_hat - w), "lam_hat": lam_hat, "lam0": lam0,
            "val_excess": val}


def _excess_from_odds(log_odds, z, w: float, lam: float):
    """``X = log p(x_K|x_V) - log q_lam(x_K|x_V)`` from the mode log-odds of ``x_V`` and the mode ``z``."""
    lp = log_odds + math.log(w / (1 - w))
    lq = log_odds + math.log(lam / (1 - lam))
    # log omega - log omega_lam (z = 1), log(1-omega) - log(1-omega_lam) (z = 0)
    A = _softplus(-lq) - _softplus(-lp)
    Bv = _softplus(lq) - _softplus(lp)
    return np.where(z, A, Bv)


def error_slope(pis, errors, n_boot: int, rng: np.random.Generator, confidence: float = CONFIDENCE):
    """OLS slope of ``log RMS error`` against ``log pi`` and its seed-bootstrap percentile interval.

    ``errors`` has shape ``(seeds, len(pis), chains)``; the RMS is over seeds and chains. The bootstrap resamples
    whole seeds (the unit of independence the claims count), ``n_boot`` times.
    """
    pis = np.asarray(pis, dtype=float)
    e = np.asarray(errors, dtype=float)
    if e.ndim != 3 or e.shape[1] != pis.size:
        raise ValueError(f"errors must have shape (seeds, {pis.size}, chains), got {e.shape}")
    if e.shape[0] < 2:
        raise ValueError(f"need at least 2 seeds for a bootstrap, got {e.shape[0]}")
    x = np.log(pis)

    def fit(sample):
        y = 0.5 * np.log(np.mean(sample ** 2, axis=(0, 2)))
        xc = x - x.mean()
        return float(np.sum(xc * (y - y.mean())) / np.sum(xc * xc))

    slope = fit(e)
    n = e.shape[0]
    boots = np.array([fit(e[rng.integers(0, n, n)]) for _ in range(n_boot)])
    q = (1 - confidence) / 2
    return slope, float(np.quantile(boots, q)), float(np.quantile(boots, 1 - q))


# --------------------------------------------------------------------------
# cost of low-visibility mass: moments of the per-example excess loss
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class ExcessMoments:
    """First and second moments of ``X = log p(x_K|x_V) - log q_lam(x_K|x_V)`` under ``V ~ mu, x ~ p``.

    ``mean`` is computed by the two-point formula ``E[omega A + (1-omega) B]`` (not by the engine's kernel);
    ``mean_roundoff`` bounds its floating-point error (the two terms cancel to second order in ``t``).
    """

    mean: float
    second: float
    log_second: float
    mean_roundoff: float

    @property
    def variance(self) -> float:
        return self.second - self.mean ** 2


def excess_loss_moments(law: Law, N: int, schedule: Schedule, w: float, lam: float) -> ExcessMoments:
    """Exact ``E X`` and ``E X^2`` of the per-example excess loss (sum over visible-magnetisation classes).

    Given ``x_V`` (posterior ``omega``, witness posterior ``omega_lam``, ``logit omega_lam = logit omega + t``),
    ``X = A = log(omega/omega_lam)`` with probability ``omega`` and ``X = B = log((1-omega)/(1-omega_lam))``
    otherwise, so ``E[X | x_V] = omega A + (1-omega) B = kl(omega || omega_lam)`` and
    ``E[X^2 | x_V] = omega A^2 + (1-omega) B^2`` (the book writes ``A``, ``B`` as ``X_+``, ``X_-``). The second
    moment is summed in the log domain.
    Implements {prf:ref}`prop-masked-detection-cost`.
    """
    w = float(check_unit("w", w))
    lam = float(check_unit("lam", lam))
    t = float(_logit_gap(w, lam))
    means, abs_terms, logs2 = [], [], []
    for mass, tab in _schedule_tables(law, N, schedule, w):
        fin = np.isfinite(tab.logit)
        l = tab.logit[fin]
        lp = tab.log_prob[fin] + math.log(mass)
        A = _softplus(-l - t) - _softplus(-l)
        B = _softplus(l + t) - _softplus(l)
        lo, l1o = -_softplus(-l), -_softplus(l)
        with np.errstate(divide="ignore"):
            la2 = lo + 2 * np.log(np.abs(A))
            lb2 = l1o + 2 * np.log(np.abs(B))
        logs2.append(np.logaddexp(lp + la2, lp + lb2))
        pw = np.exp(lp)
        means.append(np.sum(pw * (np.exp(lo) * A + np.exp(l1o) * B)))
        abs_terms.append(np.sum(pw * (np.exp(lo) * np.abs(A) + np.exp(l1o) * np.abs(B))))
    log_second = float(logsumexp(np.concatenate(logs2)))
    eps = np.finfo(float).eps
    # each of A, B carries a relative error <= ~4 eps (1 + 1/(1 - e^-|t|)) from the difference of softplus values
    rel = 8.0 * eps * (1.0 + 1.0 / (-math.expm1(-abs(t)))) if t != 0 else 0.0
    return ExcessMoments(mean=float(sum(means)), second=math.exp(log_second), log_second=log_second,
                         mean_roundoff=float(sum(abs_terms)) * rel)


def detection_cost(mean, second):
    """``n* = Var X / (E X)^2 = E X^2 / (E X)^2 - 1``: examples needed to see ``E X`` at one standard error."""
    mean = np.asarray(mean, dtype=float)
    return np.asarray(second, dtype=float) / mean ** 2 - 1.0


def detection_cost_interval(u_mu, w: float, lam):
    """Interval ``(lo, hi)`` for ``n* + 1`` on the witness family: ``4 e^{-+4|t|} / (U_mu t^2)``.

    With ``t = logit lam - logit w``: ``|A| = (1-omega)|t| phi`` and ``|B| = omega |t| phi'`` with ``phi, phi'``
    in ``[e^-|t|, e^|t|]``, so ``E[X^2] = U_mu t^2 [e^{-2|t|}, e^{2|t|}]``; ``kl = int_0^t (t-u) sigmoid'(l+u) du``
    gives ``D_mu = U_mu t^2/2 [e^{-|t|}, e^{|t|}]``. Hence ``n* ~ 4 / (U_mu t^2)``: it scales as ``1/pi`` (through
    ``U_mu ~ pi U_s``) and as ``(lam - w)^-2``. Implements {prf:ref}`prop-masked-detection-cost`.
    """
    w = float(check_unit("w", w))
    t = np.abs(_logit_gap(w, np.asarray(lam, dtype=float)))
    base = 4.0 / (np.asarray(u_mu, dtype=float) * t * t)
    return base * np.exp(-4.0 * t), base * np.exp(4.0 * t)


# --------------------------------------------------------------------------
# raw training loss: mean and variance per visible size, and under a two-point schedule
# --------------------------------------------------------------------------

def _log_config_prob(law: Law, N: int, w: float):
    """``log p(x)`` of one configuration with ``t`` plus-ones, ``t = 0..N`` (law from its log weights)."""
    lw = law.log_weight(N)
    ln = gammaln(N + 1.0) - gammaln(np.arange(N + 1) + 1.0) - gammaln(N - np.arange(N + 1) + 1.0)
    fin = np.isfinite(lw)
    logZ = logsumexp(ln[fin] + lw[fin])
    t = np.arange(N + 1)
    plus = 2 * t - N > 0
    return np.where(plus, math.log(w) + lw - logZ, math.log1p(-w) + lw[::-1] - logZ), lw, logZ


def _log_visible_prob(law: Law, N: int, m: int, w: float) -> np.ndarray:
    """``log p(x_V)`` of one visible configuration with ``a`` plus-ones, by direct summation over hidden counts."""
    _, lw, logZ = _log_config_prob(law, N, w)
    n = N - m
    j = np.arange(n + 1)
    lc = gammaln(n + 1.0) - gammaln(j + 1.0) - gammaln(n - j + 1.0)
    a = np.arange(m + 1)
    G = lc[None, :] + lw[a[:, None] + j[None, :]]
    with np.errstate(invalid="ignore"):
        lhp = logsumexp(G, axis=1) - logZ
    lhm = lhp[::-1]
    return np.logaddexp(math.log(w) + lhp, math.log1p(-w) + lhm)


def raw_loss_moments(law: Law, N: int, m: int, w: float) -> tuple[float, float]:
    """Mean ``H_m`` and variance ``V_m`` of the raw loss ``L = -log p(x_K | x_V)`` at visible size ``m``.

    Exact double sum over the total plus-count ``t`` and the visible plus-count ``a`` (hypergeometric given ``t``),
    independent of the engine's posterior tables. ``H_m`` is the conditional entropy ``H(x_K | x_V)``.
    """
    N = check_N(N)
    m = check_m(m, N)
    w = float(check_unit("w", w))
    lpx, _, _ = _log_config_prob(law, N, w)
    lpv = _log_visible_prob(law, N, m, w)
    t = np.arange(N + 1)[:, None]
    a = np.arange(m + 1)[None, :]
    with np.errstate(invalid="ignore"):
        lhyp = (gammaln(t + 1.0) - gammaln(a + 1.0) - gammaln(t - a + 1.0)
                + gammaln(N - t + 1.0) - gammaln(m - a + 1.0) - gammaln(N - t - m + a + 1.0)
                - (gammaln(N + 1.0) - gammaln(m + 1.0) - gammaln(N - m + 1.0)))
    ok = (a <= t) & (m - a <= N - t)
    ln = gammaln(N + 1.0) - gammaln(t + 1.0) - gammaln(N - t + 1.0)
    logP = np.where(ok, ln + lpx[:, None] + np.where(ok, lhyp, 0.0), -np.inf)
    Pm = np.exp(logP)
    L = np.where(ok, -(lpx[:, None] - lpv[None, :]), 0.0)
    H = float(np.sum(Pm * L))
    V = float(np.sum(Pm * (L - H) ** 2))
    return H, V


def mixture_loss_variance(pi: float, H_base: float, V_base: float, H_s: float, V_s: float) -> tuple[float, float]:
    """Variance of the raw loss under ``(1 - pi) delta_base + pi delta_s`` and its extra term.

    Law of total variance: ``(1 - pi) V_base + pi V_s + pi (1 - pi) (H_s - H_base)^2``; returns
    ``(total, extra)`` with ``extra = pi (1 - pi) (H_s - H_base)^2``, the variance that mixing visible sizes adds.
    """
    if not 0.0 <= pi <= 1.0:
        raise ValueError(f"pi must lie in [0, 1], got {pi!r}")
    extra = pi * (1.0 - pi) * (H_s - H_base) ** 2
    return (1.0 - pi) * V_base + pi * V_s + extra, extra


def simulate_losses(rng: np.random.Generator, law: ProductLaw, N: int, w: float, m_base: int, s: int, pi: float,
                    lam: float, n: int):
    """``n`` masked examples under ``(1 - pi) delta_{m_base} + pi delta_s``: raw losses ``L = -log p(x_K|x_V)`` and
    excess losses ``X = log p(x_K|x_V) - log q_lam(x_K|x_V)``, from sampled counts and the law's weights."""
    m = np.where(rng.random(n) < pi, s, m_base)
    a, t, z = sample_counts(rng, law, N, w, m)
    lpx, lw, logZ = _log_config_prob(law, N, w)
    L = np.empty(n)
    X = np.empty(n)
    for mm in np.unique(m):
        sel = m == mm
        lpv = _log_visible_prob(law, N, int(mm), w)
        lqv = _log_visible_prob(law, N, int(mm), lam)
        lpx_s = lpx[t[sel]]
        L[sel] = -(lpx_s - lpv[a[sel]])
        zz = z[sel]
        # log q(x) - log p(x): the mode's weight changes, the within-mode law does not
        dq = np.where(zz, math.log(lam / w), math.log((1 - lam) / (1 - w)))
        X[sel] = -(dq - (lqv[a[sel]] - lpv[a[sel]]))
    return L, X, m
