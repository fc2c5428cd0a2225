import numpy as np
import pytest
import torch

from blindspots import runtime


def test_unknown_scale_names_valid_values():
    with pytest.raises(ValueError, match=r"scale must be one of \('smoke', 'book', 'full'\)"):
        runtime.check_scale("huge")


def test_unknown_device_names_valid_values():
    with pytest.raises(ValueError, match="device must be one of"):
        runtime.resolve_device("tpu")


def test_auto_device_is_cuda_exactly_when_available(monkeypatch):
    monkeypatch.delenv("BLINDSPOTS_DEVICE", raising=False)
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert runtime.resolve_device("auto").type == expected


def test_blindspots_device_overrides_auto_only(monkeypatch):
    monkeypatch.setenv("BLINDSPOTS_DEVICE", "cpu")
    assert runtime.resolve_device("auto").type == "cpu"
    monkeypatch.setenv("BLINDSPOTS_DEVICE", "gpu0")
    with pytest.raises(ValueError, match=r"\$BLINDSPOTS_DEVICE must be 'cpu' or 'cuda'"):
        runtime.resolve_device("auto")
    assert runtime.resolve_device("cpu").type == "cpu"  # an explicit device is not overridden


@pytest.mark.skipif(torch.cuda.is_available(), reason="only meaningful without CUDA")
def test_cuda_without_cuda_is_a_clear_error():
    with pytest.raises(ValueError, match="CUDA is not available"):
        runtime.resolve_device("cuda")


def test_every_preset_defines_every_scale():
    presets = runtime.all_presets()
    for chapter, table in presets.items():
        assert set(table) - {runtime.MUTANT_SCALE} == set(runtime.SCALES), chapter


def test_mutant_scale_only_where_a_chapter_defines_it():
    presets = runtime.all_presets()
    without = next(c for c, t in presets.items() if runtime.MUTANT_SCALE not in t)
    with pytest.raises(ValueError, match=r"scale 'mutant' is defined only for the chapters"):
        runtime.sizes_for(without, runtime.MUTANT_SCALE)
    for chapter, table in presets.items():
        if runtime.MUTANT_SCALE in table:
            assert set(table[runtime.MUTANT_SCALE]) == set(table["book"]), chapter


def test_every_toc_chapter_has_presets():
    from conftest import toc_notebooks

    presets = runtime.all_presets()
    for nb in toc_notebooks():
        chapter = nb.removeprefix("notebooks/").removesuffix(".ipynb")
        assert chapter in presets, f"{chapter} has no entry in blindspots.<part>.presets"


def test_setup_seeds_and_clears_old_records(tmp_path, monkeypatch, fake_chapter):
    monkeypatch.setenv("BLINDSPOTS_CLAIMS_DIR", str(tmp_path))
    monkeypatch.delenv("BLINDSPOTS_KERNEL_THREADS", raising=False)  # make test caps it; this checks the default
    chapter = fake_chapter
    folder = tmp_path / chapter.replace("/", "__")
    folder.mkdir(parents=True)
    (folder / "stale.json").write_text("{}")
    run = runtime.setup("smoke", "cpu", 3, chapter=chapter)
    assert not (folder / "stale.json").exists()
    a = run.rng.standard_normal(3)
    again = runtime.setup("smoke", "cpu", 3, chapter=chapter)
    np.testing.assert_array_equal(a, again.rng.standard_normal(3))
    assert torch.get_num_threads() == runtime.physical_cores()
    record = again.report()
    assert record["scale"] == "smoke" and record["device"] == "cpu"
    assert (folder / "_run.json").is_file()
    assert dict(again.sizes) == {"n": 1}


def test_setup_rejects_unknown_chapter_and_bad_seed(fake_chapter):
    with pytest.raises(ValueError, match="chapter must be one of"):
        runtime.setup("smoke", "cpu", 0, chapter="nowhere/00")
    chapter = fake_chapter
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        runtime.setup("smoke", "cpu", -1, chapter=chapter)


def test_physical_cores_is_positive_and_at_most_logical():
    import os

    assert 1 <= runtime.physical_cores() <= (os.cpu_count() or 1)


def test_preset_can_cap_threads_and_bad_caps_are_named(monkeypatch, tmp_path):
    monkeypatch.setenv("BLINDSPOTS_CLAIMS_DIR", str(tmp_path))
    presets = {"testing/01_tiny": {s: {"torch_threads": 1} for s in runtime.SCALES},
               "testing/02_bad": {s: {"torch_threads": 0} for s in runtime.SCALES}}
    monkeypatch.setattr(runtime, "all_presets", lambda: presets)
    run = runtime.setup("smoke", "cpu", 0, chapter="testing/01_tiny")
    assert run.threads == 1 == torch.get_num_threads()
    with pytest.raises(ValueError, match="torch_threads"):
        runtime.setup("smoke", "cpu", 0, chapter="testing/02_bad")
    torch.set_num_threads(runtime.physical_cores())


def test_kernel_threads_env_caps_threads_and_bad_values_are_named(monkeypatch, tmp_path):
    monkeypatch.setenv("BLINDSPOTS_CLAIMS_DIR", str(tmp_path))
    presets = {"testing/01_wide": {s: {} for s in runtime.SCALES}}
    monkeypatch.setattr(runtime, "all_presets", lambda: presets)
    monkeypatch.setenv("BLINDSPOTS_KERNEL_THREADS", "1")
    run = runtime.setup("smoke", "cpu", 0, chapter="testing/01_wide")
    assert run.threads == 1 == torch.get_num_threads()
    monkeypatch.setenv("BLINDSPOTS_KERNEL_THREADS", "64")  # a cap, never more than the cores
    assert runtime.setup("smoke", "cpu", 0, chapter="testing/01_wide").threads == runtime.physical_cores()
    monkeypatch.setenv("BLINDSPOTS_KERNEL_THREADS", "0")
    with pytest.raises(ValueError, match=r"\$BLINDSPOTS_KERNEL_THREADS must be an integer >= 1"):
        runtime.setup("smoke", "cpu", 0, chapter="testing/01_wide")
    torch.set_num_threads(runtime.physical_cores())


def test_every_scale_of_a_chapter_sets_the_same_sizes():
    """A key present at book scale but missing at full scale would only fail on a GPU run."""
    for chapter, table in runtime.all_presets().items():
        keys = {scale: set(table[scale]) for scale in runtime.SCALES}
        assert keys["smoke"] == keys["book"] == keys["full"], (chapter, keys)


def _seeded_draw(seed, scale=1.0):
    import torch

    gen = torch.Generator().manual_seed(seed)
    return scale * float(torch.randn(3, generator=gen).sum()), torch.get_num_threads()


def test_map_seeds_keeps_order_and_gives_one_thread_per_worker():
    serial = runtime.map_seeds(_seeded_draw, [3, 1, 2], n_jobs=1, scale=2.0)
    parallel = runtime.map_seeds(_seeded_draw, [3, 1, 2], n_jobs=2, scale=2.0)
    assert [v for v, _ in serial] == [v for v, _ in parallel]  # same numbers in or out of a pool
    assert all(threads == 1 for _, threads in serial + parallel)


def test_map_seeds_restores_the_callers_thread_count():
    import torch

    before = torch.get_num_threads()
    runtime.map_seeds(_seeded_draw, [0], n_jobs=1)
    assert torch.get_num_threads() == before


@pytest.mark.parametrize("kwargs,match", [({"seeds": []}, "seeds must name"), ({"seeds": [-1]}, "non-negative"),
                                          ({"seeds": [0], "n_jobs": 0}, "n_jobs must be"),
                                          ({"seeds": [0], "threads_per_job": 0}, "threads_per_job must be")])
def test_map_seeds_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        runtime.map_seeds(_seeded_draw, **kwargs)


def test_import_blindspots_does_not_import_pyplot():
    import subprocess
    import sys

    code = "import sys, blindspots; print('matplotlib.pyplot' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"], "plotting and torch must be imported when used, not with blindspots"


def test_plotting_draws_a_figure_after_a_lazy_import():
    from blindspots import plotting

    fig, ax = plotting.figure()
    assert plotting.plt.gcf() is fig
    assert plotting.mpl.rcParams["figure.facecolor"] == "white"
    plotting.plt.close(fig)


def test_glue_stores_numpy_scalars_as_plain_numbers(monkeypatch):
    import myst_nb

    seen = {}
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=False: seen.update({name: value}))
    runtime.glue("x", np.float64(0.25))
    runtime.glue("s", "text")
    assert type(seen["x"]) is float and seen["x"] == 0.25 and seen["s"] == "text"


def test_map_seeds_takes_jobs_and_threads_from_the_environment(monkeypatch):
    monkeypatch.setenv("BLINDSPOTS_SEED_JOBS", "1")
    monkeypatch.setenv("BLINDSPOTS_THREADS", "2")
    out = runtime.map_seeds(_seeded_draw, [0, 1])
    assert [threads for _, threads in out] == [2, 2]  # serial path: no pool, two threads per seed


def _worker_pid(seed):
    import os

    return os.getpid()


def test_seed_jobs_in_the_environment_override_a_preset_n_jobs(monkeypatch):
    import os

    # thread-check sets BLINDSPOTS_SEED_JOBS=1 with two threads per seed; the book presets pass n_jobs=2,
    # which would run 2 x 2 threads on two cores (oversubscribed) if the preset won
    monkeypatch.setenv("BLINDSPOTS_SEED_JOBS", "1")
    assert runtime.map_seeds(_worker_pid, [0, 1], n_jobs=2) == [os.getpid()] * 2


@pytest.mark.parametrize("name,value", [("BLINDSPOTS_SEED_JOBS", "0"), ("BLINDSPOTS_THREADS", "two")])
def test_map_seeds_rejects_bad_environment_counts(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=name):
        runtime.map_seeds(_seeded_draw, [0])


def test_peak_memory_grows_with_a_large_array():
    before = runtime.peak_memory_gib()
    block = np.ones(2**27 // 8 * 3)  # 384 MiB, touched
    block[::512] = 2.0
    after = runtime.peak_memory_gib()
    assert after >= before
    assert after >= 0.375 * 0.9  # the process held at least the block at its peak
    del block
