"""The text of ``report-x1-compute/REPORT.md``: what was measured, what was fitted, and the held-out errors.

Every number in it is computed here from the fit (:class:`~rooflib.calibrate.compute.ComputeFit`) and the error
table, none is typed in.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rooflib.calibrate.compute import ComputeFit

__all__ = ["report_text"]


def _n(rows: pd.DataFrame, **eq: Any) -> int:
    sel = pd.Series(True, index=rows.index)
    for k, v in eq.items():
        sel &= rows[k] == v
    return int(sel.sum())


def _gemm_lines(result: ComputeFit) -> list[str]:
    g = result.compute.get("gemm")
    if not g:
        return []
    eff = ", ".join(f"{d} {v:.3f}" for d, v in result.efficiency.items())
    return [
        f"- GEMM: efficiency of the datasheet tensor peak on the FLOP-bound part of a k step: {eff}; operand rate "
        f"{g['operand_bandwidth']['value'] / 1e12:.2f} TB/s (all SMs), output tiles written at "
        f"{g['epilogue_bandwidth']['value'] / 1e12:.2f} TB/s, {g['unit_overhead']['value'] * 1e6:.2f} us per work "
        f"unit, {g['kernel_fixed']['value'] * 1e6:.2f} us per kernel, {g['split_k_reduce']['value'] * 1e6:.2f} us "
        f"per split-K reduction; {len(g['tiles']['pairs'])} candidate tiles (the ones cuBLAS chose, read from its "
        f"kernel names), split-K factors {g['tiles']['split_k']}.",
    ]


def _attention_lines(result: ComputeFit) -> list[str]:
    a = result.compute.get("attention")
    if not a:
        return []
    pts = "; ".join(f"{k} {v:.3f}" for k, v in a["efficiency"].items())
    w = a.get("wave_overhead")
    wave = f" plus {w['value'] * 1e6:.2f} us per wave of units, a wave no shorter than its longest unit" if w else ""
    return [
        f"- attention: blocks of {a['block_q']} x {a['block_kv']} (decode: {a['min_block_q']} query rows); "
        f"{a['kernel_fixed']['value'] * 1e6:.1f} us per prefill pass{wave}; efficiency of the peak: {pts}.",
    ]


def _memory_lines(result: ComputeFit) -> list[str]:
    hbm = result.compute["memory_ops"]["hbm"]
    last: dict[str, list[float]] = {}
    for key, curve in hbm.items():
        last.setdefault(key.partition("@")[0], []).append(curve["points"][-1][1])
    parts = [
        f"{op} {min(v):.2f}" + (f"-{max(v):.2f} ({len(v)} row lengths)" if len(v) > 1 else "") for op, v in last.items()
    ]
    return [
        "- memory ops: achieved share of the 4.8 TB/s datasheet at the largest size measured: "
        + "; ".join(parts)
        + ". Small sizes run far below (launch, ramp-up and tail): the curves hold every fitted size.",
    ]


def _host_lines(result: ComputeFit) -> list[str]:
    if not result.host:
        return []
    return ["- host (per call, first machine): " + ", ".join(f"{k} {v['value']}" for k, v in result.host.items())]


def _worst(rows: pd.DataFrame, fit: pd.Series, pred: pd.Series, count: int = 4) -> list[str]:
    """The largest held-out errors of each family, with their shapes."""
    err = (pred / rows["time_s"] - 1.0) * 100.0
    out = [
        "## Largest held-out errors",
        "",
        "| family | point | measured | predicted | error |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    families = {
        "memory": ~rows["op"].isin(["gemm", "attention"]),
        "GEMM": rows["op"] == "gemm",
        "attention": rows["op"] == "attention",
    }
    for family, mask in families.items():
        held = err[mask & ~fit].dropna()
        for idx in held.abs().sort_values(ascending=False).index[:count]:
            r = rows.loc[idx]
            if family == "GEMM":
                what = f"{r['dtype']} {int(r['m'])} x {int(r['n'])} x {int(r['k'])}"
            elif family == "attention":
                what = (
                    f"{r['mode']} b{int(r['batch'])} h{int(r['heads'])}/{int(r['kv_heads'])} "
                    f"s{int(r['seq_q'])}/{int(r['seq_kv'])} d{int(r['head_dim'])}{' causal' if r['causal'] else ''}"
                )
            else:
                cols = f", rows of {int(r['cols'])}" if pd.notna(r.get("cols")) else ""
                what = f"{r['op']} {r['mode']} {r['dtype']} {float(r['tensor_bytes']) / 2**20:.2f} MiB{cols}"
            out.append(
                f"| {family} | {what} ({r['run']}) | {float(r['time_s']) * 1e6:.1f} us | "
                f"{float(pred[idx]) * 1e6:.1f} us | {float(err[idx]):+.1f} % |"
            )
    return [*out, ""]


def _host_check(frame: pd.DataFrame, result: ComputeFit) -> list[str]:
    """The fitted host costs (first machine) against the same tests on the second machine."""
    if not result.host or "run" not in frame:
        return []
    runs = list(dict.fromkeys(frame["run"]))
    other = frame[(frame["family"] == "host") & (frame["run"] != runs[0])]
    if other.empty:
        return []
    lines = [
        "## Host costs on a second machine (held out)",
        "",
        "| figure | fitted (first machine) | second machine |",
        "| --- | ---: | ---: |",
    ]
    names = {"kernel": "kernel", "cublas": "cublas"}
    for key, name in names.items():
        if key in result.host:
            sel = other[other["name"] == name]["host_s"].astype(float)
            lines.append(f"| {key} | {result.host[key]['value']} | {float(np.median(sel)) * 1e6:.4g} us |")
    g = other[(other["name"] == "graph") & (other["nodes"].astype(float) == 1)]["host_s"].astype(float)
    if "graph_launch" in result.host and not g.empty:
        lines.append(f"| graph_launch | {result.host['graph_launch']['value']} | {float(g.median()) * 1e6:.4g} us |")
    lines += [
        "",
        "Host costs move with the machine (each lent machine is a fresh VM): compare before relying on a "
        "single figure.",
        "",
    ]
    return lines


def _programs(frame: pd.DataFrame) -> list[str]:
    rows = frame[(frame["family"] == "programs") & frame["verified"]]
    if rows.empty:
        return []
    out = [
        "## Programs (recorded for the program model; not predicted here)",
        "",
        "| program | parameters | eager | CUDA graph |",
        "| --- | --- | ---: | ---: |",
    ]
    params = [
        c
        for c in (
            "tokens",
            "batch",
            "seq",
            "hidden",
            "ffn",
            "heads",
            "kv_heads",
            "layers",
            "elements",
            "experts",
            "k",
            "vocab",
        )
        if c in rows
    ]
    for _, grp in rows.groupby(["name", *params], dropna=False, sort=False):
        first = grp.iloc[0]
        text = ", ".join(f"{c} {int(first[c])}" for c in params if pd.notna(first[c]))
        t = {str(m): float(v) for m, v in zip(grp["mode"], grp["time_s"], strict=True)}
        eager, graph = t.get("eager", np.nan), t.get("graph", np.nan)
        out.append(f"| {first['name']} | {text} | {eager * 1e6:.1f} us | {graph * 1e6:.1f} us |")
    return [*out, ""]


def report_text(
    result: ComputeFit,
    table: pd.DataFrame,
    markdown: str,
    command: str,
    pred: pd.Series | None = None,
    frame: pd.DataFrame | None = None,
) -> str:
    """The report: runs, fitted figures, the error table, the largest misses and how to reproduce it."""
    rows = result.rows
    held = int((~result.fit).sum())
    gemm = table[table["subset"] == "GEMM (all)"].iloc[0]
    mem = table[table["subset"] == "memory ops (all)"].iloc[0]
    att = table[table["subset"] == "attention (all)"].iloc[0]
    runs = ", ".join(sorted(rows["run"].unique()))
    lines = [
        "# Compute models on one H200: fitted on half the points, tested on the rest",
        "",
        f"Runs: {runs} (`docs/validation/h200/runs/`), {len(rows)} verified compute points "
        f"({_n(rows, op='gemm')} GEMMs, {_n(rows, op='attention')} attention calls, "
        f"{len(rows) - _n(rows, op='gemm') - _n(rows, op='attention')} memory-bound ops); "
        f"{int(result.fit.sum())} fitted, {held} held out. Time is the device time of one call: the smaller "
        "median of back-to-back eager calls (ParallelKernelBench's convention) and CUDA-graph replays.",
        "",
        "Reproduce (no GPU needed):",
        "",
        "```bash",
        command,
        "```",
        "",
        "## Held-out error of time (absolute, per point)",
        "",
        f"Held out: GEMM {gemm['held_median']:.1f} % median / {gemm['held_p90']:.1f} % p90 / "
        f"{gemm['held_max']:.1f} % max; memory-bound ops {mem['held_median']:.1f} / {mem['held_p90']:.1f} / "
        f"{mem['held_max']:.1f} %; attention {att['held_median']:.1f} / {att['held_p90']:.1f} / "
        f"{att['held_max']:.1f} %. 'Before' is the catalog's model without these tables (one 128 x 256 tile, "
        "one HBM efficiency of 0.90, attention at the GEMM efficiency) on the same held-out points.",
        "",
        markdown,
        "",
        "## Fitted figures (in `hardware/devices/h200-sxm.yaml`, `compute:` and the efficiencies)",
        "",
        *_memory_lines(result),
        *_gemm_lines(result),
        *_attention_lines(result),
        *_host_lines(result),
        "",
        *(_worst(rows, result.fit, pred) if pred is not None else []),
        *(_host_check(frame, result) if frame is not None else []),
        *(_programs(frame) if frame is not None else []),
    ]
    return "\n".join(lines) + _notes(rows)


def _notes(rows: pd.DataFrame) -> str:
    clocks = rows["sm_mhz"].dropna().astype(float) if "sm_mhz" in rows else pd.Series(dtype=float)
    gemm = rows[rows["op"] == "gemm"]
    ratio = (gemm["graph_s"] / gemm["eager_s"]).dropna() if "graph_s" in gemm else pd.Series(dtype=float)
    big = ratio[gemm.loc[ratio.index, "eager_s"] > 1e-4] if not ratio.empty else ratio
    lines = ["## Notes", ""]
    few = rows[(rows["mode"] == "hot") & (rows["timing"] == "graph") & (rows["graph_calls"] < 10)]
    if not few.empty:
        lines.append(
            f"- {len(few)} L2-resident points ({', '.join(sorted(set(few['run'])))}) were timed as graph replays of "
            f"only {int(few['graph_calls'].min())}-{int(few['graph_calls'].max())} calls (the eager estimate that "
            "sizes the graph includes the host's issue time), so a replay's own start weighs on them; the two largest "
            "memory-op misses are such points."
        )
    if not clocks.empty:
        lines.append(
            f"- SM clock sampled at each point: {clocks.min():.0f}-{clocks.max():.0f} MHz (median "
            f"{clocks.median():.0f}); long GEMMs meet the 700 W power cap (clock-event reason 0x4), which is part "
            "of the GEMM scatter."
        )
    if not big.empty:
        lines.append(
            f"- GEMMs over 100 us: graph replay over eager time {np.percentile(big, 10):.2f}-"
            f"{np.percentile(big, 90):.2f} (p10-p90) with the same kernel in both (names recorded): the power state, "
            "not the launch; copies become graph memcpy nodes (slower) in graphs."
        )
    return "\n".join(lines) + "\n"
