"""ComputeCost: the roofline of compute and memory time, overheads and invariants."""

from __future__ import annotations

import math

import pytest

from rooflib.compute import ComputeCost, ComputeError, Rates, roofline_cost
from rooflib.specs import DeviceSpec


@pytest.fixture
def rates(h100_tile_spec: DeviceSpec) -> Rates:
    """bf16 tensor rates of the H100 at its ``tensor_efficiency`` (0.80: 791.2 TFLOP/s)."""
    return Rates.from_device(h100_tile_spec, "bf16", "tensor")


def test_compute_bound_cost(rates: Rates) -> None:
    c = roofline_cost(1e12, 1e9, rates)
    assert c.compute_s == pytest.approx(1e12 / 791.2e12)
    assert c.memory_s == pytest.approx(1e9 / 3.015e12)
    assert c.time_s == c.compute_s
    assert c.bound == "compute"
    assert c.arithmetic_intensity == 1000.0
    assert c.achieved_flops_per_s == pytest.approx(791.2e12)
    assert (c.unit, c.dtype, c.sms, c.overhead_s) == ("tensor", "bf16", 132, 0.0)


def test_memory_bound_cost(rates: Rates) -> None:
    c = roofline_cost(1e9, 1e9, rates)
    assert c.bound == "memory"
    assert c.time_s == pytest.approx(1e9 / (3.35e12 * 0.9))


def test_with_overhead_adds_a_kernel_launch(rates: Rates, h100_spec: DeviceSpec) -> None:
    c = roofline_cost(1e12, 1e9, rates).with_overhead(h100_spec.kernel_launch.value)
    assert c.overhead_s == pytest.approx(4e-6)
    assert c.time_s == pytest.approx(1e12 / 791.2e12 + 4e-6)
    assert c.with_overhead(1e-6).overhead_s == pytest.approx(5e-6)


def test_zero_bytes_gives_infinite_intensity(rates: Rates) -> None:
    assert math.isinf(roofline_cost(1.0, 0.0, rates).arithmetic_intensity)


@pytest.mark.parametrize("field", ["flops", "hbm_bytes", "compute_s", "memory_s", "overhead_s"])
@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf])
def test_rejects_negative_or_non_finite(field: str, bad: float) -> None:
    fields = dict(
        flops=1.0, hbm_bytes=1.0, compute_s=1.0, memory_s=1.0, time_s=1.0, unit="tensor", dtype="bf16",
        peak_flops_per_s=1.0, peak_bytes_per_s=1.0, sms=1, overhead_s=0.0,
    )  # fmt: skip
    fields[field] = bad
    with pytest.raises(ComputeError, match=field):
        ComputeCost(**fields)  # type: ignore[arg-type]


def test_time_must_be_the_roofline() -> None:
    with pytest.raises(ComputeError, match="time_s"):
        ComputeCost(
            flops=1.0, hbm_bytes=1.0, compute_s=2.0, memory_s=1.0, time_s=1.0, unit="tensor", dtype="bf16",
            peak_flops_per_s=1.0, peak_bytes_per_s=1.0, sms=1,
        )  # fmt: skip
