"""Elementwise and normalisation kernels: bytes, FLOPs, and memory-bound times."""

from __future__ import annotations

import pytest

from rooflib.compute import (
    ELEMENTWISE_OPS,
    NORMALIZATIONS,
    ComputeError,
    elementwise,
    elementwise_op,
    memory_rate,
    normalization,
)
from rooflib.specs import DeviceSpec


def test_add_is_memory_bound_at_hbm_rate(h100_spec: DeviceSpec) -> None:
    h100_spec = h100_spec.model_copy(update={"compute": None})  # the datasheet rule, without carried curves
    n = 2**28
    c = elementwise(h100_spec, n, "bf16", reads=2, writes=1, flops_per_element=1.0)
    assert c.hbm_bytes == 3 * n * 2
    assert c.flops == n
    assert c.bound == "memory"
    assert c.time_s == pytest.approx(3 * n * 2 / (3.35e12 * h100_spec.hbm_efficiency.value))
    assert c.compute_s == pytest.approx(n / 134e12)
    assert c.unit == "vector"


def test_named_ops_match_the_table(h100_spec: DeviceSpec) -> None:
    n = 10**6
    add = elementwise_op(h100_spec, "add", n)
    assert (add.hbm_bytes, add.flops) == (3 * n * 2, n)
    gelu = elementwise_op(h100_spec, "gelu", n, "fp32")
    assert (gelu.hbm_bytes, gelu.flops) == (2 * n * 4, 9 * n)
    copy = elementwise_op(h100_spec, "copy", n)
    assert (copy.flops, copy.compute_s) == (0.0, 0.0)
    assert set(ELEMENTWISE_OPS) == {"copy", "add", "mul", "gelu", "silu", "swiglu"}


def test_narrow_types_compute_at_the_fp32_rate(h100_spec: DeviceSpec) -> None:
    c = elementwise(h100_spec, 2**20, "fp8", flops_per_element=10.0)
    assert c.dtype == "fp8"
    assert c.hbm_bytes == 2 * 2**20
    assert c.peak_flops_per_s == pytest.approx(67e12)


def test_rmsnorm(h100_spec: DeviceSpec) -> None:
    h100_spec = h100_spec.model_copy(update={"compute": None})  # the datasheet rule, without carried curves
    rows, cols = 16384, 8192
    c = normalization(h100_spec, rows, cols, "bf16", "rmsnorm")
    assert c.hbm_bytes == 2 * rows * cols * 2 + cols * 2  # x read, y written, weight read once
    assert c.flops == 4 * rows * cols
    assert c.bound == "memory"
    assert c.time_s == pytest.approx(c.hbm_bytes / (3.35e12 * h100_spec.hbm_efficiency.value))


def test_layernorm_and_softmax_counts(h100_spec: DeviceSpec) -> None:
    rows, cols = 4096, 4096
    ln = normalization(h100_spec, rows, cols, "bf16", "layernorm")
    assert ln.hbm_bytes == 2 * rows * cols * 2 + 2 * cols * 2  # gamma and beta
    assert ln.flops == 7 * rows * cols
    sm = normalization(h100_spec, rows, cols, "fp32", "softmax")
    assert sm.hbm_bytes == 2 * rows * cols * 4
    assert sm.flops == 5 * rows * cols
    assert set(NORMALIZATIONS) == {"rmsnorm", "layernorm", "softmax"}


def test_normalisation_is_memory_bound_on_every_device(device_spec: DeviceSpec) -> None:
    for kind in NORMALIZATIONS:
        c = normalization(device_spec, 8192, 8192, "bf16", kind)
        assert c.bound == "memory", kind
        # at the measured rate of the kind where the device has curves (the H200), else the streaming-copy rate
        rate = float(memory_rate(device_spec, kind, c.hbm_bytes, cols=8192)[()])
        assert c.time_s == pytest.approx(c.hbm_bytes / rate)
        if device_spec.compute is None:
            assert rate == pytest.approx(device_spec.hbm_bandwidth.value * device_spec.hbm_efficiency.value)


def test_fewer_sms_leave_memory_time_alone(h100_spec: DeviceSpec) -> None:
    full = elementwise(h100_spec, 2**26, reads=2)
    few = elementwise(h100_spec, 2**26, reads=2, sms=33)
    assert few.compute_s == pytest.approx(4 * full.compute_s)
    assert few.memory_s == full.memory_s


def test_bad_arguments(h100_spec: DeviceSpec) -> None:
    with pytest.raises(ComputeError, match="elements must be a number >= 1"):
        elementwise(h100_spec, 0)
    with pytest.raises(ComputeError, match="reads must be a number >= 0"):
        elementwise(h100_spec, 10, reads=-1)
    with pytest.raises(ComputeError, match="flops_per_element"):
        elementwise(h100_spec, 10, flops_per_element=float("nan"))
    with pytest.raises(ComputeError, match="must be finite"):
        elementwise(h100_spec, float("inf"))  # type: ignore[arg-type]
    with pytest.raises(ComputeError, match="unknown normalization 'batchnorm'"):
        normalization(h100_spec, 10, 10, "bf16", "batchnorm")  # type: ignore[arg-type]
    with pytest.raises(ComputeError, match="unknown elementwise op 'tanh'"):
        elementwise_op(h100_spec, "tanh", 10)  # type: ignore[arg-type]
