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
from rooflib.calibrate.compute_kernels import fit_attention, fit_gemm, fit_sgemm
from rooflib.calibrate.conv import CONV_OPS, conv_split, layout_points
from rooflib.calibrate.data import Fit, load_results
from rooflib.compute.kernels import bench_class
from rooflib.specs.compute_models import KERNEL_OP_KINDS, ComputeModels, MemoryOpsSpec, curve_key
from rooflib.specs.devices import DeviceSpec

__all__ = [
    "FLAT_OPS",
    "ROWWISE_OPS",
    "ComputeFit",
    "compute_rows",
    "fit_compute",
    "fit_compute_profile",
    "fit_split",
    "load_runs",
]

FLAT_OPS = ("copy", "add", "mul", "gelu", "silu")
ROWWISE_OPS = ("rmsnorm", "layernorm", "softmax", "sum")
_DECODE_ROWS = 16  # GEMMs with min(m, n) up to this stream their larger operand: the gemm memory curve


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


def _merged(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique ``x`` and the median ``y`` at each."""
    xs = np.asarray(x, dtype=np.float64)
    ys = np.asarray(y, dtype=np.float64)
    keys = np.unique(xs)
    return keys, np.array([np.median(ys[xs == k]) for k in keys])


def _four_digits_at_most(value: float) -> float:
    """``value`` to four significant digits, rounded down."""
    digits = 3 - int(np.floor(np.log10(value)))
    return float(np.floor(value * 10.0**digits) / 10.0**digits)


def _curve(nbytes: np.ndarray, seconds: np.ndarray, bandwidth: float, source: str) -> dict[str, Any]:
    """A size curve from measured (bytes, seconds): equal sizes merged (median), time made non-decreasing in
    size, efficiency ``bytes / (time x bandwidth)`` capped at 1, four significant digits (rounded down where
    rounding would let the time fall between two sizes)."""
    b, t = _merged(nbytes, seconds)
    t = np.maximum.accumulate(t)
    eff = np.minimum(1.0, b / (t * bandwidth))
    points: list[list[float]] = []
    for x, e in zip(b, eff, strict=True):
        value = float(f"{e:.4g}")
        if points and value > points[-1][1] * x / points[-1][0]:  # time must not fall from the last size
            value = _four_digits_at_most(points[-1][1] * x / points[-1][0])
        points.append([int(x), value])
    return {"points": points, "source": source}


def _below(grp: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(bytes, seconds) of one curve's rows: the ``kernels`` grid's launch-bound points only below the smallest
    size the other grids measured (where those exist), each no slower than that smallest size (another run's
    level above them; time must not fall as size grows)."""
    b = grp["bytes_moved"].to_numpy(dtype=float)
    t = grp["time_s"].to_numpy(dtype=float)
    tiny = (grp["grid"] == "kernels").to_numpy() if "grid" in grp else np.zeros(len(grp), dtype=bool)
    if tiny.all() or not tiny.any():
        return b, t
    first = int(np.argmin(np.where(tiny, np.inf, b)))
    keep = ~tiny | (b < b[first])
    return b[keep], np.where(tiny, np.minimum(t, t[first]), t)[keep]


def _memory(rows: pd.DataFrame, device: DeviceSpec, source: str, kernels_source: str | None = None) -> dict[str, Any]:
    bw = device.hbm_bandwidth.value

    def src(grp: pd.DataFrame, base: str) -> str:
        """``base``, or ``kernels_source`` in its place where the ``kernels`` grid or the ``conv`` part gave
        points."""
        ours = ("grid" in grp and (grp["grid"] == "kernels").any()) or grp["op"].isin(CONV_OPS).any()
        if kernels_source is None or not ours:
            return base
        return kernels_source + base.removeprefix(source)

    hbm: dict[str, dict[str, Any]] = {}
    cold = rows[rows["mode"] == "cold"]
    bf16 = cold[cold["dtype"] == "bf16"]
    seen = set(zip(bf16["op"], bf16["cols"].fillna(0), strict=True))  # other dtypes only for row lengths bf16 lacks
    keep = (cold["dtype"] == "bf16") | ~pd.Series(
        [(o, c) in seen for o, c in zip(cold["op"], cold["cols"].fillna(0), strict=True)], index=cold.index
    )
    cold = cold[keep]
    for op, grp in cold[cold["op"].isin(FLAT_OPS)].groupby("op"):
        b, t = _below(grp)
        hbm[str(op)] = _curve(b, t, bw, src(grp, source))
    for key, grp in cold[cold["op"].isin(ROWWISE_OPS)].groupby(["op", "cols"]):
        parts: tuple[Any, ...] = tuple(key) if isinstance(key, tuple) else (key,)
        op, cols = str(parts[0]), int(float(parts[1]))
        where = f"{source}, rows of {cols}"
        if "small_ops" in grp and grp["small_ops"].fillna(False).astype(bool).all():
            where += f" ({grp['dtype'].iloc[0]}, the small-op grid: programs_worker --ops)"
        b, t = _below(grp)
        hbm[curve_key(op, cols)] = _curve(b, t, bw, src(grp, where))
    every = rows[rows["mode"] == "cold"]  # every dtype: a cast's class is its input's dtype
    cls = pd.Series(map(bench_class, every["op"], every["dtype"]), index=every.index)
    ours = cls.isin(KERNEL_OP_KINDS)
    for op, grp in every[ours].groupby(cls[ours]):
        if op == "transpose":  # bf16 only: other dtypes are predicted at the same element count
            grp = grp[grp["dtype"] == "bf16"]
        where = src(grp, f"{source}, {op}")
        hbm[str(op)] = _curve(grp["bytes_moved"].to_numpy(), grp["time_s"].to_numpy(), bw, where)
    for layout, (b, t) in layout_points(rows).items():  # cuDNN's layout conversions, by CUPTI inside conv calls
        where = f"{kernels_source or source}, {layout} (CUPTI, inside the conv part's calls)"
        hbm[layout] = _curve(b, t, bw, where)
    tensor_gemm = (rows["op"] == "gemm") & (rows["dtype"] != "fp32")  # CUDA-core fp32 GEMMs stream otherwise
    gemm = rows[tensor_gemm & (np.minimum(rows["m"], rows["n"]) <= _DECODE_ROWS)]
    if not gemm.empty:
        where = f"{source}, GEMMs with min(m, n) <= {_DECODE_ROWS}"
        hbm["gemm"] = _curve(gemm["bytes_moved"].to_numpy(), gemm["time_s"].to_numpy(), bw, where)
    decode = rows[(rows["op"] == "attention") & (rows["seq_q"] == 1)]
    if not decode.empty:
        where = f"{source}, decode attention (one query row)"
        hbm["attention"] = _curve(decode["bytes_moved"].to_numpy(), decode["time_s"].to_numpy(), bw, where)
    spec = MemoryOpsSpec.model_validate({"hbm": hbm})
    return {"hbm": hbm, "l2_resident": _l2_resident(rows, spec, bw, source)}


HOT_MIN_CALLS = 256
"""Hot (one input group) points are fitted only from graph replays of at least this many calls: with fewer, each
call carries a share of the graph's own launch (0.5-1 us at 8-13 calls, runs/x1-kernels-3), which is no L2 effect
(``rooflib.bench.compute_worker`` replays at least this many since runs/x1-kernels-4 and x1-compute-hot-2)."""


def _l2_resident(rows: pd.DataFrame, spec: MemoryOpsSpec, bw: float, source: str) -> dict[str, Any]:
    """The ``hot`` times (made non-decreasing in size) over the cold curve's, per op and op class (bf16 in, but
    both casts: a cast's class is its input's dtype), from hot points replayed :data:`HOT_MIN_CALLS` times or
    more."""
    l2 = {}
    hot = rows[rows["mode"] == "hot"]
    if "graph_calls" not in hot:
        return {}
    hot = hot[hot["graph_calls"].fillna(0) >= HOT_MIN_CALLS]
    cls = pd.Series(map(bench_class, hot["op"], hot["dtype"]), index=hot.index, dtype=object)
    hot = hot[(hot["dtype"] == "bf16") | cls.isin(("cast_up", "cast_down"))]
    for op, grp in hot.groupby(cls[hot.index]):
        curves = spec.curves(str(op))
        if not curves:
            continue
        curve = curves.get(None) or curves.get(8192) or next(iter(curves.values()))
        xs, hot_s = _merged(grp["bytes_moved"].to_numpy(dtype=float), grp["time_s"].to_numpy(dtype=float))
        cold_s = xs / (bw * curve(xs))
        rs = np.minimum(1.0, np.maximum.accumulate(hot_s) / cold_s)  # the hot time, too, never falls with size
        points = [[int(x), float(f"{r:.4g}")] for x, r in zip(xs, rs, strict=True)]
        runs = ", ".join(f"runs/{r}" for r in sorted(grp["run"].unique())) if "run" in grp else source
        l2[str(op)] = {
            "points": points,
            "source": f"{source}: operands left in L2 (hot, {runs}) over the cold curve",
        }
    return l2


def _host(frame: pd.DataFrame, device: DeviceSpec, source: str) -> dict[str, dict[str, Any]]:
    rows = frame[(frame["family"] == "host") & frame["verified"]]
    if rows.empty:
        return {}

    def med(name: str, col: str = "host_s", sel: pd.Series | None = None) -> float | None:
        r = rows[rows["name"] == name] if sel is None else rows[(rows["name"] == name) & sel]
        return float(np.median(r[col].astype(float))) if not r.empty and col in r else None

    out: dict[str, float | None] = {"kernel": med("kernel"), "cublas": med("cublas"), "nccl": med("nccl")}
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
    memory = _memory(fitted, base, source, kernels_source)
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
