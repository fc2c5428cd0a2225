"""The Image task of the mini Long Range Arena: handwritten digits read as pixel sequences.

LRA's Image task reads CIFAR-10 as a sequence of grey levels, one pixel per token, row by row
(Tay et al. 2021). CIFAR-10 cannot be downloaded here; scikit-learn ships the UCI handwritten
digits (1797 images, 8x8 pixels, intensities 0-16, 10 classes), which are real images. The
sequence has length 64 with 16 grey levels: intensities 15 and 16 share the top level (so the
tokens are 0-15). ``upsample=2`` repeats every pixel in a 2x2 block, an optional 16x16 variant of
length 256. The split into training and test images is a seeded permutation, so no image is in both.

Implements {prf:ref}`def-sp-mini-lra-image`.
"""

from __future__ import annotations

import numpy as np

N_LEVELS = 16
N_CLASSES = 10
SIDE = 8


def digit_images() -> tuple[np.ndarray, np.ndarray]:
    """All 1797 bundled digits as ``(n, 8, 8)`` grey levels in 0-15 and their labels (no download)."""
    from sklearn.datasets import load_digits

    data = load_digits()
    images = np.minimum(data.images.astype(np.int64), N_LEVELS - 1)
    return images, data.target.astype(np.int64)


def to_sequences(images: np.ndarray, upsample: int = 1) -> np.ndarray:
    """Row-major pixel sequences ``(n, (side * upsample) ** 2)``, each pixel repeated ``upsample`` x ``upsample``."""
    if not isinstance(upsample, (int, np.integer)) or upsample < 1:
        raise ValueError(f"upsample must be an integer >= 1, got {upsample!r}")
    big = np.repeat(np.repeat(images, upsample, axis=1), upsample, axis=2)
    return big.reshape(big.shape[0], -1)


def digit_split(n_test: int, rng: np.random.Generator, upsample: int = 1
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(x_train, y_train, x_test, y_test)``: a seeded split of the 1797 digits with ``n_test`` test images."""
    images, labels = digit_images()
    if not 1 <= n_test < len(labels):
        raise ValueError(f"n_test must lie in [1, {len(labels) - 1}], got {n_test}")
    order = rng.permutation(len(labels))
    test, train = order[:n_test], order[n_test:]
    seqs = to_sequences(images, upsample)
    return seqs[train], labels[train], seqs[test], labels[test]
