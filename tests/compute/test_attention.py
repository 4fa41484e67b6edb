"""Flash attention: FLOPs against the FlashAttention-2 convention, HBM bytes, and times."""

from __future__ import annotations

import pytest

from rooflib.compute import BACKWARD_FLOP_RATIO, ComputeError, attention, attention_bytes, attention_flops
from rooflib.specs import DeviceSpec, default_catalog


def test_forward_flops_match_flashattention() -> None:
    # FlashAttention-2, section 4.1: 4 * seqlen^2 * head_dim * num_heads per sequence
    b, h, s, d = 2, 16, 4096, 128
    assert attention_flops(b, h, s, s, d) == b * 4 * s**2 * d * h
    assert attention_flops(1, 1, 100, 300, 64) == 4 * 100 * 300 * 64


def test_causal_halves_and_backward_is_two_and_a_half() -> None:
    full = attention_flops(2, 16, 4096, 4096, 128)
    assert attention_flops(2, 16, 4096, 4096, 128, causal=True) == full / 2
    assert BACKWARD_FLOP_RATIO == 2.5
    assert attention_flops(2, 16, 4096, 4096, 128, backward=True) == 2.5 * full
    assert attention_flops(2, 16, 4096, 4096, 128, causal=True, backward=True) == 1.25 * full


def test_forward_bytes() -> None:
    b, h, s, d = 1, 1, 1024, 128
    # Q, K, V read, O written (bf16) plus the fp32 log-sum-exp per query row
    assert attention_bytes(b, h, s, s, d, "bf16") == 4 * s * d * 2 + s * 4
    assert attention_bytes(b, h, s, s, d, "fp8") == 4 * s * d * 1 + s * 4


def test_backward_bytes() -> None:
    b, h, sq, skv, d = 2, 8, 512, 2048, 64
    q, kv, stats = b * h * sq * d * 2, b * h * skv * d * 2, b * h * sq * 4
    # read Q, O, dO, K, V, LSE; write dQ, dK, dV; D written and read
    assert attention_bytes(b, h, sq, skv, d, backward=True) == 4 * q + 4 * kv + 3 * stats


def test_grouped_query_attention_shrinks_kv() -> None:
    mha = attention_bytes(1, 32, 1, 8192, 128)
    gqa = attention_bytes(1, 32, 1, 8192, 128, kv_heads=8)
    kv_mha = 2 * 32 * 8192 * 128 * 2
    assert mha - gqa == pytest.approx(kv_mha * (1 - 8 / 32))
    with pytest.raises(ComputeError, match="multiple of kv_heads"):
        attention_bytes(1, 32, 1, 8192, 128, kv_heads=5)


@pytest.fixture
def datasheet_h100(h100_spec: DeviceSpec) -> DeviceSpec:
    """The H100 without an attention model: the datasheet rule (the bf16 GEMM share of the tensor peak)."""
    assert h100_spec.compute is not None
    return h100_spec.model_copy(update={"compute": h100_spec.compute.model_copy(update={"attention": None})})


def test_long_prefill_is_compute_bound(datasheet_h100: DeviceSpec) -> None:
    c = attention(datasheet_h100, 4, 32, 8192, 8192, 128, causal=True)
    assert c.bound == "compute"
    assert c.unit == "tensor"
    assert c.time_s == pytest.approx(c.flops / (989e12 * datasheet_h100.gemm_efficiency("bf16")))


def test_h100_carries_the_h200_attention_model(h100_spec: DeviceSpec) -> None:
    # the same SMs at the same clock: the block model measured on the H200 gives the same prefill time on the H100
    h200 = default_catalog().device("h200-sxm")
    assert h100_spec.compute is not None and h100_spec.compute.attention is not None
    assert h100_spec.compute.attention.source.startswith("derived: h200-sxm's figure carried")
    here = attention(h100_spec, 4, 32, 8192, 8192, 128, causal=True)
    there = attention(h200, 4, 32, 8192, 8192, 128, causal=True)
    assert here.time_s == pytest.approx(there.time_s)
    assert here.time_s > here.flops / (989e12 * 0.6025)  # its measured fwd-causal-128 share, plus block overheads


def test_decode_is_memory_bound(datasheet_h100: DeviceSpec) -> None:
    c = attention(datasheet_h100, 16, 32, 1, 8192, 128, kv_heads=8)
    assert c.bound == "memory"
    assert c.time_s == pytest.approx(c.hbm_bytes / (3.35e12 * datasheet_h100.hbm_efficiency.value))


def test_backward_takes_two_and_a_half_times_as_long(datasheet_h100: DeviceSpec) -> None:
    fwd = attention(datasheet_h100, 4, 32, 8192, 8192, 128)
    bwd = attention(datasheet_h100, 4, 32, 8192, 8192, 128, backward=True)
    assert bwd.time_s / fwd.time_s == pytest.approx(2.5)


def test_half_the_sms_double_the_time(datasheet_h100: DeviceSpec) -> None:
    full = attention(datasheet_h100, 4, 32, 8192, 8192, 128)
    assert attention(datasheet_h100, 4, 32, 8192, 8192, 128, sms=66).time_s == pytest.approx(2 * full.time_s)


def test_attention_dtype_checked(a100_spec: DeviceSpec) -> None:
    with pytest.raises(ComputeError, match="fp8"):
        attention(a100_spec, 1, 8, 1024, 1024, 128, "fp8")


@pytest.mark.parametrize("bad", [0, -1, 2.0, True])
def test_bad_dimensions(bad: object) -> None:
    with pytest.raises(ComputeError, match="seq_kv must be a positive whole number"):
        attention_flops(1, 1, 1, bad, 64)  # type: ignore[arg-type]
