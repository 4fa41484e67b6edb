"""Writing a validation: ``errors.csv``, ``predictions.csv``, plots and a ``REPORT.md`` that links them."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from rooflib.validate.overlap import TIE_PCT

if TYPE_CHECKING:
    from rooflib.validate.report import Validation

__all__ = ["write_report"]

_STYLE = {"datasheet": ":", "calibrated": "-", "nccl": "--"}


def _axes(n: int) -> tuple[Any, list[Any]]:
    from matplotlib.figure import Figure

    cols = min(3, n)
    rows = math.ceil(n / cols)
    fig = Figure(figsize=(5 * cols, 3.6 * rows), layout="constrained")
    axes = [fig.add_subplot(rows, cols, i + 1) for i in range(n)]
    return fig, axes


def _curves(v: Validation, family: str, x: str, variant: str | None, path: Path, ylabel: str) -> str | None:
    rows = v.rows[v.rows["family"] == family]
    if variant is not None:
        rows = rows[rows["variant"] == variant]
    rows = rows[rows[x].notna() & (rows[x].astype(float) > 0)]
    names = sorted(rows["name"].dropna().unique())
    if not names:
        return None
    fig, axes = _axes(len(names))
    for ax, name in zip(axes, names, strict=True):
        grp = rows[rows["name"] == name].sort_values(x)
        if x == "sms":  # one size per SM sweep: the largest
            grp = grp[grp["bytes"] == grp["bytes"].max()]
        xs = grp[x].astype(float).to_numpy()
        size = grp["bytes"].astype(float).to_numpy()
        ax.plot(xs, size / grp["time_s"].astype(float).to_numpy() / 1e9, "ko", ms=3, label="measured")
        for model in v.models:
            pred = grp[f"pred_{model}"].astype(float).to_numpy()
            if np.isfinite(pred).any():
                ax.plot(xs, size / pred / 1e9, _STYLE.get(model, "-"), label=model)
        ax.set_title(str(name))
        ax.set_xscale("log", base=2)
        ax.set_xlabel("bytes" if x == "bytes" else "SMs")
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.savefig(path, dpi=110)
    return path.name


def _gemm_plot(v: Validation, path: Path) -> str | None:
    rows = v.rows[v.rows["family"] == "gemm"]
    if rows.empty:
        return None
    fig, (ax,) = _axes(1)
    meas = rows["flops"].astype(float) / rows["time_s"].astype(float) / 1e12
    for model in v.models:
        pred = rows["flops"].astype(float) / rows[f"pred_{model}"].astype(float) / 1e12
        if pred.notna().any():
            ax.plot(meas, pred, "o", ms=4, label=model)
    lim = [0, float(max(meas.max(), 1.0)) * 1.1]
    ax.plot(lim, lim, "k-", lw=0.8)
    ax.set_xlabel("measured TFLOP/s")
    ax.set_ylabel("predicted TFLOP/s")
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=110)
    return path.name


def _markdown_table(frame: pd.DataFrame) -> str:
    cols = list(frame.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in frame.itertuples(index=False):
        cells = [
            f"{c:.1f}" if isinstance(c, float) and not math.isnan(c) else ("-" if isinstance(c, float) else str(c))
            for c in row
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _schedule_sections(v: Validation, out: Path, plots: bool) -> list[str]:
    lines: list[str] = []
    for name, table in v.tables.items():
        table.to_csv(out / f"{name}.csv", index=False)
    over, choices = v.tables.get("overlap"), v.tables.get("overlap_choices")
    if over is not None and choices is not None and not choices.empty:
        per = over.groupby("schedule")["err_pct"].agg(lambda e: float(e.abs().median()))
        lines += [
            "## Overlap schedules (overlap microbenchmark)",
            "",
            f"{len(over)} points; median |error| of time: "
            + ", ".join(f"{k} {val:.1f} %" for k, val in per.items())
            + f". Over {len(choices)} (job, compute-per-byte) settings the predicted winner (intra- vs inter-SM) is"
            f" right in {choices['winner_ok'].mean() * 100:.0f} %, the best inter-SM S within one step in"
            f" {choices['best_s_ok'].mean() * 100:.0f} %, both in {choices['choice_ok'].mean() * 100:.0f} %"
            f" ({choices['choice_ok_tie'].mean() * 100:.0f} % counting measured ties within {TIE_PCT:g} % as"
            " either); following the prediction costs"
            f" {choices['regret_pct'].median():.1f} % (median; max {choices['regret_pct'].max():.1f} %) over the"
            " fastest measured choice; the chosen schedule's predicted time is off by"
            f" {choices['chosen_err_pct'].abs().median():.1f} % (median)."
            " Details: `overlap.csv`, `overlap_choices.csv`.",
            "",
        ]
        if plots:
            lines += [f"![overlap]({_overlap_plot(over, out / 'overlap.png')})", ""]
    tp = v.tables.get("tp")
    if tp is not None and not tp.empty:
        lines += [
            "## Tensor-parallel ops (torch)",
            "",
            f"{len(tp)} shapes; PyTorch + NCCL baseline predicted within"
            f" {tp['baseline_err_pct'].abs().median():.1f} % (median |error|,"
            f" max {tp['baseline_err_pct'].abs().max():.1f} %)"
            f" of the measured sequential runs; bound below every measured run: {bool(tp['bound_below_all'].all())}."
            " Details: `tp.csv`.",
            "",
        ]
        if "ce_err_pct" in tp and tp["ce_err_pct"].notna().any():
            ce = tp["ce_err_pct"].dropna()
            lines += [
                f"Copy-engine pipeline (cuBLAS pieces, peer copies on a side stream), {len(ce)} shapes: the predicted"
                f" inter-SM copy-engine schedule is within {ce.abs().median():.1f} % (median |error|, max"
                f" {ce.abs().max():.1f} %) of the measured pipeline.",
                "",
            ]
        if plots:
            lines += [f"![tensor-parallel ops]({_tp_plot(tp, out / 'tp.png')})", ""]
    return lines


def _overlap_plot(over: pd.DataFrame, path: Path) -> str:
    jobs = sorted(over["job"].unique())
    fig, axes = _axes(len(jobs))
    for ax, job in zip(axes, jobs, strict=True):
        g = over[over["job"] == job]
        for schedule, style in (("sequential", "C0"), ("intra_sm", "C1"), ("inter_sm", "C2")):
            s = g[g["schedule"] == schedule]
            if schedule == "inter_sm":  # the best S at each compute-per-byte
                s = s.loc[s.groupby("iters")["measured_s"].idxmin()]
            s = s.sort_values("iters")
            ax.plot(s["iters"], s["measured_s"] * 1e6, "o", color=style, ms=3, label=f"{schedule} measured")
            ax.plot(s["iters"], s["predicted_s"] * 1e6, "-", color=style, label=f"{schedule} predicted")
        _log_axes(ax, str(job), "mma trips per tile (compute per byte)", "time (us)", xbase=2)
    return _save(fig, axes[0], path, 7)


def _log_axes(ax: Any, title: str, xlabel: str, ylabel: str, xbase: int = 10) -> None:
    ax.set_xscale("log", base=xbase)
    ax.set_yscale("log")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)


def _save(fig: Any, legend_ax: Any, path: Path, fontsize: int) -> str:
    legend_ax.legend(fontsize=fontsize)
    fig.savefig(path, dpi=110)
    return path.name


def _tp_plot(tp: pd.DataFrame, path: Path) -> str:
    """Per workload: measured sequential and fused times against the predicted baseline, best schedule and bound."""
    work = sorted(tp["workload"].unique())
    fig, axes = _axes(len(work))
    for ax, name in zip(axes, work, strict=True):
        g = tp[tp["workload"] == name]
        seq = g["sequential_s"] * 1e3
        ax.plot(g["baseline_pred_s"] * 1e3, seq, "o", color="C0", ms=4, label="PyTorch + NCCL: measured vs baseline")
        fused = g["fused_s"].dropna()
        if not fused.empty:
            label = "PyTorch fused op: measured vs best"
            ax.plot(g["best_pred_s"] * 1e3, g["fused_s"] * 1e3, "s", color="C1", ms=4, label=label)
        if "ce_pipeline_s" in g and g["ce_pipeline_s"].notna().any():
            label = "copy-engine pipeline: measured vs inter-SM copy engine"
            ax.plot(g["ce_pred_s"] * 1e3, g["ce_pipeline_s"] * 1e3, "D", color="C3", ms=4, label=label)
        ax.plot(g["bound_s"] * 1e3, seq, "^", color="C2", ms=4, label="PyTorch + NCCL: measured vs bound")
        lo = float(min(g["bound_s"].min(), g["best_pred_s"].min()) * 1e3)
        hi = float(max(g["sequential_s"].max(), fused.max() if not fused.empty else 0.0) * 1e3)
        ax.plot([lo, hi], [lo, hi], "k:", lw=1, label="measured = predicted")
        _log_axes(ax, str(name), "predicted (ms)", "measured (ms)")
        ax.minorticks_off()
    return _save(fig, axes[0], path, 6)


def write_report(
    v: Validation, out: Path, *, system: str, results: Path, profile: str | Path | None, plots: bool = True
) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    v.errors.to_csv(out / "errors.csv", index=False)
    keep = [
        c
        for c in ("family", "name", "variant", "gpus", "bytes", "sms", "time_s", *[f"pred_{m}" for m in v.models])
        if c in v.rows
    ]
    v.rows[keep].to_csv(out / "predictions.csv", index=False)
    figures: list[str] = []
    if plots:
        for name, args in {
            "p2p_sizes.png": ("p2p", "bytes", "one_way", "GB/s"),
            "p2p_sms.png": ("p2p", "sms", "one_way", "GB/s"),
            "nccl_stream.png": ("nccl", "bytes", "stream", "algbw GB/s"),
            "nccl_graph.png": ("nccl", "bytes", "graph", "algbw GB/s"),
        }.items():
            fam, x, variant, label = args
            made = _curves(v, fam, x, variant, out / name, label)
            if made:
                figures.append(made)
        made = _gemm_plot(v, out / "gemm.png")
        if made:
            figures.append(made)
    table = "(no rows with a model)"
    if not v.errors.empty:
        wide = v.errors.pivot_table(
            index=["family", "name", "variant"], columns="model", values=["median_abs_pct", "max_abs_pct_above_1MiB"]
        )
        wide.columns = [f"{col[0]} ({col[1]})" for col in wide.columns.tolist()]
        table = _markdown_table(wide.reset_index())
    text = [
        f"# Validation: {system}",
        "",
        f"Measurements: `{results}`. Models: {', '.join(v.models)}"
        + (f" (profile `{profile}`)" if profile else "")
        + ". Errors are absolute percentages of the measured time; 'above 1 MiB' keeps sizes over 1 MiB.",
        "",
        table,
        "",
        *[f"![{f}]({f})" for f in figures],
        "",
    ]
    text += _schedule_sections(v, out, plots)
    (out / "REPORT.md").write_text("\n".join(text))
    return out / "REPORT.md"
