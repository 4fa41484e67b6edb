"""Communication-aware roofline (ParallelKittens, section 2; Williams et al., CACM 2009, for the classic form).

A kernel on one GPU does ``flops`` FLOPs, moves ``hbm_bytes`` through HBM and sends ``net_bytes[c]`` bytes per
GPU over each link class c (``nvlink``, ``ib``; one direction, the busier one). With peak rates P, B_hbm and
B_c per GPU:

    compute = flops / P,  memory = hbm_bytes / B_hbm,  comm_c = net_bytes[c] / B_c
    bound   = max(compute, memory, max_c comm_c)      (perfect overlap: no kernel beats it)
    serial  = compute + memory-only excess + sum_c comm_c   (no overlap: sequential compute then communication)

Operational intensity per HBM byte is ``flops / hbm_bytes``; per network byte ``flops / net_bytes[c]``. The ridge
points ``P / B_hbm`` and ``P / B_c`` are the intensities above which the kernel can be compute-bound.

>>> from rooflib.specs import load_system
>>> r = roofline(load_system("hgx-h100"), flops=1e12, hbm_bytes=1e9, net_bytes={"nvlink": 1e9})
>>> r.limiter
'nvlink'
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from numbers import Real
from typing import get_args

from rooflib.errors import GroupError, RooflibError, UnitError, UnknownNameError
from rooflib.specs.devices import DTYPES, DType
from rooflib.specs.resolve import System
from rooflib.specs.systems import LinkClass

__all__ = ["Roofline", "Roofs", "roofline", "roofs"]


@dataclass(frozen=True)
class Roofs:
    """Per-GPU ceilings of a system (FLOP/s and B/s, per direction for links)."""

    system: str
    dtype: DType
    achievable: bool
    compute: float
    hbm: float
    l2: float
    links: dict[str, float] = field(default_factory=dict)  # link class -> B/s per GPU, one direction

    def ridge(self, level: str) -> float:
        """FLOP per byte at which ``level`` (``hbm``, ``l2`` or a link class) meets the compute roof."""
        levels = {"hbm": self.hbm, "l2": self.l2, **self.links}
        if level not in levels:
            raise UnknownNameError("roof", level, levels)
        return self.compute / levels[level]


def roofs(system: System, dtype: DType = "bf16", *, achievable: bool = False) -> Roofs:
    """The ceilings of ``system`` for ``dtype``: datasheet peaks, or achievable rates with ``achievable=True``.

    Achievable uses the device's tensor and HBM efficiencies and the library's link efficiencies.
    """
    if dtype not in DTYPES:
        raise UnknownNameError("dtype", str(dtype), DTYPES)
    dev = system.device
    peak = dev.tensor_peak(dtype) or dev.vector_peak(dtype)
    if peak is None:
        have = [d for d in DTYPES if dev.tensor_peak(d) or dev.vector_peak(d)]
        raise RooflibError(f"{dev.display_name} has no {dtype} peak; it has {', '.join(have)}")
    hbm, l2 = dev.hbm_bandwidth.value, dev.l2_bandwidth.value
    links = {"nvlink": system.nvlink_bandwidth}
    so = system.spec.scale_out
    if so is not None and system.nic is not None:
        links["ib"] = system.nic.port_bandwidth.value * so.nics_per_node / system.gpus_per_node
    if achievable:
        uses_tensor = dev.tensor_peak(dtype) is not None
        peak *= dev.gemm_efficiency(dtype) if uses_tensor else 1.0
        hbm *= dev.hbm_efficiency.value
        eff = system.library.link_efficiency
        links = {c: bw * (eff[c].value if c in eff else 1.0) for c, bw in links.items()}
    return Roofs(system.name, dtype, achievable, peak, hbm, l2, links)


@dataclass(frozen=True)
class Roofline:
    """Where one kernel sits on the communication-aware roofline of a system."""

    roofs: Roofs
    flops: float
    hbm_bytes: float
    net_bytes: dict[str, float]
    compute_s: float
    memory_s: float
    comm_s: dict[str, float]

    @property
    def comm_max_s(self) -> float:
        return max(self.comm_s.values(), default=0.0)

    @property
    def bound_s(self) -> float:
        """Lower bound on time with perfect overlap of compute, memory and communication."""
        return max(self.compute_s, self.memory_s, self.comm_max_s)

    @property
    def sum_s(self) -> float:
        """No overlap at all: compute + memory + every communication term."""
        return self.compute_s + self.memory_s + sum(self.comm_s.values())

    @property
    def serial_s(self) -> float:
        """Time with no overlap between on-GPU work and communication: max(compute, memory) + sum(comm)."""
        return max(self.compute_s, self.memory_s) + sum(self.comm_s.values())

    @property
    def limiter(self) -> str:
        terms = {"compute": self.compute_s, "memory": self.memory_s, **self.comm_s}
        return max(terms, key=lambda k: terms[k])

    @property
    def intensity_hbm(self) -> float:
        """FLOP per HBM byte (inf with no HBM traffic)."""
        return self.flops / self.hbm_bytes if self.hbm_bytes else float("inf")

    @property
    def intensity_net(self) -> dict[str, float]:
        """FLOP per network byte, per link class."""
        return {c: (self.flops / b if b else float("inf")) for c, b in self.net_bytes.items()}

    @property
    def attainable_flops(self) -> float:
        """FLOP/s at the bound."""
        return self.flops / self.bound_s if self.bound_s > 0 else self.roofs.compute


def roofline(
    system: System,
    *,
    flops: float,
    hbm_bytes: float,
    net_bytes: Mapping[str, float] | None = None,
    dtype: DType = "bf16",
    achievable: bool = False,
) -> Roofline:
    """Place a kernel (per-GPU FLOPs, HBM bytes and network bytes by link class) on the roofline of ``system``.

    Every amount must be a finite number >= 0 (:class:`~rooflib.errors.UnitError` otherwise); a link class
    other than ``nvlink`` or ``ib`` is an :class:`~rooflib.errors.UnknownNameError`, and one the system lacks
    (``ib`` on a single NVLink domain) a :class:`~rooflib.errors.GroupError`.
    """
    r = roofs(system, dtype, achievable=achievable)
    net = dict(net_bytes or {})
    amounts: dict[str, object] = {"flops": flops, "hbm_bytes": hbm_bytes}
    amounts |= {f"net_bytes[{c!r}]": b for c, b in net.items()}
    for name, value in amounts.items():
        _check_amount(name, value)
    unknown = sorted(str(c) for c in net if c not in ROOF_LINKS)
    if unknown:
        raise UnknownNameError("link class", unknown[0], ROOF_LINKS)
    missing = sorted(set(net) - set(r.links))
    if missing:
        raise GroupError(
            f"{system.name} ({system.gpus} GPUs) has no {', '.join(missing)} links per GPU; "
            f"link classes: {', '.join(r.links)}"
        )
    comm = {c: b / r.links[c] for c, b in net.items()}
    return Roofline(r, flops, hbm_bytes, net, flops / r.compute, hbm_bytes / r.hbm, comm)


ROOF_LINKS: tuple[LinkClass, ...] = tuple(c for c in get_args(LinkClass) if c != "pcie")
"""Link classes a kernel's network bytes may name: the scale-up (``nvlink``) and scale-out (``ib``) links."""


def _check_amount(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise UnitError(f"roofline {name} must be a number, got {value!r}")
    if not math.isfinite(value) or value < 0:
        raise UnitError(f"roofline {name} must be >= 0 and finite, got {value!r}")
