"""Evaluating collective plans: time, algbw and busbw for arrays of sizes, and the choice of algorithm.

For each phase of a plan the transfers are routed over the topology; with ``load_l`` bytes per byte of S on
link l, the phase's bandwidth term is ``S * repeat * max_l load_l / (bw_l * eff_l)``, where ``eff_l`` is the
achievable share of the raw link peak (the library's for NCCL algorithms, the ld/st mechanism's for the
symmetric-memory ones), on NVLink times, for the library's own algorithms, its per-op share (``op_efficiency``)
and its bus efficiency at the group's rank count (``rank_efficiency``, dimensionless: it carries across
generations). Protocol regimes (NCCL's LL, LL128, Simple) trade per-hop latency against usable
bandwidth; the fastest applicable one is taken at each size, as NCCL's tuner does:

    t(S) = launch + base_latency(alg) + sum_phases [hops_nv * lat_p(nvlink) + hops_net * lat_p(ib)
                                                   + S * beta_phase / (bw_fraction_p * size_eff(msg * S))]

Every GPU also reads its input from and writes its output to HBM; the bandwidth term is never below that floor
(``hbm_beta = (input + output bytes per byte of S) / achievable HBM rate``), so no link, however fast, can make
a collective beat the memory it reads and writes. NCCL's point-to-point ops (all-to-all, send/recv, gather,
scatter) also move each peer's bytes ``b`` with a few thread blocks only, ``c(b)`` of them (:func:`peer_channels`,
NCCL's src/enqueue.cc rule), each at most ``p2p_cta_bandwidth``:

    t(S) = fixed + max(link terms above, b / (c(b) * cta_rate * bw_fraction_p * size_eff(b / c(b))), S * hbm_beta)

Below the size curve's first point (256 B) a library algorithm's part costs that point's time (NCCL moves a
tiny part in whole protocol chunks); rooflib's own kernels, and NVLS phases on their own curve, keep the first
point's efficiency.

Sources: NCCL src/graph/tuning.cc for the structure and default latencies; nccl-tests for algbw and busbw.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from rooflib.collectives.plans import Phase, Plan
from rooflib.conventions import Algorithm, Op
from rooflib.specs.figures import log_interp
from rooflib.specs.resolve import System
from rooflib.topology.allpairs import all_pairs_loads
from rooflib.topology.links import IB, NV, PCIE, LinkTable
from rooflib.topology.routing import link_loads

__all__ = [
    "HBM_TRAFFIC",
    "LAUNCHES",
    "P2P_OPS",
    "Launch",
    "P2PCap",
    "PhaseCost",
    "PlanCost",
    "Regime",
    "block_time",
    "cost_plan",
    "hbm_floor",
    "peer_channels",
    "plan_time",
    "size_eff",
]

FloatArray = npt.NDArray[np.float64]
Launch = Literal["stream", "isolated", "graph", "device"]
LAUNCHES: tuple[Launch, ...] = ("stream", "isolated", "graph", "device")


# Bytes per byte of S that the busiest rank must read plus write in HBM, as (fixed part, part per 1/n): all-reduce
# reads S and writes S; all-gather reads its S/n shard and writes S; reduce-scatter reads S and writes S/n; each
# all-to-all rank reads and writes its S buffer; rooted ops and send/recv read (or write) S at one end.
HBM_TRAFFIC: dict[str, tuple[float, float]] = {
    "all_reduce": (2.0, 0.0),
    "all_gather": (1.0, 1.0),
    "reduce_scatter": (1.0, 1.0),
    "all_to_all": (2.0, 0.0),
    "broadcast": (1.0, 0.0),
    "reduce": (1.0, 0.0),
    "send_recv": (1.0, 0.0),
    "gather": (1.0, 0.0),
    "scatter": (1.0, 0.0),
}


def hbm_floor(system: System, op: str, n: int) -> float:
    """Seconds per byte of S the busiest rank needs just to read its input and write its output in HBM."""
    fixed, per_rank = HBM_TRAFFIC[op]
    dev = system.device
    return (fixed + per_rank / n) / (dev.hbm_bandwidth.value * dev.hbm_efficiency.value)


@dataclass(frozen=True)
class Regime:
    """A protocol: per-hop latency by link kind, share of bandwidth carrying data, size limit."""

    name: str
    lat_nv: float
    lat_net: float
    bw_fraction: float
    max_bytes: float = float("inf")


@dataclass(frozen=True)
class PhaseCost:
    beta: float  # seconds per byte of S at full protocol efficiency
    hops_nv: int
    hops_net: int
    msg: float
    loads: FloatArray  # bytes per byte of S on every link, all repeats included
    bottleneck: int  # link index of the tightest link (-1 when none)
    switch: bool = False  # multimem traffic through the NVSwitch (NVLS)


@dataclass(frozen=True)
class P2PCap:
    """NCCL's point-to-point engine: ``frac * S`` bytes to each peer, on ``per_peer`` thread blocks (up to
    ``most`` for large parts: :func:`peer_channels`), each moving at most ``cta_rate`` bytes/s."""

    frac: float
    per_peer: int
    chunk: float
    cta_rate: float
    most: int


def peer_channels(nbytes: npt.ArrayLike, per_peer: int, chunk: float, most: int | None = None) -> FloatArray:
    """Thread blocks NCCL gives one peer's ``nbytes`` inside one NVLink domain (src/enqueue.cc, 2.2x): one per
    ``chunk / 8`` bytes up to ``per_peer``, then more while a part exceeds ``32 * chunk``, up to ``most`` (the
    communicator's point-to-point channels over the ops the busiest rank runs at once: one for a send/recv,
    every peer and its own copy for an all-to-all, whose doubled blocks share the same channels).

    NCCL rounds to whole blocks and doubles them, so its time saws (a peer's 65 KiB on two blocks beats its
    64 KiB on one); the count here is continuous, the saw's upper envelope, so time never falls as bytes grow.

    >>> peer_channels([1024, 256 * 1024, 1 << 20, 1 << 30], per_peer=16, chunk=512 * 1024).tolist()
    [1.0, 4.0, 16.0, 16.0]
    >>> peer_channels([1 << 24, 1 << 28, 1 << 30], per_peer=4, chunk=512 * 1024, most=32).tolist()
    [4.0, 16.0, 32.0]
    """
    b = np.asarray(nbytes, dtype=np.float64)
    c = np.clip(b / (chunk / 8), 1.0, float(per_peer))
    top = float(max(per_peer, most if most is not None else per_peer))
    return np.asarray(np.maximum(c, np.minimum(b / (32.0 * chunk), top)), dtype=np.float64)


def block_time(
    cap: P2PCap, nbytes: npt.ArrayLike, rate: float, curve: tuple[tuple[float, float], ...] | None
) -> FloatArray:
    """Seconds a peer's ``cap.frac * S`` bytes take on its thread blocks (:func:`peer_channels`), each at ``rate``
    bytes/s times the size curve at its own part (``curve``, none: 1), before the protocol's share."""
    peer = cap.frac * np.asarray(nbytes, dtype=np.float64)
    blocks = peer_channels(peer, cap.per_peer, cap.chunk, cap.most)
    return np.asarray(peer / (blocks * rate * size_eff(curve, peer / blocks)), dtype=np.float64)


def per_peer_blocks(channels: int, ranks: int) -> int:
    """Thread blocks per peer before size limits: ``channels`` halved while blocks x ranks exceed it (NCCL's
    nChannelsMin in scheduleP2pTasksToPlan, src/enqueue.cc)."""
    c = channels
    while c * ranks > channels and c > 1:
        c //= 2
    return c


@dataclass(frozen=True)
class PlanCost:
    op: Op
    algorithm: Algorithm
    n: int
    phases: tuple[PhaseCost, ...]
    regimes: tuple[Regime, ...]
    base_latency: float
    size_curve_points: tuple[tuple[float, float], ...] | None
    hbm_beta: float = 0.0  # seconds per byte of S to read the input and write the output in HBM
    nvls_curve_points: tuple[tuple[float, float], ...] | None = None  # for switch phases, at each rank's shard
    p2p: P2PCap | None = None  # NCCL's point-to-point ops: the thread blocks each peer's bytes get
    library: bool = False  # a library algorithm (NCCL protocols, NVLS): the size curve's floor below its first point


def _efficiency(system: System, regime: str) -> FloatArray:
    lib = system.library
    eff = np.ones(3)
    eff[NV] = lib.link_efficiency["nvlink"].value if "nvlink" in lib.link_efficiency else 1.0
    eff[PCIE] = lib.link_efficiency["pcie"].value if "pcie" in lib.link_efficiency else 1.0
    eff[IB] = lib.link_efficiency["ib"].value if "ib" in lib.link_efficiency else 1.0
    if regime == "p2p":
        eff[NV] = system.device.transfer.ldst.peak_fraction.value
    if regime == "nvls" and lib.nvls_efficiency is not None:
        eff[NV] *= lib.nvls_efficiency.value
    return eff


def _regimes(system: System, plan: Plan, table: LinkTable) -> tuple[Regime, ...]:
    lib = system.library
    nv_lat = float(table.latency[table.nv_up.start] + table.latency[table.nv_down.start])
    net_lat = system.nic.latency.value if system.nic is not None else nv_lat
    if plan.regime == "p2p":
        return (Regime("p2p", nv_lat, net_lat, 1.0),)
    protos = dict(lib.protocols)
    if plan.regime == "nvls":
        protos = {k: v for k, v in protos.items() if k == "simple"} or protos
    split = _p2p_split(system, plan)
    if split is not None:  # NCCL's point-to-point rule: LL up to the threshold per peer, Simple above, no LL128
        protos = {k: v for k, v in protos.items() if k in ("ll", "simple")}
    out = []
    for name, p in protos.items():
        lat_nv = p.hop_latency["nvlink"].value if "nvlink" in p.hop_latency else nv_lat
        lat_net = p.hop_latency["ib"].value if "ib" in p.hop_latency else net_lat
        top = p.max_bytes or float("inf")
        if split is not None and name == "ll":  # Simple stays open below it: the faster of the two, never a drop
            top = min(top, split)
        out.append(Regime(name, lat_nv, lat_net, p.bandwidth_fraction.value, top))
    return tuple(out)


P2P_OPS = frozenset({"all_to_all", "send_recv", "gather", "scatter"})
"""Ops NCCL runs as grouped point-to-point sends and receives."""


def _p2p_split(system: System, plan: Plan) -> float | None:
    """The buffer size S (bytes) at which a point-to-point op of the library leaves LL for Simple: its
    ``p2p_ll_threshold`` per peer, times the peers S is split over (all-to-all, gather, scatter: ``n``;
    send/recv: 1); None when the library sets no threshold or the op is not point-to-point."""
    threshold = system.library.p2p_ll_threshold
    if threshold is None or plan.op not in P2P_OPS or plan.regime != "nccl":
        return None
    if "ll" not in system.library.protocols or "simple" not in system.library.protocols:
        return None
    return threshold.value / _peer_share(plan)


def _peer_share(plan: Plan) -> float:
    """The share of S one peer of a point-to-point op gets: all of it for a send/recv (one peer, the rank's only
    op), ``1/n`` for all-to-all, gather and scatter (one op per peer, the rank's own copy included)."""
    return 1.0 if plan.op == "send_recv" else 1.0 / plan.group.n


def _p2p_cap(system: System, plan: Plan) -> P2PCap | None:
    """The per-peer thread-block cap of a point-to-point op of the library in one NVLink domain (None: none)."""
    lib = system.library
    if plan.op not in P2P_OPS or plan.regime != "nccl" or not plan.group.single_domain:
        return None
    if lib.p2p_cta_bandwidth is None or lib.p2p_channels is None or lib.p2p_chunk_size is None:
        return None
    frac = _peer_share(plan)
    channels = int(lib.p2p_channels)
    per_peer = per_peer_blocks(channels, plan.group.n)
    ops = round(1.0 / frac)  # ops the busiest rank runs at once: one per peer it splits S over
    return P2PCap(frac, per_peer, lib.p2p_chunk_size.value, lib.p2p_cta_bandwidth.value, channels // ops)


def _phase_cost(phase: Phase, table: LinkTable, eff: FloatArray, system: System) -> PhaseCost:
    loads = link_loads(table, phase.src, phase.dst, phase.frac) * phase.repeat
    if phase.all_pairs is not None:
        loads += all_pairs_loads(table, phase.all_pairs, phase.all_pairs_frac) * phase.repeat
    if phase.switch_members is not None:
        members = phase.switch_members
        for p in range(table.planes):
            share = table.plane_share[p]
            loads[table.nv_up.start + members * table.planes + p] += phase.switch_egress * share * phase.repeat
            loads[table.nv_down.start + members * table.planes + p] += phase.switch_ingress * share * phase.repeat
    cap = table.bandwidth * eff[table.cls]
    ratio = loads / cap
    beta = float(ratio.max()) if ratio.size else 0.0
    bottleneck = int(ratio.argmax()) if beta > 0 else -1
    if phase.reduce_bytes and system.switch.reduction_bandwidth is not None:
        engine = phase.reduce_bytes * phase.repeat / system.switch.reduction_bandwidth.value
        if engine > beta:
            beta, bottleneck = engine, -1
    switch = phase.switch_members is not None
    return PhaseCost(beta, phase.hops_nv, phase.hops_net, phase.msg, loads, bottleneck, switch)


def cost_plan(plan: Plan, system: System, table: LinkTable) -> PlanCost:
    """Route a plan once; the result evaluates any array of sizes cheaply."""
    eff = _efficiency(system, plan.regime)
    native = plan.algorithm in system.library.native_algorithms.get(plan.op, ())
    op_eff = system.library.op_efficiency.get(plan.op) if native else None
    # per-op and per-rank-count shares are NVLink figures (fitted inside one NVLink domain): NVLink links only
    if op_eff is not None:
        eff[NV] *= op_eff.value
    p2p = _p2p_cap(system, plan) if native else None
    if native and plan.regime != "p2p" and p2p is None:  # NCCL's rings, trees and NVLS: bus efficiency by ranks
        eff[NV] *= system.library.rank_factor(plan.op, plan.group.n)
    phases = tuple(_phase_cost(p, table, eff, system) for p in plan.phases)
    base = system.library.algorithm_latency.get(plan.algorithm)
    extra = system.library.op_latency.get(plan.op) if native else None
    curve = system.library.link_size_efficiency
    nvls_curve = system.library.nvls_size_efficiency
    return PlanCost(
        plan.op,
        plan.algorithm,
        plan.group.n,
        phases,
        _regimes(system, plan, table),
        (0.0 if base is None else base.value) + (0.0 if extra is None else extra.value),
        None if curve is None else curve.points,
        hbm_floor(system, plan.op, plan.group.n),
        None if nvls_curve is None else nvls_curve.points,
        p2p,
        native and plan.regime != "p2p",
    )


def size_eff(
    points: tuple[tuple[float, float], ...] | None, nbytes: npt.ArrayLike, *, floor: bool = True
) -> FloatArray:
    """A size curve's efficiency at each message size: log-log between its points, its last value above them;
    1 without a curve. Below its first point, with ``floor``, the first point's time (efficiency in proportion to
    the size: a smaller message costs what the smallest measured one does, not less; sizes under a byte as one
    byte), else the first point's efficiency. The floor is the library's: NCCL moves a tiny part in whole
    protocol chunks, while rooflib's own kernels (ld/st, copy engine, TMA) do not, and the NVLS curve's points
    are shards of hundreds of MiB (an NVL72 rack's), far above a small message, where per-hop latencies carry
    the time."""
    x = np.asarray(nbytes, dtype=np.float64)
    if points is None:
        return np.ones_like(x)
    eff = log_interp(points, x)
    if floor:
        eff = eff * np.minimum(1.0, np.maximum(x, 1.0) / points[0][0])
    return np.asarray(eff, dtype=np.float64)


def plan_time(cost: PlanCost, nbytes: npt.ArrayLike, launch_s: float) -> tuple[FloatArray, list[str]]:
    """Predicted time (s) of a costed plan at each size, and the protocol regime chosen at each size."""
    s = np.asarray(nbytes, dtype=np.float64)
    best = np.full(s.shape, np.inf)
    pick = np.full(s.shape, -1, dtype=np.int64)
    # seconds per byte of S summed over phases: one multiply per regime when there is no size curve
    body = None
    switched = [bool(ph.switch and cost.nvls_curve_points) for ph in cost.phases]
    curves = [cost.nvls_curve_points if sw else cost.size_curve_points for sw in switched]
    clamped = [sw or not cost.library for sw in switched]
    if all(c is None for c in curves):
        body = s * sum(ph.beta for ph in cost.phases)
    cta = None  # seconds at full protocol efficiency of the point-to-point block cap
    if cost.p2p is not None:
        cta = block_time(cost.p2p, s, cost.p2p.cta_rate, cost.size_curve_points)
    for i, regime in enumerate(cost.regimes):
        fixed = (
            launch_s
            + cost.base_latency
            + sum(ph.hops_nv * regime.lat_nv + ph.hops_net * regime.lat_net for ph in cost.phases)
        )
        if body is not None:
            link = body / regime.bw_fraction
        else:
            link = np.zeros(s.shape)
            for ph, points, clamp in zip(cost.phases, curves, clamped, strict=True):
                link = link + s * ph.beta / (regime.bw_fraction * size_eff(points, ph.msg * s, floor=not clamp))
        if cta is not None:
            link = np.maximum(link, cta / regime.bw_fraction)
        t = fixed + np.maximum(link, s * cost.hbm_beta)
        if regime.max_bytes < np.inf:
            t = np.where(s <= regime.max_bytes, t, np.inf)
        better = t < best
        best = np.where(better, t, best)
        pick = np.where(better, i, pick)
    names = [cost.regimes[i].name for i in range(len(cost.regimes))]
    return best, [names[i] for i in np.ravel(pick).tolist()]
