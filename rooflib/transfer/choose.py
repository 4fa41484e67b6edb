"""Choosing a transfer mechanism under an SM budget.

Each SM-driven mechanism is given the fewest SMs that reach its best rate within the budget (more SMs past
saturation buy nothing and are taken from compute); the copy engine uses none. The fastest wins; ties go to
the mechanism using fewer SMs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from rooflib.errors import GroupError
from rooflib.specs.resolve import System
from rooflib.transfer.model import (
    CAPABILITIES,
    MECHANISMS,
    Mechanism,
    Reduction,
    available_mechanisms,
    check_mechanism,
    link_bandwidth,
    same_domain,
    saturating_sms,
    transfer_time,
)

__all__ = ["MechanismChoice", "TransferResult", "best_mechanism", "predict_transfer"]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class MechanismChoice:
    mechanism: Mechanism
    sms: int
    time_s: float
    bandwidth_bytes_per_s: float


@dataclass(frozen=True)
class TransferResult:
    nbytes: float
    sms: int  # the SM budget
    best: Mechanism
    options: tuple[MechanismChoice, ...]  # fastest first
    unavailable: dict[str, str]
    link_bytes_per_s: float

    def to_frame(self) -> Any:
        """One row per capable mechanism, fastest first (pandas DataFrame)."""
        import pandas as pd

        return pd.DataFrame.from_records(
            [
                {
                    "bytes": self.nbytes,
                    "mechanism": o.mechanism,
                    "sms": o.sms,
                    "time_s": o.time_s,
                    "bandwidth_bytes_per_s": o.bandwidth_bytes_per_s,
                    "best": o.mechanism == self.best,
                }
                for o in self.options
            ]
        )


def _sms_for(system: System, mech: Mechanism, budget: int, link: float) -> int:
    if not CAPABILITIES[mech].uses_sms:
        return 0
    return min(budget, saturating_sms(system, mech, link=link))


def predict_transfer(
    system: System,
    nbytes: float,
    *,
    sms: int | None = None,
    mechanism: str = "auto",
    reduction: Reduction = "none",
    src: int = 0,
    dst: int = 1,
    pull: bool = False,
) -> TransferResult:
    """Time of one ``nbytes`` message from GPU ``src`` to ``dst`` by every capable mechanism, best first.

    ``sms`` is the SM budget (default: all SMs); ``reduction`` asks for mechanisms that can add into the peer
    (``"peer"``) or reduce in the switch (``"switch"``), at their reduction rates; ``pull`` has the receiver read.
    """
    total = int(system.device.sms)
    budget = total if sms is None else int(sms)
    if not 0 <= budget <= total:
        raise GroupError(f"--sms must be in 0..{total} on {system.device.display_name}, got {sms}")
    if nbytes < 0:
        raise GroupError(f"bytes must be >= 0, got {nbytes}")
    system.group([src, dst])
    link = link_bandwidth(system, src, dst)
    local = same_domain(system, src, dst)
    capable = available_mechanisms(system, reduction, network=not local)
    wanted = capable if mechanism == "auto" else [check_mechanism(mechanism)]
    unavailable: dict[str, str] = {}
    for mech in MECHANISMS:
        if mech not in capable:
            unavailable[mech] = _why(system, mech, reduction, local, (src, dst))
    options = []
    for mech in wanted:
        if mech not in capable:
            continue
        used = _sms_for(system, mech, budget, link)
        if CAPABILITIES[mech].uses_sms and used == 0:
            unavailable[mech] = "no SMs in the budget"
            continue
        t = float(transfer_time(system, mech, nbytes, used, src=src, dst=dst, reduce=reduction != "none", pull=pull))
        options.append(MechanismChoice(mech, used, t, nbytes / t if t > 0 else 0.0))
    if not options:
        detail = "; ".join(f"{k}: {v}" for k, v in unavailable.items() if k in wanted or mechanism == "auto")
        raise GroupError(f"no mechanism can do this transfer on {system.name}: {detail}")
    options.sort(key=lambda o: (o.time_s, o.sms))
    return TransferResult(float(nbytes), budget, options[0].mechanism, tuple(options), unavailable, link)


def _why(system: System, mech: Mechanism, reduction: Reduction, local: bool, pair: tuple[int, int]) -> str:
    cap = CAPABILITIES[mech]
    if cap.network and system.spec.scale_out is None:
        return f"{system.name} has no scale-out network (one NVLink domain)"
    if cap.network and local:
        return f"GPUs {pair[0]} and {pair[1]} share an NVLink domain (RDMA is for GPUs in different domains)"
    if not cap.network and not local:
        return f"GPUs {pair[0]} and {pair[1]} are in different NVLink domains (no load/store or copy-engine path)"
    if cap.network:
        return f"{system.name} has no {mech} (its NIC spec gives no such mechanism)"
    if getattr(system.device.transfer, mech) is None:
        return f"{system.device.display_name} has no {mech}"
    if cap.needs_multicast and not system.switch.multicast:
        return f"{system.switch.display_name} has no multicast"
    if reduction == "peer" and not cap.peer_reduce:
        return "cannot reduce (copies only; the receiver would add)"
    if reduction == "switch":
        return "only multimem reduces in the switch" if not cap.switch_reduce else "switch has no in-network reduction"
    return "not applicable"


def best_mechanism(
    system: System, nbytes: npt.ArrayLike, sm_budget: npt.ArrayLike, reduction: Reduction = "none"
) -> tuple[npt.NDArray[np.str_], FloatArray]:
    """Vectorised choice over a grid: the best mechanism's name and time at each (bytes, SM budget) point."""
    size, budget = np.broadcast_arrays(np.asarray(nbytes, dtype=np.float64), np.asarray(sm_budget, dtype=np.int64))
    link = link_bandwidth(system)
    best_t = np.full(size.shape, np.inf)
    best_n = np.full(size.shape, "", dtype=object)
    for mech in available_mechanisms(system, reduction):
        used = np.minimum(budget, saturating_sms(system, mech, link=link)) if CAPABILITIES[mech].uses_sms else 0
        with np.errstate(divide="ignore"):
            t = transfer_time(system, mech, size, used, reduce=reduction != "none")
        if CAPABILITIES[mech].uses_sms:
            t = np.where(budget > 0, t, np.inf)
        better = t < best_t
        best_t = np.where(better, t, best_t)
        best_n = np.where(better, mech, best_n)
    return best_n.astype(str), best_t
