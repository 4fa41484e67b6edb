"""The eager-chain run (benchmarks/device/eager_chain.py) against the program model: each case traced here (torch
on the CPU, fake tensors) and predicted on the catalog H200 with no host cost, as a graph replay and as eager
calls queued with the timed loop's event after each.

    python tools/eager_chain_report.py [docs/validation/h200/runs/x1-eager-chain/chain.jsonl]

Prints a Markdown table (us): the kernels alone (CUPTI), graph replay measured and predicted, eager queued
without events, eager queued with an event after each call (ParallelKernelBench's loop) measured and predicted.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "docs/validation/h200/runs/x1-eager-chain/chain.jsonl"


def _predict(case: str, shape: list[int]) -> tuple[float, float]:
    """(graph, eager) device seconds of one call of ``case`` on one H200, no host cost."""
    import torch

    sys.path.insert(0, str(ROOT / "benchmarks/device"))
    sys.path.insert(0, str(ROOT / "tools"))
    from eager_chain import cases
    from pkb_report import _device_only

    from rooflib.program import predict_program
    from rooflib.specs import load_system
    from rooflib.trace import trace_program

    fn = cases(torch)[case][1]
    program = trace_program(fn, lambda r, w, d: (torch.randn(*shape, device=d, dtype=torch.bfloat16),), world=1)
    system = _device_only(load_system("hgx-h200", gpus=1))
    pred = predict_program(program, system, gpus=1)
    return pred.graph_time_s, pred.baseline_time_s


def main(argv: list[str]) -> None:
    path = Path(argv[0]) if argv else DEFAULT
    recs: list[dict[str, Any]] = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    print("| case | kernels | CUPTI | graph | graph, predicted | eager, no event | eager + event | eager + event, "
          "predicted |")  # fmt: skip
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in (r for r in recs if r.get("record") == "point"):
        graph, eager = _predict(r["case"], r["shape"])
        cells = [r["kernel_s"], r["graph_s"], graph, r["queued_bare_s"], r["queued_s"], eager]
        print(f"| {r['case']} | {r['kernels']} | " + " | ".join(f"{c * 1e6:.2f}" for c in cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
