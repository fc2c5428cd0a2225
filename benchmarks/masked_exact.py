"""Benchmark of the exact masked-discrepancy engine.

Prints, measured in this one run:

* the time of the exact engine against brute-force enumeration of all 2^N
  states at N = 13, 15, 17 (one full profile each, as a ratio);
* seconds and peak memory of one COLD full profile (every m on the dyadic grid
  plus N/4, N/2, 3N/4; 201 values of lambda; and U) at N = 1023, 4095, 16383,
  65535, 262143 and 1048575 = 2^20 - 1, for each law, with the ratio of its time to
  the previous size's (N grows 4x per row).

Each cold profile runs in a fresh subprocess so that peak memory (ru_maxrss)
and caches belong to that profile alone. Usage::

    .venv/bin/python benchmarks/masked_exact.py [--max-N 1048575]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

_CHILD = r"""
import json, resource, sys, time
import numpy as np
from blindspots.masked import exact
from blindspots.masked.laws import ProductLaw, CurieWeissLaw
law = {"P": ProductLaw(0.6), "C": CurieWeissLaw(1.5)}[sys.argv[1]]
N = int(sys.argv[2])
ms = exact.visible_grid(N)
lams = np.linspace(0.05, 0.95, 201)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
exact.clear_cache()
t0 = time.perf_counter()
prof = exact.discrepancy_profile(law, N, ms, 0.9, lams)
dt = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
assert np.all(np.isfinite(prof.log_U[1:]))
print(json.dumps({"seconds": dt, "peak_MiB": peak / 1024, "import_MiB": base / 1024,
                  "n_m": int(ms.size), "min_logD": float(np.min(prof.log_D[np.isfinite(prof.log_D)]))}))
"""


def brute_vs_engine(N: int) -> tuple[float, float]:
    import numpy as np

    from blindspots.masked import exact
    from blindspots.masked.laws import ProductLaw

    return exact.timed_against_enumeration(ProductLaw(0.6), N, 0.9, np.linspace(0.05, 0.95, 5))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-N", type=int, default=1048575)
    args = ap.parse_args()
    print("Engine vs brute force (law P, theta=0.6, all m, 5 lambdas; one visible set per m)")
    for N in (13, 15, 17):  # noqa: B007
        brute, eng = brute_vs_engine(N)
        print(f"  N={N:2d}: brute force {brute:8.3f} s, engine {eng:.4f} s, ratio {brute / eng:8.0f}x")
    print("Cold full profile (dyadic m + N/4, N/2, 3N/4; 201 lambdas; U), fresh process each;")
    print("'x prev': the time over the previous N's (N grows 4x per row)")
    prev: dict[str, float] = {}
    for N in (1023, 4095, 16383, 65535, 262143, 1048575):
        if N > args.max_N:
            continue
        for law in ("P", "C"):
            out = subprocess.run([sys.executable, "-c", _CHILD, law, str(N)], capture_output=True,
                                 text=True, check=True)
            rec = json.loads(out.stdout.strip().splitlines()[-1])
            step = f"{rec['seconds'] / prev[law]:5.1f}" if law in prev else "    -"
            prev[law] = rec["seconds"]
            print(f"  law {law}, N={N:7d}: {rec['seconds']:8.3f} s (x prev {step}), peak RSS {rec['peak_MiB']:6.0f} MiB "
                  f"(after imports {rec['import_MiB']:.0f} MiB), {rec['n_m']} visible sizes, "
                  f"smallest D = exp({rec['min_logD']:.0f})")


if __name__ == "__main__":
    main()
