"""One message between two GPUs by each transfer mechanism (ParallelKittens, section 3 and Table 1).

For mechanism m moving ``nbytes`` from ``src`` to ``dst`` with ``sms`` SMs:

    rate = min(peak_fraction_m * link, sms * per_sm_bandwidth_m) * size_efficiency_m(nbytes)
    time = fixed_cost_m + nbytes / rate

``link`` is the raw bottleneck bandwidth of the path (per direction) from the topology. The copy engine uses
no SMs (``sms`` is ignored for it). Capabilities are facts of the hardware, not data: the copy engine cannot
reduce; TMA (``cp.reduce.async.bulk`` add) and ld/st (``red``) can reduce into peer memory; only multimem
instructions reduce inside the NVSwitch, and only on switches with multicast.

Which mechanisms exist depends on the path. Inside an NVLink domain: copy engine, TMA, ld/st and multimem (the
GPUs share one address space over NVLink). Between domains only the network: GPUDirect RDMA through the NIC,
posted by a CPU proxy thread (``rdma_proxy``, NCCL's network transport) or by the GPU itself (``rdma_gpu``,
InfiniBand GPUDirect Async as in NVSHMEM and DeepEP); both are figures of the NIC (``InfiniBandSpec.rdma``),
and RDMA writes only copy (the receiver adds partial sums itself).

>>> from rooflib.specs import load_system
>>> h100 = load_system("hgx-h100")
>>> float(transfer_time(h100, "copy_engine", 1e9)) > float(transfer_time(h100, "copy_engine", 1e6))
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
import numpy.typing as npt

from rooflib.errors import GroupError, RooflibError, UnknownNameError
from rooflib.specs.devices import MechanismSpec
from rooflib.specs.resolve import System
from rooflib.topology import topology_of

__all__ = [
    "CAPABILITIES",
    "MECHANISMS",
    "NETWORK_MECHANISMS",
    "Capability",
    "Mechanism",
    "Reduction",
    "available_mechanisms",
    "check_mechanism",
    "check_path",
    "link_bandwidth",
    "mechanism_rate",
    "same_domain",
    "saturating_sms",
    "transfer_time",
]

Mechanism = Literal["copy_engine", "tma", "ldst", "multimem", "rdma_proxy", "rdma_gpu"]
MECHANISMS: tuple[Mechanism, ...] = get_args(Mechanism)
Reduction = Literal["none", "peer", "switch"]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Capability:
    uses_sms: bool
    peer_reduce: bool  # can add into the peer's memory
    switch_reduce: bool  # can reduce inside the NVSwitch
    needs_multicast: bool
    granularity: str
    network: bool = False  # between NVLink domains (through the NIC) rather than inside one


NETWORK_MECHANISMS: tuple[Mechanism, ...] = ("rdma_proxy", "rdma_gpu")

CAPABILITIES: dict[Mechanism, Capability] = {
    "copy_engine": Capability(False, False, False, False, "contiguous buffer, host-issued DMA"),
    "tma": Capability(True, True, False, False, "tile (bulk async copy, one thread issues)"),
    "ldst": Capability(True, True, False, False, "element (16-byte vectors per thread)"),
    "multimem": Capability(True, True, True, True, "element (multimem.st / ld_reduce / red)"),
    "rdma_proxy": Capability(True, False, False, False, "message (SMs stage, a CPU proxy posts RDMA writes)", True),
    "rdma_gpu": Capability(True, False, False, False, "message (the GPU posts RDMA writes itself)", True),
}


def check_mechanism(name: str) -> Mechanism:
    mech = name.replace("-", "_").lower()
    if mech not in MECHANISMS:
        raise UnknownNameError("mechanism", name, (*MECHANISMS, "auto"))
    return mech


def _lookup(system: System, mech: Mechanism) -> MechanismSpec | None:
    if not CAPABILITIES[mech].network:
        found: MechanismSpec | None = getattr(system.device.transfer, mech)
        return found
    if system.nic is None or system.spec.scale_out is None:
        return None
    return system.nic.rdma.proxy if mech == "rdma_proxy" else system.nic.rdma.gpu_initiated


def _spec(system: System, mech: Mechanism) -> MechanismSpec:
    spec = _lookup(system, mech)
    if spec is None:
        owner = system.device.display_name if not CAPABILITIES[mech].network else f"system {system.name!r}"
        raise RooflibError(f"{owner} has no {mech} mechanism")
    if CAPABILITIES[mech].needs_multicast and not system.switch.multicast:
        raise RooflibError(f"{mech} needs NVSwitch multicast, which {system.switch.display_name} lacks")
    return spec


def available_mechanisms(system: System, reduction: Reduction = "none", *, network: bool = False) -> list[Mechanism]:
    """Mechanisms the system has that can perform ``reduction`` (none, into peer memory, or in the switch),
    inside an NVLink domain or, with ``network``, between domains."""
    out: list[Mechanism] = []
    for mech in MECHANISMS:
        cap = CAPABILITIES[mech]
        if cap.network != network or _lookup(system, mech) is None:
            continue
        if cap.needs_multicast and not system.switch.multicast:
            continue
        if reduction == "peer" and not cap.peer_reduce:
            continue
        if reduction == "switch" and not (cap.switch_reduce and system.switch.in_network_reduction):
            continue
        out.append(mech)
    return out


def link_bandwidth(system: System, src: int = 0, dst: int = 1) -> float:
    """Raw per-direction bottleneck bandwidth (B/s) of the path from ``src`` to ``dst``."""
    if src == dst:
        raise GroupError(f"a peer transfer needs two different GPUs, got {src} and {dst}")
    return topology_of(system).bottleneck(src, dst)


def same_domain(system: System, src: int, dst: int) -> bool:
    """True when GPUs ``src`` and ``dst`` share an NVLink domain (load/store and copy-engine reach)."""
    system.group([src, dst])
    return src // system.domain_gpus == dst // system.domain_gpus


def check_path(system: System, mech: Mechanism, src: int, dst: int) -> None:
    """Refuse a mechanism the path between ``src`` and ``dst`` does not offer (NVLink ones across domains,
    RDMA inside a domain)."""
    if src == dst:
        raise GroupError(f"a peer transfer needs two different GPUs, got {src} and {dst}")
    local = same_domain(system, src, dst)
    if CAPABILITIES[mech].network and local:
        raise GroupError(f"{mech} is a network mechanism, but GPUs {src} and {dst} share an NVLink domain")
    if not CAPABILITIES[mech].network and not local:
        raise GroupError(
            f"{mech} needs an NVLink path, but GPUs {src} and {dst} are in different NVLink domains of "
            f"{system.name} (use rdma_proxy or rdma_gpu)"
        )


def mechanism_rate(
    system: System,
    mech: Mechanism,
    sms: npt.ArrayLike | None = None,
    *,
    link: float | None = None,
    reduce: bool = False,
    pull: bool = False,
) -> FloatArray:
    """Large-message rate (B/s) of ``mech`` with ``sms`` SMs (all SMs when None), before size effects.

    ``reduce``: adding into the peer (``reduce_peak_fraction``); ``pull``: the receiver reading from the peer
    (``pull_peak_fraction``); each falls back to ``peak_fraction`` when the spec has no figure for it.
    """
    spec = _spec(system, mech)
    bw = _default_link(system, mech) if link is None else _checked_link(link)
    fraction = spec.peak_fraction
    if reduce and spec.reduce_peak_fraction is not None:
        fraction = spec.reduce_peak_fraction
    elif pull and spec.pull_peak_fraction is not None:
        fraction = spec.pull_peak_fraction
    cap = fraction.value * bw
    total = int(system.device.sms)
    s = np.asarray(total if sms is None else sms, dtype=np.float64)
    if (s < 0).any() or (s > total).any():
        raise GroupError(f"sms must be in 0..{total} on {system.device.display_name}, got {sms!r}")
    if spec.per_sm_bandwidth is None:
        return np.full(s.shape, cap)
    return np.minimum(cap, s * spec.per_sm_bandwidth.value)


def _checked_link(link: float) -> float:
    if not (math.isfinite(link) and link > 0):
        raise GroupError(f"link bandwidth must be finite and > 0 B/s, got {link!r}")
    return float(link)


def _default_link(system: System, mech: Mechanism) -> float:
    """The path a mechanism's figures refer to when no pair is named: GPUs 0 and 1, or for the network GPU 0
    and the same-rail GPU of the next NVLink domain."""
    if CAPABILITIES[mech].network:
        if system.gpus <= system.domain_gpus:
            raise GroupError(f"system {system.name!r} has a single NVLink domain: no network path to measure")
        return link_bandwidth(system, 0, system.domain_gpus)
    return link_bandwidth(system, 0, 1)


def saturating_sms(system: System, mech: Mechanism, *, link: float | None = None) -> int:
    """Fewest SMs with which ``mech`` reaches its large-message cap (0 for the copy engine)."""
    spec = _spec(system, mech)
    if spec.per_sm_bandwidth is None:
        return 0
    bw = _default_link(system, mech) if link is None else _checked_link(link)
    need = math.ceil(spec.peak_fraction.value * bw / spec.per_sm_bandwidth.value - 1e-9)
    return min(int(system.device.sms), max(1, need))


def transfer_time(
    system: System,
    mechanism: str,
    nbytes: npt.ArrayLike,
    sms: npt.ArrayLike | None = None,
    *,
    src: int = 0,
    dst: int = 1,
    reduce: bool = False,
    pull: bool = False,
    link: float | None = None,
) -> FloatArray:
    """Seconds to move ``nbytes`` (array) from GPU ``src`` to ``dst`` by ``mechanism`` with ``sms`` SMs.

    ``sms`` broadcasts against ``nbytes``; ``None`` means all SMs (ignored by the copy engine). Zero SMs
    with an SM-driven mechanism gives ``inf``. ``reduce=True`` adds into the peer's memory instead of
    copying (TMA add, ``red``), at the mechanism's ``reduce_peak_fraction`` of the link. ``pull=True`` has the
    receiver read from the sender's memory (``pull_peak_fraction``), paying one more one-way link latency for
    the request. ``link``: the path's bottleneck bandwidth when the caller already has it (else routed).
    """
    mech = check_mechanism(mechanism)
    spec = _spec(system, mech)
    if reduce and not CAPABILITIES[mech].peer_reduce:
        raise RooflibError(f"{mech} cannot reduce into peer memory (copies only)")
    check_path(system, mech, src, dst)
    size = np.asarray(nbytes, dtype=np.float64)
    if (size < 0).any() or not np.isfinite(size).all():
        raise GroupError(f"nbytes must be finite and >= 0, got {nbytes!r}")
    bw = link_bandwidth(system, src, dst) if link is None else _checked_link(link)
    rate = mechanism_rate(system, mech, sms, link=bw, reduce=reduce, pull=pull)
    if spec.size_efficiency is not None:
        rate = rate * spec.size_efficiency(size)
    with np.errstate(divide="ignore", invalid="ignore"):
        body = np.where(size > 0, size / rate, 0.0)
    fixed = spec.fixed_cost.value
    if pull:
        fixed += topology_of(system).latency(src, dst)
    return np.asarray(fixed + body, dtype=np.float64)
