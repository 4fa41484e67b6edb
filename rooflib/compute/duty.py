"""How long the GPU has been busy: a GEMM's tensor rate from idle (``"burst"``) or at the power limit
(``"sustained"``).

A GPU that has run large GEMMs back to back for about 0.1 s reaches its power limit and lowers its clock; a
tensor-core GEMM then runs at its GEMM block's ``sustained_share`` of the rate it reaches from idle (measured on
an H100: 0.86, docs/validation/duty.md). The blocks are fitted on burst timings; :func:`duty_rates` charges the
share to a tensor rate, :func:`at_burst` gives a device that never charges it. A measurement's duty follows how
long its process had kept the GPU busy (:func:`duty_after`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from rooflib.compute.rates import ComputeError, Rates
from rooflib.specs.devices import DeviceSpec

__all__ = ["DUTIES", "WARM_S", "Duty", "at_burst", "duty_after", "duty_rates"]

Duty = Literal["burst", "sustained"]
DUTIES: tuple[Duty, ...] = ("burst", "sustained")

WARM_S = 0.1
"""Seconds of back-to-back work from idle before a GPU runs at its sustained rate. Measured: the 4 s ramps of large
GEMMs from idle (benchmarks/device/gemm_ramp.py) lose their rate over the first 0.1-0.2 s on the lent H100s and
the H200 (docs/validation/duty.md); the shorter end, so a timing called a burst is one."""


def duty_after(busy_s: float) -> Duty:
    """The duty of a timing that ran ``busy_s`` seconds after its process started the GPU from idle.

    >>> duty_after(0.04), duty_after(0.5)
    ('burst', 'sustained')
    """
    if not busy_s >= 0.0:
        raise ComputeError(f"busy time must be >= 0 s, got {busy_s!r}")
    return "burst" if busy_s < WARM_S else "sustained"


def duty_rates(device: DeviceSpec, rates: Rates, duty: str) -> Rates:
    """``rates`` under ``duty``: for ``"sustained"``, a derated tensor rate times the device's GEMM block's
    ``sustained_share`` (where it has one); otherwise ``rates`` unchanged.

    >>> from rooflib.specs import default_catalog
    >>> dev = default_catalog().device("h100-sxm5")
    >>> burst = Rates.from_device(dev, "bf16", "tensor")
    >>> round(duty_rates(dev, burst, "sustained").flops_per_s / burst.flops_per_s, 3)
    0.864
    """
    if duty not in DUTIES:
        raise ComputeError(f"duty must be one of {', '.join(DUTIES)}, got {duty!r}")
    model = device.compute.gemm if device.compute is not None else None
    share = model.sustained_share if model is not None else None
    if duty == "burst" or rates.unit != "tensor" or not rates.derated or share is None:
        return rates
    return replace(rates, flops_per_s=rates.flops_per_s * share.value)


def at_burst(device: DeviceSpec) -> DeviceSpec:
    """``device`` as it runs from idle: its GEMM block without ``sustained_share``, so everything that costs a
    GEMM the default way (programs, traces) gets the burst rate. For measurements short enough that the GPU
    never reaches its power limit (a few calls after an idle wait, under about 0.1 s of large GEMMs).

    >>> from rooflib.compute.gemm import gemm
    >>> from rooflib.specs import default_catalog
    >>> dev = default_catalog().device("h100-sxm5")
    >>> round(gemm(dev, 8192, 8192, 8192).time_s / gemm(at_burst(dev), 8192, 8192, 8192).time_s, 3)
    1.154
    """
    if device.compute is None or device.compute.gemm is None or device.compute.gemm.sustained_share is None:
        return device
    gemm = device.compute.gemm.model_copy(update={"sustained_share": None})
    return device.model_copy(update={"compute": device.compute.model_copy(update={"gemm": gemm})})
