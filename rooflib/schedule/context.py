"""Per-stage quantities the schedules share: the group's NVLink and network paths, the bytes each carries, the
compute on k SMs, and the time to send the stage's bytes by a mechanism on k SMs.

Inside one NVLink domain a fused kernel sends ``direct_egress`` bytes per GPU through the NVLink mechanism it
uses (copy engine, TMA, ld/st or multimem). A group that spans NVLink domains uses the hierarchy
(:mod:`rooflib.schedule.traffic`): the NVLink share by that mechanism and the network share by GPUDirect RDMA
through each GPU's NIC (the faster of the proxy- and GPU-initiated mechanisms), both at once; the SMs the
schedule gives to communication are split, the NIC's saturating count to the network side. RDMA writes only
copy, so partial sums that cross the network are added by the receiver (three HBM passes), as for the copy
engine inside the domain.
"""

from __future__ import annotations

import math

import numpy as np

from rooflib.compute.cost import ComputeCost
from rooflib.schedule.stage import Stage
from rooflib.schedule.traffic import fused_traffic
from rooflib.specs.resolve import System
from rooflib.topology import Topology, topology_of
from rooflib.transfer import Mechanism, available_mechanisms, saturating_sms, transfer_time

__all__ = ["Context"]


class Context:
    """Per-stage quantities shared by the schedules (one per :func:`rooflib.schedule.predict_stage` call)."""

    def __init__(self, system: System, members: tuple[int, ...], stage: Stage) -> None:
        self.system, self.members, self.stage = system, members, stage
        self.sms = int(system.device.sms)
        self.n = len(members)
        per = system.domain_gpus
        by_domain: dict[int, list[int]] = {}
        for g in members:
            by_domain.setdefault(g // per, []).append(g)
        self.domains = list(by_domain.values())
        self.multi = len(self.domains) > 1
        topo = topology_of(system) if self.n > 1 else None
        big = max(self.domains, key=len)
        self.pair = (big[0], big[-1]) if len(big) > 1 else None
        if topo is not None and self.pair is not None:
            self.link = topo.bottleneck(*self.pair)
            self.latency = topo.latency(*self.pair)
        else:
            self.link = system.nvlink_bandwidth if self.multi else math.inf
            self.latency = 0.0
        self.net_pair: tuple[int, int] | None = None
        self.net_link = math.inf
        self.net_mech: Mechanism | None = None
        self.net_sms = 0
        comm = stage.comm
        sizes = [len(d) for d in self.domains]
        traffic = (
            fused_traffic(comm.op, comm.nbytes, self.n, sizes, switch=comm.reduction == "switch")
            if comm is not None
            else None
        )
        self.egress = 0.0 if traffic is None else traffic.nvlink
        self.net_bytes = 0.0 if traffic is None else traffic.network
        if self.multi and topo is not None:
            self._network_path(topo)
        self.launch = system.device.kernel_launch.value
        self._compute: dict[int, ComputeCost] = {}

    def _network_path(self, topo: Topology) -> None:
        """The path a GPU's own network traffic takes (to the same-rail GPU of another domain) and the RDMA
        mechanism that moves the stage's network bytes fastest on its saturating SM count."""
        first, other = self.domains[0][0], self.domains[1]
        rails = topo.links.rail_of(np.asarray([first, *other], dtype=np.int64))
        same = [g for g, r in zip(other, rails[1:].tolist(), strict=True) if r == int(rails[0])]
        self.net_pair = (first, same[0] if same else other[0])
        self.net_link = topo.bottleneck(*self.net_pair)
        best = math.inf
        for mech in available_mechanisms(self.system, "none", network=True):
            sms = saturating_sms(self.system, mech, link=self.net_link)
            t = float(transfer_time(self.system, mech, self.net_bytes, sms, src=self.net_pair[0], dst=self.net_pair[1]))
            if t < best:
                best, self.net_mech, self.net_sms = t, mech, sms

    # --- compute ---------------------------------------------------------------------------------------------
    def cost(self, sms: int) -> ComputeCost:
        """The stage's compute on ``sms`` SMs (computed once per SM count)."""
        assert self.stage.compute is not None
        if sms not in self._compute:
            self._compute[sms] = self.stage.compute(sms)
        return self._compute[sms]

    def compute(self, sms: int) -> float:
        if self.stage.compute is None or sms <= 0:
            return 0.0 if self.stage.compute is None else math.inf
        return self.cost(sms).time_s

    # --- communication ---------------------------------------------------------------------------------------
    def label(self, mech: Mechanism) -> str:
        """The mechanism as the choices name it: ``tma``, or ``tma+rdma_gpu`` across NVLink domains."""
        if not self.multi or self.net_mech is None or self.net_bytes == 0:
            return mech
        return self.net_mech if self.egress == 0 else f"{mech}+{self.net_mech}"

    def network_sms(self, sms: int) -> int:
        """SMs of a budget of ``sms`` that drive the network side (the rest drive NVLink)."""
        if self.net_mech is None or self.net_bytes == 0:
            return 0
        if self.egress == 0 or sms <= 1:
            return max(1, min(self.net_sms, sms)) if sms > 0 else 0
        return min(self.net_sms, sms - 1)

    def comm(self, mech: Mechanism, sms: int, reuse: float = 1.0, pieces: int = 1) -> float:
        """Seconds to send the stage's bytes by ``mech`` driven by ``sms`` SMs, in ``pieces`` messages; with
        ``reuse`` the NVLink bytes move that many times (each SM fetching what its own tiles read)."""
        assert self.stage.comm is not None
        if self.egress == 0 and self.net_bytes == 0:
            return 0.0
        net_sms = self.network_sms(sms)
        nv = 0.0
        if self.egress > 0:
            nv_sms = max(1, sms - net_sms) if sms > 0 else 0
            nv = self._nvlink(mech, nv_sms, self.egress * reuse, pieces) + self._local_add(mech, self.egress)
        if self.net_bytes == 0 or self.net_mech is None or self.net_pair is None:
            return nv
        if net_sms <= 0:
            return math.inf
        per = self.net_bytes / pieces
        net = pieces * float(
            transfer_time(
                self.system, self.net_mech, per, net_sms, src=self.net_pair[0], dst=self.net_pair[1], link=self.net_link
            )
        )
        return max(nv, net + self._local_add("copy_engine", self.net_bytes))

    def _nvlink(self, mech: Mechanism, sms: int, nbytes: float, pieces: int) -> float:
        assert self.stage.comm is not None and self.pair is not None
        if self.stage.send_time is not None:
            return self.stage.send_time(mech, sms, nbytes)
        reduce = self.stage.comm.reduction != "none" and mech != "copy_engine"
        per = nbytes / pieces
        src, dst = self.pair
        return pieces * float(
            transfer_time(self.system, mech, per, sms, src=src, dst=dst, reduce=reduce, link=self.link)
        )

    def _local_add(self, mech: Mechanism, nbytes: float) -> float:
        """A copy engine (or an RDMA write) cannot reduce: the receiver reads its partial and the received one
        and writes the sum."""
        if mech != "copy_engine" or self.stage.comm is None or self.stage.comm.reduction == "none":
            return 0.0
        dev = self.system.device
        return 3.0 * nbytes / (dev.hbm_bandwidth.value * dev.hbm_efficiency.value)
