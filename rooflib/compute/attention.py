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

Time runs on tensor cores at the tensor peak x ``tensor_efficiency``: the spec holds one tensor efficiency,
measured on a large GEMM, and it is used for attention too (assumption; FlashAttention-3 reports about 75% of
the H100 bf16 peak forward and less backward, so the backward estimate is optimistic; a calibrated profile
corrects the device's efficiency). No tile or wave quantisation is applied.
"""

from __future__ import annotations

from rooflib.compute.cost import ComputeCost, roofline_cost
from rooflib.compute.rates import ComputeError, Rates, bytes_per_element, check_dtype
from rooflib.compute.tiling import INT64_MAX
from rooflib.specs.devices import DeviceSpec

__all__ = ["BACKWARD_FLOP_RATIO", "attention", "attention_bytes", "attention_flops"]

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
    >>> c.bound, round(c.time_s * 1e3, 3)  # 0.55 TFLOP at 791.2 TFLOP/s
    ('compute', 0.695)
    """
    rates = Rates.from_device(device, dtype, "tensor", sms=sms, derate=derate)
    flops = attention_flops(batch, heads, seq_q, seq_kv, head_dim, causal=causal, backward=backward)
    nbytes = attention_bytes(batch, heads, seq_q, seq_kv, head_dim, dtype, kv_heads=kv_heads, backward=backward)
    return roofline_cost(flops, nbytes, rates)
