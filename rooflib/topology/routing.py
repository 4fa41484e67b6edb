"""Routing of GPU-to-GPU transfers onto the link table, vectorised over transfers.

Inside an NVLink domain a transfer is split over the switch planes in proportion to each plane's links (NCCL
and the copy engines spread traffic over all NVLinks). Between domains it leaves through the NIC on the
destination's rail; if the source GPU sits on another rail, the bytes first cross NVLink to the GPU of the
source node on that rail (NCCL's PXN), then go NIC -> leaf -> [rail spine -> leaf] -> NIC -> GPU.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from rooflib.errors import GroupError
from rooflib.topology.links import LinkTable

__all__ = ["link_loads", "path_latency", "same_domain"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def _as_arrays(src: npt.ArrayLike, dst: npt.ArrayLike, nbytes: npt.ArrayLike) -> tuple[IntArray, IntArray, FloatArray]:
    s, d, w = np.broadcast_arrays(
        np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64), np.asarray(nbytes, dtype=np.float64)
    )
    keep = s != d
    return s[keep].ravel(), d[keep].ravel(), w[keep].ravel()


def same_domain(t: LinkTable, src: npt.ArrayLike, dst: npt.ArrayLike) -> npt.NDArray[np.bool_]:
    """True where the two GPUs share an NVLink domain."""
    return np.asarray(t.domain_of(np.asarray(src)) == t.domain_of(np.asarray(dst)))


def _nvlink_pieces(t: LinkTable, s: IntArray, d: IntArray, w: FloatArray) -> list[tuple[IntArray, FloatArray]]:
    pieces: list[tuple[IntArray, FloatArray]] = []
    if s.size == 0:
        return pieces
    P = t.planes
    cross_rack = t.rack_of(s) != t.rack_of(d) if t.has_rack_tier else None
    for p in range(P):
        wp = w * t.plane_share[p]
        pieces.append((t.nv_up.start + s * P + p, wp))
        pieces.append((t.nv_down.start + d * P + p, wp))
        if cross_rack is not None and cross_rack.any():
            rs, rd, wr = t.rack_of(s[cross_rack]), t.rack_of(d[cross_rack]), wp[cross_rack]
            pieces.append((t.rack_up.start + rs * P + p, wr))
            pieces.append((t.rack_down.start + rd * P + p, wr))
    return pieces


def _relay(t: LinkTable, s: IntArray, d: IntArray) -> IntArray:
    """The GPU on the source node attached to the destination's rail (the source itself when it is)."""
    rail = t.rail_of(d)
    first = t.node_of(s) * t.per_node + rail * t.gpus_per_nic
    on_rail = t.rail_of(s) == rail
    return np.where(on_rail, s, first)


def _network_pieces(t: LinkTable, s: IntArray, d: IntArray, w: FloatArray) -> list[tuple[IntArray, FloatArray]]:
    if s.size == 0:
        return []
    if not t.scale_out:
        raise GroupError(f"system {t.system.name!r} has no scale-out network between its NVLink domains")
    via = _relay(t, s, d)
    hop = via != s
    pieces = _nvlink_pieces(t, s[hop], via[hop], w[hop])
    rail = t.rail_of(d)
    pieces += [
        (t.pcie_up.start + via, w),
        (t.nic_up.start + t.nic_of(via), w),
        (t.nic_down.start + t.nic_of(d), w),
        (t.pcie_down.start + d, w),
    ]
    us, ud = t.unit_of(s), t.unit_of(d)
    spine = us != ud
    if spine.any():
        pieces.append((t.leaf_up.start + us[spine] * t.rails + rail[spine], w[spine]))
        pieces.append((t.leaf_down.start + ud[spine] * t.rails + rail[spine], w[spine]))
    return pieces


def link_loads(t: LinkTable, src: npt.ArrayLike, dst: npt.ArrayLike, nbytes: npt.ArrayLike) -> FloatArray:
    """Bytes carried by every link when each ``src[i]`` sends ``nbytes[i]`` to ``dst[i]`` (arrays broadcast).

    >>> # loads = link_loads(table, [0, 1], [1, 0], 1.0)   # one byte each way between GPUs 0 and 1
    """
    s, d, w = _as_arrays(src, dst, nbytes)
    if s.size and (min(s.min(), d.min()) < 0 or max(s.max(), d.max()) >= t.gpus):
        raise GroupError(f"GPU index outside system {t.system.name!r} (0..{t.gpus - 1})")
    local = t.domain_of(s) == t.domain_of(d)
    pieces = _nvlink_pieces(t, s[local], d[local], w[local])
    pieces += _network_pieces(t, s[~local], d[~local], w[~local])
    if not pieces:
        return np.zeros(t.size)
    idx = np.concatenate([p[0] for p in pieces])
    weights = np.concatenate([p[1] for p in pieces])
    return np.asarray(np.bincount(idx, weights=weights, minlength=t.size), dtype=np.float64)


def path_latency(t: LinkTable, src: npt.ArrayLike, dst: npt.ArrayLike) -> FloatArray:
    """One-way small-message latency of each transfer: the sum of its links' latencies (one plane's path)."""
    s = np.atleast_1d(np.asarray(src, dtype=np.int64))
    d = np.atleast_1d(np.asarray(dst, dtype=np.int64))
    s, d = np.broadcast_arrays(s, d)
    out = np.zeros(s.shape)
    lat = t.latency
    nv = lat[t.nv_up.start] + lat[t.nv_down.start]
    local = t.domain_of(s) == t.domain_of(d)
    out[local & (s != d)] = nv
    if t.has_rack_tier:
        out[local & (t.rack_of(s) != t.rack_of(d))] += lat[t.rack_up.start] + lat[t.rack_down.start]
    remote = ~local
    if remote.any():
        if not t.scale_out:
            raise GroupError(f"system {t.system.name!r} has no scale-out network between its NVLink domains")
        net = lat[t.pcie_up.start] + lat[t.nic_up.start] + lat[t.nic_down.start] + lat[t.pcie_down.start]
        out[remote] = net
        relay = _relay(t, s[remote], d[remote]) != s[remote]
        out[np.flatnonzero(remote)[relay]] += nv
        spine = t.unit_of(s[remote]) != t.unit_of(d[remote])
        out[np.flatnonzero(remote)[spine]] += lat[t.leaf_up.start] + lat[t.leaf_down.start]
    return out
