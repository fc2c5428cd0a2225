"""Copy a book run's per-seed PIQL results into tests/privileged/data/ for the unit-level planted errors.

Usage: python scripts/trim_piql_seeds.py _build/claims/privileged__03_piql_training/_seeds.json piql03_book_seeds.json
(likewise 04 and 05).
Per-step training logs are dropped (the claims read validation curves, test metrics, probes and R^2 only).
"""

import json
import sys
from pathlib import Path

source, name = Path(sys.argv[1]), sys.argv[2]
results = json.loads(source.read_text())
for r in results:
    groups = [r["variants"], *r.get("depths", {}).values()]
    for res in (x for g in groups for x in g.values()):
        res["curve"].pop("train_bce", None)
        res["curve"].pop("alpha", None)
out = Path(__file__).resolve().parents[1] / "tests" / "privileged" / "data" / name
out.write_text(json.dumps(results, indent=None, separators=(",", ":")))
print(f"wrote {out} ({out.stat().st_size} bytes)")
