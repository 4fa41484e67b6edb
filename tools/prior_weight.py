"""How the library fit's pull toward its start (``rooflib.calibrate.library_model.PRIOR_WEIGHT``) was chosen, from
rows inside every fit set: each of A100, H100 and H200 fitted on its 2-GPU rows of NVIDIA aiconfigurator's
nccl-tests tables, its 4-GPU rows predicted, for each candidate weight; the lowest-cost fit of 4 starts predicts.
No 8-GPU row and no B200 or GB200 row is read.

    python tools/prior_weight.py [--data .../aiconfigurator_core/systems/data] [--weights 0,0.1,0.3,1]

Writes docs/validation/generalization/prior_weight.md (about 15 min on two cores).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from generalization_report import ROOT, SYSTEMS, load

from rooflib.bench.aiconfigurator_import import _data_root
from rooflib.calibrate.library_tables import fit_library_starts, nccl_tuning_held
from rooflib.specs import load_system
from rooflib.validate.generalization import Scenario, fit_and_predict

FIT_SYSTEMS = ("A100", "H100", "H200")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=None, help="aiconfigurator_core/systems/data")
    p.add_argument("--weights", default="0,0.1,0.3,1")
    p.add_argument("--out", type=Path, default=ROOT / "docs/validation/generalization/prior_weight.md")
    a = p.parse_args(argv)
    data = a.data or _data_root()
    nccl, _, _ = load(Path(data))
    catalogs = {label: catalog for _, catalog, label, _ in SYSTEMS}
    weights = [float(w) for w in a.weights.split(",") if w]
    table: dict[float, dict[str, float]] = {}
    for w in weights:
        for label in FIT_SYSTEMS:
            sc = Scenario(f"{label} 2 -> 4", "prior weight", ((label, (2,)),), ((label, (4,)),))
            rows = nccl[(nccl["system"] == label) & (nccl["gpus"] == 2)]
            system = load_system(catalogs[label], gpus=2)
            fits = fit_library_starts([(system, rows)], "fit", held=nccl_tuning_held(), prior=w)
            got = fit_and_predict(nccl, sc, catalogs, fits=fits)
            table.setdefault(w, {})[label] = float(got.starts[label].iloc[0])
            print(f"weight {w}: {label} 2 -> 4 {table[w][label]:.1f} %", flush=True)
    best = min(weights, key=lambda w: statistics.median(table[w].values()))
    lines = [
        "# The library fit's pull toward its start: how its weight was chosen",
        "",
        "Regenerate with `python tools/prior_weight.py` (NVIDIA aiconfigurator's nccl-tests tables; about 15 min).",
        "Each of A100, H100 and H200 fitted on its 2-GPU rows, its 4-GPU rows predicted (median |error| %, the",
        "lowest-cost fit of 4 starts), for each weight of the pull `w * log(x / x0)` of each free figure toward",
        "the fit's generic start (`rooflib.calibrate.library_model.PRIOR_WEIGHT`). These rows lie inside every",
        "fit set that holds 2- and 4-GPU rows; no 8-GPU row and no B200 or GB200 row is read. The weight with the",
        "lowest median over the three systems is the one used.",
        "",
        "| weight | " + " | ".join(FIT_SYSTEMS) + " | median |",
        "| ---: | " + " | ".join("---:" for _ in FIT_SYSTEMS) + " | ---: |",
    ]
    for w in weights:
        cells = " | ".join(f"{table[w][s]:.1f}" for s in FIT_SYSTEMS)
        mark = " (lowest)" if w == best else ""
        lines.append(f"| {w:g}{mark} | {cells} | {statistics.median(table[w].values()):.1f} |")
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {a.out}: lowest median at weight {best:g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
