"""The memory-bound curves of the compute fit: per op (and row length), op class, cuDNN layout conversion and L2
residency, the achieved share of the HBM rate at each fitted size (:func:`memory_curves`; the fit half of the
rows, :func:`rooflib.calibrate.compute.fit_split`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rooflib.calibrate.conv import CONV_OPS, layout_points
from rooflib.compute.kernels import bench_class
from rooflib.specs.compute_models import KERNEL_OP_KINDS, MemoryOpsSpec, curve_key
from rooflib.specs.devices import DeviceSpec

__all__ = ["FLAT_OPS", "HOT_MIN_CALLS", "ROWWISE_OPS", "memory_curves"]

FLAT_OPS = ("copy", "add", "mul", "gelu", "silu")
ROWWISE_OPS = ("rmsnorm", "layernorm", "softmax", "sum")
_DECODE_ROWS = 16  # GEMMs with min(m, n) up to this stream their larger operand: the gemm memory curve


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


def memory_curves(
    rows: pd.DataFrame, device: DeviceSpec, source: str, kernels_source: str | None = None
) -> dict[str, Any]:
    """The ``memory_ops`` block (``hbm`` and ``l2_resident`` curves) fitted on ``rows`` (the fit half)."""
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
