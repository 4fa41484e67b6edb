"""Rates read from device specs, dtype sizes, and the errors for missing dtypes or bad SM counts."""

from __future__ import annotations

import pytest

from rooflib.compute import ComputeError, Rates, UnsupportedDTypeError, bytes_per_element
from rooflib.errors import RooflibError
from rooflib.specs import DeviceSpec


@pytest.mark.parametrize(
    ("dtype", "size"),
    [("fp64", 8), ("fp32", 4), ("tf32", 4), ("bf16", 2), ("fp16", 2), ("fp8", 1), ("fp4", 0.5)],
)
def test_bytes_per_element(dtype: str, size: float) -> None:
    assert bytes_per_element(dtype) == size


def test_unknown_dtype_lists_valid_ones() -> None:
    with pytest.raises(ComputeError, match=r"unknown dtype 'int8'.*bf16"):
        bytes_per_element("int8")


def test_h100_bf16_tensor_rate_is_peak_times_efficiency(h100_spec: DeviceSpec) -> None:
    r = Rates.from_device(h100_spec, "bf16", "tensor")
    assert r.flops_per_s == pytest.approx(989e12 * h100_spec.gemm_efficiency("bf16"))
    assert r.bytes_per_s == pytest.approx(3.35e12 * h100_spec.hbm_efficiency.value)
    assert r.sms == 132 and r.sm_fraction == 1.0
    assert r.flops_per_sm_per_s == pytest.approx(r.flops_per_s / 132)
    assert r.ridge_intensity == pytest.approx(r.flops_per_s / r.bytes_per_s)


def test_datasheet_rates_without_derating(h100_spec: DeviceSpec) -> None:
    r = Rates.from_device(h100_spec, "fp8", "tensor", derate=False)
    assert r.flops_per_s == pytest.approx(1979e12)
    assert r.bytes_per_s == pytest.approx(3.35e12)


def test_vector_rates(h100_spec: DeviceSpec) -> None:
    assert Rates.from_device(h100_spec, "fp32", "vector").flops_per_s == pytest.approx(67e12)
    assert Rates.from_device(h100_spec, "bf16", "vector").flops_per_s == pytest.approx(134e12)


def test_fewer_sms_scale_flops_not_hbm(h100_spec: DeviceSpec) -> None:
    full = Rates.from_device(h100_spec, "bf16", "tensor")
    half = Rates.from_device(h100_spec, "bf16", "tensor", sms=66)
    assert half.flops_per_s == pytest.approx(full.flops_per_s / 2)
    assert half.flops_per_sm_per_s == pytest.approx(full.flops_per_sm_per_s)
    assert half.bytes_per_s == full.bytes_per_s


@pytest.mark.parametrize("sms", [0, 133, -1, 1.5, True])
def test_bad_sm_count(h100_spec: DeviceSpec, sms: object) -> None:
    with pytest.raises(ComputeError, match=r"sms must be a whole number in \[1, 132\]"):
        Rates.from_device(h100_spec, "bf16", "tensor", sms=sms)  # type: ignore[arg-type]


def test_fp8_on_a100_names_device_and_dtype(a100_spec: DeviceSpec) -> None:
    with pytest.raises(UnsupportedDTypeError) as info:
        Rates.from_device(a100_spec, "fp8", "tensor")
    err = info.value
    assert isinstance(err, RooflibError)
    msg = str(err)
    assert "'fp8'" in msg and "'a100-sxm4-80gb'" in msg
    assert "bf16" in msg and "tf32" in msg  # lists the dtypes it has
    assert err.available == ("fp64", "tf32", "bf16", "fp16")


def test_fp4_on_hopper(h100_spec: DeviceSpec) -> None:
    with pytest.raises(UnsupportedDTypeError, match=r"no tensor-unit rate for dtype 'fp4'.*fp8"):
        Rates.from_device(h100_spec, "fp4", "tensor")


def test_fp32_has_no_tensor_rate(h100_spec: DeviceSpec) -> None:
    # tensor-core fp32 GEMMs are tf32; asking for fp32 on the tensor unit is an error, not a silent tf32
    with pytest.raises(UnsupportedDTypeError, match="fp32"):
        Rates.from_device(h100_spec, "fp32", "tensor")


def test_unknown_unit(h100_spec: DeviceSpec) -> None:
    with pytest.raises(ComputeError, match="unknown unit"):
        Rates.from_device(h100_spec, "bf16", "sfu")  # type: ignore[arg-type]
