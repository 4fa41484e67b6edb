"""Op by op: ParallelKernelBench's single-GPU parts, every kernel of every op timed by CUPTI, against the model's
device time of each op (a section of docs/validation/pkb/README.md; `tools/pkb_report.py` includes it).

    python tools/pkb_kernels.py --pkb ../shared/pkb          # prints the section (about 2 min on one core)

Reads runs/x1-kernels*/pkb-kernels-*.jsonl (`pkb_worker --mode kernels`). Nothing is fitted on these points.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from pkb_report import _device_only

from rooflib.validate.pkb_kernels import OpPair, op_pairs, summarise

BANDS = ((0.0, 2e-6, "under 2 us"), (2e-6, 2e-5, "2-20 us"), (2e-5, 1e-3, "20 us to 1 ms"), (1e-3, 1e9, "1 ms and up"))


def _records(runs: Path) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in sorted(runs.glob("x1-kernels*/pkb-kernels-*.jsonl")):
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            if rec.get("record") == "point" and rec.get("ops"):
                out.append((path.parent.name, rec))
    return out


def _median_abs(values: list[float]) -> str:
    return f"{100 * statistics.median(abs(v) for v in values):.1f} %" if values else "-"


def collect(suite: Any, runs: Path) -> tuple[list[dict[str, Any]], list[OpPair]]:
    """Per point: the summed kernel seconds measured and predicted; and every op pair."""
    from rooflib.errors import RooflibError
    from rooflib.program import predict_program
    from rooflib.specs import load_system
    from rooflib.trace.lower import lower
    from rooflib.trace.pkb import trace_problem
    from rooflib.trace.pkb_table import local_part

    h200 = load_system("hgx-h200", gpus=1)
    bare = _device_only(h200)
    points: list[dict[str, Any]] = []
    pairs: list[OpPair] = []
    seen: set[tuple[int, int, tuple[int, ...]]] = set()
    for run, rec in _records(runs):
        key = (int(rec["id"]), int(rec["world"]), tuple(rec["size"]))
        if key in seen:  # a point measured twice: the first run's
            continue
        seen.add(key)
        try:
            program = lower(trace_problem(suite, key[0], key[2], world=key[1]))
            part = local_part(program, h200.device.host.ops, fills=True)  # every kernels run filled integer outputs
            pred = predict_program(part, bare, gpus=1)
        except RooflibError as exc:
            points.append({"problem": rec["problem"], "size": key[2], "error": str(exc)[:80]})
            continue
        got = op_pairs(rec, pred.ops, [op.params for op in part.ops])
        pairs += got
        predicted = sum(float(r["device_time_s"]) for r in pred.ops if r["kind"] != "sync")
        points.append(
            {
                "problem": rec["problem"],
                "world": key[1],
                "size": key[2],
                "run": run,
                "measured_s": float(rec["kernel_s"]),
                "predicted_s": predicted,
                "kernels": int(rec["kernels"]),
            }
        )
    return points, pairs


def kernels_section(suite: Any, runs: Path) -> list[str]:
    points, pairs = collect(suite, runs)
    ok = [p for p in points if "error" not in p and p["measured_s"] > 0]
    sizes = sorted({p["size"] for p in ok})
    lines = [
        "## Op by op: every kernel timed by CUPTI",
        "",
        "`bash benchmarks/device/pkb_kernels_h200.sh .pkb` (`PLAN=SIZE:WORLDS`, `PROBLEMS`): runs/x1-kernels-2",
        "(4096x4096 and 8192x8192, world 8), x1-kernels-3 (1024x1024, world 8, and the 4096x4096 problems -2 did",
        "not reach, 76-87; run after the compute family's kernels grid in the same call) and x1-kernels-4",
        "(1024x1024, worlds 4 and 2; the call's time ran out at world 2, problem 74): every problem's",
        "single-GPU part run under torch.profiler with CUDA activity",
        "(`pkb_worker --mode kernels`), each kernel's device time from CUPTI (median of 10 calls), filed under the op",
        "that launched it (x1-kernels-1 linked no kernel to its op and is kept as run). Predicted: the device",
        "time of each op of the same part (`rooflib.validate.pkb_kernels` aligns the two; the gaps between",
        "kernels are not in either side). Nothing is fitted on these points: the op classes' curves come from",
        "the compute family's `kernels` grid (docs/validation/h200/report-x1-compute).",
        "`index:scatter_add_rows` (the MoE combine's row scatter, ATen's elementwise kernel) was measured on a",
        "lent H100 only (docs/validation/h100/runs/x1-gaps, `benchmarks/device/gaps_h200.sh` asked for an H200),",
        "its curve carried to the H200's HBM rate (`python tools/port_curves.py`); with `index_add`'s in its",
        "place (`rooflib.compute.kernels.STAND_IN`, before) the class was 2.09x too slow (median, 30 ops).",
        "",
        "- a part's kernels summed, predicted against measured, per size:",
    ]
    for size in sizes:
        sel = [p for p in ok if p["size"] == size]
        errs = [p["predicted_s"] / p["measured_s"] - 1 for p in sel]
        signed = 100 * statistics.median(errs)
        within = sum(1 for e in errs if abs(e) < 0.1)
        label = "x".join(map(str, size))
        lines.append(f"  - {label}: {len(sel)} points, median |error| {_median_abs(errs)}, median {signed:+.1f} %,")
        lines[-1] += f" {within} within 10 %"
    bad = [p for p in points if "error" in p]
    if bad:
        lines.append(f"  - not traced: {', '.join(sorted({p['problem'] for p in bad}))}")
    matched = [p for p in pairs if p.matched and p.measured_s > 0 and p.predicted_s > 0]
    lines.append(f"- ops matched: {len(matched)} of {len(pairs)} (the rest below); per op, by measured time:")
    for lo, hi, label in BANDS:
        band = [p for p in matched if lo <= p.measured_s < hi]
        if band:
            errs = [p.predicted_s / p.measured_s - 1 for p in band]
            lines.append(f"  - {label}: {len(band)} ops, median |error| {_median_abs(errs)}, median")
            lines[-1] += f" {100 * statistics.median(errs):+.1f} %"
    lines += [
        "",
        "| op class | ops | measured (ms, all) | predicted (ms, all) | predicted / measured: median | quartiles |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for r in summarise(pairs):
        if "ratio_median" in r:
            q = f"{r['ratio_q1']:.2f} / {r['ratio_q3']:.2f}"
            lines.append(
                f"| {r['class']} | {r['n']} | {1e3 * r['measured_s']:.2f} | {1e3 * r['predicted_s']:.2f} | "
                f"{r['ratio_median']:.2f} | {q} |"
            )
        else:
            lines.append(
                f"| {r['class']} | {r['n']} | {1e3 * r['measured_s']:.2f} | {1e3 * r['predicted_s']:.2f} | - | - |"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pkb", required=True)
    p.add_argument("--runs", default="docs/validation/pkb/runs")
    a = p.parse_args(argv)
    from rooflib.trace.pkb import open_suite

    print("\n".join(kernels_section(open_suite(a.pkb), Path(a.runs))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
