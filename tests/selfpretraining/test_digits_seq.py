"""The image task: the bundled digits as length-64 sequences of 16 grey levels."""

import numpy as np
import pytest

from blindspots.selfpretraining import digits_seq as D


def test_sequences_are_the_images_row_by_row_with_16_levels():
    images, labels = D.digit_images()
    seqs = D.to_sequences(images)
    assert seqs.shape == (1797, 64) and seqs.min() == 0 and seqs.max() == 15
    assert np.array_equal(seqs[5].reshape(8, 8), images[5])
    assert set(np.unique(labels)) == set(range(10))
    from sklearn.datasets import load_digits
    raw = load_digits().images.astype(int)
    assert np.array_equal(images, np.minimum(raw, 15))  # only 16 -> 15 changes


def test_upsampled_variant_repeats_pixels():
    images, _ = D.digit_images()
    big = D.to_sequences(images[:3], upsample=2).reshape(3, 16, 16)
    assert np.array_equal(big[:, ::2, ::2], images[:3]) and np.array_equal(big[:, 1::2, 1::2], images[:3])
    with pytest.raises(ValueError, match="upsample"):
        D.to_sequences(images, upsample=0)


def test_split_is_seeded_disjoint_and_complete():
    x_tr, y_tr, x_te, y_te = D.digit_split(297, np.random.default_rng(0))
    assert len(x_te) == 297 and len(x_tr) == 1500
    assert not {r.tobytes() for r in x_tr} & {r.tobytes() for r in x_te}  # the 1797 images are distinct
    again = D.digit_split(297, np.random.default_rng(0))
    assert np.array_equal(again[2], x_te)
    with pytest.raises(ValueError, match="n_test"):
        D.digit_split(1797, np.random.default_rng(0))
