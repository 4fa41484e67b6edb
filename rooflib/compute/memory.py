"""Achieved HBM rate of memory-bound kernels, per op kind and size, from the device's measured curves.

A device with ``compute.memory_ops`` (``hardware/devices/h200-sxm.yaml``) carries, per op kind, the achieved share
of ``hbm_bandwidth`` against bytes moved (every input and output once), measured with inputs cycled through more
than 3x the L2 (``rooflib bench compute``). So a kernel moving ``B`` bytes takes

    ``time = B / (hbm_bandwidth x eff_op(B))``

with ``eff`` interpolated log-log between the measured sizes (:class:`SizeCurve`): small kernels are slow for
their bytes (launch, ramp-up and tail), large ones stream at the op's achieved rate (a copy at ~0.89 of the
datasheet, GELU at ~0.76, a softmax over 8192 columns at ~0.23 on the H200). Above the largest size measured the
efficiency holds; below the smallest the time holds for the ops measured down to launch-bound sizes
(:data:`HOLD_TIME`: no kernel is faster than the smallest one measured), the efficiency for the others. Row-wise
ops have one curve per row length measured; between two, ``log(eff)`` is interpolated linearly in ``log(cols)``
(clamped). With ``l2_resident=True`` and at most ``l2_size`` bytes moved, the time is scaled by the op's measured
L2 fraction (operands left in L2 by the kernel before).

Devices without curves of their own carry another device's (``compute.memory_ops_from``, :mod:`rooflib.specs.port`).
Devices without any, and op kinds without one, use ``hbm_efficiency`` (a streaming copy) as before; op kinds
that were not measured borrow a measured one with the same access pattern (:data:`BORROW`). ``derate=False``
callers (bounds) never come here: they use the datasheet rate.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from rooflib.compute.rates import ComputeError
from rooflib.specs.compute_models import KERNEL_OP_KINDS, MEMORY_OP_KINDS
from rooflib.specs.devices import DeviceSpec
from rooflib.specs.figures import SizeCurve, log_interp

__all__ = [
    "BORROW",
    "HOLD_TIME",
    "l2_ratio",
    "memory_efficiency",
    "memory_rate",
    "memory_time",
    "sm_stream_share",
    "stream_rate",
]

FloatArray = npt.NDArray[np.float64]

BORROW = {"swiglu": "mul", "layernorm": "rmsnorm", "rmsnorm": "layernorm", "mul": "add", "silu": "gelu"}
"""Curve to use for an op kind the device has none for (same reads and writes per element)."""


def _curves(device: DeviceSpec, op: str) -> dict[int | None, SizeCurve]:
    models = device.compute
    if models is None or models.memory_ops is None:
        return {}
    table = models.memory_ops
    return table.curves(op) or (table.curves(BORROW[op]) if op in BORROW else {})


HOLD_TIME = frozenset(
    {"copy", "add", "mul", "gelu", "silu", "swiglu", "rmsnorm", "layernorm", "softmax", "sum", "topk"}
    | set(KERNEL_OP_KINDS)
)
"""Op kinds measured down to small, launch-bound sizes: below the smallest size their time holds. The ``gemm`` and
``attention`` curves start at megabytes; their compute models carry the fixed costs of small kernels."""


def _at(curve: SizeCurve, nbytes: FloatArray, hold_time: bool) -> FloatArray:
    """The curve's efficiency at ``nbytes``; above its largest size the efficiency holds (streaming); below its
    smallest the time holds (``hold_time``: no kernel is faster than the smallest one measured), else the
    efficiency."""
    b0, e0 = curve.points[0]
    eff = log_interp(curve.points, nbytes)
    if not hold_time:
        return eff
    return np.asarray(np.where(nbytes < b0, e0 * nbytes / b0, eff), dtype=np.float64)


def _rowwise(curves: dict[int | None, SizeCurve], nbytes: FloatArray, cols: float | None, hold: bool) -> FloatArray:
    if None in curves:
        return _at(curves[None], nbytes, hold)
    by_cols = sorted((c, curve) for c, curve in curves.items() if c is not None)
    if cols is None or len(by_cols) == 1:
        pick = by_cols[0][1] if cols is None else min(by_cols, key=lambda cc: abs(np.log(cc[0] / cols)))[1]
        return _at(pick, nbytes, hold)
    xs = np.log([float(c) for c, _ in by_cols])
    logs = np.stack([np.log(_at(curve, nbytes, hold)) for _, curve in by_cols])  # [curve, size]
    x = float(np.clip(np.log(cols), xs[0], xs[-1]))
    hi = int(np.clip(np.searchsorted(xs, x), 1, len(xs) - 1))
    w = (x - xs[hi - 1]) / (xs[hi] - xs[hi - 1])
    return np.asarray(np.exp((1 - w) * logs[hi - 1] + w * logs[hi]), dtype=np.float64)


def memory_efficiency(
    device: DeviceSpec, op: str, nbytes: npt.ArrayLike, *, cols: float | None = None, l2_resident: bool = False
) -> FloatArray:
    """Achieved share of ``hbm_bandwidth`` for ``op`` moving ``nbytes`` (array), from the device's curves.

    Greater than 1 only with ``l2_resident`` (the operands come from L2, not HBM).

    >>> from rooflib.specs import default_catalog
    >>> dev = default_catalog().device("h100-sxm5")  # the H200's curves, carried (rooflib.specs.port)
    >>> round(float(memory_efficiency(dev, "add", 1 << 30)[()]), 3)
    0.909
    >>> bare = dev.model_copy(update={"compute": None})  # no curves: the streaming-copy efficiency
    >>> float(memory_efficiency(bare, "add", 1 << 30)[()])
    0.9
    """
    if op not in MEMORY_OP_KINDS:
        raise ComputeError(f"unknown memory op kind {op!r}; valid: {', '.join(MEMORY_OP_KINDS)}")
    b = np.maximum(np.asarray(nbytes, dtype=np.float64), 1.0)
    curves = _curves(device, op)
    if not curves:
        return np.full_like(b, device.hbm_efficiency.value)
    eff = _rowwise(curves, b, cols, op in HOLD_TIME)
    models = device.compute
    assert models is not None and models.memory_ops is not None
    l2 = models.memory_ops.l2_resident.get(op) or models.memory_ops.l2_resident.get(BORROW.get(op, ""))
    if l2_resident and l2 is not None:
        fits = b <= device.l2_size.value
        eff = np.where(fits, eff / l2(b), eff)
    return np.asarray(eff, dtype=np.float64)


def l2_ratio(device: DeviceSpec, op: str, nbytes: float) -> float | None:
    """The measured time of ``op`` moving ``nbytes`` with its operands in L2 over its time from HBM (the
    device's ``l2_resident`` curve for ``op``, or for the op it borrows from); 1 above ``l2_size``; None where
    the device has no such curve.

    >>> from rooflib.specs import default_catalog
    >>> h200 = default_catalog().device("h200-sxm")
    >>> 0.5 < l2_ratio(h200, "copy", 4 << 20) < 0.8, l2_ratio(h200, "copy", 1 << 30)
    (True, 1.0)
    """
    models = device.compute
    if models is None or models.memory_ops is None:
        return None
    table = models.memory_ops.l2_resident
    curve = table.get(op) or table.get(BORROW.get(op, ""))
    if curve is None:
        return None
    if nbytes > device.l2_size.value:
        return 1.0
    return min(1.0, float(curve(max(float(nbytes), 1.0))))


def memory_rate(
    device: DeviceSpec, op: str, nbytes: npt.ArrayLike, *, cols: float | None = None, l2_resident: bool = False
) -> FloatArray:
    """Achieved bytes per second of ``op`` moving ``nbytes``: ``hbm_bandwidth x memory_efficiency``."""
    eff = memory_efficiency(device, op, nbytes, cols=cols, l2_resident=l2_resident)
    return np.asarray(device.hbm_bandwidth.value * eff, dtype=np.float64)


def memory_time(
    device: DeviceSpec, op: str, nbytes: npt.ArrayLike, *, cols: float | None = None, l2_resident: bool = False
) -> FloatArray:
    """Seconds ``op`` takes to move ``nbytes`` (array): ``nbytes / memory_rate``; 0 bytes take 0 s.

    >>> from rooflib.specs import default_catalog
    >>> dev = default_catalog().device("h100-sxm5").model_copy(update={"compute": None})  # datasheet only
    >>> round(float(memory_time(dev, "copy", 3.35e12 * 0.9)[()]), 6)  # 3.35 TB/s x 0.90 for one second
    1.0
    """
    b = np.asarray(nbytes, dtype=np.float64)
    rate = memory_rate(device, op, b, cols=cols, l2_resident=l2_resident)
    return np.asarray(np.where(b > 0, b / rate, 0.0), dtype=np.float64)


def stream_rate(sms: npt.ArrayLike, per_sm: float, sharpness: float, full: float) -> FloatArray:
    """HBM bytes/s that ``sms`` SMs stream: the smooth minimum ``((k r)^-p + R^-p)^(-1/p)`` of their own rate
    (``per_sm`` each, ``r``) and the GPU's (``full``, ``R``), ``p`` the ``sharpness`` of the knee."""
    k = np.asarray(sms, dtype=np.float64)
    return np.asarray(((k * per_sm) ** -sharpness + full**-sharpness) ** (-1.0 / sharpness), dtype=np.float64)


def sm_stream_share(device: DeviceSpec, sms: int) -> float:
    """The share of its all-SM HBM rate a memory-bound kernel keeps on ``sms`` SMs (the rest communicating).

    With one SM's stream rate ``r`` (``hbm_per_sm``) and the GPU's ``R`` (``hbm_bandwidth x hbm_efficiency``),
    ``k`` SMs stream at :func:`stream_rate` (``p``: ``hbm_sm_sharpness``), taken relative to all SMs'. Without
    the figures: ``sms / SMs`` (the rate shrinks with the SMs).

    >>> from rooflib.specs import default_catalog
    >>> dev = default_catalog().device("h200-sxm")
    >>> round(sm_stream_share(dev, 132), 3), round(sm_stream_share(dev, 16), 2)
    (1.0, 0.51)
    """
    total = int(device.sms.value)
    k = min(max(int(sms), 1), total)
    r, p = device.hbm_per_sm, device.hbm_sm_sharpness
    if r is None or p is None:
        return k / total
    rates = stream_rate([k, total], r.value, p.value, device.hbm_bandwidth.value * device.hbm_efficiency.value)
    return float(rates[0] / rates[1])
