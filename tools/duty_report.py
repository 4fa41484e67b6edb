"""The GEMM duty cycle: how much slower a large GEMM runs once the GPU has been busy long enough to reach its power
limit, from rooflib's own runs; the source of each device's ``compute.gemm.sustained_share``.

    python tools/duty_report.py            # writes docs/validation/duty.md

- H100 (docs/validation/h100/runs/x1-gemm-duty, -2, -3, -4: four leases): the graph worker's grid as the tables
  time it (``burst.jsonl``) and 10x and 40x as long (``sustained*.jsonl``); per shape, sustained over burst time;
- H100 ramps (x1-gemm-duty-2, -3, -4, ``benchmarks/device/gemm_ramp.py``; ``ramp.jsonl.gz``, gzipped as it
  came): large GEMMs back to back for 4 s from idle, the rate of the first 20 ms against the last second;
- H200 ramps (docs/validation/h200/runs/x1-tinyk-ramp, one lease, the same script): the H200's share;
- H200 (docs/validation/h200/runs/x1-gemm-clocks with x1-gemm-modes, one lease): the compute worker's GEMMs
  (0.1-0.4 s of each shape, L2 flushed before each call) against the graph worker's (short bursts, the SM clock
  at 1980 MHz): shown, not used (neither side is at the sustained rate).

The H100's share is 1 / the median ratio of the GEMMs with m n k >= 2^36 (compute-bound at the power limit; the
smaller ones draw less power and their ratio stays near 1); the H200's, which has no such grid, the median
last-second over first-20-ms rate of its ramps (on the H100 the ramps' median, 0.880, is within 2 % of its grid's
0.864).
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gemm_graph_report import _compute_gemms, _gemm_file

ROOT = Path(__file__).resolve().parents[1]
H100 = ROOT / "docs" / "validation" / "h100" / "runs"
H200 = ROOT / "docs" / "validation" / "h200" / "runs"
OUT = ROOT / "docs" / "validation" / "duty.md"
KEYS = ["dtype", "m", "n", "k"]
LARGE = 2**36
GRID_LEASES = ("x1-gemm-duty", "x1-gemm-duty-2", "x1-gemm-duty-3", "x1-gemm-duty-4")  # -2 lost its 10x file
RAMP_LEASES = ("x1-gemm-duty-2", "x1-gemm-duty-3", "x1-gemm-duty-4")
H200_RAMP_LEASES = ("x1-tinyk-ramp",)


def _large(frame: pd.DataFrame) -> pd.Series:
    return frame["m"] * frame["n"] * frame["k"] >= LARGE


def h100_ratios() -> pd.DataFrame:
    """One row per (lease, length, dtype, shape): sustained over burst time."""
    parts = []
    for lease in GRID_LEASES:
        burst = _gemm_file(H100 / lease / "burst.jsonl")
        for length in ("sustained", "sustained-long"):
            path = H100 / lease / f"{length}.jsonl"
            if not path.exists():
                continue
            both = _gemm_file(path).merge(burst, on=KEYS, suffixes=("", "_burst"))
            both["ratio"] = both["time_s"] / both["time_s_burst"]
            both["lease"], both["length"] = lease, length
            parts.append(both[["lease", "length", *KEYS, "ratio"]])
    return pd.concat(parts, ignore_index=True)


def ramps(runs: Path = H100, leases: tuple[str, ...] = RAMP_LEASES) -> list[dict[str, object]]:
    """One row per ramp: its lease, dtype, size and the time of one GEMM in its first 20 ms and its last second."""
    out = []
    for lease in leases:
        for line in gzip.decompress((runs / lease / "ramp.jsonl.gz").read_bytes()).decode().splitlines():
            r = json.loads(line)
            if r.get("record") == "ramp":
                if not r["verified"]:
                    raise SystemExit(f"{lease}/ramp.jsonl: {r['dtype']} {r['m']}: output failed its check")
                out.append({"lease": lease, **{k: r[k] for k in ("dtype", "m", "first_20ms_s", "last_1s_s")}})
    return out


def h200_ratios() -> pd.DataFrame:
    graph = _gemm_file(H200 / "x1-gemm-modes" / "gemm-modes.jsonl")
    graph = graph[graph["mode"] == "graph"]
    worker = _compute_gemms(H200 / "x1-gemm-clocks")
    both = worker.merge(graph[[*KEYS, "time_s"]], on=KEYS, suffixes=("", "_graph"))
    both["ratio"] = both["time_s"] / both["time_s_graph"]
    return both[[*KEYS, "ratio"]]


def _q(values: pd.Series) -> str:
    q = statistics.quantiles(values.tolist(), n=4) if len(values) >= 2 else [values.iloc[0]] * 3
    return f"{q[0]:.3f} / {q[1]:.3f} / {q[2]:.3f}"


def _ramp_rate(r: dict[str, object]) -> float:
    """A ramp's last-second rate over its first 20 ms."""
    return float(r["first_20ms_s"]) / float(r["last_1s_s"])  # type: ignore[arg-type]


def shares() -> dict[str, float]:
    """Per catalog device: the H100's 1 / the median sustained-over-burst ratio of its large GEMMs, the H200's the
    median rate ratio of its ramps."""
    h100 = h100_ratios()
    return {
        "h100-sxm5": 1.0 / float(h100["ratio"][_large(h100)].median()),
        "h200-sxm": statistics.median(_ramp_rate(r) for r in ramps(H200, H200_RAMP_LEASES)),
    }


def report() -> str:
    h100, h200, share = h100_ratios(), h200_ratios(), shares()
    lines = [
        "# GEMM duty cycle: burst against sustained (the power limit)",
        "",
        "Generated by `python tools/duty_report.py` from rooflib's own runs; the source of the catalog's",
        "`compute.gemm.sustained_share`. A GEMM block is fitted on burst timings (NVIDIA's tables: a few graph",
        "replays from idle); `rooflib.compute.gemm(..., duty=\"sustained\")`, the default, charges the share,",
        "as a program's steps keep the GPU busy. Ratios: sustained over burst time, quartiles.",
        "",
        "## H100 (700 W): the graph worker's grid, burst and 10x / 40x as long, four leases",
        "",
        "| lease | length | dtype | m n k >= 2^36: n, quartiles | smaller: n, quartiles |",
        "| --- | --- | --- | --- | --- |",
    ]
    for (lease, length, dtype), g in h100.groupby(["lease", "length", "dtype"], sort=True):
        big = _large(g)
        lines.append(
            f"| {lease} | {length} | {dtype} | {int(big.sum())}: {_q(g['ratio'][big])} | "
            f"{int((~big).sum())}: {_q(g['ratio'][~big])} |"
        )
    lines += [
        "",
        "## Ramps: large GEMMs back to back for 4 s from idle (`benchmarks/device/gemm_ramp.py`)",
        "",
        "| device | lease | dtype | m = n = k | first 20 ms, TFLOP/s | last second, TFLOP/s | last over first, rate |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: |",
    ]
    h200_ramps = ramps(H200, H200_RAMP_LEASES)
    rows = [("H100", r) for r in ramps()] + [("H200", r) for r in h200_ramps]
    for device, r in rows:
        flops = 2.0 * float(r["m"]) ** 3  # type: ignore[arg-type]
        first, last = float(r["first_20ms_s"]), float(r["last_1s_s"])  # type: ignore[arg-type]
        lines.append(
            f"| {device} | {r['lease']} | {r['dtype']} | {r['m']} | {flops / first / 1e12:.0f} | "
            f"{flops / last / 1e12:.0f} | {first / last:.3f} |"
        )
    big = _large(h200)
    lines += [
        "",
        "The rate falls over the first 0.1-0.2 s (the samples of `ramp.jsonl`), so any program step",
        "of more than a few large GEMMs runs at the sustained rate; a GEMM that streams its weights (small m)",
        "draws less power and keeps its burst time in every run above.",
        "",
        "## H200 (700 W): the compute worker against the graph worker (1980 MHz), one lease",
        "",
        "Shown, not used: the compute worker times each shape for 0.1-0.4 s with L2 flushed before each call,",
        "so its large GEMMs run partway down the ramp, neither burst nor sustained.",
        "",
        f"- m n k >= 2^36: {int(big.sum())} shapes, quartiles {_q(h200['ratio'][big])}",
        f"- smaller: {int((~big).sum())} shapes, quartiles {_q(h200['ratio'][~big])} (the compute worker flushes",
        "  L2 before each GEMM, the graph worker cycles weight copies: not a duty effect)",
        "",
        "## The catalog's figures",
        "",
        "| device | measured share | in the catalog | from |",
        "| --- | ---: | --- | --- |",
        f"| h100-sxm5 | {share['h100-sxm5']:.3f} | `sustained_share` | {int(_large(h100).sum())} ratios, four leases |",
        f"| h200-sxm | {share['h200-sxm']:.3f} | `sustained_share` | the median of {len(h200_ramps)} ramps, "
        "one lease |",
        "",
        "Both GEMM blocks are fitted on NVIDIA's burst tables (`tools/fit_gemm_defaults.py`). Until session 26",
        "the H200 kept a block fitted on the compute worker's runs, which sit between the two rates; with the",
        "ramps' share charged to the table-fitted block, the H200 programs of 0.5 ms and more went from 3.8 to",
        "1.3 % median (docs/validation/h200/report-x1-programs) and NVIDIA's H200 table from 11.8 / 5.2 to",
        "4.5 / 3.7 % (bf16 / fp8, docs/validation/generalization.md). The H200 throttles about as much as the H100",
        "once at its limit (ramps: 0.83-0.89 against 0.84-0.91). No other device has a measured share: A100,",
        "B200 and GB200 keep burst = sustained, an optimistic figure for long programs there until a run",
        "measures it (`bash benchmarks/device/gemm_duty.sh` or `gemm_ramp.py` on one GPU, then this tool).",
        "",
    ]
    for path, system, label in PROGRAMS_RUNS:
        lines += programs_section(path, system, label)
    return "\n".join(lines)


PROGRAMS_RUNS = (
    (H100 / "x1-programs-duty" / "duty.jsonl", "hgx-h100", "H100"),
    (H100 / "x1-programs-duty-2" / "duty.jsonl", "hgx-h100", "H100 (a second lease)"),
    (H200 / "x1-programs-duty" / "duty.jsonl", "hgx-h200", "H200"),
)


def programs_section(path: Path, system_name: str, label: str) -> list[str]:
    """benchmarks/device/programs_duty.py on one GPU: each program point timed from idle and after seconds of
    replays, against ``predict_program`` at the burst and the sustained rate (held out: the shares are the GEMM
    grids' and ramps')."""
    if not path.exists():
        return []
    import dataclasses

    import rooflib
    from rooflib.compute.duty import at_burst
    from rooflib.validate.programs import programs_table

    recs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    bad = [r for r in recs if r.get("record") == "point" and not r.get("verified")]
    if bad:
        raise SystemExit(f"{path}: {len(bad)} outputs failed their check")
    system = rooflib.load_system(system_name, gpus=1)
    burst_system = dataclasses.replace(system, device=at_burst(system.device))
    points = {d: [r for r in recs if r.get("duty") == d] for d in ("burst", "sustained")}
    tables = {
        (measured, model): programs_table(points[measured], burst_system if model == "burst" else system)
        for measured in points
        for model in ("burst", "sustained")
    }
    lines = [
        "",
        f"## {label} programs from idle and busy (held out: `benchmarks/device/programs_duty.py`, "
        f"{path.parent.relative_to(ROOT)})",
        "",
        "Each program point replayed as CUDA graphs: 5 replays after 4 s idle (burst), then 20 after 2 s of",
        "back-to-back replays (sustained); every output checked. Predicted by `predict_program` (graph time) on",
        f"{system_name} at the burst rate (`at_burst`) and at the sustained one (the default). Cells: error, %.",
        "",
        "| program | shape | burst measured | vs burst model | vs sustained model | sustained measured "
        "| vs burst model | vs sustained model | sustained over burst, measured |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    bb, bs = tables[("burst", "burst")], tables[("burst", "sustained")]
    sb, ss = tables[("sustained", "burst")], tables[("sustained", "sustained")]
    for i in range(len(bb)):
        name, shape = bb["program"].iloc[i], bb["shape"].iloc[i]
        mb, ms = bb["measured_s"].iloc[i], ss["measured_s"].iloc[i]
        lines.append(
            f"| {name} | {shape} | {mb * 1e6:.1f} us | {bb['error_pct'].iloc[i]:+.1f} | {bs['error_pct'].iloc[i]:+.1f} "
            f"| {ms * 1e6:.1f} us | {sb['error_pct'].iloc[i]:+.1f} | {ss['error_pct'].iloc[i]:+.1f} | {ms / mb:.3f} |"
        )
    med = lambda t: float(t["error_pct"].abs().median())  # noqa: E731
    lines += [
        "",
        f"Median |error|: burst timings {med(bb):.1f} % at the burst rate, {med(bs):.1f} % at the sustained one;",
        f"sustained timings {med(ss):.1f} % at the sustained rate, {med(sb):.1f} % at the burst one. The",
        "memory-bound control (elementwise_chain) and the top-k router run alike busy or idle, as the model has",
        "them (no share on memory-bound work).",
    ]
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    args.out.write_text(report())
    sys.stdout.write(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}\n")
    for name, value in shares().items():
        sys.stdout.write(f"{name}: sustained_share {value:.4f}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
