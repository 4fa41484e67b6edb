"""Tile and wave quantisation of a tiled GEMM: how ``batch x [m, k] @ [k, n]`` maps onto SMs.

See :mod:`rooflib.compute.gemm` for the model and its sources. Everything here is vectorised over numpy
arrays of ``m``, ``n``, ``k`` and ``batch``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from rooflib.compute.rates import ComputeError
from rooflib.specs.devices import DeviceSpec, GemmTile

__all__ = [
    "INT64_MAX",
    "GemmQuantization",
    "TilePlan",
    "TileShape",
    "as_shape",
    "check_int64",
    "pack_count",
    "plan_tiles",
    "resolve_tile",
]

TileShape = tuple[int, int, int]
IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


INT64_MAX = int(np.iinfo(np.int64).max)
"""Largest GEMM dimension, tile count or work-unit count the tiling arithmetic (int64) holds."""


def as_shape(name: str, value: npt.ArrayLike) -> IntArray:
    """``value`` as an int64 array of GEMM dimensions, each a whole number in [1, 2**63 - 1]."""
    arr = np.asarray(value)
    if arr.dtype == object and all(type(v) is int for v in arr.flat):  # Python ints too large for int64
        big = max(arr.flat, key=abs)
        if big >= 1:
            raise ComputeError(f"GEMM {name} = {big} is too large: at most {INT64_MAX} (2**63 - 1)")
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.number):
        raise ComputeError(f"GEMM {name} must be a positive whole number, got {value!r}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 1) or np.any(arr != np.floor(arr)):
        raise ComputeError(f"GEMM {name} must be a positive whole number, got {value!r}")
    if np.issubdtype(arr.dtype, np.floating) and np.any(arr >= 2.0**63):
        raise ComputeError(f"GEMM {name} = {arr.max():g} is too large: at most {INT64_MAX} (2**63 - 1)")
    if np.issubdtype(arr.dtype, np.unsignedinteger) and np.any(arr > INT64_MAX):
        raise ComputeError(f"GEMM {name} = {arr.max()} is too large: at most {INT64_MAX} (2**63 - 1)")
    return arr.astype(np.int64)


def check_int64(what: str, count: FloatArray, dims: tuple[IntArray, ...], tile: TileShape) -> None:
    """Refuse shapes whose ``count`` (computed in float64, exact enough to compare) would wrap around int64."""
    over = count >= 2.0**62  # headroom: a count times a small factor must still fit
    if np.any(over):
        i = int(np.argmax(np.broadcast_to(over, count.shape).ravel()))
        m, n, k, batch = (int(np.broadcast_to(d, count.shape).ravel()[i]) for d in dims)
        raise ComputeError(
            f"GEMM m={m}, n={n}, k={k}, batch={batch} needs {float(count.ravel()[i]):.3g} {what} of "
            f"{tile[0]} x {tile[1]} x {tile[2]}, beyond what int64 tile counts hold (2**62); refused"
        )


def resolve_tile(device: DeviceSpec, tile: GemmTile | TileShape | None) -> TileShape:
    if tile is None:
        tile = device.gemm_tile
    if isinstance(tile, GemmTile):
        return (tile.m, tile.n, tile.k)
    if len(tile) != 3 or any(isinstance(t, bool) or not isinstance(t, int) or t < 1 for t in tile):
        raise ComputeError(f"tile must be three positive whole numbers (tm, tn, tk), got {tile!r}")
    return (tile[0], tile[1], tile[2])


@dataclass(frozen=True)
class TilePlan:
    """Arrays (one entry per GEMM shape) of tiles, K-splits, waves and per-unit FLOPs."""

    tiles: IntArray
    split: IntArray
    waves: IntArray
    unit_flops: FloatArray  # FLOPs one SM executes per work unit (a tile, or a K-slice of one)
    padded_flops: FloatArray  # FLOPs of all tiles with K padded to tk


def pack_count(m: npt.NDArray[Any], n: npt.NDArray[Any], batch: npt.NDArray[Any], tm: Any, tn: Any) -> IntArray:
    """How many matrices of a batch one ``tm x tn`` tile holds: ``floor(tm / m) x floor(tn / n)`` where a batched
    matrix is smaller than the tile along that side, else 1 (assumption: cuBLAS's batched kernels for small
    matrices give each its own warp; a single GEMM packs nothing). Broadcasts: ``tm`` and ``tn`` may be arrays of
    candidate tiles (:mod:`rooflib.compute.gemm_plan`)."""
    many = batch > 1
    pm = np.where(many & (m < tm), tm // np.maximum(m, 1), 1)
    pn = np.where(many & (n < tn), tn // np.maximum(n, 1), 1)
    return np.asarray(pm * pn, dtype=np.int64)


def plan_tiles(
    m: IntArray, n: IntArray, k: IntArray, batch: IntArray, tile: TileShape, sms: int, split_k: int | None
) -> TilePlan:
    """Map GEMM shapes onto ``sms`` SMs with tile ``(tm, tn, tk)``; ``split_k=None`` picks the split-K factor.

    Auto split-K is ``min(k_tiles, sms // tiles)`` for a grid of fewer tiles than SMs and 1 otherwise, so it
    never adds a wave, and times stay non-decreasing in ``m``, ``n`` and ``k``. A batch of matrices smaller than
    the tile packs :func:`pack_count` of them into each tile.
    """
    tm, tn, tk = tile
    row_tiles, col_tiles, k_tiles = -(-m // tm), -(-n // tn), -(-k // tk)
    packs = pack_count(m, n, batch, tm, tn)
    groups = -(-batch // packs)  # tiles along the batch: several small matrices share one tile
    tiles_f = groups.astype(np.float64) * row_tiles.astype(np.float64) * col_tiles.astype(np.float64)
    check_int64("tiles", np.asarray(tiles_f), (m, n, k, batch), tile)
    tiles = groups * row_tiles * col_tiles
    if split_k is None:
        split = np.where(tiles < sms, np.minimum(k_tiles, np.maximum(sms // tiles, 1)), 1)
    else:
        if isinstance(split_k, bool) or not isinstance(split_k, int) or split_k < 1:
            raise ComputeError(f"split_k must be a positive whole number or None, got {split_k!r}")
        split = np.minimum(k_tiles, split_k)
    check_int64("work units (tiles x K-splits)", np.asarray(tiles_f * split), (m, n, k, batch), tile)
    waves = -(-(tiles * split) // sms)
    unit_k = (-(-k_tiles // split)).astype(np.float64) * tk  # float: k_tiles x tk may pass int64 for k near 2**63
    tile_flops = 2.0 * tm * tn
    return TilePlan(
        tiles=np.asarray(tiles, dtype=np.int64),
        split=np.asarray(split, dtype=np.int64),
        waves=np.asarray(waves, dtype=np.int64),
        unit_flops=tile_flops * unit_k,
        padded_flops=tile_flops * tiles.astype(np.float64) * (k_tiles.astype(np.float64) * tk),
    )


@dataclass(frozen=True)
class GemmQuantization:
    """How a GEMM maps onto tiles, K-splits and waves, and the share of executed FLOPs that are useful.

    ``efficiency = useful_flops / executed_flops = tile_efficiency x split_efficiency x wave_efficiency``,
    where executed FLOPs are ``waves x sms x`` the FLOPs of one work unit (every SM slot of every wave, busy
    or idle).
    """

    tile: TileShape
    tiles: int
    split_k: int
    waves: int
    sms: int
    useful_flops: float
    padded_flops: float
    executed_flops: float

    @property
    def work_units(self) -> int:
        """Tiles times K-splits: the number of SM-sized pieces of work."""
        return self.tiles * self.split_k

    @property
    def tile_efficiency(self) -> float:
        """Useful FLOPs over the FLOPs of whole tiles with K padded to the tile's k."""
        return self.useful_flops / self.padded_flops

    @property
    def wave_efficiency(self) -> float:
        """Busy SM slots over all SM slots of all waves."""
        return self.work_units / (self.waves * self.sms)

    @property
    def split_efficiency(self) -> float:
        """Loss from K-tiles that do not divide evenly among the splits (1 without split-K)."""
        return self.padded_flops / self.executed_flops / self.wave_efficiency

    @property
    def efficiency(self) -> float:
        """Useful FLOPs over executed-slot FLOPs, in (0, 1]."""
        return self.useful_flops / self.executed_flops
