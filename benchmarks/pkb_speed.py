"""Speed of ``rooflib trace --pkb ROOT --problem all`` (one system, one size, one core):
``python benchmarks/pkb_speed.py --pkb ../shared/pkb [--system hgx-h200 --gpus 8] [--json out.json]``.

Prints the wall time of tracing and predicting every problem and the slowest problems (target: under 60 s).
"""

from __future__ import annotations

import argparse
import json
import time
import warnings


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--pkb", required=True)
    p.add_argument("--system", default="hgx-h200")
    p.add_argument("--gpus", type=int, default=8)
    p.add_argument("--size", default="1024x1024")
    p.add_argument("--json", default=None)
    a = p.parse_args()
    warnings.simplefilter("ignore")
    from rooflib.specs import load_system
    from rooflib.trace.pkb import open_suite, parse_size
    from rooflib.trace.pkb_table import suite_rows

    t0 = time.perf_counter()
    rows = suite_rows(open_suite(a.pkb), parse_size(a.size), load_system(a.system, gpus=a.gpus), a.gpus)
    wall = time.perf_counter() - t0
    slow = sorted(rows, key=lambda r: -r["trace_wall_s"])[:5]
    out = {
        "system": a.system,
        "gpus": a.gpus,
        "size": a.size,
        "problems": len(rows),
        "traced": sum(1 for r in rows if not r.get("error")),
        "wall_s": wall,
        "slowest": {r["problem"]: round(r["trace_wall_s"], 2) for r in slow},
    }
    print(json.dumps(out, indent=1))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
