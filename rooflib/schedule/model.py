"""Overlap schedules for one stage (ParallelKittens, section 4; ../shared/DESIGN.md, "Overlap schedules").

With ``C(k)`` the compute time on ``k`` SMs (tile and wave quantisation included), ``M(m, k)`` the time to send
the stage's bytes by mechanism ``m`` driven by ``k`` SMs, ``S`` the SMs of the GPU and ``t`` the tiles:

- sequential:  ``C(S) + M(m, S)`` (+ the receiver's add when a copy engine moves partial sums);
- intra-SM:    every SM computes and sends its own tiles (warp-specialised): ``max(C(S), M(m, S)) + min(C, M) / w
  + w x sync_intra_sm`` with ``w = ceil(t / S)`` tiles per SM (pipeline fill/drain and one mbarrier handshake
  per tile); needs an SM-driven mechanism; when the bytes feed the compute, each SM fetches what its own tiles
  read, so ``M`` moves the stage's ``intra_reuse`` times the bytes; with a ``pipeline`` the shared-memory and
  register pressure of the sends in flight slow ``C`` or cap ``M``, or rule the schedule out
  (:mod:`rooflib.schedule.pressure`);
- inter-SM(s): ``s`` SMs communicate, the others compute. A tile pipeline is a two-stage flow shop with
  ``W = S - s`` compute SMs working in waves (``w'`` waves, one wave ``C / w'``): compute then send (GEMM+RS)
  takes ``max(C(W) + M(m, s) x last / t, C / w' + M)`` (nothing leaves before the first wave; the last wave's
  ``last`` tiles leave after it); receive then compute (AG+GEMM), with ``b = t / reuse`` input blocks, takes
  ``max(M x ceil(W / reuse) / b + C, M + C / w')`` (the first wave waits for the blocks it reads; the last
  block's readers compute after it arrives); plus ``sync_inter_sm``. Step pipelines (ring hops, buckets,
  layers) take ``max(C, M) + min(C, M) / steps``. ``s`` is chosen to minimise the time; the copy engine needs
  no SMs (``s = 0``) and pays its ``piece_cost`` (else its fixed cost) per further wave.

Every schedule pays one kernel launch. Reductions follow the mechanisms' capabilities: in-switch reduction
only by multimem; into peer memory by TMA add or ``red``; a copy engine can only move partial sums, which the
receiver then adds (three HBM passes over the received bytes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rooflib.collectives import predict_collective
from rooflib.compute.cost import ComputeCost
from rooflib.schedule.pressure import intra_sm_pressure
from rooflib.schedule.stage import Comm, Stage, direct_egress
from rooflib.specs.resolve import System
from rooflib.topology import topology_of
from rooflib.transfer import CAPABILITIES, Mechanism, available_mechanisms, mechanism_rate, transfer_time

__all__ = ["SCHEDULES", "Choice", "StagePrediction", "predict_stage", "schedule_time"]

SCHEDULES = ("sequential", "intra_sm", "inter_sm")


@dataclass(frozen=True)
class Choice:
    schedule: str
    comm_sms: int
    mechanism: str
    time_s: float


@dataclass(frozen=True)
class StagePrediction:
    stage: str
    bound_s: float
    baseline_s: float
    compute_s: float  # at the datasheet peak, no quantisation
    memory_s: float
    comm_s: float  # minimum bytes at the raw link rate
    choices: tuple[Choice, ...]

    @property
    def best(self) -> Choice:
        return min(self.choices, key=lambda c: (c.time_s, c.comm_sms))


def _mechanisms(system: System, comm: Comm) -> list[Mechanism]:
    if comm.reduction == "switch":
        return available_mechanisms(system, "switch")
    if comm.reduction == "peer":
        return [*available_mechanisms(system, "peer"), "copy_engine"]  # the copy engine moves partials; see _local_add
    return available_mechanisms(system, "none")


class _Ctx:
    """Per-stage quantities shared by the schedules."""

    def __init__(self, system: System, members: tuple[int, ...], stage: Stage) -> None:
        self.system, self.members, self.stage = system, members, stage
        self.sms = int(system.device.sms)
        self.n = len(members)
        self.dst = members[-1] if self.n > 1 else members[0]
        topo = topology_of(system) if self.n > 1 else None
        self.link = topo.bottleneck(members[0], self.dst) if topo is not None else float("inf")
        self.latency = topo.latency(members[0], self.dst) if topo is not None else 0.0
        comm = stage.comm
        self.egress = (
            0.0 if comm is None else direct_egress(comm.op, comm.nbytes, self.n, switch=comm.reduction == "switch")
        )
        self.launch = system.device.kernel_launch.value
        self._compute: dict[int, ComputeCost] = {}

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

    def comm(self, mech: Mechanism, sms: int, reuse: float = 1.0) -> float:
        assert self.stage.comm is not None
        if self.egress == 0:
            return 0.0
        nbytes = self.egress * reuse
        if self.stage.send_time is not None:
            return self.stage.send_time(mech, sms, nbytes) + self._local_add(mech)
        reduce = self.stage.comm.reduction != "none" and mech != "copy_engine"
        t = float(
            transfer_time(
                self.system, mech, nbytes, sms, src=self.members[0], dst=self.dst, reduce=reduce, link=self.link
            )
        )
        return t + self._local_add(mech)

    def rate(self, mech: Mechanism, sms: int) -> float:
        reduce = self.stage.comm is not None and self.stage.comm.reduction != "none" and mech != "copy_engine"
        return float(mechanism_rate(self.system, mech, sms, link=self.link, reduce=reduce))

    def _local_add(self, mech: Mechanism) -> float:
        """A copy engine cannot reduce: the receiver reads its partial and the received one and writes the sum."""
        if mech != "copy_engine" or self.stage.comm is None or self.stage.comm.reduction == "none":
            return 0.0
        dev = self.system.device
        return 3.0 * self.egress / (dev.hbm_bandwidth.value * dev.hbm_efficiency.value)


def _sequential(ctx: _Ctx, mech: Mechanism) -> Choice:
    t = ctx.compute(ctx.sms) + ctx.comm(mech, ctx.sms) + ctx.launch
    return Choice("sequential", 0 if not CAPABILITIES[mech].uses_sms else ctx.sms, mech, t)


def _intra(ctx: _Ctx, mech: Mechanism) -> Choice | None:
    """Intra-SM time; None when the send buffers leave the compute no pipeline (``rooflib.schedule.pressure``)."""
    c, m = ctx.compute(ctx.sms), ctx.comm(mech, ctx.sms, ctx.stage.intra_reuse)
    pipe = ctx.stage.pipeline
    if pipe is not None and ctx.stage.compute is not None and ctx.egress > 0:
        send = ctx.egress * ctx.stage.intra_reuse
        flops = ctx.cost(ctx.sms).flops
        p = intra_sm_pressure(
            ctx.system, pipe, mech, send_bytes=send, compute_s=c, comm_s=m, flops=flops, link_latency=ctx.latency
        )
        if not math.isfinite(p.compute_factor):
            return None
        c *= p.compute_factor
        if math.isfinite(p.send_rate_cap) and p.send_rate_cap > 0:
            m = max(m, send / (p.send_rate_cap * ctx.sms))
    per_sm = ctx.stage.steps or max(1, math.ceil(ctx.stage.tiles / ctx.sms))
    t = max(c, m) + min(c, m) / per_sm + per_sm * ctx.system.device.sync_intra_sm.value + ctx.launch
    return Choice("intra_sm", ctx.sms, mech, t)


def _inter_at(ctx: _Ctx, mech: Mechanism, s: int) -> float:
    """Inter-SM time with ``s`` communication SMs (``s = 0``: the copy engine, all SMs compute)."""
    sync = ctx.system.device.sync_inter_sm.value
    if not CAPABILITIES[mech].uses_sms:  # copy engine: all SMs compute, one DMA per wave
        c = ctx.compute(ctx.sms)
        waves = ctx.stage.steps or max(1, math.ceil(ctx.stage.tiles / ctx.sms))
        ce = ctx.system.device.transfer.copy_engine
        fixed = (ce.piece_cost or ce.fixed_cost).value  # each further piece and its arrival signal
        m = ctx.comm(mech, ctx.sms) + (waves - 1) * fixed
        return max(c, m) + min(c, m) / waves + sync + ctx.launch
    c = ctx.compute(ctx.sms - s)
    if not math.isfinite(c):
        return math.inf
    m = ctx.comm(mech, s)
    if ctx.stage.steps:  # step pipelines (ring hops, buckets, layers): one step of the smaller part is exposed
        return max(c, m) + min(c, m) / ctx.stage.steps + sync + ctx.launch
    # tile pipelines, a two-stage flow shop with W = S - s compute SMs working in waves of W tiles: each stage
    # is busy throughout, but one end of the other is exposed (whichever bound is larger)
    assert ctx.stage.comm is not None
    w = ctx.sms - s
    waves = max(1, math.ceil(ctx.stage.tiles / w))
    c_wave = c / waves
    if ctx.stage.comm.before_compute:  # receive then compute: the first wave needs its blocks; the last block's
        items = max(1.0, ctx.stage.tiles / ctx.stage.intra_reuse)  # readers compute after it arrives
        first = min(items, math.ceil(min(w, ctx.stage.tiles) / ctx.stage.intra_reuse))
        t = max(m * first / items + c, m + c_wave)
    else:  # compute then send: nothing leaves before the first wave; the last wave's tiles leave after it
        items = max(1.0, float(ctx.stage.tiles))
        last = ctx.stage.tiles - (waves - 1) * w
        t = max(c + m * last / items, c_wave + m)
    return t + sync + ctx.launch


def _inter(ctx: _Ctx, mech: Mechanism) -> Choice:
    if not CAPABILITIES[mech].uses_sms:
        return Choice("inter_sm", 0, mech, _inter_at(ctx, mech, 0))
    best = Choice("inter_sm", 1, mech, math.inf)
    for s in _candidates(ctx.sms):
        t = _inter_at(ctx, mech, s)
        if t < best.time_s:
            best = Choice("inter_sm", s, mech, t)
    return best


def schedule_time(
    system: System, members: tuple[int, ...], stage: Stage, schedule: str, mechanism: Mechanism, comm_sms: int = 0
) -> float:
    """Time of one (schedule, mechanism, comm SMs) for ``stage``: the formulas above at a given SM split."""
    ctx = _Ctx(system, members, stage)
    if schedule == "sequential":
        return _sequential(ctx, mechanism).time_s
    if schedule == "intra_sm":
        choice = _intra(ctx, mechanism)
        return math.inf if choice is None else choice.time_s
    if schedule == "inter_sm":
        return _inter_at(ctx, mechanism, comm_sms)
    raise ValueError(f"unknown schedule {schedule!r}; schedules: {', '.join(SCHEDULES)}")


def _candidates(sms: int) -> list[int]:
    small = list(range(1, min(sms, 33)))
    large = [int(x) for x in np.unique(np.geomspace(33, sms - 1, 12).astype(int))] if sms > 34 else []
    return sorted(set(small + large))


def _baseline(ctx: _Ctx) -> float:
    stage, t = ctx.stage, 0.0
    if stage.compute is not None:
        t += stage.compute(None).time_s + stage.library_launches * ctx.launch
    if stage.comm is not None and ctx.n > 1:
        r = predict_collective(
            stage.comm.op, ctx.system, gpus=ctx.members, nbytes=stage.comm.nbytes, algorithm="library"
        )
        t += float(r.time_s[0])
    return t


def predict_stage(system: System, members: tuple[int, ...], stage: Stage) -> StagePrediction:
    """Bound, baseline and every (schedule, mechanism, comm SMs) choice for one stage on ``members``."""
    ctx = _Ctx(system, members, stage)
    dev = system.device
    compute_s = memory_s = 0.0
    if stage.compute is not None:
        ideal = stage.compute(None)
        peak = dev.tensor_peak(ideal.dtype) if ideal.unit == "tensor" else dev.vector_peak(ideal.dtype)
        compute_s = ideal.flops / (peak or ideal.peak_flops_per_s)
        memory_s = ideal.hbm_bytes / dev.hbm_bandwidth.value
    comm_s = 0.0
    if stage.comm is not None and ctx.n > 1:  # the fewest bytes any mechanism could send, at the raw link rate
        least = direct_egress(stage.comm.op, stage.comm.nbytes, ctx.n)
        one_domain = len({g // system.domain_gpus for g in members}) == 1
        if system.switch.in_network_reduction and one_domain:
            least = min(least, direct_egress(stage.comm.op, stage.comm.nbytes, ctx.n, switch=True))
        comm_s = least / ctx.link
    choices: list[Choice] = []
    if stage.comm is None or ctx.n < 2 or stage.compute is None:
        only = (ctx.compute(ctx.sms) + ctx.launch) if stage.compute is not None else 0.0
        if stage.comm is not None and ctx.n > 1:
            only += min(ctx.comm(m, ctx.sms) for m in _mechanisms(system, stage.comm)) + (
                ctx.launch if only == 0 else 0
            )
        choices.append(Choice("sequential", 0, "none" if stage.comm is None else "auto", only))
    else:
        for mech in _mechanisms(system, stage.comm):
            choices.append(_sequential(ctx, mech))
            intra = _intra(ctx, mech) if CAPABILITIES[mech].uses_sms else None
            if intra is not None:
                choices.append(intra)
            choices.append(_inter(ctx, mech))
    bound = max(compute_s, memory_s, comm_s)
    return StagePrediction(stage.name, bound, _baseline(ctx), compute_s, memory_s, comm_s, tuple(choices))
