"""Tile and split-K choice of a tuned GEMM library, as its heuristics do it: the fastest candidate per shape.

For a device with ``compute.gemm`` (:class:`~rooflib.specs.compute_models.GemmModelSpec`), every candidate tile
``(tm, tn)`` and split-K factor ``s`` is costed, vectorised over shapes and candidates, and the fastest kept
(``tk = k_bytes / element size``: 64 bf16 or 128 fp8 elements):

- ``tiles = batch x ceil(m / tm) x ceil(n / tn)``; ``units = tiles x s`` work units (K split in ``s`` slices of
  ``ceil(ceil(k / tk) / s)`` k steps each); ``waves = ceil(units / sms)``. A batch of matrices smaller than the
  tile packs ``floor(tm / m) x floor(tn / n)`` of them into one tile (assumption: cuBLAS's batched kernels for
  small matrices give each its own warp), whose operand traffic is then theirs, with no reuse between them;
- one k step of a unit takes ``max(2 tm tn tk / F, (tm + tn) tk e / B)``, where ``F`` is one SM's FLOP rate (the
  tensor peak x the dtype's efficiency over the SMs) and ``B`` one SM's share of the operand rate
  ``operand_bandwidth`` (``e`` bytes per element): a large tile is FLOP-bound, a thin one (decode, skinny) is
  bound by the operand traffic its small reuse needs (the per-SM roofline of a tile, Williams et al. 2009);
- a unit adds ``unit_overhead`` (prologue, epilogue) and its output tile (``tm x tn`` elements, fp32 partial
  sums when split) at one SM's share of ``epilogue_bandwidth``; the kernel adds ``kernel_fixed``; a split adds
  ``split_k_reduce`` plus writing and reading the fp32 partial sums (``s x m x n x 4`` bytes each way) at
  ``partial_bandwidth`` (the partial sums of a small output stay in L2), else at the HBM rate.

``compute_s = kernel_fixed + waves x unit time (+ split-K reduction)``; with ``serial_fixed`` (the models fitted
on aiconfigurator's tables) the waves take at least the GEMM's bytes at the HBM rate, so a memory-bound GEMM
still pays the kernel's fixed and reduction times. The memory side (every operand read once,
the output written once, at the device's measured ``gemm`` curve) is applied by :mod:`rooflib.compute.gemm`.
Each candidate's time is non-decreasing in ``m``, ``n`` and ``k``, so the minimum is too.

On the H200 cuBLAS 13 picks among tiles such as 8x64, 72x64, 128x256, 176x192 and 128x320 (rows x columns, read
from its ``nvjet`` kernel names, recorded by ``rooflib bench compute``), splitting K for small outputs with long
K: the device file's candidates are the tiles it was seen to use (:mod:`rooflib.calibrate.compute_kernels`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from rooflib.compute.rates import Rates
from rooflib.compute.tiling import pack_count
from rooflib.specs.compute_models import GemmModelSpec
from rooflib.specs.devices import DeviceSpec

__all__ = ["TileChoice", "choose_tiles"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
_PARTIAL_BYTES = 4.0  # fp32 partial sums of a split-K GEMM


@dataclass(frozen=True)
class TileChoice:
    """Per shape: the chosen tile, split-K factor, tiles, waves and compute seconds (arrays); with fixed costs
    serial to the memory side, ``fixed_s`` of ``compute_s`` is the kernel's fixed and split-K reduction time
    (paid after whichever of its waves, ``waves_s``, and its bytes takes longer), else 0."""

    tile_m: IntArray
    tile_n: IntArray
    tile_k: int
    split: IntArray
    tiles: IntArray
    waves: IntArray
    compute_s: FloatArray
    fixed_s: FloatArray
    waves_s: FloatArray


def _candidates(model: GemmModelSpec, split_k: int | None) -> tuple[FloatArray, FloatArray, FloatArray]:
    pairs = model.tiles.pairs
    splits = model.tiles.split_k if split_k is None else (split_k,)
    tm = np.array([p[0] for p in pairs for _ in splits], dtype=np.float64)
    tn = np.array([p[1] for p in pairs for _ in splits], dtype=np.float64)
    sp = np.array([s for _ in pairs for s in splits], dtype=np.float64)
    return tm[:, None], tn[:, None], sp[:, None]


def choose_tiles(
    device: DeviceSpec,
    model: GemmModelSpec,
    rates: Rates,
    m: IntArray,
    n: IntArray,
    k: IntArray,
    batch: IntArray,
    elem_bytes: float,
    split_k: int | None = None,
    out_bytes: float = 2.0,
    memory_s: FloatArray | None = None,
) -> TileChoice:
    """The fastest candidate (tile, split-K) for each shape of the (broadcast) arrays; ``split_k`` fixes the
    split factor (at most the k steps). With ``memory_s`` (each shape's bytes at the HBM rate) and the model's
    ``serial_fixed``, the waves take at least ``memory_s`` and the kernel's fixed and reduction times add to it."""
    shape = np.broadcast(m, n, k, batch).shape
    mf, nf, kf, bf = (
        np.broadcast_to(np.asarray(x, dtype=np.float64), shape).ravel()[None, :] for x in (m, n, k, batch)
    )
    tm, tn, sp = _candidates(model, split_k)
    tk = max(1.0, float(model.tiles.k_bytes) / elem_bytes)
    sms = float(rates.sms)
    flops_sm = rates.flops_per_sm_per_s
    bw_sm = model.operand_bandwidth.value / float(device.sms)
    store_sm = model.epilogue_bandwidth.value / float(device.sms)
    # a batch of matrices smaller than the tile packs several into one tile (one per warp), each with its own
    # operands: no reuse between them
    packs = pack_count(mf, nf, bf, tm, tn).astype(np.float64)
    packs = np.minimum(packs, np.maximum(1.0, np.ceil(bf / sms)))  # never fewer tiles than SMs to run them
    tiles = np.ceil(bf / packs) * np.ceil(mf / tm) * np.ceil(nf / tn)
    operands = np.where(packs > 1, packs * (np.minimum(mf, tm) + np.minimum(nf, tn)), tm + tn)
    k_steps = np.ceil(kf / tk)
    split = np.minimum(sp, k_steps)
    waves = np.ceil(tiles * split / sms)
    unit_steps = np.ceil(k_steps / split)
    step_s = np.maximum(2.0 * tm * tn * tk / flops_sm, operands * tk * elem_bytes / bw_sm)
    store = np.where(split > 1, _PARTIAL_BYTES, out_bytes) * tm * tn / store_sm
    # a persistent warp-specialised kernel writes one tile's output while the next tile's mainloop runs: a unit
    # takes the longer of the two; the last wave's output is written after it
    unit_s = model.unit_overhead.value + np.maximum(unit_steps * step_s, store)
    partial = model.partial_bandwidth
    rate = partial.value if partial is not None else device.hbm_bandwidth.value * device.hbm_efficiency.value
    reduce_s = np.where(split > 1, model.split_k_reduce.value + 2.0 * split * mf * nf * bf * _PARTIAL_BYTES / rate, 0.0)
    body = waves_s = waves * unit_s + store
    serial = memory_s is not None and model.serial_fixed
    if serial:  # a memory-bound GEMM still pays its fixed costs
        body = np.maximum(body, np.broadcast_to(np.asarray(memory_s, dtype=np.float64), shape).ravel()[None, :])
    total = model.kernel_fixed.value + body + reduce_s  # [candidate, shape]
    best = np.argmin(total, axis=0)
    cols = np.arange(total.shape[1])

    def pick(a: FloatArray) -> FloatArray:
        return np.asarray(np.broadcast_to(a, total.shape)[best, cols].reshape(shape), dtype=np.float64)

    return TileChoice(
        tile_m=pick(tm).astype(np.int64),
        tile_n=pick(tn).astype(np.int64),
        tile_k=int(tk),
        split=pick(split).astype(np.int64),
        tiles=pick(tiles).astype(np.int64),
        waves=pick(waves).astype(np.int64),
        compute_s=np.asarray(pick(total), dtype=np.float64),
        fixed_s=pick(model.kernel_fixed.value + reduce_s) if serial else np.zeros(shape),
        waves_s=pick(waves_s),
    )
