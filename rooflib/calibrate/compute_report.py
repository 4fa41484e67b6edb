"""Held-out errors of the fitted compute models, the device-file block, and the report that shows them.

    python -m rooflib.calibrate.compute_report docs/validation/h200/runs/x1-compute \\
        docs/validation/h200/runs/x1-compute-holdout docs/validation/h200/runs/x1-kernels \\
        --ops docs/validation/h200/runs/x1-host-programs \\
        --device h200-sxm --out docs/validation/h200/report-x1-compute [--write-device hardware/devices/h200-sxm.yaml]

``--ops`` adds only the small-op grid of a programs run (``programs_worker --ops``: small causal SDPA passes and
fp32 softmax rows, :func:`rooflib.calibrate.compute.small_op_rows`), split and reported as the compute rows.

Fits the models on the fit half (:func:`rooflib.calibrate.compute.fit_split`), predicts every row, and writes
``REPORT.md`` (median, p90 and max absolute error of time per op family, fitted and held out, with the catalog's
model before this fit beside it), ``errors.csv`` and ``predictions.csv``. ``--write-device`` replaces the
``compute:`` block, the GEMM efficiencies and the host costs of a device file with the fitted ones.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rooflib.calibrate.compute import fit_compute, load_runs
from rooflib.calibrate.compute_kernels import attention_predict, gemm_predict
from rooflib.calibrate.conv import CONV_OPS
from rooflib.calibrate.device_file import device_block, write_curves, write_device, write_models
from rooflib.compute import elementwise, elementwise_op, normalization, reduction
from rooflib.compute.conv import conv_steps, conv_time
from rooflib.compute.kernels import bench_class, kernel_time, moved_bytes
from rooflib.compute.memory import l2_ratio
from rooflib.specs.compute_models import KERNEL_OP_KINDS
from rooflib.specs.devices import DeviceSpec

__all__ = ["device_block", "error_table", "main", "predict_rows", "subsets"]

COMMAND = (
    "python -m rooflib.calibrate.compute_report docs/validation/h200/runs/x1-compute "
    "docs/validation/h200/runs/x1-compute-holdout docs/validation/h200/runs/x1-kernels "
    "docs/validation/h200/runs/x1-kernels-2 docs/validation/h200/runs/x1-kernels-4 "
    "docs/validation/h200/runs/x1-compute-hot-2 docs/validation/h200/runs/x1-bcast docs/validation/h200/runs/x1-conv "
    "docs/validation/h200/runs/x1-sgemm "
    "--ops docs/validation/h200/runs/x1-host-programs "
    "--device h200-sxm --out docs/validation/h200/report-x1-compute"
)


def _conv_time(device: DeviceSpec, r: dict[str, Any]) -> float:
    """A ``conv`` row's predicted seconds: its kernels as :func:`rooflib.compute.conv.conv_steps` lists them."""
    spatial, kernel = (list(ast.literal_eval(v) if isinstance(v, str) else v) for v in (r["spatial"], r["kernel"]))
    n, c, k, g = (int(r[f]) for f in ("n", "c", "k", "groups"))
    last = r.get("channels_last") in (True, "True")  # results.csv may hold it as text
    steps = conv_steps(
        (n, c, *spatial), (k, c // g, *kernel), (n, k, *spatial), g, 2.0, channels_last=last, weight_channels_last=last
    )
    return conv_time(device, steps, str(r["dtype"]))


def _memory_time(device: DeviceSpec, r: dict[str, Any]) -> float:
    op, dt, hot = str(r["op"]), str(r["dtype"]), r["mode"] == "hot"
    if op == "conv":
        return _conv_time(device, r)
    op = bench_class(op, dt)
    if op in KERNEL_OP_KINDS:  # the benchmark's byte count is the curve's (transpose: by element count)
        moved = float(r["bytes_moved"])
        if op in ("transpose", "strided_copy"):
            moved = moved_bytes(op, moved, elements=float(r["elements"]))
        got = kernel_time(device, op, moved)
        ratio = l2_ratio(device, op, moved) if hot else None  # hot: the class's L2 curve, as programs apply it
        return float("nan") if got is None else got * (1.0 if ratio is None else ratio)
    if op == "strided":  # a scalar multiply of a transposed view: one read, one write, at the mul curve
        return elementwise(device, int(r["elements"]), dt, reads=1, writes=1, kind="mul").time_s
    if op in ("rmsnorm", "layernorm", "softmax"):
        return normalization(device, int(r["rows"]), int(r["cols"]), dt, op, l2_resident=hot).time_s  # type: ignore[arg-type]
    if op == "sum":
        return reduction(device, int(r["rows"]), int(r["cols"]), dt, l2_resident=hot).time_s
    return elementwise_op(device, op, int(r["elements"]), dt, l2_resident=hot).time_s  # type: ignore[arg-type]


def predict_rows(device: DeviceSpec, rows: pd.DataFrame) -> pd.Series:
    """Seconds the compute models of ``device`` predict for each compute row."""
    out = pd.Series(np.nan, index=rows.index, dtype=float)
    gemm = rows["op"] == "gemm"
    att = rows["op"] == "attention"
    if gemm.any():
        out[gemm] = gemm_predict(device, rows[gemm])
    if att.any():
        out[att] = attention_predict(device, rows[att])
    rest = rows[~gemm & ~att]
    for idx, rec in zip(rest.index, rest.to_dict("records"), strict=True):
        out[idx] = _memory_time(device, {str(k): v for k, v in rec.items()})
    return out


def _flag(rows: pd.DataFrame, col: str) -> pd.Series:
    """A boolean column as booleans (absent or missing: False; results.csv may hold it as text)."""
    if col not in rows:
        return pd.Series(False, index=rows.index)
    return rows[col].map(lambda v: v is True or str(v) == "True")


def subsets(rows: pd.DataFrame) -> list[tuple[str, pd.Series]]:
    """(label, mask) of the families and sub-families the report tabulates."""
    op, mode = rows["op"], rows["mode"]
    main = rows["grid"] == "main"
    grid = rows["grid"] == "kernels"
    flat = op.isin(("copy", "add", "mul", "gelu", "silu")) & ~grid
    rowwise = op.isin(("rmsnorm", "layernorm", "softmax", "sum")) & ~grid
    sgemm = (op == "gemm") & (rows["dtype"] == "fp32")
    gemm = (op == "gemm") & ~sgemm
    m = rows["m"].fillna(0)
    att = op == "attention"
    small = rows["small_ops"].fillna(False).astype(bool) if "small_ops" in rows else pd.Series(False, rows.index)
    out = [
        ("memory ops (all)", flat | rowwise),
        ("  elementwise, cold", flat & (mode == "cold")),
        ("  row-wise, cold, 8192 columns", rowwise & (mode == "cold") & (rows["cols"] == 8192)),
        ("  row-wise, cold, other row lengths", rowwise & (mode == "cold") & (rows["cols"] != 8192)),
        ("  row-wise, rows of 16-512 (short_rows grid)", rowwise & (rows["grid"] == "short_rows")),
        ("  L2-resident (hot)", (flat | rowwise) & (mode == "hot")),
        ("  fp32", (flat | rowwise) & (rows["dtype"] == "fp32")),
        ("  second grid (random sizes)", (flat | rowwise) & ~main & (rows["cols"].fillna(8192) == 8192)),
        ("  small-op grid (fp32 softmax, 32-256 columns)", rowwise & small),
        ("kernels grid (all)", grid),
        (
            "  launch-bound copy, add, sum, fill (2 B-128 KiB)",
            grid & op.isin(("copy", "add", "sum", "fill")) & (rows["tensor_bytes"] <= 131072),
        ),
        ("  gathers and scatters", grid & op.isin(("index_select", "gather", "index_add", "scatter_add", "index_put"))),
        ("  sorts (flat, rows of 1024)", grid & op.isin(("sort", "sort_rows"))),
        ("  transposes, bf16", grid & (op == "transpose") & (rows["dtype"] == "bf16")),
        (
            "  transposes, fp32 and complex64 (at bf16's element count)",
            grid & (op == "transpose") & (rows["dtype"] != "bf16"),
        ),
        (
            "  scans, fills and FFTs",
            grid & op.isin(("cumsum", "fft", "rfft", "rfft_dim0"))
            | grid & (op == "fill") & (rows["tensor_bytes"] > 131072),
        ),
        ("  elementwise over a transposed view (the mul curve, not fitted)", grid & (op == "strided")),
        ("  casts (bf16 to fp32, fp32 to bf16)", grid & (op == "cast")),
        ("  int8 casts (fp32 to int8, int8 to fp32: the cast_up curve, never fitted)", grid & op.str.contains("_i8")),
        ("  non-contiguous slices made contiguous", grid & (op == "strided_copy")),
        ("  column sums (over the leading dimension; not used by programs)", grid & (op == "sum_dim0")),
        ("  a broadcast tensor operand (0-dim, column, row; bf16, fp32, mixed)", grid & op.str.startswith("bcast")),
        ("convolutions (cuDNN's kernels and ATen's depthwise one, whole calls)", op.isin(("conv", "conv_depthwise"))),
        ("  cuDNN, NCHW (layout conversions around the implicit GEMM)", (op == "conv") & ~_flag(rows, "channels_last")),
        ("  cuDNN, channels-last", (op == "conv") & _flag(rows, "channels_last")),
        ("  depthwise (ATen)", op == "conv_depthwise"),
        ("  second grid (random shapes)", op.isin(("conv", "conv_depthwise")) & (rows["grid"] == "holdout")),
        ("GEMM (all)", gemm),
        ("  bf16", gemm & (rows["dtype"] == "bf16")),
        ("  fp8", gemm & (rows["dtype"] == "fp8")),
        ("  m = 128 j + 1", gemm & (m % 128 == 1) & (m > 1)),
        ("  decode (m <= 32)", gemm & (m <= 32)),
        ("  split-K (m, n <= 2048, k >= 16384)", gemm & (m <= 2048) & (rows["n"] <= 2048) & (rows["k"] >= 16384)),
        ("  second grid (random shapes, repeats)", gemm & ~main),
        ("fp32 GEMMs on CUDA cores (TF32 off; compute.sgemm)", sgemm),
        ("  second grid (random shapes)", sgemm & ~main),
        ("attention (all)", att),
        ("  forward prefill", att & (mode == "fwd") & (rows["seq_q"] > 1)),
        ("  backward", att & (mode == "bwd")),
        ("  decode (one query row)", att & (rows["seq_q"] == 1)),
        ("  second grid (random shapes)", att & ~main),
        ("  small-op grid (causal, seq 128-2048)", att & small),
    ]
    return [(label, mask.fillna(False).astype(bool)) for label, mask in out]


def _stats(err: pd.Series) -> dict[str, float]:
    e = err.dropna()
    if e.empty:
        return {"n": 0, "median": np.nan, "p90": np.nan, "max": np.nan}
    return {"n": len(e), "median": float(e.median()), "p90": float(e.quantile(0.9)), "max": float(e.max())}


def error_table(rows: pd.DataFrame, fit: pd.Series, pred: pd.Series, before: pd.Series) -> pd.DataFrame:
    """Absolute % error of time per subset: held out and fitted (this model), and the catalog's model before."""
    err = (pred / rows["time_s"] - 1.0).abs() * 100.0
    old = (before / rows["time_s"] - 1.0).abs() * 100.0
    recs = []
    for label, mask in subsets(rows):
        held, fitted = _stats(err[mask & ~fit]), _stats(err[mask & fit])
        prev = _stats(old[mask & ~fit])
        recs.append(
            {
                "subset": label,
                **{f"held_{k}": v for k, v in held.items()},
                **{f"fit_{k}": v for k, v in fitted.items()},
                **{f"before_{k}": v for k, v in prev.items()},
            }
        )
    return pd.DataFrame.from_records(recs)


def _fmt(v: float) -> str:
    return "-" if not np.isfinite(v) else f"{v:.1f} %"


def _markdown(table: pd.DataFrame) -> str:
    head = "| family | held out: n | median | p90 | max | fitted: n | median | max | before (held out): median | max |"
    lines = [head, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in table.to_dict("records"):
        name = str(r["subset"]).replace("  ", "&nbsp;&nbsp;")
        lines.append(
            f"| {name} | {int(r['held_n'])} | {_fmt(r['held_median'])} | {_fmt(r['held_p90'])} | {_fmt(r['held_max'])} "
            f"| {int(r['fit_n'])} | {_fmt(r['fit_median'])} | {_fmt(r['fit_max'])} "
            f"| {_fmt(r['before_median'])} | {_fmt(r['before_max'])} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", help="results folders (rooflib bench compute, compute-holdout, host)")
    p.add_argument("--device", required=True, help="catalog device the runs measured, e.g. h200-sxm")
    p.add_argument("--out", required=True, type=Path, help="report folder")
    p.add_argument("--write-device", type=Path, default=None, help="device YAML to update with the fit")
    p.add_argument("--ops", nargs="*", default=[], help="programs runs whose small-op grid (only) joins the fit")
    p.add_argument(
        "--write-curves",
        default="",
        help=(
            "with --write-device: only these memory curves (comma-separated keys, e.g. copy,sort; l2_resident: the "
            "whole L2 block), the rest as is"
        ),
    )
    p.add_argument(
        "--write-models",
        default="",
        help="with --write-device: only these model lines of the compute block (comma-separated: sgemm, gemm, "
        "attention), the rest as is",
    )
    args = p.parse_args(argv)
    from rooflib.specs import default_catalog

    device = default_catalog().device(args.device)
    frame = load_runs(args.runs, args.ops)
    meta = frame[frame["family"] == "compute"]
    when = str(meta["gpu"].dropna().iloc[0]) if "gpu" in meta and meta["gpu"].notna().any() else "GPU"
    names = [Path(r).name for r in [*args.runs, *args.ops]]
    compute = frame[frame["family"] == "compute"]
    only_kernels = {  # runs of the op classes alone (the kernels grid, the conv part): in kernels_source only
        str(r) for r, g in compute.groupby("run") if ((g["grid"] == "kernels") | g["op"].isin(CONV_OPS)).all()
    }
    base = [n for n in names if n not in only_kernels]
    source = f"measured: rooflib bench compute, one {when} (runs/{', runs/'.join(base)}; fit half)"
    kernels_source = f"measured: rooflib bench compute, one {when} (runs/{', runs/'.join(names)}; fit half)"
    host_source = f"measured: rooflib bench host, one {when} (runs/{names[0]})"
    result = fit_compute(frame, device, source, host_source, kernels_source if only_kernels else None)
    if result is None:
        raise SystemExit("no compute rows in the runs given")
    before = device.model_copy(update={"compute": None, "dtype_efficiency": {}})  # the catalog before these tables
    pred = predict_rows(result.device, result.rows)
    old = predict_rows(before, result.rows)
    table = error_table(result.rows, result.fit, pred, old)
    args.out.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out / "errors.csv", index=False)
    keep = [
        c
        for c in (
            "run",
            "grid",
            "op",
            "mode",
            "dtype",
            "m",
            "n",
            "k",
            "tensor_bytes",
            "cols",
            "batch",
            "heads",
            "kv_heads",
            "seq_q",
            "seq_kv",
            "head_dim",
            "causal",
            "time_s",
        )
        if c in result.rows
    ]
    preds = result.rows[keep].assign(fitted=result.fit, predicted_s=pred, before_s=old)
    preds.to_csv(args.out / "predictions.csv", index=False)
    from rooflib.calibrate.compute_text import report_text

    (args.out / "REPORT.md").write_text(report_text(result, table, _markdown(table), COMMAND, pred, frame))
    if args.write_device is not None and (args.write_curves or args.write_models):
        keys = [k for k in args.write_curves.split(",") if k]
        if keys:
            print("wrote curves:", ", ".join(write_curves(args.write_device, device_block(result), keys)))
        models = [k for k in args.write_models.split(",") if k]
        if models:
            print("wrote models:", ", ".join(write_models(args.write_device, device_block(result), models)))
    elif args.write_device is not None:
        write_device(args.write_device, device_block(result))
    print(_markdown(table))


if __name__ == "__main__":
    main()
