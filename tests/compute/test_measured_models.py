"""The measured compute tables of the H200 (``compute:`` in its device file) as the models use them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rooflib.compute import (
    attention,
    attention_blocks,
    attention_flops,
    elementwise_op,
    gemm,
    gemm_quantization,
    memory_efficiency,
    memory_time,
    normalization,
    reduction,
)
from rooflib.specs import DeviceSpec

from .conftest import CATALOG

H200 = CATALOG.device("h200-sxm")
OLD = H200.model_copy(update={"compute": None, "dtype_efficiency": {}})  # the catalog's model before the tables
SIZES = np.geomspace(1e3, 3e10, 400)


@pytest.mark.parametrize("op", ["copy", "add", "mul", "gelu", "silu", "swiglu", "gemm", "attention"])
def test_memory_time_grows_with_bytes(op: str) -> None:
    t = memory_time(H200, op, SIZES)
    assert np.all(np.diff(t) >= -1e-15) and np.all(t > 0)
    eff = memory_efficiency(H200, op, SIZES)
    assert np.all((eff > 0) & (eff <= 1))


@pytest.mark.parametrize("op", ["rmsnorm", "layernorm", "softmax", "sum"])
@pytest.mark.parametrize("cols", [512, 1024, 3000, 8192, 20000, 65536])
def test_rowwise_time_grows_with_bytes_at_any_row_length(op: str, cols: int) -> None:
    t = memory_time(H200, op, SIZES, cols=cols)
    assert np.all(np.diff(t) >= -1e-15)


def test_row_length_matters_and_interpolates() -> None:
    b = 2.0**30
    at = {c: float(memory_efficiency(H200, "softmax", b, cols=c)[()]) for c in (1024, 4096, 8192, 32768)}
    assert at[1024] > 2 * at[8192]  # the warp kernel for short rows is much faster than the 8192-column one
    mid = float(memory_efficiency(H200, "softmax", b, cols=6000)[()])
    assert min(at[4096], at[8192]) <= mid <= max(at[4096], at[8192])
    assert float(memory_efficiency(H200, "softmax", b, cols=10**6)[()]) == pytest.approx(at[32768])  # clamped


def test_l2_resident_is_faster_only_when_it_fits() -> None:
    small, big = 8 * 2**20, 2 * H200.l2_size.value
    for op in ("add", "rmsnorm"):
        assert memory_time(H200, op, small, l2_resident=True) < memory_time(H200, op, small)
        assert memory_time(H200, op, big, l2_resident=True) == memory_time(H200, op, big)


def test_borrowed_and_absent_curves() -> None:
    assert memory_efficiency(H200, "swiglu", 1e8) == memory_efficiency(H200, "mul", 1e8)
    assert float(memory_efficiency(OLD, "softmax", 1e9, cols=8192)[()]) == OLD.hbm_efficiency.value  # no tables


def test_ops_use_their_curves() -> None:
    n = 2**28
    add = elementwise_op(H200, "add", n)
    assert add.time_s == pytest.approx(
        add.hbm_bytes / float(memory_efficiency(H200, "add", add.hbm_bytes)[()]) / 4.8e12
    )
    soft = normalization(H200, 2**16, 8192, "bf16", "softmax")
    assert soft.time_s > 3 * normalization(OLD, 2**16, 8192, "bf16", "softmax").time_s  # ~0.23 of HBM, not 0.9
    r = reduction(H200, 2**16, 8192)
    assert r.hbm_bytes == 2**16 * 8193 * 2 and r.bound == "memory"
    tiny = elementwise_op(H200, "copy", 1024)
    assert tiny.time_s > 1e-6  # a kernel takes microseconds, not 0.5 ns
    assert elementwise_op(H200, "add", n, derate=False).time_s < add.time_s  # bounds stay at the datasheet


def test_gemm_m_128j_plus_1_does_not_double() -> None:
    for nk in (4096, 8192):
        for j in (1, 2, 8, 64):
            m = 128 * j
            ratio = gemm(H200, m + 1, nk, nk).time_s / gemm(H200, m, nk, nk).time_s
            assert 1.0 <= ratio < 1.5, (m, nk, ratio)
    # the single 128 x 256 tile doubles m = 129 (what was measured 135 % off)
    assert gemm(OLD, 129, 4096, 4096).compute_s / gemm(OLD, 128, 4096, 4096).compute_s == pytest.approx(2.0)


def test_gemm_choices() -> None:
    assert gemm_quantization(H200, 1, 8192, 8192).tile[0] == 8  # decode: the thinnest tile
    q = gemm_quantization(H200, 128, 128, 16384)
    assert q.split_k > 1 and q.tiles < int(H200.sms)  # small output, long K: split
    assert gemm_quantization(H200, 8192, 8192, 8192).split_k == 1
    decode = gemm(H200, 1, 16384, 16384)
    assert decode.bound == "memory"
    big = gemm(H200, 16384, 16384, 16384, "fp8")
    assert big.bound == "compute" and 0.5 < big.achieved_flops_per_s / 1979e12 < 0.8
    assert gemm(H200, 8192, 8192, 8192, tile=(128, 256, 64), duty="burst").time_s == pytest.approx(
        gemm(OLD, 8192, 8192, 8192, tile=(128, 256, 64)).time_s
        * OLD.gemm_efficiency("bf16")
        / H200.gemm_efficiency("bf16")
    )  # a given tile keeps the single-tile model


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 20000),
    st.integers(1, 20000),
    st.integers(1, 20000),
    st.sampled_from(["bf16", "fp8"]),
    st.sampled_from([None, 33, 132]),
)
def test_gemm_never_beats_its_ideal(m: int, n: int, k: int, dtype: str, sms: int | None) -> None:
    real = gemm(H200, m, n, k, dtype, sms=sms)
    ideal = gemm(H200, m, n, k, dtype, sms=sms, ideal=True)
    datasheet = gemm(H200, m, n, k, dtype, sms=sms, ideal=True, derate=False)
    assert datasheet.time_s <= ideal.time_s <= real.time_s


def test_attention_blocks_and_models() -> None:
    nq, kv = attention_blocks(16384, 16384, 128, 128, True)
    assert nq == 128 and kv == pytest.approx(64.5)  # the diagonal blocks run whole
    for sq, skv in ((512, 512), (300, 4096), (4096, 4096)):
        full = attention_blocks(sq, skv, 128, 128, False)[1]
        assert attention_blocks(sq, skv, 128, 128, True)[1] >= full / 2
    fwd = attention(H200, 1, 16, 16384, 16384, 128, causal=True)
    assert fwd.bound == "compute" and fwd.time_s >= attention_flops(1, 16, 16384, 16384, 128, causal=True) / 989e12
    bwd = attention(H200, 1, 16, 16384, 16384, 128, causal=True, backward=True)
    assert 1.5 * fwd.time_s < bwd.time_s < 4 * fwd.time_s
    decode = attention(H200, 16, 32, 1, 65536, 128, kv_heads=8)
    assert decode.bound == "memory"
    assert attention(H200, 4, 16, 4096, 4096, 96).time_s == pytest.approx(attention(H200, 4, 16, 4096, 4096, 96).time_s)


def test_other_devices_are_unchanged(device_spec: DeviceSpec) -> None:
    if device_spec.compute is not None:
        return
    q = gemm_quantization(device_spec, 8192, 8192, 8192)
    assert q.tile == (device_spec.gemm_tile.m, device_spec.gemm_tile.n, device_spec.gemm_tile.k)
