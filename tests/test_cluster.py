"""runtime.map_seeds on a dask.distributed cluster gives the numbers of the local run (the cluster extra).

A LocalCluster of two worker processes stands in for a real cluster: each seed of a smoke-sized Part II
training protocol runs there alone, with the seeding it has locally, so the results must be identical.
"""

import pytest

distributed = pytest.importorskip(
    "distributed", reason="the cluster extra is not installed: pip install -e '.[cluster]'")

from blindspots import runtime  # noqa: E402
from blindspots.selfpretraining import protocols  # noqa: E402
from blindspots.selfpretraining.presets import PRESETS  # noqa: E402

SEEDS = [0, 1]


def _config():
    # chapter 02's smoke sizes, fewer steps (the cluster's start-up takes most of the time): each seed still
    # pre-trains and fine-tunes for real, and returns losses, accuracies and attention maps
    smoke = PRESETS["selfpretraining/02_training_mechanism"]["smoke"]
    return dict(smoke, n_train=128, spt_steps=10, label_steps=10, eval_every=5, data_seed=0, device="cpu")


@pytest.fixture(autouse=True)
def _no_job_overrides(monkeypatch):
    # $BLINDSPOTS_SEED_JOBS would override n_jobs (thread-check sets it); the defaults are what is tested
    monkeypatch.delenv("BLINDSPOTS_SEED_JOBS", raising=False)
    monkeypatch.delenv("BLINDSPOTS_THREADS", raising=False)


def test_dask_backend_without_a_client_says_to_create_one():
    # first in the module: the cluster fixture below makes a default Client while it lives
    try:
        distributed.get_client()
    except ValueError:
        pass
    else:
        pytest.skip("a dask Client already exists in this process")
    with pytest.raises(ValueError, match="first create a Dask Client"):
        runtime.map_seeds(protocols.no_attention_baseline, SEEDS, n_jobs=2, backend="dask", config=_config())


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    try:
        client = distributed.Client(cluster)
        try:
            yield client
        finally:
            client.close()
    finally:
        cluster.close()


def _assert_identical(got, expected, where="result"):
    import numpy as np

    if isinstance(expected, dict):
        assert isinstance(got, dict) and got.keys() == expected.keys(), where
        for key in expected:
            _assert_identical(got[key], expected[key], f"{where}[{key!r}]")
    elif isinstance(expected, (list, tuple)):
        assert type(got) is type(expected) and len(got) == len(expected), where
        for i, (g, e) in enumerate(zip(got, expected)):
            _assert_identical(g, e, f"{where}[{i}]")
    elif isinstance(expected, np.ndarray):
        assert isinstance(got, np.ndarray) and got.dtype == expected.dtype, where
        np.testing.assert_array_equal(got, expected, err_msg=where, strict=True)
    else:
        assert type(got) is type(expected) and got == expected, f"{where}: {got!r} != {expected!r}"


def test_map_seeds_on_a_local_cluster_equals_the_local_run(client):
    import threadpoolctl

    config = _config()
    with distributed.get_task_stream(client) as tasks:
        remote = runtime.map_seeds(protocols.scratch_vs_spt, SEEDS, n_jobs=2, backend="dask", config=config)
    ran_on = {t["worker"] for t in tasks.data}
    assert ran_on and ran_on <= set(client.scheduler_info()["workers"]), "the seeds did not run on the cluster"
    # map_seeds fixes torch's threads, not numpy's BLAS threads, and numpy's LAPACK (the pseudo-inverse in
    # proximity.toeplitz_score) rounds differently with another count. Dask starts its workers with
    # OPENBLAS_NUM_THREADS=1 unless the environment sets it (loky workers get cores // n_jobs), so the
    # local run takes the workers' count.
    blas = {lib["num_threads"] for libs in client.run(threadpoolctl.threadpool_info).values()
            for lib in libs if lib["user_api"] == "blas"}
    assert len(blas) == 1, f"workers differ in BLAS threads: {blas}"
    with threadpoolctl.threadpool_limits(limits=blas.pop(), user_api="blas"):
        local = runtime.map_seeds(protocols.scratch_vs_spt, SEEDS, n_jobs=1, config=config)
    assert [r["seed"] for r in remote] == SEEDS
    # a few real optimiser steps per seed: losses that differ between seeds, so equality below is not vacuous
    assert local[0]["spt_loss"] != local[1]["spt_loss"]
    _assert_identical(remote, local)
