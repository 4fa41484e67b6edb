"""Achievable rates of one device for one dtype: the ceilings every compute cost divides by.

All rates are SI: FLOP/s and bytes/s. Efficiencies are data from the device spec, never code constants:

- tensor cores: ``tensor_peak(dtype) x gemm_efficiency(dtype)`` (DeviceSpec; e.g. H100 bf16 989e12 x 0.8477);
- CUDA cores (vector): ``vector_peak(dtype)``; the spec carries no vector efficiency, and the kernels that run
  on vector units (elementwise, normalisation) are memory-bound, so the datasheet figure is used as is;
- HBM: ``hbm_bandwidth x hbm_efficiency`` (a streaming copy).

Using only ``sms`` of the device's SMs (inter-SM overlap schedules, where the other SMs communicate) scales
the FLOP rates by ``sms / device.sms``. HBM bandwidth is *not* scaled: it is a device-wide resource, and the
spec holds no per-SM memory rate to cap it with (assumption; a schedule that shares HBM between compute and
communication SMs accounts for the split itself).

>>> from rooflib.specs import default_catalog
>>> dev = default_catalog().device("h100-sxm5")
>>> r = Rates.from_device(dev, "bf16", "tensor")
>>> round(r.flops_per_s / 1e12, 1)  # 989 TFLOP/s x 0.8477
838.4
>>> round(Rates.from_device(dev, "bf16", "tensor", sms=66).flops_per_s / 1e12, 1)  # half the SMs
419.2
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from rooflib.errors import RooflibError
from rooflib.specs.devices import DTYPES, DeviceSpec, DType

__all__ = [
    "ComputeError",
    "Rates",
    "Unit",
    "UnsupportedDTypeError",
    "bytes_per_element",
    "check_dtype",
    "resolve_sms",
]

Unit = Literal["tensor", "vector"]
UNITS: tuple[Unit, ...] = get_args(Unit)

# Storage size of one element in bits (pint's habit: sizes in bits so that fp4 is half a byte).
# tf32 is stored in a 32-bit container; fp8 is e4m3/e5m2; fp4 is e2m1 without its block scales.
_BITS: dict[DType, int] = {"fp64": 64, "fp32": 32, "tf32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "fp4": 4}


class ComputeError(RooflibError, ValueError):
    """A compute-cost request that cannot be answered: bad shape, SM count, tile or dtype."""


class UnsupportedDTypeError(ComputeError):
    """The device has no rate for this dtype on this unit (e.g. fp8 on an A100, fp4 on Hopper)."""

    def __init__(self, device: str, dtype: str, unit: Unit, available: tuple[str, ...]) -> None:
        self.device = device
        self.dtype = dtype
        self.unit = unit
        self.available = available
        have = ", ".join(available) if available else "none"
        super().__init__(f"device {device!r} has no {unit}-unit rate for dtype {dtype!r}; {unit} dtypes it has: {have}")


def check_dtype(dtype: str) -> DType:
    """Return ``dtype`` as a :data:`~rooflib.specs.DType`, or raise a :class:`ComputeError` listing valid
    ones."""
    if dtype not in _BITS:
        raise ComputeError(f"unknown dtype {dtype!r}; valid dtypes: {', '.join(DTYPES)}")
    return dtype


def bytes_per_element(dtype: str) -> float:
    """Bytes of storage per element: fp64 8, fp32/tf32 4, bf16/fp16 2, fp8 1, fp4 0.5.

    >>> bytes_per_element("bf16"), bytes_per_element("fp4")
    (2.0, 0.5)
    """
    return _BITS[check_dtype(dtype)] / 8.0


def resolve_sms(device: DeviceSpec, sms: int | None) -> int:
    """SMs to use: all of the device's SMs when ``sms`` is None, else ``sms`` checked to be in range."""
    total = int(device.sms)
    if sms is None:
        return total
    if isinstance(sms, bool) or not isinstance(sms, int) or not 1 <= sms <= total:
        raise ComputeError(f"sms must be a whole number in [1, {total}] for device {device.name!r}, got {sms!r}")
    return sms


def _available(device: DeviceSpec, unit: Unit) -> tuple[str, ...]:
    peak = device.tensor_peak if unit == "tensor" else device.vector_peak
    return tuple(d for d in DTYPES if peak(d) is not None)


@dataclass(frozen=True)
class Rates:
    """Achievable ceilings of ``sms`` SMs of one device for one dtype on one unit.

    ``flops_per_s`` is the whole-device FLOP/s times the efficiency (tensor unit only) times ``sms /
    total_sms``; ``bytes_per_s`` is the HBM bandwidth times ``hbm_efficiency`` (not scaled by SMs). With
    ``derate=False`` both are the datasheet peaks (efficiency 1), for bounds that no kernel may beat.
    """

    device: str
    dtype: DType
    unit: Unit
    sms: int
    total_sms: int
    flops_per_s: float
    bytes_per_s: float
    derated: bool

    @classmethod
    def from_device(
        cls,
        device: DeviceSpec,
        dtype: str,
        unit: Unit,
        *,
        sms: int | None = None,
        derate: bool = True,
    ) -> Rates:
        """Read the rates from ``device``; raise :class:`UnsupportedDTypeError` when the dtype is missing."""
        dt = check_dtype(dtype)
        if unit not in UNITS:
            raise ComputeError(f"unknown unit {unit!r}; valid units: {', '.join(UNITS)}")
        used = resolve_sms(device, sms)
        total = int(device.sms)
        if unit == "tensor":
            peak = device.tensor_peak(dt)
            eff = device.gemm_efficiency(dtype) if derate else 1.0
        else:
            peak = device.vector_peak(dt)
            eff = 1.0
        if peak is None:
            raise UnsupportedDTypeError(device.name, dt, unit, _available(device, unit))
        hbm_eff = device.hbm_efficiency.value if derate else 1.0
        return cls(
            device=device.name,
            dtype=dt,
            unit=unit,
            sms=used,
            total_sms=total,
            flops_per_s=peak * eff * used / total,
            bytes_per_s=device.hbm_bandwidth.value * hbm_eff,
            derated=derate,
        )

    @property
    def sm_fraction(self) -> float:
        """Share of the device's SMs in use, in (0, 1]."""
        return self.sms / self.total_sms

    @property
    def flops_per_sm_per_s(self) -> float:
        """FLOP/s of one SM (the rate a single GEMM tile runs at)."""
        return self.flops_per_s / self.sms

    @property
    def ridge_intensity(self) -> float:
        """FLOP/byte where compute and memory time are equal: the roofline's ridge point."""
        return self.flops_per_s / self.bytes_per_s
