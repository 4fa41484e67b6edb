"""Fitting the GEMM and attention models to ``rooflib bench compute`` rows (the fit half; see
:mod:`rooflib.calibrate.compute`).

- GEMM: the candidate tiles are the ``(rows, columns)`` tiles cuBLAS was seen to use (parsed from the ``nvjet``
  kernel names the benchmark records: ``nvjet_sm90_tst_{N}x{M}_...``, cuBLAS's column-major M being the row-major
  product's columns); then one least-squares fit (soft-L1 loss on ``log(predicted / measured)``) of the bf16 and
  fp8 efficiencies (of the datasheet peaks), the operand rate, the per-unit and per-kernel fixed times and the
  split-K reduction time, with the measured ``gemm`` memory curve held fixed;
- attention: one efficiency per (head size, mask, direction) measured with SDPA's default backend, one fixed
  time per pass (forward and backward share it: a separate one for the few backward points overfitted) and one
  time per wave of units (large passes of many waves and the small one-wave passes of the small-op grid pin the
  two apart), fitted the same way with the ``attention`` memory curve held fixed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from rooflib.compute import attention, gemm_times
from rooflib.specs.compute_models import (
    AttentionModelSpec,
    ComputeModels,
    GemmModelSpec,
    GemmTiles,
    MemoryOpsSpec,
    attention_key,
)
from rooflib.specs.devices import DeviceSpec
from rooflib.specs.figures import Bandwidth, Duration, Fraction

__all__ = [
    "ATTENTION_BLOCK",
    "GEMM_DTYPES",
    "SPLIT_K",
    "attention_predict",
    "fit_attention",
    "fit_gemm",
    "fit_sgemm",
    "gemm_predict",
    "sgemm_tile_pairs",
    "tile_pairs",
]

GEMM_DTYPES = ("bf16", "fp8")
SPLIT_K = (1, 2, 3, 4, 6, 8, 12, 16)
"""Split-K factors offered to the model (the kernel names say whether cuBLAS split, not by how much)."""
K_BYTES = 128
"""Bytes of one operand row per k step: the tile k of the names (64 bf16, 128 fp8 elements)."""
ATTENTION_BLOCK = (128, 128)
"""Query and key block rows of the blocked attention model (FlashAttention-2/3 on Hopper use 128 x 128 for
head size 128; assumption for the others)."""

_NVJET = re.compile(r"nvjet_sm90_[a-z]+_(\d+)x(\d+)_")
_SGEMM = re.compile(r"(?:gemm_f32f32_\w*?tilesize|simt_sgemm_)(\d+)x(\d+)")
SGEMM_K_BYTES = 32
"""Bytes of one operand row per k step of the fp32 kernels: 8 elements (``tilesize...x8``, ``_8x5``)."""


def tile_pairs(kernels: pd.Series) -> list[tuple[int, int]]:
    """The ``(rows, columns)`` tiles in the recorded cuBLAS kernel names, sorted."""
    pairs: set[tuple[int, int]] = set()
    for text in kernels.dropna().astype(str):
        hit = _NVJET.search(text)
        if hit:
            pairs.add((int(hit.group(2)), int(hit.group(1))))
    return sorted(pairs)


def _with(device: DeviceSpec, memory: MemoryOpsSpec | None, **models: Any) -> DeviceSpec:
    compute = ComputeModels(memory_ops=memory, **models)
    return device.model_copy(update={"compute": compute})


def _efficiencies(device: DeviceSpec, values: dict[str, float], source: str) -> DeviceSpec:
    eff = dict(device.dtype_efficiency)
    eff.update({d: Fraction(value=v, source=source) for d, v in values.items()})
    return device.model_copy(update={"dtype_efficiency": eff})


def sgemm_tile_pairs(kernels: pd.Series) -> list[tuple[int, int]]:
    """The ``(rows, columns)`` tiles in the recorded names of cuBLAS's fp32 CUDA-core kernels
    (``sm80_xmma_gemm_f32f32_..._tilesize{a}x{b}x8_...``, ``cutlass_80_simt_sgemm_{a}x{b}_...``), both ways round
    (cuBLAS is column-major; the names do not say which operand a tile side belongs to), sorted."""
    pairs: set[tuple[int, int]] = set()
    for text in kernels.dropna().astype(str):
        for hit in _SGEMM.finditer(text):
            a, b = int(hit.group(1)), int(hit.group(2))
            pairs |= {(a, b), (b, a)}
    return sorted(pairs)


def gemm_predict(device: DeviceSpec, rows: pd.DataFrame) -> np.ndarray:
    """Seconds the GEMM model predicts for each row (vectorised per dtype; fp32: the CUDA-core ``sgemm`` model)."""
    out = np.full(len(rows), np.nan)
    for dtype in (*GEMM_DTYPES, "fp32"):
        sel = (rows["dtype"] == dtype).to_numpy()
        if sel.any():
            m, n, k = (rows.loc[sel, c].astype(np.int64).to_numpy() for c in ("m", "n", "k"))
            out[sel] = gemm_times(device, m, n, k, dtype)
    return out


def _least_squares(residual: Callable[[np.ndarray], np.ndarray], x0: np.ndarray, hi: np.ndarray) -> np.ndarray:
    from scipy.optimize import least_squares

    res = least_squares(residual, x0, bounds=(np.full_like(x0, -40.0), hi), loss="soft_l1", f_scale=0.05)
    return np.asarray(res.x, dtype=np.float64)


def _tile_model(tiles: GemmTiles, x: np.ndarray, source: str, efficiency: float | None = None) -> GemmModelSpec:
    """A tile model from its five fitted figures (operand and epilogue rates, unit, kernel and split-K fixed
    times) and, for the CUDA-core model, its efficiency."""
    b, store, unit, fixed, reduce = (float(v) for v in x)
    extra = {} if efficiency is None else {"efficiency": Fraction(value=efficiency, source=source)}  # else unset
    return GemmModelSpec(
        tiles=tiles,
        operand_bandwidth=Bandwidth(value=b, source=source),
        epilogue_bandwidth=Bandwidth(value=store, source=source),
        unit_overhead=Duration(value=unit, source=source),
        kernel_fixed=Duration(value=fixed, source=source),
        split_k_reduce=Duration(value=reduce, source=source),
        **extra,
    )


def fit_gemm(
    device: DeviceSpec, memory: MemoryOpsSpec | None, rows: pd.DataFrame, source: str
) -> tuple[GemmModelSpec, dict[str, float]]:
    """The GEMM model and the per-dtype efficiencies that best predict ``rows`` (the fit half)."""
    pairs = tile_pairs(rows["kernels"]) if "kernels" in rows else []
    tiles = GemmTiles(
        pairs=tuple(pairs) or ((128, 256),),
        k_bytes=K_BYTES,
        split_k=SPLIT_K,
        source=f"{source}: the tiles cuBLAS chose ({len(pairs)}, from its kernel names); split-K factors offered",
    )
    measured = rows["time_s"].astype(float).to_numpy()
    dtypes = [d for d in GEMM_DTYPES if (rows["dtype"] == d).any()]

    def build(x: np.ndarray) -> DeviceSpec:
        eff = {d: float(np.exp(x[i])) for i, d in enumerate(dtypes)}
        model = _tile_model(tiles, np.exp(x[len(dtypes) :]), source)
        return _efficiencies(_with(device, memory, gemm=model), eff, source)

    def residual(x: np.ndarray) -> np.ndarray:
        return np.asarray(np.log(gemm_predict(build(x), rows) / measured), dtype=np.float64)

    x0 = np.log([0.75] * len(dtypes) + [8e12, 4e12, 1e-6, 2e-6, 2e-6])
    hi = np.array([0.0] * len(dtypes) + [40.0] * 5)
    x = _least_squares(residual, x0, hi)
    fitted = build(x)
    assert fitted.compute is not None and fitted.compute.gemm is not None
    return fitted.compute.gemm, {d: float(np.exp(x[i])) for i, d in enumerate(dtypes)}


def fit_sgemm(device: DeviceSpec, memory: MemoryOpsSpec | None, rows: pd.DataFrame, source: str) -> GemmModelSpec:
    """The fp32 CUDA-core GEMM model (``compute.sgemm``) that best predicts ``rows`` (fp32 GEMM rows, the fit
    half): the tiles of the recorded kernel names, then one least-squares fit, as :func:`fit_gemm`, of its
    efficiency (of the fp32 vector peak) and its operand rate, per-unit and per-kernel fixed times and split-K
    reduction time."""
    pairs = sgemm_tile_pairs(rows["kernels"]) if "kernels" in rows else []
    tiles = GemmTiles(
        pairs=tuple(pairs) or ((128, 128),),
        k_bytes=SGEMM_K_BYTES,
        split_k=SPLIT_K,
        source=f"{source}: the tiles cuBLAS's fp32 kernels ran ({len(pairs)}, from their names); split-K offered",
    )
    measured = rows["time_s"].astype(float).to_numpy()

    def build(x: np.ndarray) -> DeviceSpec:
        model = _tile_model(tiles, np.exp(x[1:]), source, efficiency=float(np.exp(x[0])))
        return _with(device, memory, sgemm=model)

    def residual(x: np.ndarray) -> np.ndarray:
        return np.asarray(np.log(gemm_predict(build(x), rows) / measured), dtype=np.float64)

    x0 = np.log([0.75, 8e12, 4e12, 1e-6, 2e-6, 2e-6])
    hi = np.array([0.0] + [40.0] * 5)
    fitted = build(_least_squares(residual, x0, hi))
    assert fitted.compute is not None and fitted.compute.sgemm is not None
    return fitted.compute.sgemm


def _attention_key(row: Any) -> tuple[int, bool, bool]:
    return int(row["head_dim"]), bool(row["causal"]), str(row["mode"]) == "bwd"


def attention_predict(device: DeviceSpec, rows: pd.DataFrame) -> np.ndarray:
    """Seconds the attention model predicts for each row."""
    out = []
    for r in rows.to_dict("records"):
        cost = attention(
            device,
            int(r["batch"]),
            int(r["heads"]),
            int(r["seq_q"]),
            int(r["seq_kv"]),
            int(r["head_dim"]),
            str(r.get("dtype", "bf16")),
            kv_heads=int(r["kv_heads"]),
            causal=bool(r["causal"]),
            backward=str(r["mode"]) == "bwd",
        )
        out.append(cost.time_s)
    return np.asarray(out, dtype=np.float64)


def fit_attention(
    device: DeviceSpec, memory: MemoryOpsSpec | None, rows: pd.DataFrame, source: str, **models: Any
) -> AttentionModelSpec:
    """The attention model that best predicts ``rows`` (the fit half, SDPA's default backend)."""
    prefill = rows[rows["seq_q"].astype(int) > 1]
    keys = sorted({_attention_key(r) for r in prefill.to_dict("records")})
    measured = rows["time_s"].astype(float).to_numpy()

    def build(x: np.ndarray) -> DeviceSpec:
        points = {attention_key(d, c, b): float(np.exp(x[i])) for i, (d, c, b) in enumerate(keys)}
        model = AttentionModelSpec(
            block_q=ATTENTION_BLOCK[0],
            block_kv=ATTENTION_BLOCK[1],
            kernel_fixed=Duration(value=float(np.exp(x[-2])), source=source),
            wave_overhead=Duration(value=float(np.exp(x[-1])), source=source),
            efficiency=points,
            source=f"{source}: SDPA's default backend (cuDNN on the H200), {len(keys)} head sizes x masks x directions",
        )
        return _with(device, memory, attention=model, **models)

    def residual(x: np.ndarray) -> np.ndarray:
        return np.asarray(np.log(attention_predict(build(x), rows) / measured), dtype=np.float64)

    x0 = np.log([0.6] * len(keys) + [5e-6, 1e-6])
    hi = np.array([0.0] * len(keys) + [40.0, 40.0])
    fitted = build(_least_squares(residual, x0, hi))
    assert fitted.compute is not None and fitted.compute.attention is not None
    return fitted.compute.attention
