"""Elementwise and normalisation kernels on CUDA cores (vector units), in SI units.

Bytes are the reads plus writes of the tensors, each once (a fused kernel; per-row statistics kept in
registers are not counted). FLOPs are a small count per element, listed below; they are arithmetic-intensity
bookkeeping, not an instruction count (exp, tanh and rsqrt count 1 each though they run on the
special-function units).

=============  =====  ======  ===============================================================================
op             reads  writes  FLOPs / element
=============  =====  ======  ===============================================================================
copy           1      1       0
add, mul       2      1       1
gelu           1      1       9 (``0.5 x (1 + tanh(c (x + 0.044715 x^3)))``; Hendrycks & Gimpel 2016)
silu           1      1       4 (``x / (1 + exp(-x))``: negate, exp, add, divide)
swiglu         2      1       5 (silu of the gate, times the up projection)
rmsnorm        1      1       4 (square, sum, scale by rsqrt, times weight; Zhang & Sennrich 2019),
                              plus the weight read once
layernorm      1      1       7 (sum, subtract mean, square, sum, scale, times gamma, plus beta;
                              Ba et al. 2016), plus gamma and beta read once
softmax        1      1       5 (max, subtract, exp, sum, scale by the reciprocal)
sum            1      1/cols  1 (an add per element; :func:`reduction`: each row of ``cols`` summed)
=============  =====  ======  ===============================================================================

Arithmetic runs at the device's vector rate for the storage dtype when it has one (packed bf16/fp16 FMA), else
at the fp32 vector rate (kernels upcast fp8, fp4 and tf32 to fp32 to compute). Memory runs at HBM bandwidth x
the op kind's measured efficiency at that size where the device has curves (:mod:`rooflib.compute.memory`: a
generic :func:`elementwise` uses the ``add`` curve when it reads two tensors or more, else ``copy``), else x
``hbm_efficiency``; so these kernels are memory-bound on every device in the catalog. ``l2_resident=True``: the
operands are already in L2 (written by the kernel before and small enough), faster where the device measured it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from numbers import Real
from types import MappingProxyType
from typing import Literal

from rooflib.compute.cost import ComputeCost, roofline_cost
from rooflib.compute.memory import memory_rate
from rooflib.compute.rates import ComputeError, Rates, bytes_per_element, check_dtype
from rooflib.compute.tiling import INT64_MAX
from rooflib.specs.devices import DeviceSpec, DType

__all__ = [
    "ELEMENTWISE_OPS",
    "NORMALIZATIONS",
    "ElementwiseOp",
    "Normalization",
    "OpCounts",
    "elementwise",
    "elementwise_op",
    "normalization",
    "reduction",
]

ElementwiseOp = Literal["copy", "add", "mul", "gelu", "silu", "swiglu"]
Normalization = Literal["rmsnorm", "layernorm", "softmax"]


@dataclass(frozen=True)
class OpCounts:
    """Per-element reads and writes (tensors of the full size) and FLOPs of one op; ``params`` are per-column
    vectors (weights) read once per call."""

    reads: int
    writes: int
    flops_per_element: float
    params: int = 0


ELEMENTWISE_OPS: MappingProxyType[ElementwiseOp, OpCounts] = MappingProxyType(
    {
        "copy": OpCounts(reads=1, writes=1, flops_per_element=0.0),
        "add": OpCounts(reads=2, writes=1, flops_per_element=1.0),
        "mul": OpCounts(reads=2, writes=1, flops_per_element=1.0),
        "gelu": OpCounts(reads=1, writes=1, flops_per_element=9.0),
        "silu": OpCounts(reads=1, writes=1, flops_per_element=4.0),
        "swiglu": OpCounts(reads=2, writes=1, flops_per_element=5.0),
    }
)
"""Counts of the named elementwise ops (table in the module docstring)."""

NORMALIZATIONS: MappingProxyType[Normalization, OpCounts] = MappingProxyType(
    {
        "rmsnorm": OpCounts(reads=1, writes=1, flops_per_element=4.0, params=1),
        "layernorm": OpCounts(reads=1, writes=1, flops_per_element=7.0, params=2),
        "softmax": OpCounts(reads=1, writes=1, flops_per_element=5.0, params=0),
    }
)
"""Counts of the row-wise normalisations (table in the module docstring)."""


def _vector_rates(device: DeviceSpec, dtype: str, sms: int | None, derate: bool) -> tuple[DType, Rates]:
    dt = check_dtype(dtype)
    compute: DType = dt if device.vector_peak(dt) is not None else "fp32"
    return dt, Rates.from_device(device, compute, "vector", sms=sms, derate=derate)


def _at_size(
    device: DeviceSpec, rates: Rates, kind: str, nbytes: float, cols: float | None, l2_resident: bool
) -> Rates:
    """``rates`` with the HBM rate of ``kind`` moving ``nbytes`` (the measured curve; unchanged when not derated)."""
    if not rates.derated:
        return rates
    rate = float(memory_rate(device, kind, nbytes, cols=cols, l2_resident=l2_resident)[()])
    return replace(rates, bytes_per_s=rate)


def _count(name: str, value: float, *, positive: bool, whole: bool = True) -> float:
    """``value`` as a float after checking it: a real number, finite, >= 1 (``positive``) or >= 0, a whole
    number unless ``whole=False`` (FLOPs per element may be fractional), and at most 2**63 - 1."""
    bound = ">= 1" if positive else ">= 0"
    if isinstance(value, bool) or not isinstance(value, Real) or not value >= (1 if positive else 0):
        raise ComputeError(f"{name} must be a number {bound}, got {value!r}")
    if value > INT64_MAX:  # also inf, and ints too large for a float
        raise ComputeError(f"{name} must be finite and at most {INT64_MAX} (2**63 - 1), got {value!r}")
    if whole and value != int(value):
        raise ComputeError(f"{name} must be a whole number, got {value!r}")
    return float(value)


def elementwise(
    device: DeviceSpec,
    elements: int,
    dtype: str = "bf16",
    *,
    reads: int = 1,
    writes: int = 1,
    flops_per_element: float = 1.0,
    sms: int | None = None,
    derate: bool = True,
    l2_resident: bool = False,
    kind: str | None = None,
) -> ComputeCost:
    """Cost of an elementwise kernel over ``elements`` elements of ``dtype`` (SI units).

    ``reads`` and ``writes`` count full-size tensors; bytes = ``(reads + writes) x elements x size(dtype)``.
    ``kind``: the measured op kind whose HBM curve applies (default ``add`` for two or more reads, else ``copy``).

    >>> from rooflib.specs import default_catalog
    >>> dev = default_catalog().device("h100-sxm5")
    >>> c = elementwise(dev, 2**30, "bf16", reads=2, writes=1)  # add two 2 GiB tensors
    >>> c.bound, round(c.time_s * 1e3, 3)  # 6 GiB at 3.35 TB/s x 0.91 (the H200's add curve, carried)
    ('memory', 2.102)
    """
    n = _count("elements", elements, positive=True)
    r = _count("reads", reads, positive=False)
    w = _count("writes", writes, positive=False)
    f = _count("flops_per_element", flops_per_element, positive=False, whole=False)
    dt, rates = _vector_rates(device, dtype, sms, derate)
    nbytes = (r + w) * n * bytes_per_element(dt)
    curve = kind or ("add" if r >= 2 else "copy")
    return roofline_cost(f * n, nbytes, _at_size(device, rates, curve, nbytes, None, l2_resident), dtype=dt)


def elementwise_op(
    device: DeviceSpec,
    op: ElementwiseOp,
    elements: int,
    dtype: str = "bf16",
    *,
    sms: int | None = None,
    derate: bool = True,
    l2_resident: bool = False,
) -> ComputeCost:
    """Cost of a named elementwise op (``copy``, ``add``, ``mul``, ``gelu``, ``silu``, ``swiglu``), at the op's
    measured HBM rate for its size where the device has one.

    >>> from rooflib.specs import default_catalog
    >>> dev = default_catalog().device("h100-sxm5")
    >>> elementwise_op(dev, "gelu", 2**20).flops
    9437184.0
    """
    if op not in ELEMENTWISE_OPS:
        raise ComputeError(f"unknown elementwise op {op!r}; valid ops: {', '.join(ELEMENTWISE_OPS)}")
    c = ELEMENTWISE_OPS[op]
    return elementwise(
        device,
        elements,
        dtype,
        reads=c.reads,
        writes=c.writes,
        flops_per_element=c.flops_per_element,
        sms=sms,
        derate=derate,
        l2_resident=l2_resident,
        kind=op,
    )


def normalization(
    device: DeviceSpec,
    rows: int,
    cols: int,
    dtype: str = "bf16",
    kind: Normalization = "rmsnorm",
    *,
    sms: int | None = None,
    derate: bool = True,
    l2_resident: bool = False,
) -> ComputeCost:
    """Cost of a row-wise ``rmsnorm``, ``layernorm`` or ``softmax`` over a ``rows x cols`` tensor (forward).

    Bytes = ``(reads + writes) x rows x cols x size + params x cols x size`` (weights in ``dtype``), at the kind's
    measured HBM rate for that size and row length where the device has curves.

    >>> from rooflib.specs import default_catalog
    >>> dev = default_catalog().device("h100-sxm5")
    >>> c = normalization(dev, 16384, 8192, "bf16", "rmsnorm")
    >>> c.bound, c.flops / (16384 * 8192), round(c.time_s * 1e6, 1)
    ('memory', 4.0, 253.5)
    """
    if kind not in NORMALIZATIONS:
        raise ComputeError(f"unknown normalization {kind!r}; valid kinds: {', '.join(NORMALIZATIONS)}")
    c = NORMALIZATIONS[kind]
    nr = _count("rows", rows, positive=True)
    nc = _count("cols", cols, positive=True)
    dt, rates = _vector_rates(device, dtype, sms, derate)
    size = bytes_per_element(dt)
    nbytes = (c.reads + c.writes) * nr * nc * size + c.params * nc * size
    at = _at_size(device, rates, kind, nbytes, nc, l2_resident)
    return roofline_cost(c.flops_per_element * nr * nc, nbytes, at, dtype=dt)


def reduction(
    device: DeviceSpec,
    rows: int,
    cols: int,
    dtype: str = "bf16",
    *,
    sms: int | None = None,
    derate: bool = True,
    l2_resident: bool = False,
) -> ComputeCost:
    """Cost of summing each of ``rows`` rows of ``cols`` elements (``x.sum(-1)``): bytes = ``rows x (cols + 1) x
    size``, one add per element, at the measured ``sum`` rate where the device has one.

    >>> from rooflib.specs import default_catalog
    >>> dev = default_catalog().device("h100-sxm5")
    >>> c = reduction(dev, 65536, 8192)
    >>> c.bound, round(c.hbm_bytes / 2**20, 1)
    ('memory', 1024.1)
    """
    nr = _count("rows", rows, positive=True)
    nc = _count("cols", cols, positive=True)
    dt, rates = _vector_rates(device, dtype, sms, derate)
    nbytes = nr * (nc + 1) * bytes_per_element(dt)
    return roofline_cost(nr * nc, nbytes, _at_size(device, rates, "sum", nbytes, nc, l2_resident), dtype=dt)
