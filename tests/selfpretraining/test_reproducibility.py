"""Training runs are reproducible, and a claim's outcome does not depend on the thread count.

Runs one training chapter's core loop (``protocols.depth_seed``: scratch, SPT, fine-tune; chapter 04,
one layer) on a small configuration for three seeds through ``runtime.map_seeds``: twice with one
torch thread per job, which must agree exactly, and once with two threads per job, which may differ
in the last digits (other kernels) but must give the same outcome for the claims the chapter makes.
"""

import numpy as np
import pytest

from blindspots import claims, runtime
from blindspots.claims import ClaimFailed
from blindspots.selfpretraining import protocols

CONFIG = {"d_model": 32, "n_heads": 2, "n_layers": 1, "max_len": 128, "length": 100, "batch_size": 32,
          "lr": 3e-3, "mlm_prob": 0.5, "local_k": 2, "n_train": 64, "n_test": 100, "spt_steps": 20,
          "label_steps": 10, "data_seed": 0}
SEEDS = [0, 1]


def _run(threads: int) -> list[dict]:
    return runtime.map_seeds(protocols.depth_seed, SEEDS, n_jobs=1, threads_per_job=threads,
                             config=CONFIG, n_layers=1)


def _outcomes(results, tmp_path) -> dict[str, bool]:
    sc = np.array([r["acc_scratch"] for r in results])
    sp = np.array([r["acc_spt"] for r in results])
    out = {}
    for cid, fn in (
        ("gain", lambda: claims.claim_effect("gain", "c", sp, sc, exceeds=protocols.DEPTH_GAIN_MIN,
                                             paired=True, show=False)),
        ("scratch-at-chance", lambda: claims.claim("scratch-at-chance", "c", float(sc.mean()), 0.5,
                                                   protocols.chance_tolerance(sc, CONFIG["n_test"]),
                                                   kind="verification", show=False)),
    ):
        try:
            fn()
            out[cid] = True
        except ClaimFailed:
            out[cid] = False
    return out


def test_same_run_twice_agrees_exactly_and_thread_count_keeps_claim_outcomes(tmp_path, monkeypatch):
    monkeypatch.setenv("BLINDSPOTS_CLAIMS_DIR", str(tmp_path))
    first, second = _run(1), _run(1)
    for a, b in zip(first, second):
        assert a["acc_scratch"] == b["acc_scratch"] and a["acc_spt"] == b["acc_spt"]
        assert a["spt_loss"] == b["spt_loss"]
    two_threads = _run(2)
    assert _outcomes(first, tmp_path) == _outcomes(two_threads, tmp_path)
    # the SPT loss curves agree closely even where kernels differ
    for a, b in zip(first, two_threads):
        np.testing.assert_allclose(a["spt_loss"], b["spt_loss"], rtol=1e-3)
