"""Bound, baseline and best of every catalog workload on seven (system, GPU count) cases, as JSON.

Run it on two versions of rooflib and compare the files (how the program path was checked against the former
stage path, issue 10): ``python tools/catalog_predictions.py OUT.json``; with ``--compare OLD.json`` it prints the
relative differences instead.
"""

from __future__ import annotations

import argparse
import json

CASES = (
    ("hgx-h200", 2),
    ("hgx-h100", 8),
    ("hgx-b200", 8),
    ("gb200-nvl72", 72),
    ("dgx-h100-superpod", 16),
    ("hgx-a100", 8),
    ("dgx-h100-superpod", 256),
)


def predictions() -> dict[str, dict[str, object]]:
    from rooflib.specs import load_system
    from rooflib.workloads import load_workloads, predict_workload

    out: dict[str, dict[str, object]] = {}
    for name, gpus in CASES:
        system = load_system(name, gpus=gpus)
        for workload in load_workloads():
            d = predict_workload(workload, system, gpus=gpus).as_dict()
            best = d["best"]
            out[f"{name}/{gpus}/{workload}"] = {
                "bound": d["bound_time_s"],
                "baseline": d["baseline_time_s"],
                "best": best["time_s"],
                "plan": f"{best['schedule']}/{best['mechanism']}",
            }
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("out", nargs="?", default=None)
    p.add_argument("--compare", default=None, help="an earlier output to compare with")
    a = p.parse_args()
    now = predictions()
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(now, fh, indent=1)
    if a.compare:
        with open(a.compare) as fh:
            old = json.load(fh)
        for key, new in now.items():
            was = old.get(key)
            if was is None:
                continue
            diffs = [100 * (float(new[k]) / float(was[k]) - 1) for k in ("bound", "baseline", "best")]  # type: ignore[arg-type]
            print(f"{key:45s} bound {diffs[0]:+6.1f} %  baseline {diffs[1]:+6.1f} %  best {diffs[2]:+6.1f} %")


if __name__ == "__main__":
    main()
