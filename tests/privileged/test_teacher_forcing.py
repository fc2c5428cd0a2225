"""PIQL's annealed teacher-forcing schedule and the small detector."""

import math

import numpy as np
import pytest
import torch

from blindspots.privileged import teacher_forcing as tf
from blindspots.privileged.theory import GaussianAnomalyPrior


@pytest.mark.parametrize("progress, alpha", [
    (0.0, 1.0), (0.05, 1.0), (0.10, 1.0), (0.25, 0.5), (0.40, 0.0), (0.7, 0.0), (1.0, 0.0),
])
def test_schedule_at_its_breakpoints(progress, alpha):
    assert tf.teacher_forcing_weight(progress) == pytest.approx(alpha, abs=1e-15)


def test_schedule_is_a_cosine_between_breakpoints_and_non_increasing():
    u = 0.3
    p = 0.1 + u * 0.3
    assert tf.teacher_forcing_weight(p) == pytest.approx(0.5 * (1 + math.cos(math.pi * u)), abs=1e-15)
    vals = [tf.teacher_forcing_weight(p) for p in np.linspace(0, 1, 1001)]
    assert all(a >= b for a, b in zip(vals, vals[1:]))


@pytest.mark.parametrize("progress", [-0.01, 1.01, float("nan")])
def test_schedule_rejects_progress_outside_unit_interval(progress):
    with pytest.raises(ValueError, match=r"progress must lie in \[0, 1\]"):
        tf.teacher_forcing_weight(progress)


def test_schedule_rejects_bad_breakpoints():
    with pytest.raises(ValueError, match="warmup_end and decay_end"):
        tf.teacher_forcing_weight(0.5, warmup_end=0.5, decay_end=0.4)


def test_mix_embeddings_endpoints_and_range():
    s, t = torch.zeros(3), torch.ones(3)
    assert torch.equal(tf.mix_embeddings(s, t, 1.0), t)
    assert torch.equal(tf.mix_embeddings(s, t, 0.0), s)
    with pytest.raises(ValueError, match="alpha"):
        tf.mix_embeddings(s, t, 1.5)


def test_training_is_reproducible_from_seeds():
    prior = GaussianAnomalyPrior()
    outs = []
    for _ in range(2):
        g = torch.Generator()
        g.manual_seed(5)
        m = tf.train(prior, 4, steps=5, batch=8, hidden=8, lr=1e-2, teacher_forcing=True, embed_weight=1.0,
                     rng=np.random.default_rng(5), generator=g, device="cpu")
        batch = tf.sample_batch(prior, 16, 4, np.random.default_rng(6))
        outs.append(tf.label_logprobs(m, batch, "cpu"))
    np.testing.assert_array_equal(outs[0], outs[1])
    assert np.allclose(np.exp(outs[0]).sum(axis=1), 1.0)


def test_train_rejects_bad_sizes():
    with pytest.raises(ValueError, match="steps"):
        tf.train(GaussianAnomalyPrior(), 4, steps=0, batch=8, hidden=8, lr=1e-2, teacher_forcing=False,
                 embed_weight=0.0, rng=np.random.default_rng(0), generator=torch.Generator(), device="cpu")


def test_training_restores_the_thread_setting():
    before = torch.get_num_threads()
    g = torch.Generator()
    g.manual_seed(0)
    tf.train(GaussianAnomalyPrior(), 3, steps=2, batch=4, hidden=4, lr=1e-2, teacher_forcing=False,
             embed_weight=0.0, rng=np.random.default_rng(0), generator=g, device="cpu")
    assert torch.get_num_threads() == before


def test_program_input_uses_the_teacher_embedding():
    prior = GaussianAnomalyPrior()
    g = torch.Generator()
    g.manual_seed(1)
    m = tf.train(prior, 4, steps=3, batch=8, hidden=8, lr=1e-2, teacher_forcing=True, embed_weight=1.0,
                 rng=np.random.default_rng(1), generator=g, device="cpu")
    batch = tf.sample_batch(prior, 5, 4, np.random.default_rng(2))
    with torch.no_grad():
        t = tf.to_torch(batch, "cpu")
        z = m.logit(t["x"], t["g"]).double().numpy()
    lp = tf.label_logprobs(m, batch, "cpu", alpha=1.0)
    np.testing.assert_allclose(lp[:, 1] - lp[:, 0], z, rtol=1e-6, atol=1e-6)


def test_embed_loss_flag_switches_the_embedding_loss_only():
    """alpha = 0 throughout: default (no embedding loss) equals embed_loss=False, and embed_loss=True differs."""
    prior = GaussianAnomalyPrior()
    batch = tf.sample_batch(prior, 16, 4, np.random.default_rng(6))
    outs = {}
    for key in (None, False, True):
        g = torch.Generator()
        g.manual_seed(2)
        m = tf.train(prior, 4, steps=5, batch=8, hidden=8, lr=1e-2, teacher_forcing=False, embed_weight=1.0,
                     rng=np.random.default_rng(2), generator=g, device="cpu", embed_loss=key)
        outs[key] = tf.label_logprobs(m, batch, "cpu")
    np.testing.assert_array_equal(outs[None], outs[False])
    assert not np.allclose(outs[None], outs[True])
