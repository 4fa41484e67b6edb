"""Flash-attention cost (forward, or backward with ``backward=True``), in SI units.

FLOPs follow the FlashAttention convention (Dao, "FlashAttention-2", 2023, section 4.1, and the ``flops()``
helper of the flash-attention benchmarks): the two matmuls ``S = Q K^T`` and ``O = P V`` give
``4 x batch x heads x seq_q x seq_kv x head_dim`` for the forward pass; a causal mask halves it (the same 0.5
the benchmarks use, exact for ``seq_q = seq_kv`` up to the diagonal); the backward pass is 2.5 x the forward
(five matmuls instead of two, recomputing ``S``). Softmax exponentials run on the special-function units and
are not counted, as in the paper.

HBM bytes are the minimum traffic of a fused kernel (each tensor read or written once; K/V re-reads from L2
are free). Forward: read Q, K, V, write O, plus the fp32 log-sum-exp per query row. Backward: read Q, K, V, O,
dO and the log-sum-exp, write dQ, dK, dV, plus the fp32 ``D = rowsum(dO * O)`` that the pre-processing step
writes and the main kernel reads. ``kv_heads < heads`` (grouped-query attention) shrinks K, V, dK, dV.

Devices with a measured attention model (``compute.attention``, e.g. the H200, fitted to ``rooflib bench
compute``) run it as blocks (:func:`attention_blocks`): each (batch, head, query block of ``block_q`` rows) is a
work unit that runs the key blocks of ``block_kv`` it sees (all, or up to its diagonal when causal: a causal
kernel computes whole diagonal blocks, so short causal sequences do more than half the work), in waves over the
SMs, at the measured share of the tensor peak for its head size, mask and direction (interpolated in log head
size between measured ones), plus a fixed time per kernel and, where measured, a time per wave (each unit's
prologue and epilogue: loading its query block, writing its output); a wave lasts at least its longest unit
(a causal pass of one wave, short sequences, takes as long as its last query block, which sees every key
block, not the mean); the memory side (decode: one query row against a
long KV cache) runs at the measured ``attention`` curve (:mod:`rooflib.compute.memory`).

Other devices run on tensor cores at the tensor peak x ``tensor_efficiency``: the spec holds one tensor
efficiency, measured on a large GEMM, and it is used for attention too (assumption; FlashAttention-3 reports
about 75% of the H100 bf16 peak forward and less backward, so the backward estimate is optimistic; a calibrated
profile corrects the device's efficiency). No tile or wave quantisation is applied there.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from rooflib.compute.cost import ComputeCost, roofline_cost
from rooflib.compute.memory import memory_rate
from rooflib.compute.rates import ComputeError, Rates, bytes_per_element, check_dtype
from rooflib.compute.tiling import INT64_MAX
from rooflib.specs.compute_models import AttentionModelSpec
from rooflib.specs.devices import DeviceSpec

__all__ = [
    "BACKWARD_FLOP_RATIO",
    "attention",
    "attention_blocks",
    "attention_bytes",
    "attention_efficiency",
    "attention_flops",
]

BACKWARD_FLOP_RATIO = 2.5
"""Backward FLOPs over forward FLOPs (FlashAttention-2, section 4.1: 5 matmuls vs 2)."""

_STATS_BYTES = 4.0  # log-sum-exp and D are fp32 per query row in FlashAttention-2/3


def _positive(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ComputeError(f"attention {name} must be a positive whole number, got {value!r}")
    if value > INT64_MAX:
        raise ComputeError(f"attention {name} = {value} is too large: at most {INT64_MAX} (2**63 - 1)")
    return value


def _dims(batch: int, heads: int, seq_q: int, seq_kv: int, head_dim: int) -> tuple[float, ...]:
    return (
        float(_positive("batch", batch)),
        float(_positive("heads", heads)),
        float(_positive("seq_q", seq_q)),
        float(_positive("seq_kv", seq_kv)),
        float(_positive("head_dim", head_dim)),
    )


def attention_flops(
    batch: int,
    heads: int,
    seq_q: int,
    seq_kv: int,
    head_dim: int,
    *,
    causal: bool = False,
    backward: bool = False,
) -> float:
    """FLOPs of flash attention: ``4 b h sq skv d`` forward, x0.5 if causal, x2.5 for the backward pass.

    >>> attention_flops(1, 1, 1024, 1024, 128) / 1e9
    0.536870912
    >>> attention_flops(1, 1, 1024, 1024, 128, causal=True, backward=True) / 1e9
    0.67108864
    """
    b, h, sq, skv, d = _dims(batch, heads, seq_q, seq_kv, head_dim)
    flops = 4.0 * b * h * sq * skv * d
    if causal:
        flops *= 0.5
    if backward:
        flops *= BACKWARD_FLOP_RATIO
    return flops


def attention_bytes(
    batch: int,
    heads: int,
    seq_q: int,
    seq_kv: int,
    head_dim: int,
    dtype: str = "bf16",
    *,
    kv_heads: int | None = None,
    backward: bool = False,
) -> float:
    """Minimum HBM bytes of flash attention (see the module docstring for which tensors count).

    >>> attention_bytes(1, 1, 1024, 1024, 128) / 2**20  # Q, K, V, O of 256 KiB each + 4 KiB LSE
    1.00390625
    """
    b, h, sq, skv, d = _dims(batch, heads, seq_q, seq_kv, head_dim)
    hkv = heads if kv_heads is None else _positive("kv_heads", kv_heads)
    if heads % hkv:
        raise ComputeError(f"attention heads ({heads}) must be a multiple of kv_heads ({hkv})")
    size = bytes_per_element(check_dtype(dtype))
    q = b * h * sq * d * size  # Q, O, dO, dQ each
    kv = b * hkv * skv * d * size  # K, V, dK, dV each
    stats = b * h * sq * _STATS_BYTES
    if not backward:
        return 2 * q + 2 * kv + stats  # read Q, K, V; write O, LSE
    # read Q, O, dO, K, V, LSE; write dQ, dK, dV; D written once and read once
    return 4 * q + 4 * kv + 3 * stats


def attention_blocks(seq_q: int, seq_kv: int, block_q: int, block_kv: int, causal: bool) -> tuple[int, float]:
    """Query blocks per (batch, head) and the mean number of key blocks each runs. Causal: a query block runs the
    key blocks up to its last row, aligned to the end of the keys when there are more keys than queries
    (FlashAttention's convention since 2.1: query row r sees keys up to ``r + seq_kv - seq_q``; the same as
    SDPA's ``is_causal`` when the lengths are equal), so a causal pass never runs less than half the blocks.

    >>> attention_blocks(4096, 4096, 128, 128, False), attention_blocks(512, 512, 128, 128, True)
    ((32, 32.0), (4, 2.5))
    >>> attention_blocks(256, 1024, 128, 128, True)  # rows 0-127 see keys 0-895, rows 128-255 all of them
    (2, 7.5)
    """
    nq = math.ceil(seq_q / block_q)
    if not causal:
        return nq, float(math.ceil(seq_kv / block_kv))
    last = np.minimum((np.arange(nq) + 1) * block_q, seq_q)  # rows up to the end of each query block
    seen = np.minimum(last + max(0, seq_kv - seq_q), seq_kv)
    return nq, float(np.mean(np.maximum(np.ceil(seen / block_kv), 1.0)))


def attention_efficiency(model: AttentionModelSpec, head_dim: int, causal: bool, backward: bool) -> float:
    """Measured share of the tensor peak for this mask and direction, log-interpolated in head size (clamped);
    a mask or direction never measured borrows the other mask's figures."""
    parsed = [(k.split("-"), v) for k, v in model.efficiency.items()]
    entries = [(int(p[2]), p[0] == "bwd", p[1] == "causal", v) for p, v in parsed]
    rows = [(d, v) for d, b, c, v in entries if b == backward and c == causal]
    rows = rows or [(d, v) for d, b, _, v in entries if b == backward] or [(d, v) for d, _, _, v in entries]
    rows.sort()
    xs = np.log([float(d) for d, _ in rows])
    ys = np.log([v for _, v in rows])
    return float(np.exp(np.interp(math.log(head_dim), xs, ys)))


def _blocked(
    device: DeviceSpec,
    model: AttentionModelSpec,
    rates: Rates,
    dims: tuple[float, ...],
    causal: bool,
    backward: bool,
    nbytes: float,
) -> float:
    """Compute seconds of the blocked model at ``rates`` (already the measured share of the peak): waves of
    (batch, head, query block) units over the SMs, plus the kernel's fixed time (none for decode, whose memory
    curve holds it), plus for the backward pass its memory-bound kernels (``nbytes`` at the copy rate)."""
    b, h, sq, skv, d = (int(x) for x in dims)
    block_q = min(model.block_q, model.min_block_q * math.ceil(sq / model.min_block_q))
    nq, kv_blocks = attention_blocks(sq, skv, block_q, model.block_kv, causal)
    unit_flops = 4.0 * block_q * model.block_kv * d * kv_blocks * (BACKWARD_FLOP_RATIO if backward else 1.0)
    waves = math.ceil(b * h * nq / rates.sms)
    prefill = block_q == model.block_q
    fixed = model.kernel_fixed.value if prefill else 0.0
    if prefill and model.wave_overhead is not None:
        fixed += waves * model.wave_overhead.value
    # one wave cannot end before its longest unit (the last query block of a causal pass sees every key block)
    longest = float(math.ceil(skv / model.block_kv)) if causal else kv_blocks
    blocks = max(waves * kv_blocks, longest)
    extra = nbytes / float(memory_rate(device, "copy", nbytes)[()]) if backward else 0.0
    return fixed + blocks * (unit_flops / kv_blocks) / rates.flops_per_sm_per_s + extra


def attention(
    device: DeviceSpec,
    batch: int,
    heads: int,
    seq_q: int,
    seq_kv: int,
    head_dim: int,
    dtype: str = "bf16",
    *,
    kv_heads: int | None = None,
    causal: bool = False,
    backward: bool = False,
    sms: int | None = None,
    derate: bool = True,
) -> ComputeCost:
    """Cost of one flash-attention pass on ``sms`` SMs of ``device`` (tensor cores, SI units).

    >>> from rooflib.specs import default_catalog
    >>> dev = default_catalog().device("h100-sxm5")
    >>> c = attention(dev, 8, 16, 4096, 4096, 128, causal=True)
    >>> c.bound, round(c.time_s * 1e3, 3)  # 0.55 TFLOP in 128-row blocks at 0.6025 of 989 TFLOP/s (the H200's)
    ('compute', 1.022)
    """
    flops = attention_flops(batch, heads, seq_q, seq_kv, head_dim, causal=causal, backward=backward)
    nbytes = attention_bytes(batch, heads, seq_q, seq_kv, head_dim, dtype, kv_heads=kv_heads, backward=backward)
    model = device.compute.attention if device.compute is not None else None
    if model is None or not derate:
        return roofline_cost(flops, nbytes, Rates.from_device(device, dtype, "tensor", sms=sms, derate=derate))
    # the measured efficiency is of the datasheet peak: the blocks run at peak x efficiency
    peak = Rates.from_device(device, dtype, "tensor", sms=sms, derate=False)
    eff = attention_efficiency(model, head_dim, causal, backward)
    rates = replace(peak, flops_per_s=peak.flops_per_s * eff, derated=True)
    dims = _dims(batch, heads, seq_q, seq_kv, head_dim)
    compute_s = _blocked(device, model, rates, dims, causal, backward, nbytes)
    if device.compute is not None and device.compute.memory_ops is not None:
        rates = replace(rates, bytes_per_s=float(memory_rate(device, "attention", nbytes)[()]))
    else:
        rates = replace(rates, bytes_per_s=device.hbm_bandwidth.value * device.hbm_efficiency.value)
    return roofline_cost(flops, nbytes, rates, compute_s=compute_s)
