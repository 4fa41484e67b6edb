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

A memory-bound compute that overlaps its transfer (intra- and inter-SM) shares the HBM with it: it also moves
the stage's ``comm_hbm_bytes`` at its own HBM rate (:func:`_beside_comm`).

Step pipelines send one message per step (each pays its mechanism's fixed cost) and signal each step's arrival
(``steps x sync_inter_sm``), so a pipeline of a billion steps costs what it should. Groups that span NVLink
domains send the NVLink share by the mechanism and the network share by GPUDirect RDMA at once
(:mod:`rooflib.schedule.context`, :mod:`rooflib.schedule.traffic`).

Two more choices are always there, so the best is never worse than what plain PyTorch + NCCL does: the
compute followed by the library's own collective (mechanism ``library``: the baseline itself) and by the
fastest modelled collective kernel as a separate call (mechanism ``auto``; the algorithm is named, as
``rooflib collective`` names it). Every schedule pays one kernel launch. Reductions follow the mechanisms'
capabilities: in-switch reduction only by multimem; into peer memory by TMA add or ``red``; a copy engine can
only move partial sums, which the receiver then adds (three HBM passes over the received bytes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rooflib.collectives import predict_collective
from rooflib.schedule.context import Context
from rooflib.schedule.pressure import intra_sm_pressure
from rooflib.schedule.stage import Comm, Stage
from rooflib.schedule.traffic import comm_lower_bound
from rooflib.specs.resolve import System
from rooflib.transfer import CAPABILITIES, Mechanism, available_mechanisms

__all__ = ["AUTO", "LIBRARY", "SCHEDULES", "Choice", "StagePrediction", "predict_stage", "schedule_time"]

SCHEDULES = ("sequential", "intra_sm", "inter_sm")
LIBRARY = "library"
"""Mechanism label of the compute followed by the collective library's own algorithm (the baseline)."""
AUTO = "auto"
"""Mechanism label of the compute followed by the fastest modelled collective kernel, as a separate call."""


@dataclass(frozen=True)
class Choice:
    """One way to run a stage: schedule, communication SMs, mechanism (or ``library`` / ``auto`` for a separate
    collective call, whose ``algorithm`` is named) and the predicted time in seconds."""

    schedule: str
    comm_sms: int
    mechanism: str
    time_s: float
    algorithm: str = ""


@dataclass(frozen=True)
class StagePrediction:
    stage: str
    bound_s: float
    baseline_s: float
    compute_s: float  # at the datasheet peak, no quantisation
    memory_s: float
    comm_s: float  # the communication lower bound (rooflib.schedule.traffic.comm_lower_bound)
    choices: tuple[Choice, ...]

    @property
    def best(self) -> Choice:
        return min(self.choices, key=lambda c: (c.time_s, c.comm_sms))


def _mechanisms(system: System, comm: Comm) -> list[Mechanism]:
    if comm.reduction == "switch":
        return available_mechanisms(system, "switch")
    if comm.reduction == "peer":
        return [*available_mechanisms(system, "peer"), "copy_engine"]  # the copy engine moves partials
    return available_mechanisms(system, "none")


def _pieces(ctx: Context) -> int:
    return ctx.stage.steps or 1


def _sequential(ctx: Context, mech: Mechanism) -> Choice:
    t = ctx.compute(ctx.sms) + ctx.comm(mech, ctx.sms) + ctx.launch
    return Choice("sequential", 0 if not CAPABILITIES[mech].uses_sms else ctx.sms, ctx.label(mech), t)


def _beside_comm(ctx: Context, c: float, sms: int) -> float:
    """Compute time ``c`` on ``sms`` SMs while the communication runs beside it: a memory-bound compute shares
    the HBM with the communication's own reads and writes (``Stage.comm_hbm_bytes``) and takes them at its rate."""
    extra = ctx.stage.comm_hbm_bytes
    if extra <= 0 or ctx.stage.compute is None or sms <= 0 or not math.isfinite(c):
        return c
    cost = ctx.cost(sms)
    if cost.memory_s < cost.compute_s or cost.hbm_bytes <= 0 or cost.time_s <= 0:
        return c
    return c + extra * cost.time_s / cost.hbm_bytes


def _intra(ctx: Context, mech: Mechanism) -> Choice | None:
    """Intra-SM time; None when the send buffers leave the compute no pipeline (``rooflib.schedule.pressure``)."""
    c = _beside_comm(ctx, ctx.compute(ctx.sms), ctx.sms)
    m = ctx.comm(mech, ctx.sms, ctx.stage.intra_reuse, _pieces(ctx))
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
    return Choice("intra_sm", ctx.sms, ctx.label(mech), t)


def _inter_at(ctx: Context, mech: Mechanism, s: int) -> float:
    """Inter-SM time with ``s`` communication SMs (``s = 0``: the copy engine, all SMs compute)."""
    sync = ctx.system.device.sync_inter_sm.value
    if not CAPABILITIES[mech].uses_sms:  # copy engine: all SMs compute (but the network side's), one DMA a wave
        net = ctx.network_sms(ctx.sms)
        c = _beside_comm(ctx, ctx.compute(ctx.sms - net), ctx.sms - net)
        waves = ctx.stage.steps or max(1, math.ceil(ctx.stage.tiles / ctx.sms))
        ce = ctx.system.device.transfer.copy_engine
        fixed = (ce.piece_cost or ce.fixed_cost).value  # each further piece and its arrival signal
        m = ctx.comm(mech, ctx.sms) + (waves - 1) * fixed
        return max(c, m) + min(c, m) / waves + sync + ctx.launch
    c = _beside_comm(ctx, ctx.compute(ctx.sms - s), ctx.sms - s)
    if not math.isfinite(c):
        return math.inf
    if ctx.stage.steps:  # step pipelines (ring hops, buckets, layers): one step of the smaller part is exposed
        steps = ctx.stage.steps
        m = ctx.comm(mech, s, pieces=steps)
        return max(c, m) + min(c, m) / steps + steps * sync + ctx.launch
    m = ctx.comm(mech, s)
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


def _inter(ctx: Context, mech: Mechanism) -> Choice:
    if not CAPABILITIES[mech].uses_sms:
        return Choice("inter_sm", ctx.network_sms(ctx.sms), ctx.label(mech), _inter_at(ctx, mech, 0))
    best = Choice("inter_sm", 1, ctx.label(mech), math.inf)
    for s in _candidates(ctx.sms):
        t = _inter_at(ctx, mech, s)
        if t < best.time_s:
            best = Choice("inter_sm", s, ctx.label(mech), t)
    return best


def schedule_time(
    system: System, members: tuple[int, ...], stage: Stage, schedule: str, mechanism: Mechanism, comm_sms: int = 0
) -> float:
    """Time of one (schedule, mechanism, comm SMs) for ``stage``: the formulas above at a given SM split."""
    ctx = Context(system, members, stage)
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


def _collective(ctx: Context, algorithm: str) -> tuple[float, str]:
    """The stage's communication as ``calls`` separate library calls of ``nbytes / calls`` (stream launches)."""
    comm = ctx.stage.comm
    if comm is None or ctx.n < 2:
        return 0.0, ""
    r = predict_collective(comm.op, ctx.system, gpus=ctx.members, nbytes=comm.nbytes / comm.calls, algorithm=algorithm)
    return comm.calls * float(r.time_s[0]), r.algorithm[0]


def _separate(ctx: Context, algorithm: str) -> Choice:
    """The compute (cuBLAS or the library kernels) then the collective as its own call(s)."""
    t, alg = _collective(ctx, algorithm)
    if ctx.stage.compute is not None:
        t += ctx.stage.compute(None).time_s + ctx.stage.library_launches * ctx.launch
    return Choice("sequential", 0, LIBRARY if algorithm == "library" else AUTO, t, alg)


def _bound_terms(ctx: Context) -> tuple[float, float, float]:
    stage, system, dev = ctx.stage, ctx.system, ctx.system.device
    compute_s = memory_s = comm_s = 0.0
    if stage.compute is not None:
        ideal = stage.compute(None)
        peak = dev.tensor_peak(ideal.dtype) if ideal.unit == "tensor" else dev.vector_peak(ideal.dtype)
        compute_s = ideal.flops / (peak or ideal.peak_flops_per_s)
        memory_s = ideal.hbm_bytes / dev.hbm_bandwidth.value
    if stage.comm is not None and ctx.n > 1:  # the fewest bytes any implementation moves, at raw link rates
        switch = system.switch.in_network_reduction and system.switch.multicast
        comm_s = comm_lower_bound(
            stage.comm.op,
            stage.comm.nbytes,
            ctx.n,
            [len(d) for d in ctx.domains],
            nvlink_bps=ctx.link if not ctx.multi else system.nvlink_bandwidth,
            network_bps=ctx.net_link,
            switch=switch,
        )
    return compute_s, memory_s, comm_s


def predict_stage(system: System, members: tuple[int, ...], stage: Stage) -> StagePrediction:
    """Bound, baseline and every (schedule, mechanism, comm SMs) choice for one stage on ``members``."""
    ctx = Context(system, members, stage)
    compute_s, memory_s, comm_s = _bound_terms(ctx)
    choices: list[Choice] = []
    if stage.comm is None or ctx.n < 2:
        only = (ctx.compute(ctx.sms) + ctx.launch) if stage.compute is not None else 0.0
        choices.append(Choice("sequential", 0, "none", only))
        baseline = _separate(ctx, "library").time_s
    else:
        library = _separate(ctx, "library")
        baseline = library.time_s
        choices += [library, _separate(ctx, "auto")]
        if stage.compute is not None:
            for mech in _mechanisms(system, stage.comm):
                choices.append(_sequential(ctx, mech))
                intra = _intra(ctx, mech) if CAPABILITIES[mech].uses_sms else None
                if intra is not None:
                    choices.append(intra)
                choices.append(_inter(ctx, mech))
    unique = {(c.schedule, c.mechanism, c.algorithm): c for c in sorted(choices, key=lambda c: -c.time_s)}
    bound = max(compute_s, memory_s, comm_s)
    return StagePrediction(stage.name, bound, baseline, compute_s, memory_s, comm_s, tuple(unique.values()))
