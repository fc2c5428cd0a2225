"""PathFinder-lite: the label says whether the marked endpoints are joined by one curve."""

import numpy as np
import pytest

from blindspots.selfpretraining import pathfinder as P


@pytest.mark.parametrize("task", [P.PathFinderTask(), P.PathFinderTask(size=32, path_length=28, n_distractors=4,
                                                                       distractor_length=8)])
def test_label_is_connectivity_of_the_endpoints(task):
    x, y = P.sample_pathfinder(200, np.random.default_rng(0), task)
    assert x.shape == (200, task.size ** 2) and set(np.unique(x)) == {0, 1, 2}
    for seq, label in zip(x, y):
        image = seq.reshape(task.size, task.size)
        assert (image == P.ENDPOINT).sum() == 2
        assert P.endpoints_connected(image, task.link_radius) == bool(label)
    assert 0.35 < y.mean() < 0.65


def test_same_curves_either_label():
    """Given the generator's stream, the images of both labels share every curve pixel; only the marks differ."""
    task = P.PathFinderTask()
    pos, _ = P.sample_image(np.random.default_rng(5), task, label=1)
    neg, _ = P.sample_image(np.random.default_rng(5), task, label=0)
    assert np.array_equal(pos > 0, neg > 0) or ((pos > 0) ^ (neg > 0)).sum() <= 4  # an end may fall in a dash gap


def test_connectivity_on_a_hand_drawn_image():
    img = np.zeros((12, 12), dtype=int)
    img[2, 1] = img[2, 10] = P.ENDPOINT
    img[2, [2, 3, 5, 6, 8, 9]] = P.PATH  # dashed with one-pixel gaps
    assert P.endpoints_connected(img, radius=2)
    assert not P.endpoints_connected(img, radius=1)  # the gaps break 8-connectivity
    img[2, [8, 9]] = 0
    assert not P.endpoints_connected(img, radius=2)


def test_no_train_test_overlap_and_seeded():
    from blindspots.selfpretraining import mini_lra
    sizes = dict(n_train=100, n_test=50, pathfinder_size=16, pathfinder_path_length=14, pathfinder_distractors=2,
                 pathfinder_distractor_length=5)
    a = mini_lra.task_data("pathfinder", sizes, 1)
    b = mini_lra.task_data("pathfinder", sizes, 1)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not {r.tobytes() for r in a["x_train"]} & {r.tobytes() for r in a["x_test"]}


def test_clear_errors():
    with pytest.raises(ValueError, match="size must be >= 12"):
        P.PathFinderTask(size=8)
    with pytest.raises(ValueError, match="separation"):
        P.PathFinderTask(separation=2, dash_off=1)
    with pytest.raises(ValueError, match="path_length"):
        P.PathFinderTask(size=12, path_length=40)


def test_balanced_images_pair_every_offset_across_labels():
    """With balance, each endpoint offset carries as many connected as unconnected images, labels still
    follow connectivity, and the distance shortcut falls to chance (unbalanced it does not)."""
    from blindspots.selfpretraining import gates
    kw = dict(size=12, path_length=8, n_distractors=1, distractor_length=4, dash_off=0, separation=2)
    task = P.PathFinderTask(**kw, balance=True)
    x, y = P.sample_pathfinder(1200, np.random.default_rng(3), task)
    offsets = [P.endpoint_offset(s.reshape(12, 12)) for s in x]
    for off in set(offsets):
        labels = y[[o == off for o in offsets]]
        assert labels.sum() * 2 == len(labels)
    for seq, label in zip(x[:200], y[:200]):
        assert P.endpoints_connected(seq.reshape(12, 12), task.link_radius) == bool(label)
    split = lambda a, b: {"x_train": a[:900], "y_train": b[:900], "x_test": a[900:], "y_test": b[900:]}  # noqa: E731
    balanced = gates.shortcut_accuracy("pathfinder", split(x, y))
    raw = gates.shortcut_accuracy("pathfinder", split(*P.sample_pathfinder(1200, np.random.default_rng(3),
                                                                              P.PathFinderTask(**kw))))
    se = 0.5 / np.sqrt(300)
    assert balanced < 0.5 + 3 * se < raw


def test_balance_needs_an_even_count_and_offsets_are_symmetric():
    with pytest.raises(ValueError, match="n must be even"):
        P.sample_pathfinder(3, np.random.default_rng(0), P.PathFinderTask(balance=True))
    img = np.zeros((12, 12), dtype=int)
    img[1, 2] = img[6, 4] = P.ENDPOINT
    assert P.endpoint_offset(img) == (2, 5) == P.endpoint_offset(img.T)
