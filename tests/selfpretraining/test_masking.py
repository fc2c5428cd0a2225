"""The masking function of self-pretraining: ratio, padding, targets."""

import pytest
import torch

from blindspots.selfpretraining.masking import IGNORE, check_mlm_prob, mask_tokens, reconstruction_loss
from blindspots.selfpretraining.tasks import MASK, PAD


def batch(b=200, n=100, pad=20):
    x = torch.randint(0, 5, (b, n), generator=torch.Generator().manual_seed(0))
    x[:, n - pad:] = PAD
    return x


@pytest.mark.parametrize("p", [0.15, 0.5, 0.8])
def test_masked_ratio_matches_mlm_prob(p):
    x = batch()
    inp, tgt = mask_tokens(x, mask_id=MASK, mlm_prob=p, pad_id=PAD, generator=torch.Generator().manual_seed(2))
    real = x.ne(PAD)
    ratio = float(inp.eq(MASK)[real].double().mean())
    n = int(real.sum())
    assert abs(ratio - p) < 5 * (p * (1 - p) / n) ** 0.5


def test_padding_is_never_masked_and_has_no_target():
    x = batch()
    inp, tgt = mask_tokens(x, mask_id=MASK, mlm_prob=0.9, pad_id=PAD, generator=torch.Generator().manual_seed(3))
    pad = x.eq(PAD)
    assert bool(inp[pad].eq(PAD).all())
    assert bool(tgt[pad].eq(IGNORE).all())


def test_targets_only_at_masked_positions_and_equal_the_original_tokens():
    x = batch(pad=0)
    inp, tgt = mask_tokens(x, mask_id=MASK, mlm_prob=0.5, generator=torch.Generator().manual_seed(4))
    masked = inp.eq(MASK)
    assert bool(tgt[~masked].eq(IGNORE).all())
    assert bool(tgt[masked].eq(x[masked]).all())
    assert bool(inp[~masked].eq(x[~masked]).all())


def test_loss_counts_masked_positions_only():
    logits = torch.randn(2, 5, 7, generator=torch.Generator().manual_seed(5))
    tgt = torch.full((2, 5), IGNORE)
    tgt[0, 1], tgt[1, 3] = 2, 4
    expected = torch.nn.functional.cross_entropy(torch.stack([logits[0, 1], logits[1, 3]]), torch.tensor([2, 4]))
    torch.testing.assert_close(reconstruction_loss(logits, tgt), expected)
    assert float(reconstruction_loss(logits, torch.full((2, 5), IGNORE))) == 0.0


@pytest.mark.parametrize("p", [0.0, 1.0, -0.1, 1.5])
def test_mlm_prob_outside_open_unit_interval_raises(p):
    with pytest.raises(ValueError, match=r"mlm_prob must lie in the open interval \(0, 1\)"):
        check_mlm_prob(p)
    with pytest.raises(ValueError, match="mlm_prob"):
        mask_tokens(batch(), mask_id=MASK, mlm_prob=p)
