"""The result of every compute model: FLOPs, HBM bytes and the time they take, in SI units.

A kernel's time is the roofline of its two resources (Williams, Waterman and Patterson, "Roofline", CACM
2009): ``time_s = max(compute_s, memory_s) + overhead_s`` with ``compute_s = flops / flop rate`` (or a
quantised version of it, see :mod:`rooflib.compute.gemm`) and ``memory_s = hbm_bytes / HBM rate``.
``overhead_s`` is a fixed cost the caller adds explicitly (a kernel launch, a synchronisation); the compute
models themselves return 0 so that a roofline bound built from them carries no overheads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

from rooflib.compute.rates import ComputeError, Rates, Unit
from rooflib.specs.devices import DType

__all__ = ["ComputeCost", "roofline_cost"]

Bound = Literal["compute", "memory"]


@dataclass(frozen=True)
class ComputeCost:
    """FLOPs, HBM bytes and time of one kernel on one device (SI units throughout).

    Attributes:
        flops: useful floating-point operations (an FMA counts 2), not the padded work a tile executes.
        hbm_bytes: bytes read from plus written to HBM.
        compute_s: seconds on the compute unit (quantised for GEMMs unless ``ideal``).
        memory_s: seconds to move ``hbm_bytes`` at ``peak_bytes_per_s``.
        overhead_s: explicit fixed cost added on top of the roofline (0 unless a caller adds one).
        time_s: ``max(compute_s, memory_s) + overhead_s``.
        unit: ``"tensor"`` or ``"vector"`` (CUDA cores), the unit the FLOPs run on.
        dtype: the operands' storage dtype.
        peak_flops_per_s: the FLOP/s ceiling used (datasheet peak x efficiency x SM share).
        peak_bytes_per_s: the HBM ceiling used (datasheet bandwidth x efficiency).
        sms: SMs the kernel runs on.
    """

    flops: float
    hbm_bytes: float
    compute_s: float
    memory_s: float
    time_s: float
    unit: Unit
    dtype: DType
    peak_flops_per_s: float
    peak_bytes_per_s: float
    sms: int
    overhead_s: float = 0.0

    def __post_init__(self) -> None:
        for name in ("flops", "hbm_bytes", "compute_s", "memory_s", "time_s", "overhead_s"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ComputeError(f"ComputeCost.{name} must be finite and >= 0, got {value!r}")
        expected = max(self.compute_s, self.memory_s) + self.overhead_s
        if not math.isclose(self.time_s, expected, rel_tol=1e-12, abs_tol=0.0):
            raise ComputeError(f"ComputeCost.time_s {self.time_s!r} != max(compute, memory) + overhead {expected!r}")

    @property
    def bound(self) -> Bound:
        """Which resource sets the time: ``"compute"`` or ``"memory"`` (ties count as compute)."""
        return "compute" if self.compute_s >= self.memory_s else "memory"

    @property
    def arithmetic_intensity(self) -> float:
        """FLOPs per HBM byte (inf when the kernel moves no bytes)."""
        return self.flops / self.hbm_bytes if self.hbm_bytes > 0 else math.inf

    @property
    def achieved_flops_per_s(self) -> float:
        """Useful FLOPs divided by ``time_s`` (0 for a zero-time kernel)."""
        return self.flops / self.time_s if self.time_s > 0 else 0.0

    def with_overhead(self, overhead_s: float) -> ComputeCost:
        """A copy with ``overhead_s`` seconds added to the fixed overhead (e.g.
        ``device.kernel_launch.value``)."""
        total = self.overhead_s + overhead_s
        return replace(self, overhead_s=total, time_s=max(self.compute_s, self.memory_s) + total)


def roofline_cost(
    flops: float,
    hbm_bytes: float,
    rates: Rates,
    *,
    compute_s: float | None = None,
    dtype: DType | None = None,
) -> ComputeCost:
    """Cost of ``flops`` and ``hbm_bytes`` at ``rates``: ``max(flops / flop rate, bytes / HBM rate)``.

    ``compute_s`` overrides ``flops / rates.flops_per_s`` when a model quantises the work (GEMM tiles and
    waves); ``dtype`` overrides ``rates.dtype`` as the reported storage dtype (arithmetic may run at another
    dtype's rate).

    >>> from rooflib.specs import default_catalog
    >>> r = Rates.from_device(default_catalog().device("h100-sxm5"), "bf16", "tensor")
    >>> c = roofline_cost(1e12, 1e9, r)
    >>> c.bound, round(c.time_s * 1e3, 3)  # 1 TFLOP at 838 TFLOP/s (989 x the bf16 efficiency 0.8477)
    ('compute', 1.193)
    """
    if compute_s is None:
        compute_s = flops / rates.flops_per_s
    memory_s = hbm_bytes / rates.bytes_per_s
    return ComputeCost(
        flops=float(flops),
        hbm_bytes=float(hbm_bytes),
        compute_s=float(compute_s),
        memory_s=float(memory_s),
        time_s=float(max(compute_s, memory_s)),
        unit=rates.unit,
        dtype=rates.dtype if dtype is None else dtype,
        peak_flops_per_s=rates.flops_per_s,
        peak_bytes_per_s=rates.bytes_per_s,
        sms=rates.sms,
    )
