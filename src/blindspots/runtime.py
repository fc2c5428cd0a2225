"""Scale presets, device resolution, seeding and timing for every chapter.

A chapter notebook starts with::

    run = runtime.setup(scale, device, seed, chapter="masked/01_setup")
    sizes = run.sizes          # this chapter's sizes at this scale
    rng = run.rng              # numpy Generator seeded from `seed`

and ends with ``run.report()``. The sizes of each chapter live in the presets
module of its Part (``blindspots.<part>.presets.PRESETS``), keyed by the notebook
path below ``notebooks/`` without its suffix.
"""

from __future__ import annotations

import importlib
import json
import os
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

import numpy as np

SCALES: tuple[str, ...] = ("smoke", "book", "full")
# The planted-error tests' own scale, defined only by chapters whose training claims smoke scale cannot make:
# the smallest run at which those claims hold (tests/mutants checks that they do, unpatched, on every run).
MUTANT_SCALE = "mutant"
DEVICES: tuple[str, ...] = ("auto", "cpu", "cuda")
PARTS: tuple[str, ...] = ("masked", "selfpretraining", "privileged")

_CURRENT: "Run | None" = None


def check_scale(scale: str) -> str:
    """Return ``scale`` or raise ``ValueError`` naming the valid scales (``mutant`` is the planted-error tests')."""
    if scale not in SCALES and scale != MUTANT_SCALE:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    return scale


def repo_root() -> Path:
    """The folder holding ``_toc.yml``: searched up from the working directory, then from this file."""
    for start in (Path.cwd(), Path(__file__).resolve().parent):
        for folder in (start, *start.parents):
            if (folder / "_toc.yml").is_file():
                return folder
    return Path.cwd()


def records_dir() -> Path:
    """Where claims and run records go: ``$BLINDSPOTS_CLAIMS_DIR`` or ``<repo>/_build/claims``."""
    env = os.environ.get("BLINDSPOTS_CLAIMS_DIR")
    return Path(env) if env else repo_root() / "_build" / "claims"


def chapter_records_dir(chapter: str, root: Path | None = None) -> Path:
    """The folder of one chapter's claim and run records (below ``root``, default :func:`records_dir`)."""
    return Path(root or records_dir()) / chapter.replace("/", "__")


def cpu_model() -> str:
    """The CPU's model name (training results can depend on it: other CPUs round differently)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def physical_cores() -> int:
    """Physical cores available to this process (hyper-threads counted once)."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return max(1, (os.cpu_count() or 2) // 2)
    cores = set()
    for cpu in cpus:
        topo = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
        try:
            core = (topo / "core_id").read_text().strip()
            package = (topo / "physical_package_id").read_text().strip()
            cores.add((package, core))
        except OSError:
            cores.add(("cpu", str(cpu)))
    return max(1, len(cores))


def all_presets() -> dict[str, dict[str, dict[str, Any]]]:
    """Every chapter's presets, merged from the Parts' ``presets`` modules."""
    merged: dict[str, dict[str, dict[str, Any]]] = {}
    for part in PARTS:
        try:
            module = importlib.import_module(f"blindspots.{part}.presets")
        except ModuleNotFoundError as err:
            if err.name != f"blindspots.{part}.presets":
                raise
            continue
        merged.update(module.PRESETS)
    return merged


def sizes_for(chapter: str, scale: str) -> Mapping[str, Any]:
    """The sizes of ``chapter`` at ``scale``, read-only."""
    check_scale(scale)
    presets = all_presets()
    if chapter not in presets:
        raise ValueError(f"chapter must be one of {sorted(presets)}, got {chapter!r}")
    table = presets[chapter]
    missing = [s for s in SCALES if s not in table]
    if missing:
        raise ValueError(f"presets of {chapter!r} lack the scales {missing}")
    if scale not in table:
        raise ValueError(f"scale {scale!r} is defined only for the chapters "
                         f"{sorted(c for c, t in presets.items() if scale in t)}, not for {chapter!r}")
    return MappingProxyType(dict(table[scale]))


def resolve_device(device: str):
    """``auto`` gives ``$BLINDSPOTS_DEVICE`` when set, else CUDA when available, else CPU; ``cuda`` without
    CUDA raises.

    ``BLINDSPOTS_DEVICE=cpu`` lets a CUDA machine re-execute the committed book-scale notebooks (nbval in
    ``make test-gpu``) on the device their outputs came from: a CUDA generator draws other numbers.
    """
    import torch

    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, got {device!r}")
    if device == "auto":
        forced = os.environ.get("BLINDSPOTS_DEVICE", "").strip()
        if forced and forced not in ("cpu", "cuda"):
            raise ValueError(f"$BLINDSPOTS_DEVICE must be 'cpu' or 'cuda' (or unset), got {forced!r}")
        device = forced or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' was asked for but CUDA is not available; use 'auto' or 'cpu'")
    return torch.device(device)


@dataclass
class Run:
    """One execution of a chapter: its scale, device, seeded generators and clock."""

    chapter: str
    scale: str
    device: Any
    seed: int
    sizes: Mapping[str, Any]
    rng: np.random.Generator
    threads: int
    started: float = field(default_factory=time.perf_counter)
    claims: list = field(default_factory=list)  # claims.Claim objects made in this run

    def torch_generator(self, offset: int = 0):
        """A ``torch.Generator`` on this run's device, seeded from ``seed + offset``."""
        import torch

        gen = torch.Generator(device=self.device)
        gen.manual_seed(self.seed + offset)
        return gen

    def child_rng(self, offset: int) -> np.random.Generator:
        """An independent numpy stream, reproducible from ``seed`` and ``offset``."""
        return np.random.default_rng([self.seed, offset])

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def report(self) -> dict[str, Any]:
        """Print and record the device and elapsed time of this run."""
        record = {
            "chapter": self.chapter,
            "scale": self.scale,
            "device": str(self.device),
            "seed": self.seed,
            "threads": self.threads,
            "elapsed_s": round(self.elapsed(), 2),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "torch": _torch_version(),
            "cpu": cpu_model(),
            "seed_worker_threads": int(os.environ.get("BLINDSPOTS_THREADS", "1")),
            # make test runs notebooks side by side (pytest-xdist): then the time is not this notebook's alone
            "notebooks_at_once": _env_count("PYTEST_XDIST_WORKER_COUNT", 1),
            "peak_memory_gib": round(peak_memory_gib(), 3),
        }
        folder = chapter_records_dir(self.chapter)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "_run.json").write_text(json.dumps(record, indent=1))
        from . import claims

        if claims.session_claims():
            claims.table()
            print()
        # two lines, so that the longest chapter name on a GPU still fits a printed page
        print(f"{self.chapter}: scale={self.scale}, device={self.device},\n"
              f"  threads={self.threads}, elapsed {record['elapsed_s']:.1f} s")
        return record


def peak_memory_gib() -> float:
    """Peak resident memory of this process so far, in GiB (``getrusage``'s ``ru_maxrss``).

    Linux reports kibibytes and macOS bytes; on a platform without ``resource`` (Windows) returns ``nan``.
    """
    try:
        import resource
    except ImportError:
        return float("nan")
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**30 if sys.platform == "darwin" else peak / 2**20


def _torch_version() -> str | None:
    import sys

    torch = sys.modules.get("torch")
    return getattr(torch, "__version__", None) if torch else None


def setup(scale: str = "book", device: str = "auto", seed: int = 0, *, chapter: str) -> Run:
    """Resolve scale and device, seed numpy and torch, and start the clock.

    Also clears this chapter's earlier claim records, so the verification
    report never lists a claim the current code no longer makes.
    """
    global _CURRENT
    import torch

    check_scale(scale)
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    sizes = sizes_for(chapter, scale)
    dev = resolve_device(device)
    # One intra-op thread per physical core: oversubscription slows small models 10-20x.
    # A chapter of tiny models may cap it lower with the preset key ``torch_threads``, and
    # ``$BLINDSPOTS_KERNEL_THREADS`` caps it when several notebooks share the cores (make test-nbval).
    threads = physical_cores()
    cap = sizes.get("torch_threads")
    if cap is not None:
        if not isinstance(cap, int) or cap < 1:
            raise ValueError(f"preset torch_threads of {chapter!r} must be an integer >= 1, got {cap!r}")
        threads = min(threads, cap)
    threads = min(threads, _env_count("BLINDSPOTS_KERNEL_THREADS", threads))
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    np.random.seed(seed)  # only for third-party code that reads the global state
    folder = chapter_records_dir(chapter)
    if folder.is_dir():
        for old in folder.glob("*.json"):
            old.unlink()
    _CURRENT = Run(chapter=chapter, scale=scale, device=dev, seed=int(seed), sizes=sizes,
                   rng=np.random.default_rng(seed), threads=threads)
    return _CURRENT


def deterministic_torch(threads: int = 1) -> None:
    """Make torch as reproducible as it allows: deterministic kernels and a fixed thread count.

    The same seed then gives the same run on the same machine; a different CPU may still take other
    floating-point paths, which is why training claims are statistics over seeds.
    """
    import torch

    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.set_num_threads(threads)


def _seed_worker(fn: Callable[..., Any], seed: int, threads: int, kwargs: dict) -> Any:
    deterministic_torch(threads)
    return fn(seed, **kwargs)


def _env_count(name: str, default: int) -> int:
    """A positive integer from environment variable ``name`` (``default`` when unset or empty)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"${name} must be an integer >= 1, got {raw!r}")
    return value


def map_seeds(fn: Callable[..., Any], seeds: Sequence[int], *, n_jobs: int | None = None,
              backend: str | None = None, threads_per_job: int | None = None, **kwargs: Any) -> list[Any]:
    """``[fn(seed, **kwargs) for seed in seeds]``, one worker process per core, one torch thread each.

    Training claims are statistics over seeds; seeds are independent, so they run in parallel through
    joblib (``loky`` processes by default). ``fn`` must be importable (defined in ``blindspots``, not in
    a notebook) and take the seed first; results come back in the order of ``seeds``. ``n_jobs``
    defaults to ``$BLINDSPOTS_SEED_JOBS`` or the physical cores, ``threads_per_job`` to
    ``$BLINDSPOTS_THREADS`` or 1. ``$BLINDSPOTS_SEED_JOBS``, when set, overrides ``n_jobs`` (also one
    a preset passes), so ``BLINDSPOTS_THREADS=2 BLINDSPOTS_SEED_JOBS=1`` reruns a chapter with two torch
    threads per seed without oversubscribing two cores (``make thread-check``). The number of jobs never
    changes the numbers: each seed runs alone in its worker with the same seeding. A
    reader with a dask cluster can install the cluster extra (``pip install -e '.[cluster]'``), create a
    ``dask.distributed.Client`` connected to it and pass ``backend="dask"`` to run full scale there
    (tests/test_cluster.py: a local cluster gives the local run's results); without a Client joblib
    raises. Other joblib backends (ray, once registered with joblib) are untested.
    """
    from joblib import Parallel, delayed, parallel_config

    seeds = [int(s) for s in seeds]
    if threads_per_job is None:
        threads_per_job = _env_count("BLINDSPOTS_THREADS", 1)
    if not seeds:
        raise ValueError("seeds must name at least one seed")
    if any(s < 0 for s in seeds):
        raise ValueError(f"seeds must be non-negative integers, got {seeds}")
    if not isinstance(threads_per_job, int) or threads_per_job < 1:
        raise ValueError(f"threads_per_job must be an integer >= 1, got {threads_per_job!r}")
    if n_jobs is None or os.environ.get("BLINDSPOTS_SEED_JOBS"):
        n_jobs = _env_count("BLINDSPOTS_SEED_JOBS", physical_cores())
    jobs = n_jobs
    if not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"n_jobs must be an integer >= 1, got {n_jobs!r}")
    jobs = min(jobs, len(seeds))
    if jobs == 1 and backend is None:  # no pool: same code path, same numbers, no process start-up
        import torch

        before = torch.get_num_threads()
        try:
            return [_seed_worker(fn, s, threads_per_job, kwargs) for s in seeds]
        finally:
            torch.set_num_threads(before)
    # parallel_config, not Parallel(backend=...): only it registers joblib's "dask" backend on first use
    with parallel_config(backend=backend or "loky"):
        return Parallel(n_jobs=jobs)(delayed(_seed_worker)(fn, s, threads_per_job, kwargs) for s in seeds)


def glue(name: str, value: Any, display: bool = False) -> None:
    """myst-nb's ``glue`` for numbers in the prose, with numpy scalars turned into Python numbers.

    myst-nb formats ``{glue:text}`key:.3f``` by parsing the value's repr, which for a numpy scalar
    reads ``np.float64(0.5)`` and cannot be formatted.
    """
    from myst_nb import glue as _glue

    if isinstance(value, np.generic):
        value = value.item()
    _glue(name, value, display=display)
    _record_glue(name, value)


GLUE_RECORD = "_glue.json"  # beside a chapter's claim records; setup clears it with them


def _record_glue(name: str, value: Any) -> None:
    """Keep a glued number or string in the chapter's records (the scorecard reads verdicts from there)."""
    run = _CURRENT
    if run is None or not isinstance(value, (str, int, float, bool)):
        return
    folder = chapter_records_dir(run.chapter)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / GLUE_RECORD
    values = json.loads(path.read_text()) if path.is_file() else {}
    values[name] = value
    path.write_text(json.dumps(values, indent=1))


def glued_values(chapter: str, root: Path | None = None) -> dict[str, Any]:
    """The values a chapter glued in its last run (:func:`glue`), read from its records; empty if none."""
    path = chapter_records_dir(chapter, root) / GLUE_RECORD
    return json.loads(path.read_text()) if path.is_file() else {}


def current() -> "Run | None":
    """The run started by the latest ``setup`` in this process, if any."""
    return _CURRENT
