"""Property tests: times grow with the problem, never NaN, and the ideal bound never exceeds the model."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rooflib.compute import attention, elementwise, gemm, gemm_quantization, gemm_times, gemm_unit
from rooflib.specs import DeviceSpec

from .conftest import CATALOG, DEVICE_NAMES

DEVICES = [CATALOG.device(name) for name in DEVICE_NAMES]

devices = st.sampled_from(DEVICES)
dims = st.integers(min_value=1, max_value=70_000)
steps = st.integers(min_value=0, max_value=5_000)
dtypes = st.sampled_from(["bf16", "fp16", "tf32", "fp32"])
fraction = st.floats(min_value=0.0, max_value=1.0)


def _sms(device: DeviceSpec, share: float) -> int:
    return max(1, round(share * int(device.sms)))


@settings(max_examples=300, deadline=None)
@given(devices, dims, dims, dims, steps, st.sampled_from(["m", "n", "k"]), dtypes, fraction, st.booleans())
def test_gemm_time_non_decreasing(
    device: DeviceSpec, m: int, n: int, k: int, step: int, axis: str, dtype: str, share: float, ideal: bool
) -> None:
    sms = _sms(device, share)
    small = gemm(device, m, n, k, dtype, sms=sms, ideal=ideal)
    grown = {"m": (m + step, n, k), "n": (m, n + step, k), "k": (m, n, k + step)}[axis]
    big = gemm(device, *grown, dtype, sms=sms, ideal=ideal)
    assert big.time_s >= small.time_s * (1 - 1e-12)
    assert big.flops >= small.flops and big.hbm_bytes >= small.hbm_bytes


@settings(max_examples=300, deadline=None)
@given(devices, dims, dims, dims, st.integers(1, 16), dtypes, fraction)
def test_gemm_finite_and_ideal_is_a_bound(
    device: DeviceSpec, m: int, n: int, k: int, batch: int, dtype: str, share: float
) -> None:
    sms = _sms(device, share)
    real = gemm(device, m, n, k, dtype, sms=sms, batch=batch)
    ideal = gemm(device, m, n, k, dtype, sms=sms, batch=batch, ideal=True)
    datasheet = gemm(device, m, n, k, dtype, sms=sms, batch=batch, ideal=True, derate=False)
    for c in (real, ideal, datasheet):
        assert all(math.isfinite(v) and v > 0 for v in (c.flops, c.hbm_bytes, c.compute_s, c.memory_s, c.time_s))
    assert datasheet.time_s <= ideal.time_s <= real.time_s
    q = gemm_quantization(device, m, n, k, sms=sms, batch=batch, dtype=dtype)
    assert 0 < q.efficiency <= 1
    assert 0 < q.tile_efficiency <= 1 and 0 < q.wave_efficiency <= 1 and 0 < q.split_efficiency <= 1 + 1e-12
    tensor = gemm_unit(dtype) == "tensor"
    model = None if device.compute is None else (device.compute.gemm if tensor else device.compute.sgemm)
    if model is None:  # the plain tile model (no measured one for this unit)
        assert real.memory_s == ideal.memory_s
        # quantised time x quantisation efficiency = ideal time
        assert math.isclose(real.compute_s * q.efficiency, ideal.compute_s, rel_tol=1e-9)
    else:  # the measured model: the chosen tile costs more than the ideal, its memory side no less
        assert real.memory_s >= ideal.memory_s * (1 - 1e-12)
        assert real.compute_s >= ideal.compute_s * (1 - 1e-12)


@settings(max_examples=50, deadline=None)
@given(devices, st.lists(dims, min_size=1, max_size=20), dims, dims, st.booleans())
def test_gemm_times_agree_with_gemm(device: DeviceSpec, ms: list[int], n: int, k: int, ideal: bool) -> None:
    times = gemm_times(device, np.array(ms), n, k, ideal=ideal)
    assert np.all(np.isfinite(times))
    np.testing.assert_allclose(times, [gemm(device, m, n, k, ideal=ideal).time_s for m in ms], rtol=1e-12)


@settings(max_examples=200, deadline=None)
@given(
    devices,
    st.integers(1, 64),
    st.integers(1, 128),
    st.integers(1, 131_072),
    st.integers(1, 131_072),
    st.integers(0, 10_000),
    st.sampled_from([64, 128, 256]),
    st.booleans(),
    st.booleans(),
)
def test_attention_time_grows_with_context(
    device: DeviceSpec, b: int, h: int, sq: int, skv: int, step: int, d: int, causal: bool, backward: bool
) -> None:
    small = attention(device, b, h, sq, skv, d, causal=causal, backward=backward)
    big = attention(device, b, h, sq, skv + step, d, causal=causal, backward=backward)
    assert math.isfinite(big.time_s) and big.time_s >= small.time_s * (1 - 1e-12) and small.time_s > 0


@settings(max_examples=200, deadline=None)
@given(devices, st.integers(1, 2**40), st.integers(0, 2**30), st.integers(0, 4), st.integers(0, 4))
def test_elementwise_time_grows_with_elements(device: DeviceSpec, n: int, step: int, reads: int, writes: int) -> None:
    small = elementwise(device, n, reads=reads, writes=writes)
    big = elementwise(device, n + step, reads=reads, writes=writes)
    assert math.isfinite(big.time_s) and big.time_s >= small.time_s * (1 - 1e-12) and small.time_s >= 0
