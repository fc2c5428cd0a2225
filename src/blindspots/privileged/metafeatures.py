"""PIQL's meta-features: per-feature moments and quantiles of a dataset.

Implements {prf:ref}`def-pi-meta-features`, the weak privileged information of
{cite}`ding2026piql`: for each feature (column) of a dataset, nine statistics

==========  ==================================================================
name        convention
==========  ==================================================================
mean        sample mean
std         population standard deviation (``ddof=0``, as ``numpy.std``)
skewness    Fisher-Pearson ``g1 = m3 / m2^(3/2)`` (biased; ``scipy.stats.skew``)
kurtosis    excess kurtosis ``g2 = m4 / m2^2 - 3`` (Fisher, biased;
            ``scipy.stats.kurtosis``)
q10 ... q90 quantiles at 10, 25, 50, 75, 90 % with numpy's default linear
            interpolation (``numpy.quantile(..., method="linear")``)
==========  ==================================================================

where ``m_k`` are central sample moments with divisor ``n``. A constant
feature (``m2 = 0``) has skewness and kurtosis defined as 0 (scipy returns NaN).

The function is vectorised over leading axes, so a batch of datasets of shape
``(..., n, d)`` gives meta-features of shape ``(..., d, 9)``. The training
chapters use this same function.
"""

from __future__ import annotations

import numpy as np

META_FEATURE_NAMES: tuple[str, ...] = (
    "mean", "std", "skewness", "kurtosis", "q10", "q25", "q50", "q75", "q90",
)
QUANTILES: tuple[float, ...] = (0.10, 0.25, 0.50, 0.75, 0.90)


def meta_features(data: np.ndarray, *, axis: int = -2) -> np.ndarray:
    """Nine meta-features per feature, stacked on a new last axis.

    Parameters
    ----------
    data : array of shape ``(..., n, d)``: ``n`` points of ``d`` features (for the
        default ``axis=-2``), finite, ``n >= 1``. A 1-d array is one feature.
    axis : the axis that indexes points.

    Returns
    -------
    Array of shape ``data.shape`` with ``axis`` removed and a last axis of length 9,
    ordered as :data:`META_FEATURE_NAMES`.
    """
    x = np.asarray(data, dtype=float)
    if x.ndim == 0:
        raise ValueError("data must have at least one axis (points), got a scalar")
    if x.ndim == 1:
        axis = 0
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"axis must lie in [{-x.ndim}, {x.ndim - 1}] for data of {x.ndim} dims, got {axis}")
    if x.shape[axis] < 1:
        raise ValueError(f"data must hold at least one point along axis {axis}, got 0")
    if not np.all(np.isfinite(x)):
        raise ValueError("data must be finite (no NaN or inf)")
    x = np.moveaxis(x, axis, -1)  # (..., d, n)
    mean = x.mean(axis=-1)
    dev = x - mean[..., None]
    m2 = (dev ** 2).mean(axis=-1)
    m3 = (dev ** 3).mean(axis=-1)
    m4 = (dev ** 4).mean(axis=-1)
    # Relative tolerance for "constant": round-off of the mean leaves m2 ~ eps^2 * mean^2.
    scale2 = np.maximum(mean ** 2, np.finfo(float).tiny)
    flat = m2 <= (64 * np.finfo(float).eps) ** 2 * scale2
    safe = np.where(flat, 1.0, m2)
    skew = np.where(flat, 0.0, m3 / safe ** 1.5)
    kurt = np.where(flat, 0.0, m4 / safe ** 2 - 3.0)
    q = np.quantile(x, QUANTILES, axis=-1)  # (5, ..., d)
    q = np.moveaxis(q, 0, -1)
    return np.concatenate([np.stack([mean, np.sqrt(m2), skew, kurt], axis=-1), q], axis=-1)
