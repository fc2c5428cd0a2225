"""Part II training runs on the device the chapter passes (``config['device']``), the CPU when absent.

On the CPU, naming the device changes nothing: the numbers are those of the committed runs. The CUDA
test runs where CUDA exists (a GPU CI machine) and is skipped, with a reason, elsewhere.
"""

import numpy as np
import pytest
import torch

from blindspots.selfpretraining import mini_lra, positional, protocols

WALK = {"d_model": 16, "n_heads": 2, "n_layers": 1, "max_len": 64, "length": 40, "batch_size": 16,
        "lr": 3e-3, "mlm_prob": 0.5, "local_k": 2, "n_train": 32, "n_test": 40, "spt_steps": 4,
        "label_steps": 4, "data_seed": 0, "eval_every": 2, "n_maps": 4, "zoom": 8, "max_offset": 3}
LRA = dict(d_model=8, n_heads=2, max_len=64, batch_size=8, lr=3e-3, mlm_prob=0.5, n_train=24, n_test=10,
           listops_min_length=10, listops_max_length=30, listops_max_depth=4, listops_max_args=4,
           spt_steps=6, label_steps=2, data_seed=0, spt_checkpoints=[3])
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")


def test_train_device_defaults_to_the_cpu_and_reads_the_config():
    assert protocols.train_device({}) == torch.device("cpu")
    assert protocols.train_device({"device": "cpu"}) == torch.device("cpu")


def test_bad_device_raises_naming_the_key():
    with pytest.raises(ValueError, match=r"config\['device'\]"):
        protocols.train_device({"device": "abacus"})


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
def test_cuda_without_cuda_raises():
    with pytest.raises(ValueError, match="CUDA is not available"):
        protocols.train_device({"device": "cuda"})


def test_naming_the_cpu_gives_the_numbers_of_the_default():
    data, other = mini_lra.task_data("listops", LRA, 0), mini_lra.task_data("image", LRA, 0)
    default = mini_lra.lra_seed(101, LRA, data, other)
    named = mini_lra.lra_seed(101, {**LRA, "device": "cpu"}, data, other)
    assert named["rows"] == default["rows"] and named["spt_loss"] == default["spt_loss"]
    assert named["masked_loss"] == default["masked_loss"] and named["n_predicted"] == default["n_predicted"]
    a = protocols.depth_seed(0, WALK, 1)
    b = protocols.depth_seed(0, {**WALK, "device": "cpu"}, 1)
    assert (a["acc_scratch"], a["acc_spt"], a["spt_loss"]) == (b["acc_scratch"], b["acc_spt"], b["spt_loss"])


@needs_cuda
def test_every_protocol_runs_on_cuda():
    cfg = {**WALK, "device": "cuda"}
    r = protocols.scratch_vs_spt(0, cfg)
    assert 0.0 <= r["acc_spt"] <= 1.0 and isinstance(r["maps"]["after SPT"], np.ndarray)
    assert 0.0 <= protocols.no_attention_baseline(0, cfg) <= 1.0
    assert 0.0 <= protocols.depth_seed(0, cfg, 2)["acc_spt"] <= 1.0
    rows = protocols.ablation_seed(0, {**cfg, "spt_checkpoints": [2, 4], "other_source": True})["rows"]
    assert all(0.0 <= v <= 1.0 for v in rows.values())
    lra = {**LRA, "device": "cuda"}
    data, other = mini_lra.task_data("listops", lra, 0), mini_lra.task_data("image", lra, 0)
    out = mini_lra.lra_seed(101, lra, data, other)
    assert set(out["rows"]) >= set(mini_lra.ARMS) and isinstance(out["positional_maps"]["after SPT"], np.ndarray)
    assert mini_lra.checkpoint_gap(lra, data, 0, 1, 3) < 1e-5


@needs_cuda
def test_offset_profile_stays_on_the_matrix_device():
    m = torch.randn(2, 5, 5, device="cuda")
    prof = positional.offset_profile(m)
    assert prof.device.type == "cuda"
    assert torch.allclose(prof.cpu(), positional.offset_profile(m.cpu()))
