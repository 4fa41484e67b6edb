"""Fitting the compute models of a device to ``rooflib bench compute`` (and ``compute-holdout``, ``host``) runs.

    python -m rooflib.calibrate.compute_report RUN [RUN ...] --device h200-sxm --out REPORT_DIR

What is fitted (on the fit half of the rows, :func:`fit_split`; the rest is held out):

- memory ops: per op kind (and row length for row-wise ops) the measured achieved share of ``hbm_bandwidth`` at
  each fitted size (time made non-decreasing in size first), a :class:`~rooflib.specs.SizeCurve` the model
  interpolates between; ``l2_resident``: the ``hot`` times over the cold curve's; ``gemm``: the weight-streaming
  side of GEMMs from the decode-like shapes (``min(m, n) <= 16``); ``attention``: decode (one query row);
- GEMM and attention parameters (:mod:`rooflib.calibrate.compute_kernels`);
- host costs (``device.host``): the measured host time per call of an eager op, a cuBLAS call, a graph launch and
  an NCCL call, the graph's per-kernel gap (slope of device time over graph size) and the host wake-up of a
  synchronisation (a round trip less the op's issue, its device time and the device's ``kernel_launch``).

The split is deterministic: every other point of each size sweep (memory ops, sorted by size), of each GEMM
dtype in grid order, and of each attention (mode, head size, mask) sorted by KV heads and sequence; the
``holdout`` grid is held out whole, except the row-wise column sweep (fitted every other point as well: the
model needs the row lengths). The small-op grid of a programs run (``programs_worker --ops``,
:func:`small_op_rows`) joins as compute rows: its causal SDPA passes split as the attention grid, its fp32
softmax sweeps (four sizes each) fitted whole for every other row length (32 and 128 columns) and held out for
the others (64 and 256). The ``kernels`` grid (launch-bound streaming ops, gathers, scatters, sorts,
transposes, scans, FFTs: :mod:`rooflib.bench.kernel_cases`) is split every other size per (op, cache, dtype) and
fitted into the same curves (its own op classes: :data:`rooflib.specs.compute_models.KERNEL_OP_KINDS`).
Attention through explicit backends (flash, efficient, cuDNN) is not modelled.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rooflib.bench.broadcast_cases import BROADCAST_OPS
from rooflib.calibrate.compute_curves import FLAT_OPS, HOT_MIN_CALLS, ROWWISE_OPS, memory_curves
from rooflib.calibrate.compute_curves import _below as _below  # re-exported for the tests
from rooflib.calibrate.compute_kernels import fit_attention, fit_gemm, fit_sgemm
from rooflib.calibrate.conv import conv_split
from rooflib.calibrate.data import Fit, load_results
from rooflib.specs.compute_models import KERNEL_OP_KINDS, ComputeModels, MemoryOpsSpec
from rooflib.specs.devices import DeviceSpec

__all__ = [
    "FLAT_OPS",
    "HOT_MIN_CALLS",
    "ROWWISE_OPS",
    "ComputeFit",
    "compute_rows",
    "fit_compute",
    "fit_compute_profile",
    "fit_split",
    "load_runs",
]


def small_op_rows(path: str | Path) -> pd.DataFrame:
    """The small-op grid of a folder (``programs_worker --ops``, ``record: op`` in any ``*.jsonl`` under it) as
    compute rows: causal SDPA as ``attention`` (forward, bf16, one pass per call) and the fp32 ``softmax`` rows as
    cold row-wise ops (inputs cycled through more than 3x the L2, as the compute family). Top-k is fitted apart
    (:mod:`rooflib.calibrate.small_ops`)."""
    out: list[dict[str, Any]] = []
    for file in sorted(Path(path).rglob("*.jsonl")):
        for number, line in enumerate(file.read_text().splitlines(), 1):
            rec = json.loads(line) if line.strip() else {}
            if rec.get("record") != "op" or rec.get("family") != "programs" or not rec.get("verified"):
                continue
            base = {"family": "compute", "verified": True, "time_s": float(rec["time_s"]), "_line": number}
            base["grid"], base["small_ops"] = "main", True
            if rec.get("op") == "sdpa":
                heads, seq = int(rec["heads"]), int(rec["seq"])
                shape = {"batch": int(rec["batch"]), "heads": heads, "kv_heads": heads, "seq_q": seq, "seq_kv": seq}
                out.append(
                    {
                        **base,
                        "op": "attention",
                        "mode": "fwd",
                        "dtype": "bf16",
                        "backend": "default",
                        **shape,
                        "head_dim": int(rec["head_dim"]),
                        "causal": bool(rec["causal"]),
                        "bytes_moved": float(rec["bytes"]),
                    }
                )
            elif rec.get("op") == "softmax":
                rows, cols = int(rec["rows"]), int(rec["cols"])
                size = 4 if rec.get("dtype") == "fp32" else 2
                out.append(
                    {
                        **base,
                        "op": "softmax",
                        "mode": "cold",
                        "dtype": str(rec.get("dtype")),
                        "rows": rows,
                        "cols": cols,
                        "elements": rows * cols,
                        "tensor_bytes": float(rows * cols * size),
                        "bytes_moved": float(2 * rows * cols * size),
                    }
                )
    return pd.DataFrame.from_records(out)


def load_runs(paths: list[str | Path], ops: list[str | Path] | None = None) -> pd.DataFrame:
    """The normalised rows of several results folders, with ``run`` (the folder name) and ``line``; and only the
    small-op grid (:func:`small_op_rows`) of the folders ``ops``, as compute rows."""
    frames = []
    for p in paths:
        f = load_results(p)
        f["run"] = Path(p).name
        frames.append(f)
    for p in ops or []:
        small = small_op_rows(p)
        if not small.empty:
            frames.append(small.assign(run=Path(p).name))
    out = pd.concat(frames, ignore_index=True)
    if "grid" not in out:
        out["grid"] = "main"
    out["grid"] = out["grid"].fillna("main")
    return out


def compute_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Verified ``compute`` rows of SDPA's default backend (explicit backends are not modelled)."""
    rows = frame[(frame["family"] == "compute") & frame["verified"]].copy()
    if "backend" in rows:
        rows = rows[rows["backend"].isna() | (rows["backend"] == "default")]
    return rows


def _alternate(rows: pd.DataFrame, by: list[str], order: list[str]) -> pd.Series:
    """True for every other row of each group ``by``, rows sorted by ``order`` (stable)."""
    fit = pd.Series(False, index=rows.index)
    for _, grp in rows.groupby(by, dropna=False, sort=False):
        srt = grp.sort_values(order, kind="stable") if order else grp
        fit[srt.index[::2]] = True
    return fit


def _every_other_length(rows: pd.DataFrame, by: list[str]) -> pd.Series:
    """True for the rows of every other row length (``cols``, in order) of each group ``by``: whole sweeps fitted,
    the lengths between them held out (a sweep of four sizes is too short to split inside: its curve would
    extrapolate past its largest fitted size)."""
    fit = pd.Series(False, index=rows.index)
    for _, grp in rows.groupby(by, dropna=False, sort=False):
        lengths = sorted(grp["cols"].unique())
        fit[grp.index[grp["cols"].isin(lengths[::2])]] = True
    return fit


def fit_split(rows: pd.DataFrame) -> pd.Series:
    """Which compute rows the models are fitted on (True) and which are held out (False); see the module."""
    fit = pd.Series(False, index=rows.index)
    main = rows["grid"] == "main"
    op = rows["op"]
    memory = op.isin(FLAT_OPS + ROWWISE_OPS)
    small = rows["small_ops"].fillna(False).astype(bool) if "small_ops" in rows else pd.Series(False, rows.index)
    sel = rows[main & memory & ~small]
    fit.update(_alternate(sel, ["run", "op", "mode", "dtype", "cols"], ["tensor_bytes"]))
    fit.update(_every_other_length(rows[memory & small], ["run", "op", "dtype"]))
    sweep = rows[~main & op.isin(ROWWISE_OPS) & (rows["mode"] == "cold") & (rows["cols"] != 8192)]
    fit.update(_alternate(sweep, ["run", "op", "cols"], ["tensor_bytes"]))
    measured = (*FLAT_OPS, *ROWWISE_OPS, *KERNEL_OP_KINDS, "cast", *BROADCAST_OPS)
    kernels = rows[(rows["grid"] == "kernels") & op.isin(measured)]
    fit.update(_alternate(kernels, ["run", "op", "mode", "dtype"], ["tensor_bytes"]))
    gemm = rows[main & (op == "gemm")]
    fit.update(_alternate(gemm, ["run", "dtype"], ["_line"]))
    fit.update(conv_split(rows, _alternate))
    if "seq_q" in rows:
        att = rows[main & (op == "attention")].assign(_decode=lambda f: f["seq_q"] == 1)
        order = ["kv_heads", "seq_q", "seq_kv", "batch", "heads"]
        fit.update(_alternate(att, ["run", "mode", "head_dim", "causal", "_decode"], order))
    return fit.astype(bool)


def _host(frame: pd.DataFrame, device: DeviceSpec, source: str) -> dict[str, dict[str, Any]]:
    rows = frame[(frame["family"] == "host") & frame["verified"]]
    if rows.empty:
        return {}

    def med(name: str, col: str = "host_s", sel: pd.Series | None = None) -> float | None:
        r = rows[rows["name"] == name] if sel is None else rows[(rows["name"] == name) & sel]
        return float(np.median(r[col].astype(float))) if not r.empty and col in r else None

    # a one-rank NCCL call skips the library's multi-rank enqueue: only 2 or more GPUs calibrate ``nccl``
    ranks = pd.to_numeric(rows["gpus"], errors="coerce") if "gpus" in rows else pd.Series(np.nan, index=rows.index)
    nccl = med("nccl", sel=ranks >= 2)
    out: dict[str, float | None] = {"kernel": med("kernel"), "cublas": med("cublas"), "nccl": nccl}
    graph = rows[rows["name"] == "graph"]
    node = None
    if len(graph) >= 3:
        big = graph[graph["nodes"].astype(float) >= 10]
        slope = np.polyfit(big["nodes"].astype(float), big["device_s"].astype(float), 1)[0]
        node = float(slope)
        out["kernel_gap"] = node
        out["graph_launch"] = med("graph", sel=graph["nodes"].astype(float) == 1)
    round_trip = med("sync", "time_s")
    if round_trip is not None and out["kernel"] is not None:
        tiny = node if node is not None else 0.0  # a one-element kernel's device time, as in a graph
        out["sync"] = max(0.0, round_trip - out["kernel"] - tiny - device.kernel_launch.value)
    notes = {
        "kernel_gap": "slope of a replayed graph's device time over its 10-1000 one-element kernels (gap plus run)",
        "sync": "a round trip (add, synchronize) less the add's issue and run and the device's kernel_launch",
        "graph_launch": "host time of one replay of a one-kernel graph, back to back",
    }
    fig = {k: {"value": f"{v * 1e6:.4g} us", "source": source} for k, v in out.items() if v is not None}
    for k, note in notes.items():
        if k in fig:
            fig[k]["note"] = note
    return fig


@dataclass
class ComputeFit:
    """The fitted device (``device``), the YAML-able pieces, and which rows were fitted."""

    device: DeviceSpec
    compute: dict[str, Any]
    efficiency: dict[str, float]
    host: dict[str, dict[str, Any]]
    rows: pd.DataFrame
    fit: pd.Series
    notes: list[str] = field(default_factory=list)


def fit_compute(
    frame: pd.DataFrame,
    device: DeviceSpec,
    source: str,
    host_source: str | None = None,
    kernels_source: str | None = None,
) -> ComputeFit | None:
    """Fit every compute model present in ``frame`` for ``device`` (its own compute tables ignored); host costs
    from the first run's ``host`` rows, with ``host_source``; the memory curves with points of the ``kernels``
    grid carry ``kernels_source`` (the runs that include it) where given."""
    base = device.model_copy(update={"compute": None})
    rows = compute_rows(frame)
    if rows.empty:
        return None
    split = fit_split(rows)
    fitted = rows[split]
    memory = memory_curves(fitted, base, source, kernels_source)
    mem_spec = MemoryOpsSpec.model_validate(memory)
    compute: dict[str, Any] = {"memory_ops": memory}
    efficiency: dict[str, float] = {}
    models: dict[str, Any] = {}
    gemm_rows = fitted[(fitted["op"] == "gemm") & (fitted["dtype"] != "fp32")]
    sgemm_rows = fitted[(fitted["op"] == "gemm") & (fitted["dtype"] == "fp32")]
    if not sgemm_rows.empty:  # CUDA-core fp32 GEMMs: a model of their own
        models["sgemm"] = fit_sgemm(base, mem_spec, sgemm_rows, source)
        compute["sgemm"] = models["sgemm"].model_dump(mode="json", exclude_unset=True)
    if not gemm_rows.empty:
        gemm_model, efficiency = fit_gemm(base, mem_spec, gemm_rows, source)
        models["gemm"] = gemm_model
        compute["gemm"] = gemm_model.model_dump(mode="json", exclude_unset=True)  # the fields it fits
    att_rows = fitted[fitted["op"] == "attention"]
    if not att_rows.empty:
        att = fit_attention(base, mem_spec, att_rows, source, **models)
        models["attention"] = att
        compute["attention"] = att.model_dump(mode="json")
    device_fit = base.model_copy(update={"compute": ComputeModels(memory_ops=mem_spec, **models)})
    if efficiency:  # the GEMM model's per-dtype efficiency; tensor_efficiency (one large GEMM) stays as it is
        from rooflib.specs.figures import Fraction

        eff = dict(device_fit.dtype_efficiency)
        eff.update({d: Fraction(value=v, source=source) for d, v in efficiency.items()})
        device_fit = device_fit.model_copy(update={"dtype_efficiency": eff})
    first = frame[frame["run"] == frame["run"].iloc[0]] if "run" in frame else frame
    host = _host(first, base, host_source or source)
    return ComputeFit(device_fit, compute, efficiency, host, rows, split)


def fit_compute_profile(frame: pd.DataFrame, device: DeviceSpec, source: str) -> Fit:
    """The ``rooflib calibrate`` hook: profile overrides for ``device.compute``, the GEMM efficiencies and the
    host costs (nothing when the folder holds no compute or host rows)."""
    fit = Fit()
    if "family" not in frame or not frame["family"].isin(["compute", "host"]).any():
        return fit
    if "run" not in frame:
        frame = frame.assign(run="results")
    if "grid" not in frame:
        frame = frame.assign(grid="main")
    frame = frame.assign(grid=frame["grid"].fillna("main"))
    result = fit_compute(frame, device, source) if (frame["family"] == "compute").any() else None
    if result is not None:
        fit.overrides["device.compute"] = result.compute
        for dtype, value in result.efficiency.items():
            eff = {"value": round(value, 4), "source": source}
            fit.overrides.setdefault("device.dtype_efficiency", {})[dtype] = eff
        quality = {"family": "compute", "name": "rows", "n": len(result.rows), "fitted": int(result.fit.sum())}
        fit.quality.append(quality)
    host = _host(frame, device, source)
    if host and device.host is not None:
        fit.overrides.update({f"device.host.{k}": v for k, v in host.items()})
    return fit
