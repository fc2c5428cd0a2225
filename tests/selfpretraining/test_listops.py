"""The ListOps generator follows the LRA rules; its labels are the values of the expressions."""

import numpy as np
import pytest

from blindspots.selfpretraining import listops as L

PAD = 16


@pytest.mark.parametrize("expr, value", [
    ("[MAX 2 9 [MIN 4 7 ] 0 ]", 9),
    ("[MIN 3 [MAX 8 1 ] 5 ]", 3),
    ("[SM 5 6 7 ]", 8),                      # 18 mod 10
    ("[MED 1 2 3 4 ]", 2),                   # int(2.5): LRA's int(np.median(...))
    ("[MED 3 8 ]", 5),                       # int(5.5)
    ("[MED 9 1 5 ]", 5),
    ("[SM [MAX 9 9 ] [MIN 9 3 ] ]", 2),      # 12 mod 10
    ("( ( ( [MAX 2 ) 9 ) ] )", 9),           # the tuple brackets of LRA's text files are ignored
    ("7", 7),
])
def test_evaluator_on_hand_written_expressions(expr, value):
    assert L.evaluate_tokens(expr) == value


def test_tree_and_token_evaluators_agree_and_lengths_count_tokens():
    rng = np.random.default_rng(0)
    task = L.ListOpsTask(min_length=1, max_length=400, max_depth=5, max_args=4)
    for _ in range(300):
        tree = L.sample_tree(rng, task)
        toks = L.tree_tokens(tree)
        assert L.evaluate(tree) == L.evaluate_tokens(toks)
        n_ops = sum(t in L.OPERATORS for t in toks)
        assert toks.count(L.CLOSE) == n_ops  # each operator opens once and closes once


def test_labels_match_the_evaluator_and_lengths_stay_in_the_window():
    task = L.ListOpsTask(min_length=20, max_length=60, max_depth=5, max_args=5)
    x, y, toks = L.sample_listops(300, np.random.default_rng(1), task, pad_id=PAD)
    lengths = np.array([len(t) for t in toks])
    assert lengths.min() >= 20 and lengths.max() <= 60
    assert np.array_equal((x != PAD).sum(1), lengths) and x.shape == (300, 60)
    assert all(L.evaluate_tokens(t) == label for t, label in zip(toks, y))
    inv = {v: k for k, v in L.TOKEN_IDS.items()}
    assert all([inv[i] for i in row[row != PAD]] == t for row, t in zip(x, toks))
    assert set(np.unique(y)) <= set(range(10)) and len(set(map(tuple, toks))) == 300  # distinct


def test_leaf_probability_and_arity_follow_the_rules():
    rng = np.random.default_rng(2)
    task = L.ListOpsTask(min_length=1, max_length=200, max_depth=3, max_args=4)
    roots = [L.sample_tree(rng, task) for _ in range(4000)]
    leaf_share = np.mean([isinstance(t, int) for t in roots])
    assert abs(leaf_share - L.LEAF_PROB) < 4 * np.sqrt(0.75 * 0.25 / 4000)
    arities = [len(t[1]) for t in roots if not isinstance(t, int)]
    assert set(arities) == {2, 3, 4}
    # depth 3 is the maximum: grandchildren are always leaves
    for t in roots:
        if not isinstance(t, int):
            for c in t[1]:
                if not isinstance(c, int):
                    assert all(isinstance(g, int) for g in c[1])


def test_feasible_lengths_by_hand():
    assert L.feasible_lengths(2, 3, 100) == {1, 4, 5}
    assert L.feasible_lengths(3, 2, 100) == {1, 4, 7, 10}
    assert L.max_tree_length(3, 2) == 10 and L.max_tree_length(10, 10) < 2 * 10 ** 9


def test_clear_errors_for_impossible_configurations():
    with pytest.raises(ValueError, match="max_args must be >= 2"):
        L.ListOpsTask(max_args=1)
    with pytest.raises(ValueError, match="no tree"):
        L.ListOpsTask(min_length=500, max_length=2000, max_depth=3, max_args=5)  # at most 2 + 5 * 7 = 37 tokens
    with pytest.raises(ValueError, match="no tree"):
        L.ListOpsTask(min_length=2, max_length=3, max_depth=4, max_args=4)  # lengths 2 and 3 never occur
    with pytest.raises(ValueError, match="min_length <= max_length"):
        L.ListOpsTask(min_length=50, max_length=40)


def test_no_train_test_overlap_and_seeded():
    from blindspots.selfpretraining import mini_lra
    sizes = dict(n_train=150, n_test=60, listops_min_length=20, listops_max_length=60, listops_max_depth=5,
                 listops_max_args=5)
    a = mini_lra.task_data("listops", sizes, 3)
    b = mini_lra.task_data("listops", sizes, 3)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not {r.tobytes() for r in a["x_train"]} & {r.tobytes() for r in a["x_test"]}


def test_recursive_evaluator_agrees_with_the_stack_evaluator():
    rng = np.random.default_rng(7)
    task = L.ListOpsTask(min_length=1, max_length=400, max_depth=6, max_args=6)
    for _ in range(500):
        toks = L.tree_tokens(L.sample_tree(rng, task))
        assert L.evaluate_recursive(toks) == L.evaluate_tokens(toks)
    assert L.evaluate_recursive("[MED 3 8 ]".split()) == 5 and L.evaluate_recursive("[SM 9 9 9 ]".split()) == 7


def test_fixed_root_operator():
    """root_operators fixes the root's operator; labels still match the evaluator, lengths the window."""
    task = L.ListOpsTask(min_length=10, max_length=60, max_depth=3, max_args=6, root_operators=("[SM",))
    x, y, toks = L.sample_listops(300, np.random.default_rng(2), task, pad_id=16)
    assert all(t[0] == "[SM" for t in toks)
    assert all(L.evaluate_tokens(t) == label for t, label in zip(toks, y))
    assert all(10 <= len(t) <= 60 for t in toks)
    with pytest.raises(ValueError, match="root_operators"):
        L.ListOpsTask(root_operators=("[AND",))
