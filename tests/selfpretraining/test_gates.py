"""Gates and verdicts of Part II's comparisons (blindspots.selfpretraining.gates)."""

import math

import numpy as np
import pytest
import torch
from scipy import stats

from blindspots import claims
from blindspots.selfpretraining import gates, mini_lra, pathfinder, train


def test_unigram_entropy_of_uniform_tokens_is_log_k():
    x = np.tile(np.arange(4), 50)
    assert gates.unigram_entropy(x) == pytest.approx(math.log(4), abs=1e-12)
    assert gates.unigram_entropy(np.append(x, [9] * 30), exclude=(9,)) == pytest.approx(math.log(4), abs=1e-12)
    with pytest.raises(ValueError, match="no id outside exclude"):
        gates.unigram_entropy(np.full(5, 9), exclude=(9,))


def test_held_out_loss_of_a_frequency_predictor_is_the_entropy():
    """A model that predicts every masked token from the token frequencies scores the unigram entropy."""
    rng = np.random.default_rng(0)
    p = np.array([0.5, 0.3, 0.2])
    tokens = torch.as_tensor(rng.choice(3, size=(400, 30), p=p))

    class Frequencies(torch.nn.Module):
        def reconstruct(self, inputs):
            return torch.log(torch.as_tensor(p, dtype=torch.float32)).expand(*inputs.shape, 3)

    loss = gates.held_out_masked_loss(Frequencies(), tokens, mask_id=5, mlm_prob=0.5, pad_id=4, seed=1)
    entropy = gates.unigram_entropy(tokens.numpy())
    n_masked = 0.5 * tokens.numel()
    # the masked tokens are a random half: the sample cross-entropy differs from H by O(sd / sqrt(n_masked))
    sd = float(np.sqrt((p * np.log(p) ** 2).sum() - entropy ** 2))
    assert abs(loss - entropy) < 5 * sd / math.sqrt(n_masked)


def test_plateau_gate_judges_the_worst_seed():
    g = gates.plateau_gate([2.3, 2.35, 2.4], entropy=2.6)
    assert g.passed and g.measured == pytest.approx(0.2)
    assert not gates.plateau_gate([2.3, 2.55], entropy=2.6).passed  # one seed 0.05 below: still on the plateau
    with pytest.raises(ValueError, match="margin"):
        gates.plateau_gate([1.0], 2.0, margin=-1)


def test_shortcut_gate_counts_the_seed_spread():
    assert gates.shortcut_gate([0.80, 0.82, 0.81, 0.83, 0.79], 0.70).passed
    assert not gates.shortcut_gate([0.60, 0.85, 0.65, 0.90, 0.62], 0.70).passed  # mean above, interval across
    with pytest.raises(ValueError, match="shortcut"):
        gates.shortcut_gate([0.5, 0.6], 1.5)


def test_constant_gate_counts_single_label_runs():
    g = gates.constant_gate([3, 1, 10, 1])
    assert not g.passed and g.measured == 2
    assert gates.constant_gate([2, 5]).passed


def test_holm_matches_the_step_down_rule():
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted 0.005, 0.01, 0.03, 0.04 -> 4*0.005, 3*0.01, max(0.03, 2*0.03), max(0.06, 0.04)
    assert claims.holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert claims.holm([0.5, 0.9]).max() <= 1.0


def test_detectable_effect_has_the_stated_power():
    sd, n, alpha = 0.03, 8, 0.05
    delta = gates.detectable_effect(sd, n, alpha)
    crit = stats.t.ppf(1 - alpha / 2, n - 1)
    nc = delta * math.sqrt(n) / sd
    assert stats.nct.sf(crit, n - 1, nc) + stats.nct.cdf(-crit, n - 1, nc) == pytest.approx(0.8, abs=1e-6)
    # a Monte Carlo of the paired t test at that effect rejects about 80 % of the time
    rng = np.random.default_rng(3)
    d = rng.normal(delta, sd, size=(20000, n))
    t = d.mean(1) / (d.std(1, ddof=1) / math.sqrt(n))
    assert np.mean(np.abs(t) > crit) == pytest.approx(0.8, abs=0.015)
    assert gates.detectable_effect(sd, n, alpha / 4) > delta  # a stricter level needs a larger effect
    assert gates.detectable_effect(0.0, n) == 0.0


def test_comparison_table_tests_only_gated_rows_and_applies_holm():
    rng = np.random.default_rng(0)
    base = rng.normal(0.5, 0.02, 8)
    big = gates.paired_row("big", base + 0.1 + rng.normal(0, 0.01, 8), base)
    null = gates.paired_row("null", base + rng.normal(0, 0.01, 8), base)
    neg = gates.paired_row("neg", base - 0.1 + rng.normal(0, 0.01, 8), base)
    gated = gates.paired_row("gated", base + 0.2, base,
                             [gates.Gate(gates.PLATEAU, False, 0.01, 0.1, "stuck")])
    rows = gates.comparison_table([big, null, neg, gated], where="at book scale")
    assert big.verdict == "reproduces" and neg.verdict == "opposite"
    assert null.verdict.startswith("not resolved (could have detected ≥ ")
    assert gated.verdict == "not tested at book scale (gate failed: SPT left its plateau)"
    assert gated.p_holm is None
    assert [gates.verdict_word(r) for r in rows] == ["reproduces", "not resolved", "opposite", "not tested"]
    # Holm over the three tested rows: the null row's adjusted p is at least its raw p
    assert null.p_holm >= null.p
    assert null.detectable == pytest.approx(gates.detectable_effect(null.effect.se * math.sqrt(8), 8, 0.05 / 3))


def test_a_row_significant_alone_can_fail_after_holm():
    """Holm's correction is what decides: p = 0.03 alone reproduces, among three rows it does not."""
    base = np.zeros(6)
    d = np.array([0.01, 0.03, 0.02, 0.04, -0.005, 0.025])
    alone = gates.comparison_table([gates.paired_row("a", base + d, base)])[0]
    assert alone.p < 0.05 and alone.verdict == "reproduces"
    others = [gates.paired_row(n, base + np.array([0.01, -0.01, 0.0, 0.02, -0.02, 0.0]), base) for n in "bc"]
    among = gates.comparison_table([gates.paired_row("a", base + d, base), *others])[0]
    assert among.p_holm > 0.05 and among.verdict.startswith("not resolved")


def test_shortcut_features():
    lo = mini_lra.task_data("listops", {"listops_min_length": 20, "listops_max_length": 40, "listops_max_depth": 4,
                                        "listops_max_args": 4, "n_train": 50, "n_test": 10}, 0)
    f = gates.shortcut_features("listops", lo["x_train"])
    assert f.shape == (50, 32) and np.all(f[:, :16].sum(1) == 1)
    assert np.all(f[np.arange(50), lo["x_train"][:, 0]] == 1)  # the root operator's one-hot
    task = pathfinder.PathFinderTask(size=16, path_length=14, n_distractors=2, distractor_length=5)
    x, _ = pathfinder.sample_pathfinder(20, np.random.default_rng(0), task)
    f = gates.shortcut_features("pathfinder", x)
    ends = [np.flatnonzero(r == 2) for r in x]
    cheb = [max(abs(a // 16 - b // 16), abs(a % 16 - b % 16)) for a, b in ends]
    assert np.array_equal(f[:, 1], cheb) and np.all(f[:, 0] >= f[:, 1])
    with pytest.raises(ValueError, match="task must be one of"):
        gates.shortcut_features("cifar", x)


def test_shortcut_accuracy_finds_a_planted_shortcut():
    """Labels that are the root operator: the shortcut baseline reads them perfectly."""
    sizes = {"listops_min_length": 20, "listops_max_length": 40, "listops_max_depth": 4, "listops_max_args": 4,
             "n_train": 300, "n_test": 100}
    data = mini_lra.task_data("listops", sizes, 1)
    planted = {**data, "y_train": data["x_train"][:, 0] - 10, "y_test": data["x_test"][:, 0] - 10}
    assert gates.shortcut_accuracy("listops", planted) == 1.0
    assert gates.shortcut_accuracy("listops", data) < 0.6


def test_predicted_labels_of_a_fresh_model():
    cfg = mini_lra.model_config({"d_model": 16, "n_heads": 2, "max_len": 64}, 1)
    m = train.build_model(cfg, seed=0, device="cpu")
    x = torch.randint(0, 16, (7, 20))
    pred = gates.predicted_labels(m, x)
    assert pred.shape == (7,) and np.array_equal(pred, m.classify(x).argmax(-1).numpy())


def test_html_table_escapes_and_rounds():
    html = gates.html_table([{"a<b": 0.12345, "n": 3}, {"a<b": np.float64(1.0), "n": "x<y"}])
    assert html.startswith("<table><thead><tr><th>a&lt;b</th><th>n</th></tr></thead>")
    assert "<td>0.123</td><td>3</td>" in html and "<td>1.000</td><td>x&lt;y</td>" in html
    assert gates.html_table([]) == "<p>(no rows)</p>"


def test_neighbourhood_loss_reads_local_structure_and_not_noise():
    rng = np.random.default_rng(0)
    side, n = 6, 400
    # rows of one colour: a masked pixel is told by a visible left or right neighbour, which about 93 % of
    # them have (an edge pixel has one such neighbour, masked with probability 0.15)
    striped = np.repeat(rng.integers(0, 3, (n, side, 1)), side, axis=2).reshape(n, side * side)
    entropy = gates.unigram_entropy(striped)
    loss = gates.neighbourhood_masked_loss(striped[:300], striped[300:], side=side, mlm_prob=0.15, seed=1)
    assert loss < entropy / 3
    noise = rng.integers(0, 3, (n, side * side))
    loss = gates.neighbourhood_masked_loss(noise[:300], noise[300:], side=side, mlm_prob=0.15, seed=1)
    assert abs(loss - gates.unigram_entropy(noise)) < 0.05  # nothing to read: the unigram entropy, ln 3
    with pytest.raises(ValueError, match="images must have shape"):
        gates.neighbourhood_masked_loss(noise[:, :30], noise[:, :30], side=side, mlm_prob=0.15, seed=1)
    with pytest.raises(ValueError, match="mlm_prob must lie in"):
        gates.neighbourhood_masked_loss(noise, noise, side=side, mlm_prob=1.0, seed=1)
    with pytest.raises(ValueError, match="radius in"):
        gates.neighbourhood_masked_loss(noise, noise, side=side, mlm_prob=0.15, seed=1, radius=0)


def test_a_budget_table_says_budget_in_its_untested_rows():
    rows = [gates.paired_row("a", [0.6, 0.7, 0.65], [0.5, 0.5, 0.52],
                             [gates.Gate(gates.PLATEAU, False, 0.05, 0.1, "")])]
    gates.comparison_table(rows, budget=True)
    assert rows[0].verdict == "not tested (budget; gate failed: SPT left its plateau)"
    assert gates.verdict_word(rows[0]) == "not tested"