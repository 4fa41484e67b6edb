"""One lent H100, a GPU no rooflib figure was fitted on: its GEMMs and ParallelKernelBench's single-GPU parts
against the datasheet catalog's ``hgx-h100``; writes docs/validation/h100/report.md (and report.csv, every PKB
point).

    python tools/h100_report.py --pkb ../shared/pkb [--data .../aiconfigurator_core/systems/data]

Runs (docs/validation/h100/runs, README there): ``x1-gemm-modes`` and ``x1-gemm-modes-2`` (63 shapes x bf16 and
fp8, replayed in a CUDA graph and launched eagerly behind a sleep kernel, every output checked), ``x1-compute``
(the compute worker's GEMM, fp32 GEMM, attention, memory and kernels grids), ``x1-pkb-1024``, ``x1-pkb-4096``,
``x1-pkb-4096-w42`` and ``x1-pkb-8192`` (the single-GPU parts with each held call's queued device time, no host
family) and ``x1-pkb-lease`` (the host family, then every part at world 8, 4 and 2). Nothing in the catalog was
fitted on any of them: the H100's GEMM block was fitted on NVIDIA's H100 table, its memory-op curves are the H200's
carried to the H100's HBM rate and its fp32 GEMM and attention models the H200's as they are
(``rooflib.specs.port``), and its host figures are assumptions. Errors are predicted / measured - 1.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))  # pkb_report, beside this file

from gemm_graph_report import _gemm_file, tiny_k_section  # beside this file (the path above)

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "docs" / "validation" / "h100" / "runs"
OUT = ROOT / "docs" / "validation" / "h100"
KEYS = ["dtype", "m", "n", "k"]
H200_DEVICE = {"1024x1024": 7.0, "4096x4096": 7.1, "8192x8192": 6.7}
"""The H200's device-time medians (%, docs/validation/pkb/README.md, session 16) for comparison: fitted there."""


def _stats(err: Any) -> str:
    e = np.asarray(err, dtype=float)
    return f"{np.median(np.abs(e)):.1f} / {np.percentile(np.abs(e), 90):.1f} / {np.median(e):+.1f}"


def _quartiles(x: Any) -> str:
    q = np.percentile(np.asarray(x, dtype=float), [25, 50, 75])
    return " / ".join(f"{v:.3f}" for v in q)


def gemm_section(data: Path | None) -> list[str]:
    """The graph-timed and eager GEMMs against each other, the second lease, NVIDIA's H100 table and the model."""
    from rooflib.compute.gemm import gemm_times
    from rooflib.specs import default_catalog

    first = _gemm_file(RUNS / "x1-gemm-modes" / "gemm-modes.jsonl")
    second = _gemm_file(RUNS / "x1-gemm-modes-2" / "gemm-modes.jsonl")
    graph = first[first["mode"] == "graph"]
    eager = first[first["mode"] == "eager"]
    modes = graph.merge(eager, on=KEYS, suffixes=("", "_eager"))
    again = first.merge(second, on=[*KEYS, "mode"], suffixes=("", "_2"))
    device = default_catalog().device("h100-sxm5")
    lines = [
        "## GEMMs",
        "",
        "`rooflib.bench.gemm_graph_worker --modes graph,eager`: each shape replayed in a CUDA graph over weight",
        "copies that pass twice the L2 (as NVIDIA's aiconfigurator tables time GEMMs) and launched eagerly back to",
        "back, queued behind a sleep kernel (as a PyTorch program that keeps the GPU busy sees them); every output",
        "checked against an fp32 product. Our fp8 GEMM is bare (`torch._scaled_mm`, unit scales). Cells: median /",
        "p90 of |error| / median signed error, %.",
        "",
        f"- second lease against the first (both modes): {_stats((again['time_s_2'] / again['time_s'] - 1) * 100)} "
        f"({len(again)} records)",
    ]
    for dtype, g in modes.groupby("dtype"):
        lines.append(
            f"- {dtype}: eager over graph time, quartiles {_quartiles(g['time_s_eager'] / g['time_s'])} "
            f"({len(g)} shapes)"
        )
    table = None
    if data is not None:
        from rooflib.bench.aiconfigurator_import import table_paths
        from rooflib.bench.aiconfigurator_tables import read_gemm_table

        path = table_paths(data / "h100_sxm", {"gemm"})[0]
        table = pd.DataFrame.from_records(read_gemm_table(path).records)[[*KEYS, "time_s"]]
        lines.append(f"- NVIDIA's table: `{path.relative_to(data)}` (the catalog's H100 block was fitted on it)")
    lines += [
        "",
        "| dtype | shapes | table vs ours (graph) | model vs ours (graph) | model vs ours (eager) "
        "| model, m >= 1024 (graph) |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for dtype, g in modes.groupby("dtype"):
        m, n, k = (g[c].to_numpy(dtype=np.int64) for c in ("m", "n", "k"))
        pred = gemm_times(device, m, n, k, str(dtype), duty="burst")  # a few graph replays, queued launches alike
        cell = "-"
        if table is not None and dtype == "bf16":  # the table's fp8 rows add TRT-LLM's quantisation
            both = g.merge(table, on=KEYS, suffixes=("", "_table"))
            cell = f"{_stats((both['time_s_table'] / both['time_s'] - 1) * 100)} ({len(both)})"
        big = g["m"].to_numpy() >= 1024
        lines.append(
            f"| {dtype} | {len(g)} | {cell} | {_stats((pred / g['time_s'] - 1) * 100)} | "
            f"{_stats((pred / g['time_s_eager'] - 1) * 100)} | {_stats((pred[big] / g['time_s'][big] - 1) * 100)} |"
        )
    lines += [
        "",
        "The table's fp8 rows include TRT-LLM's activation quantisation, so they are not compared with our bare fp8",
        "GEMMs; the catalog's fp8 figures were fitted on those rows (the quantisation as its own fixed time).",
        "",
        *tiny_k_section(device, RUNS / "x1-tinyk" / "tinyk.jsonl"),
        "(the H200's former own-runs block predicted 56 us for 8192 x 8192 x 64 bf16 where an H200 measured 45 us:",
        "the largest device-time error of the PKB parts, problem 16, was that block's, not the tile model's;",
        "the H200 now has a table-fitted block too: h200/gemm_graph.md).",
    ]
    return lines


def compute_section() -> list[str]:
    """``rooflib.bench.compute_worker``'s grids measured on the H100 (runs/x1-compute) against the catalog's H100
    and, beside it, the H200's models as they are, per op family (``rooflib.calibrate.compute_report.subsets``)."""
    from rooflib.calibrate.compute import compute_rows, load_runs
    from rooflib.calibrate.compute_report import predict_rows, subsets
    from rooflib.specs import default_catalog

    rows = compute_rows(load_runs([RUNS / "x1-compute"]))
    cat = default_catalog()
    errs = {name: (predict_rows(cat.device(name), rows) / rows["time_s"] - 1) * 100 for name in DEVICES}
    lines = [
        "## Compute and memory kernels",
        "",
        "`python -m rooflib.bench.compute_worker --part P` for P = gemm (bf16, fp8), gemm with `--dtypes fp32`",
        "(main and holdout grids), attention, memory and kernels (runs/x1-compute/raw; every output checked,",
        f"{len(rows)} verified points): fresh random inputs cycled over 3x the L2, the smaller of the eager and",
        "the graph-replayed median. Predicted by `rooflib.calibrate.compute_report.predict_rows` with the",
        "catalog's H100 (memory curves carried from the H200 at the H100's HBM rate; CUDA-core fp32 GEMMs and",
        "attention the H200's models as they are; bf16 / fp8 GEMMs fitted on NVIDIA's H100 table) and, for",
        "comparison, the H200's own models unchanged. Cells: points, median |error| %, median error %.",
        "",
        "| rows | hgx-h100 (catalog) | h200-sxm models as they are |",
        "| --- | ---: | ---: |",
    ]
    for label, mask in subsets(rows):
        cells = []
        for name in DEVICES:
            e = errs[name][mask].dropna()
            cells.append(f"{len(e)}, {e.abs().median():.1f}, {e.median():+.1f}" if len(e) else "-")
        if cells[0] != "-":
            lines.append(f"| {label.replace('  ', '&emsp;')} | {' | '.join(cells)} |")
    big = rows[(rows["op"] == "gemm") & (rows["m"] * rows["n"] * rows["k"] >= 2**38)]
    if "sm_mhz" in big and big["sm_mhz"].notna().any():
        q = np.percentile(big["sm_mhz"].dropna().astype(float), [0, 50, 100])
        lines += [
            "",
            f"The largest GEMMs (m n k >= 2^38, {len(big)} points) ran at {q[0]:.0f} / {q[1]:.0f} / {q[2]:.0f} MHz",
            "(min / median / max SM clock sampled during the point; 1980 MHz boost): power-bound, so their time",
            "depends on how long and how hard the GPU has been working, not on the shape alone.",
        ]
    return lines


DEVICES = ("h100-sxm5", "h200-sxm")


def _clocks(run: Path, name: str) -> str:
    """SM clock p10 / median and the highest power of ``name`` (nvidia-smi samples every 100 ms)."""
    rows = [line.split(", ") for line in (run / name).read_text().splitlines() if line.count(",") == 3]
    sm = np.array([float(r[1].split()[0]) for r in rows])
    watts = max(float(r[2].split()[0]) for r in rows)
    p10, p50 = np.percentile(sm, [10, 50])
    return f"SM clock p10 / median {p10:.0f} / {p50:.0f} MHz, up to {watts:.0f} W"


def duty_section() -> list[str]:
    """The same graph-replayed GEMM grid timed briefly (aiconfigurator's way) and for ten and forty times as long
    (runs/x1-gemm-duty): what a GPU held at its power limit does to a large GEMM."""
    run = RUNS / "x1-gemm-duty"
    burst = _gemm_file(run / "burst.jsonl")
    both = burst.merge(_gemm_file(run / "sustained.jsonl"), on=KEYS, suffixes=("", "_10x"))
    both = both.merge(_gemm_file(run / "sustained-long.jsonl"), on=KEYS, how="left", suffixes=("", "_40x"))
    big = both["m"] * both["n"] * both["k"] >= 2**36
    lines = [
        "## A large GEMM's time depends on how long the GPU has been busy",
        "",
        "`rooflib.bench.gemm_graph_worker --modes graph` three times in one lease (runs/x1-gemm-duty): as the",
        "tables time it (3 warm-up and 15 timed replays per shape), then with 40 and 150 (bf16 and fp8), then",
        "100 and 600 (bf16), SM clock and power sampled every 100 ms. Time over the brief pass's, median:",
        "",
        "| shapes | 10x the replays | 40x (bf16) |",
        "| --- | ---: | ---: |",
    ]
    for label, mask in (("m n k >= 2^36", big), ("smaller", ~big)):
        sel = both[mask]
        ten = (sel["time_s_10x"] / sel["time_s"]).median()
        forty = (sel["time_s_40x"] / sel["time_s"]).dropna().median()
        lines.append(f"| {label} ({int(mask.sum())}) | {ten:.3f} | {forty:.3f} |")
    lines += [
        "",
        f"- brief pass and 10x pass (one trace, `clocks.csv`): {_clocks(run, 'clocks.csv')}; 40x pass: "
        f"{_clocks(run, 'clocks-long.csv')}",
        "- the brief pass is what NVIDIA's table measures (our graph-timed bf16 against it: 2.8 % median, above);",
        "  a program that keeps the GPU busy with large GEMMs holds it at its 700 W limit, where they run about",
        "  15 % longer. The catalog's H100 block charges it since session 23: `sustained_share` 0.864, fitted on",
        "  these runs and x1-gemm-duty-3 (docs/validation/duty.md); programs are predicted sustained, the PKB",
        "  parts below at the burst rate (a lease times each part for well under 0.1 s; charged the share, their",
        "  device-time medians went from 4.9 to 7.5 % at 8192x8192 and 5.6 to 8.3 % at 4096x4096, worlds 4 and 2).",
    ]
    return lines


def _gaps(run: Path) -> str:
    """The device-side gaps a lease's host family measured (``rooflib.calibrate.host.fit_host``), against the
    catalog's (carried from the H200)."""
    from pkb_report import _host_records

    from rooflib.calibrate.host import fit_host
    from rooflib.specs import load_system

    fit = fit_host(_host_records(run))
    host = load_system("hgx-h100", gpus=1).device.host
    out = []
    for name in ("kernel_gap", "queued_gap", "queued_event"):
        if name in fit:
            ours = getattr(host, name)
            out.append(f"{name} {1e6 * fit[name]:.3f} us" + (f" against {1e6 * ours.value:.3f}" if ours else ""))
    return ", ".join(out)


def pkb_section(pkb: str) -> tuple[list[str], list[dict[str, Any]]]:
    """Every PKB point predicted on hgx-h100 (one GPU): the device time alone against the held calls' queued
    device time, PKB's timing with the catalog's host figures and (x1-pkb-lease) with the lease's own."""
    from pkb_report import BANDS, _summary, lease_section

    from rooflib.trace.pkb import open_suite

    suite = open_suite(pkb)
    # the mix exponent as tools/pkb_report.py fits it: on the H200 leases FIT_LEASES (x1-lease-7 and -8)
    h200_runs = OUT.parent / "pkb" / "runs"
    _, _, mix_b = lease_section(suite, h200_runs, pattern="x1-lease-[78]")
    table, rows, _ = lease_section(suite, RUNS, "hgx-h100", "x1-pkb*", lease_device=True, mix_b=mix_b)
    runs = sorted({r["lease"] for r in rows})
    lines = [
        "## ParallelKernelBench's single-GPU parts",
        "",
        "`benchmarks/device/pkb_lease_h200.sh` on the H100 (PKB's builder and timing: input groups over 3x the",
        "L2, 10 warm-up and 30 timed back-to-back calls, the median; then 10 calls issued while a sleep kernel",
        "holds the GPU and timed on the device once it runs them, all queued: `queued`, the part's device time",
        "with the host never behind). Predicted (`tools/pkb_report.py`'s `lease_section` on `hgx-h100`): the",
        "problem traced at that world size as torch's fake group runs it (`rooflib.trace.pkb_table.local_part`),",
        "its eager timeline on one GPU; the device time alone with a host that costs nothing.",
        "",
        "Device time alone (queued) against the predicted device time; the H200's median for the same size, where",
        "its figures were fitted, in brackets:",
        "",
    ]
    for run in runs:
        for size in sorted({r["size"] for r in rows if r["lease"] == run}):
            sel = [r for r in rows if r["lease"] == run and r["size"] == size]
            worlds = ", ".join(str(w) for w in sorted({int(r["world"]) for r in sel}, reverse=True))
            h200 = H200_DEVICE.get(size)
            lines.append(
                f"- {run}, {size}, world {worlds}: {_summary(sel, 'device_error')}"
                + (f" (H200 {h200} %)" if h200 else "")
            )
            for lo, hi, label in BANDS:
                band = [r for r in sel if r.get("queued_s") and lo <= r["queued_s"] < hi]
                if band:
                    lines.append(f"  - {label}: {_summary(band, 'device_error')}")
            if any(r.get("lease_device_error") is not None for r in sel):
                lines.append(
                    f"  - with the device-side gaps this lease's host family measured ({_gaps(RUNS / run)}): "
                    f"{_summary(sel, 'lease_device_error')}"
                )
    queued = [r for r in rows if r.get("queued_s") and r.get("device_only_s")]
    above_q = [r for r in queued if r.get("bound_s") and r["bound_s"] > r["queued_s"]]
    above_m = [r for r in rows if r.get("bound_s") and r["measured_s"] and r["bound_s"] > r["measured_s"]]
    lines += [
        "",
        "PKB's timing (back-to-back calls, host included):",
        "",
    ]
    for run in runs:
        sel = [r for r in rows if r["lease"] == run]
        lines.append(f"- {run}: catalog host {_summary(sel, 'catalog_error')}")
        if any(r.get("lease_error") is not None for r in sel):
            lines.append(f"  - the host figures measured on the same lease: {_summary(sel, 'lease_error')}")
        if any(r.get("program_error") is not None for r in sel):
            b = "-" if mix_b is None else f"{mix_b:.2f}"
            lines.append(
                f"  - the same as a program's ops cost them (mix ratio ** b, b = {b} fitted on the H200's "
                f"x1-lease-7 and -8, times the probes' drift): {_summary(sel, 'program_error')}; the mix alone: "
                f"{_summary(sel, 'mix_error')}"
            )
    worst = sorted((r for r in queued if r.get("device_error") is not None), key=lambda r: -abs(r["device_error"]))
    lines += [
        "",
        f"- the bound above a queued device time: {len(above_q)} of {len(queued)} points; above PKB's measured "
        f"time: {len(above_m)} of {len(rows)}",
        "- the device time's largest errors: "
        + "; ".join(f"{r['problem']} w{r['world']} {r['size']} {100 * r['device_error']:+.0f} %" for r in worst[:10]),
        "",
        "Every point (the columns as in docs/validation/pkb/README.md; report.csv has them as numbers):",
        "",
        *table,
    ]
    return lines, rows


FIELDS = ["problem", "id", "world", "size", "lease", "measured_s", "catalog_s", "lease_s", "program_s", "queued_s"]
FIELDS += ["device_only_s", "lease_device_s", "bound_s", "host_s", "verified", "catalog_error", "lease_error"]
FIELDS += ["program_error", "device_error", "lease_device_error"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pkb", required=True, help="ParallelKernelBench root (its reference/ and utils/)")
    ap.add_argument("--data", type=Path, default=None, help="aiconfigurator_core/systems/data (NVIDIA's H100 table)")
    args = ap.parse_args(argv)
    from rooflib.bench.aiconfigurator_import import _data_root

    data = args.data or _data_root()
    if data is not None and not (data / "h100_sxm").is_dir():
        print(f"error: --data {data}: no h100_sxm folder", file=sys.stderr)
        return 2
    if not (Path(args.pkb) / "reference").is_dir():
        print(f"error: --pkb {args.pkb}: no reference/ folder", file=sys.stderr)
        return 2
    pkb_lines, rows = pkb_section(args.pkb)
    text = [
        "# One lent H100: predicted (never fitted) against measured",
        "",
        "Generated by `python tools/h100_report.py --pkb ../shared/pkb --data .../aiconfigurator_core/systems/data`",
        "from the runs under runs/ (README.md: what each is and the device command that made it). No rooflib figure",
        "was fitted on an H100 measurement of ours: the H100's GEMM block was fitted on NVIDIA's H100 table, its",
        "memory-op curves are the H200's carried to the H100's HBM rate (`rooflib.specs.port`), its host figures",
        "are assumptions. These runs are held out.",
        "",
        *gemm_section(data),
        "",
        *compute_section(),
        "",
        *duty_section(),
        "",
        *pkb_lines,
        "",
    ]
    (OUT / "report.md").write_text("\n".join(text))
    with open(OUT / "report.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {OUT / 'report.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
