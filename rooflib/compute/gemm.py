"""GEMM cost: ``C[m, n] = A[m, k] @ B[k, n]`` (times ``batch``), with tile and wave quantisation.

FLOPs = ``2 m n k batch`` (one multiply and one add per MAC). HBM bytes are the *minimum* traffic: A and B
read once and C written once (``beta = 0``); re-reads of A/B tiles that miss L2 are not counted, so memory
time is a lower bound. fp4 block scales are not counted.

Devices with a measured GEMM model (``compute.gemm`` in the device file, e.g. the H200) choose the tile and the
split-K factor per shape among candidates, as cuBLAS's heuristics do, with per-tile operand limits and fixed
costs (:mod:`rooflib.compute.gemm_plan`), and run the memory side at the measured ``gemm`` curve of
:mod:`rooflib.compute.memory` (weight streaming of decode GEMMs). Otherwise (and whenever ``tile`` is given),
compute time (``ideal=False``) follows how a tiled kernel runs with one tile (CUTLASS / cuBLAS; NVIDIA "Matrix
Multiplication Background" user guide, sections on tile and wave quantisation):

- **tile quantisation**: the output is cut into ``tiles = batch x ceil(m / tm) x ceil(n / tn)`` tiles of the
  device's ``gemm_tile`` (``tm x tn x tk``); a partial tile costs a full one, and ``k`` is padded to a
  multiple of ``tk``;
- **split-K**: when the tiles do not fill one wave, tuned libraries split K so idle SMs get work (CUTLASS
  split-K, Stream-K: Osama et al., PPoPP 2023). ``split_k=None`` picks ``min(k / tk, sms // tiles)`` splits
  for an under-filled wave and 1 otherwise; the partial sums are assumed to be reduced through L2 and are not
  counted as HBM traffic;
- **wave quantisation**: ``waves = ceil(tiles x split / sms)``; every wave takes as long as one work unit at
  the per-SM rate, ``2 tm tn ceil(k_tiles / split) tk / (flops_per_s / sms)``.

``ideal=True`` drops quantisation: ``compute_s = flops / flops_per_s``, what a roofline bound uses (with the
measured model, memory at the best rate of the ``gemm`` curve, so the ideal stays below every shape's time).
Either way the FLOP rate is the tensor peak x the dtype's efficiency (``dtype_efficiency``, else
``tensor_efficiency``; ``derate=False``: the datasheet peak). Without the measured model the efficiency was
measured on a large GEMM and so already holds a little wave quantisation; quantised times count it again (about
3% for 8192^3 on H100), which errs on the slow side; the measured model's efficiency is fitted with its
quantisation (:mod:`rooflib.calibrate.compute_kernels`).

**Duty** (``duty``, :mod:`rooflib.compute.duty`): the GEMM blocks are fitted on burst timings (NVIDIA's tables
replay each GEMM a few times from idle); ``duty="sustained"`` (the default: a program's steps keep the GPU at its
power limit) charges the block's ``sustained_share`` to the tensor rate, ``duty="burst"`` predicts a table's rows.
A memory-bound GEMM keeps its time; ``ideal=True`` ignores the duty (a bound).

GEMMs run on tensor cores for every dtype except ``fp32``, which runs on CUDA cores (SGEMM); ask for ``tf32``
for a tensor-core fp32 GEMM. A device with ``compute.sgemm`` (the H200: fitted on runs/x1-sgemm) chooses the
tiles of those by that model, at its own efficiency of the CUDA-core peak; a batch of small matrices never packs
into fewer tiles than the SMs that could run them. ``out_dtype`` defaults to ``dtype``, except bf16 for fp8 and
fp4 inputs.

:func:`gemm` and :func:`gemm_quantization` take scalars; :func:`gemm_times` takes numpy arrays (broadcast) of
``m``, ``n``, ``k`` and returns an array of seconds.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import numpy.typing as npt

from rooflib.compute.cost import ComputeCost, roofline_cost
from rooflib.compute.duty import Duty, duty_rates
from rooflib.compute.gemm_plan import TileChoice, choose_tiles
from rooflib.compute.memory import memory_rate
from rooflib.compute.rates import ComputeError, Rates, Unit, bytes_per_element, check_dtype, resolve_sms
from rooflib.compute.tiling import (
    INT64_MAX,
    GemmQuantization,
    TileShape,
    as_shape,
    check_int64,
    plan_tiles,
    resolve_tile,
)
from rooflib.specs.devices import DeviceSpec, DType, GemmTile

__all__ = [
    "gemm",
    "gemm_bytes",
    "gemm_flops",
    "gemm_quantization",
    "gemm_times",
    "gemm_unit",
    "quantize_time",
]

FloatArray = npt.NDArray[np.float64]


def gemm_unit(dtype: str) -> Unit:
    """The unit a GEMM of ``dtype`` runs on: ``"vector"`` for fp32 (SGEMM), ``"tensor"`` for every other dtype."""
    return "vector" if check_dtype(dtype) == "fp32" else "tensor"


def _out_dtype(dtype: DType, out_dtype: str | None) -> DType:
    if out_dtype is not None:
        return check_dtype(out_dtype)
    return "bf16" if dtype in ("fp8", "fp4") else dtype


def gemm_flops(m: int, n: int, k: int, *, batch: int = 1) -> float:
    """Useful FLOPs of a GEMM: ``2 m n k batch``.

    >>> gemm_flops(8192, 8192, 8192) / 1e12
    1.099511627776
    """
    mm, nn, kk, bb = _checked(m, n, k, batch)
    return 2.0 * mm * nn * kk * bb


def _checked(m: int, n: int, k: int, batch: int) -> tuple[int, int, int, int]:
    plain = (m, n, k, batch)
    if all(type(v) is int and 1 <= v <= INT64_MAX for v in plain):  # the common case, without numpy
        return m, n, k, batch
    dims = [as_shape(name, value) for name, value in (("m", m), ("n", n), ("k", k), ("batch", batch))]
    if any(d.ndim for d in dims):
        raise ComputeError("gemm, gemm_flops, gemm_bytes and gemm_quantization take scalars; use gemm_times for arrays")
    mm, nn, kk, bb = (int(d) for d in dims)
    return mm, nn, kk, bb


def gemm_bytes(m: int, n: int, k: int, dtype: str = "bf16", *, out_dtype: str | None = None, batch: int = 1) -> float:
    """Minimum HBM bytes of a GEMM: ``batch x ((m k + k n) x size(dtype) + m n x size(out_dtype))``.

    >>> gemm_bytes(4096, 4096, 4096) / 2**20  # three 32 MiB bf16 matrices
    96.0
    """
    mm, nn, kk, bb = _checked(m, n, k, batch)
    dt = check_dtype(dtype)
    inp = (float(mm) * kk + float(kk) * nn) * bytes_per_element(dt)
    out = float(mm) * nn * bytes_per_element(_out_dtype(dt, out_dtype))
    return bb * (inp + out)


def _choice(
    device: DeviceSpec,
    dtype: DType,
    rates: Rates,
    dims: tuple[npt.ArrayLike, ...],
    tile: GemmTile | TileShape | None,
    split_k: int | None,
    out_dtype: str | None = None,
    memory_s: FloatArray | None = None,
) -> TileChoice | None:
    """The measured model's tile choice, or None (the device has no GEMM model for the unit, or a tile was given):
    tensor-unit GEMMs by ``compute.gemm``, fp32 on CUDA cores by ``compute.sgemm`` at its own efficiency."""
    models = device.compute
    if tile is not None or models is None:
        return None
    spec = models.gemm if rates.unit == "tensor" else (models.sgemm if dtype == "fp32" else None)
    if spec is None:
        return None
    if rates.unit != "tensor" and spec.efficiency is not None:
        rates = replace(rates, flops_per_s=rates.flops_per_s * spec.efficiency.value)
    if split_k is not None and (isinstance(split_k, bool) or not isinstance(split_k, int) or split_k < 1):
        raise ComputeError(f"split_k must be a positive whole number or None, got {split_k!r}")
    m, n, k, batch = (np.asarray(d, dtype=np.int64) for d in dims)
    tm, tn = min(spec.tiles.pairs, key=lambda p: p[0] * p[1])  # the most tiles any candidate makes
    tk = max(1, int(spec.tiles.k_bytes / bytes_per_element(dtype)))
    count = batch.astype(np.float64) * np.ceil(m / tm) * np.ceil(n / tn) * max(spec.tiles.split_k)
    check_int64("tiles", count, (m, n, k, batch), (tm, tn, tk))
    out = bytes_per_element(_out_dtype(dtype, out_dtype))
    elem = bytes_per_element(dtype)
    return choose_tiles(device, spec, rates, m, n, k, batch, elem, split_k, out, memory_s)


def quantize_time(
    device: DeviceSpec, m: npt.ArrayLike, k: npt.ArrayLike, dtype: str, *, batch: npt.ArrayLike = 1
) -> FloatArray:
    """Device seconds of the activation quantisation a framework runs before an fp8 or fp4 GEMM (TRT-LLM's
    per-tensor fp8 and nvfp4 block-scale quantisation of ``A``): the device's ``compute.gemm.quantize[dtype]``
    fixed time (its kernels' fixed costs) plus one pass over ``A`` (read as bf16, written as ``dtype``) at the
    HBM rate; 0 for other dtypes or a device without the figure.

    >>> from rooflib.specs import default_catalog
    >>> dev = default_catalog().device("h100-sxm5")
    >>> float(quantize_time(dev, 1, 4096, "bf16"))
    0.0
    """
    dt = check_dtype(dtype)
    mm, kk, bb = np.broadcast_arrays(as_shape("m", m), as_shape("k", k), as_shape("batch", batch))
    models = device.compute
    fig = models.gemm.quantize.get(dt) if models is not None and models.gemm is not None else None
    if fig is None:
        return np.zeros(mm.shape, dtype=np.float64)
    hbm = device.hbm_bandwidth.value * device.hbm_efficiency.value
    a_bytes = mm.astype(np.float64) * kk.astype(np.float64) * bb.astype(np.float64) * (2.0 + bytes_per_element(dt))
    out: FloatArray = fig.value + a_bytes / hbm
    return out


def _memory_rates(device: DeviceSpec, rates: Rates, nbytes: npt.ArrayLike) -> Rates | FloatArray:
    """The HBM rate of the GEMM's bytes when derated: the GEMM model's ``memory_share`` of the datasheet rate (a
    block fitted with its memory side), else the measured ``gemm`` curve (an array for arrays), else
    ``hbm_efficiency``'s; the GEMM model's ``memory_latency`` folded in (``bytes / (bytes / rate + latency)``)."""
    rate: float | FloatArray = rates.bytes_per_s
    gemm_model = device.compute.gemm if device.compute is not None else None
    ops = device.compute.memory_ops if device.compute is not None else None
    measured = ops is not None and "gemm" in ops.hbm
    if rates.derated and gemm_model is not None and gemm_model.memory_share is not None:
        rate = device.hbm_bandwidth.value * gemm_model.memory_share.value
    elif rates.derated and measured:
        rate = memory_rate(device, "gemm", nbytes)
    latency = gemm_model.memory_latency if gemm_model is not None and rates.derated else None
    if latency is not None and latency.value > 0:
        b = np.asarray(nbytes, dtype=np.float64)
        rate = b / (b / rate + latency.value)
    arr = np.asarray(rate, dtype=np.float64)
    return replace(rates, bytes_per_s=float(arr[()])) if arr.ndim == 0 else arr


def _ideal_rates(device: DeviceSpec, rates: Rates, tile: GemmTile | TileShape | None) -> Rates:
    """For ``ideal=True`` where the measured model applies: the best HBM rate on the ``gemm`` curve (a bound on
    every size); else ``rates`` (the streaming-copy rate)."""
    models = device.compute
    spec = None
    if models is not None:
        spec = models.gemm if rates.unit == "tensor" else (models.sgemm if rates.dtype == "fp32" else None)
    applies = tile is None and spec is not None
    curve = models.memory_ops.hbm.get("gemm") if models is not None and models.memory_ops is not None else None
    if not rates.derated or curve is None or not applies:
        return rates
    best = max(device.hbm_efficiency.value, max(e for _, e in curve.points))
    if spec is not None and spec.memory_share is not None:  # the share a fitted block streams at wins the curve
        best = max(best, spec.memory_share.value)
    return replace(rates, bytes_per_s=device.hbm_bandwidth.value * best)


def gemm_quantization(
    device: DeviceSpec,
    m: int,
    n: int,
    k: int,
    *,
    sms: int | None = None,
    tile: GemmTile | TileShape | None = None,
    batch: int = 1,
    split_k: int | None = None,
    dtype: str = "bf16",
) -> GemmQuantization:
    """Tiles, K-splits, waves and quantisation efficiency of a GEMM on ``sms`` SMs of ``device`` (the chosen
    tile on devices with a GEMM model; ``dtype`` matters only there).

    >>> from rooflib.specs import default_catalog
    >>> dev = default_catalog().device("h100-sxm5")  # its GEMM model picks the tile, 132 SMs
    >>> q = gemm_quantization(dev, 8192, 8192, 8192)
    >>> q.tiles, q.waves, round(q.efficiency, 3)
    (1824, 14, 0.985)
    """
    used = resolve_sms(device, sms)
    shape = resolve_tile(device, tile)
    mm, nn, kk, bb = _checked(m, n, k, batch)
    dt = check_dtype(dtype)
    if gemm_unit(dt) == "tensor" and device.tensor_peak(dt) is not None:
        rates = Rates.from_device(device, dt, "tensor", sms=used)
        chosen = _choice(device, dt, rates, (mm, nn, kk, bb), tile, split_k)
        if chosen is not None:
            shape = (int(chosen.tile_m), int(chosen.tile_n), chosen.tile_k)
            split_k = int(chosen.split)
    m_, n_, k_, b_ = (np.asarray(x, dtype=np.int64) for x in (mm, nn, kk, bb))
    plan = plan_tiles(m_, n_, k_, b_, shape, used, split_k)
    waves = int(plan.waves)
    return GemmQuantization(
        tile=shape,
        tiles=int(plan.tiles),
        split_k=int(plan.split),
        waves=waves,
        sms=used,
        useful_flops=gemm_flops(mm, nn, kk, batch=bb),
        padded_flops=float(plan.padded_flops),
        executed_flops=float(waves * used * plan.unit_flops),
    )


def gemm(
    device: DeviceSpec,
    m: int,
    n: int,
    k: int,
    dtype: str = "bf16",
    *,
    sms: int | None = None,
    tile: GemmTile | TileShape | None = None,
    batch: int = 1,
    out_dtype: str | None = None,
    split_k: int | None = None,
    ideal: bool = False,
    derate: bool = True,
    quantize_activations: bool = False,
    duty: Duty = "sustained",
) -> ComputeCost:
    """Cost of ``batch`` GEMMs ``[m, k] @ [k, n]`` in ``dtype`` on ``sms`` SMs of ``device`` (SI units).

    >>> from rooflib.specs import default_catalog
    >>> dev = default_catalog().device("h100-sxm5")
    >>> c = gemm(dev, 8192, 8192, 8192)  # in a program: the GPU at its power limit
    >>> c.bound, round(c.time_s * 1e3, 2), round(gemm(dev, 8192, 8192, 8192, duty="burst").time_s * 1e3, 2)
    ('compute', 1.57, 1.36)
    >>> round(gemm(dev, 8192, 8192, 8192, ideal=True).time_s * 1e3, 2)
    1.31
    """
    cost = _gemm_cost(device, m, n, k, dtype, sms, tile, batch, out_dtype, split_k, ideal, derate, duty)
    if not quantize_activations or ideal:
        return cost
    extra = float(quantize_time(device, m, k, dtype, batch=batch)[()])
    return cost.with_overhead(extra) if extra > 0 else cost


def _gemm_cost(
    device: DeviceSpec,
    m: int,
    n: int,
    k: int,
    dtype: str,
    sms: int | None,
    tile: GemmTile | TileShape | None,
    batch: int,
    out_dtype: str | None,
    split_k: int | None,
    ideal: bool,
    derate: bool,
    duty: str = "sustained",
) -> ComputeCost:
    dt = check_dtype(dtype)
    rates = Rates.from_device(device, dt, gemm_unit(dt), sms=sms, derate=derate)
    timed = duty_rates(device, rates, duty)
    flops = gemm_flops(m, n, k, batch=batch)
    nbytes = gemm_bytes(m, n, k, dt, out_dtype=out_dtype, batch=batch)
    if ideal:
        resolve_tile(device, tile)  # still validate the arguments
        return roofline_cost(flops, nbytes, _ideal_rates(device, rates, tile))
    at = _memory_rates(device, rates, nbytes)
    assert isinstance(at, Rates)
    memory_s = np.asarray(nbytes / at.bytes_per_s)
    chosen = _choice(device, dt, timed, _checked(m, n, k, batch), tile, split_k, out_dtype, memory_s)
    if chosen is not None:
        fixed = float(chosen.fixed_s[()])
        if fixed > 0:  # fixed costs serial to the memory side: an overhead, so a memory-bound GEMM says so
            cost = roofline_cost(flops, nbytes, at, compute_s=float(chosen.waves_s[()]), dtype=rates.dtype)
            return cost.with_overhead(fixed)
        return roofline_cost(flops, nbytes, at, compute_s=float(chosen.compute_s[()]), dtype=rates.dtype)
    q = gemm_quantization(device, m, n, k, sms=rates.sms, tile=tile, batch=batch, split_k=split_k, dtype=dt)
    return roofline_cost(flops, nbytes, timed, compute_s=q.executed_flops / timed.flops_per_s)


def gemm_times(
    device: DeviceSpec,
    m: npt.ArrayLike,
    n: npt.ArrayLike,
    k: npt.ArrayLike,
    dtype: str = "bf16",
    *,
    sms: int | None = None,
    tile: GemmTile | TileShape | None = None,
    batch: npt.ArrayLike = 1,
    out_dtype: str | None = None,
    split_k: int | None = None,
    ideal: bool = False,
    derate: bool = True,
    quantize_activations: bool = False,
    duty: Duty = "sustained",
) -> FloatArray:
    """Vectorised :func:`gemm`: ``time_s`` for arrays of ``m``, ``n``, ``k`` (broadcast together), in seconds.

    >>> from rooflib.specs import default_catalog
    >>> dev = default_catalog().device("h100-sxm5")
    >>> t = gemm_times(dev, [4096, 8192], 8192, 8192)
    >>> bool(np.isclose(t[1], gemm(dev, 8192, 8192, 8192).time_s))
    True
    """
    dt = check_dtype(dtype)
    out = _out_dtype(dt, out_dtype)
    rates = Rates.from_device(device, dt, gemm_unit(dt), sms=sms, derate=derate)
    timed = duty_rates(device, rates, duty)
    shape = resolve_tile(device, tile)
    mm, nn, kk, bb = np.broadcast_arrays(as_shape("m", m), as_shape("n", n), as_shape("k", k), as_shape("batch", batch))
    mf, nf, kf, bf = (x.astype(np.float64) for x in (mm, nn, kk, bb))
    nbytes = bf * ((mf * kf + kf * nf) * bytes_per_element(dt) + mf * nf * bytes_per_element(out))
    memory_rate_: float | FloatArray = rates.bytes_per_s
    if ideal:
        compute_s = 2.0 * mf * nf * kf * bf / rates.flops_per_s
        memory_rate_ = _ideal_rates(device, rates, tile).bytes_per_s
    else:
        at = _memory_rates(device, rates, nbytes)
        at_rate = at.bytes_per_s if isinstance(at, Rates) else at
        chosen = _choice(device, dt, timed, (mm, nn, kk, bb), tile, split_k, out_dtype, nbytes / at_rate)
        if chosen is not None:
            compute_s = chosen.compute_s
            memory_rate_ = at_rate
        else:
            plan = plan_tiles(mm, nn, kk, bb, shape, rates.sms, split_k)
            compute_s = plan.waves * plan.unit_flops / timed.flops_per_sm_per_s
    result: FloatArray = np.maximum(compute_s, nbytes / memory_rate_)
    if quantize_activations and not ideal:
        result = result + quantize_time(device, mm, kk, dt, batch=bb)
    return result
