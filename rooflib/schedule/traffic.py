"""Bytes per GPU of a stage's communication, inside NVLink domains and across the network, and their lower bound.

A group of ``n`` GPUs spans ``D`` NVLink domains with ``d`` of its GPUs each. A fused kernel that uses the
hierarchy moves, per GPU (S the nccl-tests size):

- reduce-scatter, all-gather: NVLink ``(d-1)/d S``; network ``(D-1)/D S/d`` (on rails, after the domain's
  reduction);
- all-reduce: NVLink ``2(d-1)/d S``, or ``(d+1)/d S`` with NVSwitch reduction; network ``2(D-1)/D S/d``;
- all-to-all: NVLink ``(d-1)/n S``; network ``(n-d)/n S``;
- send/recv, broadcast, reduce: NVLink ``S``; network ``S/d`` (the crossing spread over the domain's NICs);
- gather, scatter: NVLink ``(d-1)/n S``; network ``(n-d)/n S/d`` (the root's domain).

With domains of unequal size the network column takes the smallest domain's ``d`` (its NICs are the fewest),
and for gather and scatter the largest (the root's domain is at most that big), so it stays a lower bound.

The NVLink and network columns add up to the flat algorithm's ``direct_egress`` (all-reduce:
``2(d-1)/d + 2(D-1)/(D d) = 2(n-1)/n``), and the network column is the least any algorithm can send across
domains when each domain's GPUs use their own NICs (Patarasuk and Yuan, "Bandwidth optimal all-reduce
algorithms for clusters of workstations", JPDC 2009, applied to domains). The communication lower bound of a
stage is therefore ``max(network / B_net, direct_egress / (B_nv + B_net))``: the network part cannot go faster
than the NICs, and no split of the rest between NVLink and NICs moves the bytes faster than both together.
"""

from __future__ import annotations

from dataclasses import dataclass

from rooflib.conventions import Op
from rooflib.schedule.stage import direct_egress

__all__ = ["Traffic", "comm_lower_bound", "fused_traffic"]


@dataclass(frozen=True)
class Traffic:
    """Bytes one GPU sends inside its NVLink domain (``nvlink``) and through its NIC (``network``)."""

    nvlink: float
    network: float


def _network(op: Op, nbytes: float, n: int, sizes: list[int]) -> float:
    domains, d, big = len(sizes), min(sizes), max(sizes)
    if domains < 2:
        return 0.0
    if op == "all_reduce":
        return 2.0 * (domains - 1) / domains * nbytes / d
    if op in ("reduce_scatter", "all_gather"):
        return (domains - 1) / domains * nbytes / d
    if op == "all_to_all":
        return (n - d) / n * nbytes
    if op in ("gather", "scatter"):  # the root's domain (at most the largest) sends or receives the rest
        return (n - big) / n * nbytes / big
    return nbytes / d  # send/recv, broadcast, reduce: the crossing spread over the domain's NICs


def fused_traffic(op: Op, nbytes: float, n: int, sizes: list[int], *, switch: bool = False) -> Traffic:
    """Per-GPU bytes of a hierarchical fused kernel for ``op`` of size ``nbytes`` on ``n`` GPUs whose NVLink
    domains hold ``sizes`` of them; ``switch``: NVSwitch reduction inside the domain (all-reduce only)."""
    if n < 2:
        return Traffic(0.0, 0.0)
    if len(sizes) < 2:
        return Traffic(direct_egress(op, nbytes, n, switch=switch), 0.0)
    big = max(sizes)
    if op == "all_to_all":
        nv = (big - 1) / n * nbytes
    elif op in ("gather", "scatter"):
        nv = (big - 1) / n * nbytes
    else:
        nv = direct_egress(op, nbytes, big, switch=switch) if big > 1 else 0.0
    return Traffic(nv, _network(op, nbytes, n, sizes))


def comm_lower_bound(
    op: Op, nbytes: float, n: int, sizes: list[int], *, nvlink_bps: float, network_bps: float, switch: bool
) -> float:
    """Seconds no implementation of ``op`` can beat: the network share at the raw NIC rate, and all bytes at
    NVLink and NIC together (see the module docstring); ``switch``: NVSwitch reduction exists."""
    if n < 2:
        return 0.0
    least = direct_egress(op, nbytes, n)
    if switch:
        least = min(least, direct_egress(op, nbytes, n, switch=True))
    if len(sizes) < 2:
        return least / nvlink_bps
    net = _network(op, nbytes, n, sizes)
    return max(net / network_bps, least / (nvlink_bps + network_bps))
