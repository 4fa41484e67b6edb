"""Collective algorithms as phases of concurrent transfers over a group's GPUs.

A :class:`Phase` lists transfers ``src[i] -> dst[i]`` of ``frac[i] * S`` bytes (S the nccl-tests size) that run
at once; ``repeat`` identical steps follow each other (pipelined in the ring and tree algorithms, so only the
bandwidth term repeats); ``hops_nv`` / ``hops_net`` count the link latencies on the critical path. Link sharing
falls out of routing the transfers over the topology. NVLS phases add ``switch_loads``: bytes between each GPU
and the switch (multimem loads and stores do not go GPU to GPU).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from rooflib.collectives.group import Group
from rooflib.conventions import Algorithm, Op

__all__ = ["ALGORITHMS_FOR", "NotApplicable", "Phase", "Plan", "build_plan"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


class NotApplicable(Exception):
    """The algorithm does not apply to this op, group or system; the message says why."""


@dataclass(frozen=True)
class Phase:
    src: IntArray
    dst: IntArray
    frac: FloatArray
    repeat: int = 1
    hops_nv: int = 0
    hops_net: int = 0
    msg: float = 1.0
    switch_egress: float = 0.0  # per-GPU bytes / S into the NVSwitch (multimem), NVLS only
    switch_ingress: float = 0.0
    reduce_bytes: float = 0.0  # per-GPU bytes / S reduced inside the switch, NVLS only
    switch_members: IntArray | None = None  # GPUs exchanging switch_egress / switch_ingress with the switch
    all_pairs: IntArray | None = None  # members sending all_pairs_frac * S to every other member
    all_pairs_frac: float = 0.0


@dataclass(frozen=True)
class Plan:
    op: Op
    algorithm: Algorithm
    group: Group
    phases: tuple[Phase, ...]
    regime: str = "nccl"  # "nccl" (library protocols), "p2p" (ld/st kernels), "nvls" (switch)
    notes: tuple[str, ...] = field(default_factory=tuple)


def _phase(pairs: list[tuple[IntArray, IntArray, FloatArray]], **kw: object) -> Phase:
    src = np.concatenate([p[0] for p in pairs]) if pairs else np.zeros(0, np.int64)
    dst = np.concatenate([p[1] for p in pairs]) if pairs else np.zeros(0, np.int64)
    frac = np.concatenate([np.broadcast_to(p[2], p[0].shape) for p in pairs]) if pairs else np.zeros(0)
    return Phase(src, dst, frac.astype(np.float64), **kw)  # type: ignore[arg-type]


def _hops(g: Group, steps: int, per_round: int) -> dict[str, int]:
    """Split ``steps`` ring hops into NVLink and network hops, as NCCL's tuning model does."""
    net = steps * (g.domains - 1) // per_round if g.domains > 1 else 0
    return {"hops_nv": steps - net, "hops_net": net}


def _ring(g: Group, step_frac: float, steps: int) -> Phase:
    rings = g.rings()
    r = len(rings)
    pairs = [(ring, np.roll(ring, -1), np.full(ring.shape, step_frac / r)) for ring in rings]
    return _phase(pairs, repeat=steps, msg=step_frac / r, **_hops(g, steps, g.n - 1 if g.n > 1 else 1))


def _all_pairs(members: IntArray, frac: float, **kw: int) -> Phase:
    """Every member sends ``frac * S`` to every other member; routed in closed form (no list of pairs)."""
    empty = np.zeros(0, np.int64)
    return Phase(empty, empty, np.zeros(0), msg=frac, all_pairs=members, all_pairs_frac=frac, **kw)  # type: ignore[arg-type]


def _net_hop(g: Group) -> dict[str, int]:
    return {"hops_nv": 0, "hops_net": 1} if g.domains > 1 else {"hops_nv": 1, "hops_net": 0}


def _needs_one_domain(g: Group, alg: str) -> None:
    if not g.single_domain:
        raise NotApplicable(f"{alg} needs every GPU in one NVLink domain (load/store access); group spans {g.domains}")


def _recursive(g: Group, op: Op) -> list[Phase]:
    if not g.power_of_two:
        raise NotApplicable(f"recursive halving/doubling needs a power-of-two group, got {g.n}")
    ranks, n, logn = g.ranks, g.n, int(math.log2(g.n))
    idx = np.arange(n)
    halving = [(n >> (k + 1), 1.0 / 2 ** (k + 1)) for k in range(logn)]  # (partner distance, S fraction)
    doubling = halving[::-1]
    steps = {"reduce_scatter": halving, "all_gather": doubling, "all_reduce": halving + doubling}[op]
    phases = []
    for dist, frac in steps:
        partner = ranks[idx ^ dist]
        crosses = bool((g.table.domain_of(ranks) != g.table.domain_of(partner)).any())
        hops = {"hops_nv": 0, "hops_net": 1} if crosses else {"hops_nv": 1, "hops_net": 0}
        phases.append(_phase([(ranks, partner, np.full(n, frac))], msg=frac, **hops))
    return phases


def _tree(g: Group, op: Op) -> list[Phase]:
    """NCCL's double binary tree over NVLink domains, a chain inside each domain, one tree pair per channel.

    All-reduce runs reduce (up) and broadcast (down) pipelined together: every edge carries S/2 per tree each
    way. Broadcast and reduce use one direction with all of S. Inside one domain the chains are rotated once per
    member of the smallest node, so every GPU heads one of them.
    """
    units = g.by_domain
    channels = max(1, min(len(nd) for nd in g.by_node)) if g.single_domain else g.channels()
    trees = 2 if op == "all_reduce" else 1
    share = 1.0 / (channels * trees)
    ups: list[tuple[IntArray, IntArray, FloatArray]] = []
    count = len(units)
    rooted = op in ("broadcast", "reduce")  # the root (first member) heads its domain's chain in every channel
    for c in range(channels):
        chains = [d if rooted and i == 0 else np.roll(d, -(c * len(d) // channels)) for i, d in enumerate(units)]
        for t in range(trees):
            order = np.arange(count) if t == 0 else (np.arange(count) + 1) % count
            heads = np.asarray([chains[i][0] for i in order], dtype=np.int64)
            parent = (np.arange(1, count) - 1) // 2
            ups.append((heads[1:], heads[parent], np.full(count - 1, share)))
            for chain in chains:
                ups.append((chain[1:], chain[:-1], np.full(chain.size - 1, share)))
    depth = math.ceil(math.log2(count)) if count > 1 else 0
    per_unit = max(len(d) for d in units)
    net_hop = "hops_net" if g.domains > 1 else "hops_nv"
    hops = {"hops_nv": per_unit - 1, "hops_net": 0}
    hops[net_hop] += depth
    if op == "all_reduce":
        pairs = ups + [(d, s, f) for s, d, f in ups]
        hops = {k: 2 * v for k, v in hops.items()}
    elif op == "broadcast":
        pairs = [(d, s, f) for s, d, f in ups]
    else:
        pairs = ups
    return [_phase(pairs, msg=share, **hops)]


def _hierarchical(g: Group, op: Op) -> list[Phase]:
    if g.domains < 2 or not g.uniform_domains:
        raise NotApplicable("hierarchical needs two or more NVLink domains with equal GPU counts")
    d, D = len(g.by_domain[0]), g.domains
    intra = [(dom, np.roll(dom, -1), np.full(d, 1.0 / d)) for dom in g.by_domain]
    cols = np.stack(g.by_domain, axis=1)  # row j: the j-th GPU of every domain (same rail)
    inter_step = 1.0 / (d * D)
    inter = [(row, np.roll(row, -1), np.full(D, inter_step)) for row in cols]
    rs_in = _phase(intra, repeat=d - 1, msg=1.0 / d, hops_nv=d - 1)
    ag_in = rs_in
    inter_steps = {"all_reduce": 2 * (D - 1), "reduce_scatter": D - 1, "all_gather": D - 1}[op]
    net = _phase(inter, repeat=inter_steps, msg=inter_step, hops_net=inter_steps)
    if op == "all_reduce":
        return [rs_in, net, ag_in]
    return [rs_in, net] if op == "reduce_scatter" else [net, ag_in]


def _nvls(g: Group, op: Op) -> list[Phase]:
    switch = g.table.system.switch
    if not (switch.multicast and switch.in_network_reduction):
        raise NotApplicable(f"{switch.name} has no multicast / in-network reduction")
    _needs_one_domain(g, "nvls")
    n = g.n
    empty = np.zeros(0, np.int64)
    # (bytes / S into the switch, out of it, reduced in it) per GPU
    if op == "all_reduce":  # multimem.ld_reduce of each GPU's shard, then multimem.st of the result
        egress, ingress, reduced = 1.0 + 1.0 / n, 1.0 + 1.0 / n, 1.0
    elif op == "reduce_scatter":
        egress, ingress, reduced = (n - 1) / n, 1.0 / n, (n - 1) / n
    else:  # all_gather: multicast store of each shard
        egress, ingress, reduced = 1.0 / n, (n - 1) / n, 0.0
    hops = 2 if op == "all_reduce" else 1
    return [
        Phase(
            empty,
            empty,
            np.zeros(0),
            msg=1.0 / n,
            hops_nv=hops,
            switch_egress=egress,
            switch_ingress=ingress,
            reduce_bytes=reduced,
            switch_members=g.ranks,
        )
    ]


def _nvls_tree(g: Group, op: Op) -> list[Phase]:
    """NCCL's NVLSTree all-reduce across NVLink domains, pipelined in one phase: reduce-scatter inside each
    domain in the switch (multimem ld_reduce), all-reduce of each GPU's shard with its rail peers in the other
    domains (a tree in NCCL; its bytes those of a rail ring, 2 (D-1)/D of the shard each way) and all-gather
    inside the domain by multicast, all at once on different links and directions. The switch does the work of
    a one-domain NVLS all-reduce (``_nvls``): ``1 + 1/d`` of S each way per GPU, all of S reduced."""
    switch = g.table.system.switch
    if op != "all_reduce":
        raise NotApplicable("nvls_tree is an all-reduce algorithm")
    if not (switch.multicast and switch.in_network_reduction):
        raise NotApplicable(f"{switch.name} has no multicast / in-network reduction")
    if g.domains < 2 or not g.uniform_domains:
        raise NotApplicable("nvls_tree needs two or more NVLink domains with equal GPU counts")
    d, D = len(g.by_domain[0]), g.domains
    cols = np.stack(g.by_domain, axis=1)
    shard = 2.0 * (D - 1) / (d * D)  # bytes / S each GPU sends to (and receives from) its rail peers
    inter = [(row, np.roll(row, -1), np.full(D, shard)) for row in cols]
    phase = _phase(inter, msg=1.0 / d, hops_nv=2, hops_net=2 * math.ceil(math.log2(D)))
    return [
        dataclasses.replace(
            phase, switch_egress=1.0 + 1.0 / d, switch_ingress=1.0 + 1.0 / d, reduce_bytes=1.0, switch_members=g.ranks
        )
    ]


def _rooted(g: Group, op: Op, alg: Algorithm) -> list[Phase]:
    ranks, root = g.ranks, g.ranks[:1]
    others = ranks[1:]
    if alg == "ring":  # pipelined chain through the ring, starting at the root
        chains = [np.roll(r, -int(np.flatnonzero(r == root[0])[0])) for r in g.rings()]
        share = 1.0 / len(chains)
        pairs = [(c[:-1], c[1:], np.full(c.size - 1, share)) for c in chains]
        if op == "reduce":
            pairs = [(d, s, f) for s, d, f in pairs]
        return [_phase(pairs, msg=share, **_hops(g, g.n - 1, g.n - 1))]
    if alg == "tree":
        return _tree(g, op)
    frac = 1.0 if op in ("broadcast", "reduce") else 1.0 / g.n
    to_root = op in ("reduce", "gather")
    pair = (others, np.repeat(root, others.size), np.full(others.size, frac))
    if not to_root:
        pair = (pair[1], pair[0], pair[2])
    return [_phase([pair], msg=frac, **_net_hop(g))]


def _direct(g: Group, op: Op) -> list[Phase]:
    if op == "all_to_all":
        return [_all_pairs(g.ranks, 1.0 / g.n, **_net_hop(g))]
    if op == "send_recv":
        return [_phase([(g.ranks, np.roll(g.ranks, -1), np.ones(g.n))], **_net_hop(g))]
    _needs_one_domain(g, "direct")
    frac = 1.0 if op == "all_reduce" else 1.0 / g.n
    return [_all_pairs(g.ranks, frac, hops_nv=1)]


ALGORITHMS_FOR: dict[Op, tuple[Algorithm, ...]] = {
    "all_reduce": ("ring", "tree", "direct", "two_shot", "recursive", "nvls", "nvls_tree", "hierarchical"),
    "all_gather": ("ring", "direct", "recursive", "nvls", "hierarchical"),
    "reduce_scatter": ("ring", "direct", "recursive", "nvls", "hierarchical"),
    "all_to_all": ("direct",),
    "broadcast": ("ring", "tree", "direct"),
    "reduce": ("ring", "tree", "direct"),
    "send_recv": ("direct",),
    "gather": ("direct",),
    "scatter": ("direct",),
}
_P2P: tuple[Algorithm, ...] = ("direct", "two_shot", "recursive")


def build_plan(op: Op, alg: Algorithm, g: Group) -> Plan:
    """The phases of ``alg`` for ``op`` on group ``g``; raises :class:`NotApplicable` when it does not apply."""
    if alg not in ALGORITHMS_FOR[op]:
        raise NotApplicable(f"{alg} is not an algorithm for {op}; use one of {', '.join(ALGORITHMS_FOR[op])}")
    if g.n < 2:
        raise NotApplicable("a collective needs at least two GPUs")
    phases: list[Phase]
    if alg == "ring" and op in ("all_reduce", "all_gather", "reduce_scatter"):
        steps = 2 * (g.n - 1) if op == "all_reduce" else g.n - 1
        phases = [_ring(g, 1.0 / g.n, steps)]
    elif op in ("broadcast", "reduce", "gather", "scatter"):
        phases = _rooted(g, op, alg)
    elif alg == "tree":
        phases = _tree(g, op)
    elif alg == "direct":
        phases = _direct(g, op)
    elif alg == "two_shot":
        _needs_one_domain(g, "two_shot")
        half = _all_pairs(g.ranks, 1.0 / g.n, hops_nv=1)
        phases = [half, half]
    elif alg == "recursive":
        phases = _recursive(g, op)
    elif alg == "nvls":
        phases = _nvls(g, op)
    elif alg == "nvls_tree":
        phases = _nvls_tree(g, op)
    else:
        phases = _hierarchical(g, op)
    symmetric = op in ("all_reduce", "all_gather", "reduce_scatter")
    regime = "p2p" if alg in _P2P and symmetric else "nvls" if alg in ("nvls", "nvls_tree") else "nccl"
    return Plan(op, alg, g, tuple(phases), regime)
