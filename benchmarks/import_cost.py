"""Import cost of ``blindspots`` against ``numpy``, each in a fresh interpreter (median of 7).

Target (issue "Claims that can fail", item 8): ``import blindspots`` costs at most 0.1 s more than
``import numpy``; matplotlib is imported only when a figure is drawn. Prints the ratio and the excess
measured in this run, and whether pyplot was loaded.
"""

from __future__ import annotations

import statistics
import subprocess
import sys

REPEATS = 7


def cold_import_seconds(statement: str) -> float:
    code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
    times = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                  check=True).stdout) for _ in range(REPEATS)]
    return statistics.median(times)


def main() -> None:
    base = cold_import_seconds("import numpy")
    ours = cold_import_seconds("import blindspots")
    with_pyplot = subprocess.run([sys.executable, "-c", "import sys, blindspots; print('matplotlib.pyplot' in sys.modules)"],
                                 capture_output=True, text=True, check=True).stdout.strip()
    print(f"import numpy      {base:.3f} s (median of {REPEATS} fresh interpreters)")
    print(f"import blindspots {ours:.3f} s (numpy included)")
    print(f"ratio blindspots/numpy = {ours / base:.2f}, excess = {ours - base:+.3f} s (target <= +0.100 s); "
          f"pyplot imported: {with_pyplot}")


if __name__ == "__main__":
    main()
