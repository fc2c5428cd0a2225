"""Meta-features against numpy and scipy.stats on random data."""

import numpy as np
import pytest
from scipy import stats

from blindspots.privileged.metafeatures import META_FEATURE_NAMES, meta_features


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.standard_t(4, size=(6, 37, 3)) * rng.uniform(0.5, 3, size=3) + rng.normal(size=3)


def test_moments_equal_numpy_and_scipy(data):
    m = meta_features(data)
    assert m.shape == (6, 3, len(META_FEATURE_NAMES))
    np.testing.assert_allclose(m[..., 0], data.mean(axis=1), rtol=1e-13)
    np.testing.assert_allclose(m[..., 1], data.std(axis=1), rtol=1e-13)
    np.testing.assert_allclose(m[..., 2], stats.skew(data, axis=1), rtol=1e-11)
    np.testing.assert_allclose(m[..., 3], stats.kurtosis(data, axis=1), rtol=1e-11)


def test_quantiles_equal_numpy(data):
    q = np.quantile(data, [0.1, 0.25, 0.5, 0.75, 0.9], axis=1)
    np.testing.assert_array_equal(meta_features(data)[..., 4:], np.moveaxis(q, 0, -1))


def test_axis_argument_and_single_feature(data):
    np.testing.assert_allclose(meta_features(np.swapaxes(data, 1, 2), axis=-1), meta_features(data))
    one = data[0, :, 0]
    np.testing.assert_allclose(meta_features(one), meta_features(one[:, None])[0])


def test_constant_feature_has_zero_skewness_and_kurtosis():
    m = meta_features(np.full((9, 2), 7.25))
    np.testing.assert_array_equal(m[:, 2:4], 0.0)
    np.testing.assert_allclose(m[:, [0, 4, 5, 6, 7, 8]], 7.25)


@pytest.mark.parametrize("bad, match", [
    (np.zeros((0, 3)), "at least one point"),
    (np.array([[1.0, np.nan]]), "finite"),
    (np.float64(1.0), "scalar"),
])
def test_bad_input_raises(bad, match):
    with pytest.raises(ValueError, match=match):
        meta_features(bad)


def test_bad_axis_raises(data):
    with pytest.raises(ValueError, match="axis"):
        meta_features(data, axis=5)
