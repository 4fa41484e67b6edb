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


def _add_nvlink(t: LinkTable, loads: FloatArray, s: IntArray, d: IntArray, w: FloatArray) -> None:
    """Add NVLink-domain transfers to ``loads``: a GPU's plane links carry its total traffic split by plane share,
    so only per-GPU (and per-rack) totals are needed: O(transfers) with one ``bincount`` per direction."""
    if s.size == 0:
        return
    P = t.planes
    egress = np.bincount(s, weights=w, minlength=t.gpus)
    ingress = np.bincount(d, weights=w, minlength=t.gpus)
    loads[t.nv_up.start : t.nv_up.start + t.gpus * P] += np.outer(egress, t.plane_share).ravel()
    loads[t.nv_down.start : t.nv_down.start + t.gpus * P] += np.outer(ingress, t.plane_share).ravel()
    if t.has_rack_tier:
        cross = t.rack_of(s) != t.rack_of(d)
        if cross.any():
            up = np.bincount(t.rack_of(s[cross]), weights=w[cross], minlength=t.racks)
            down = np.bincount(t.rack_of(d[cross]), weights=w[cross], minlength=t.racks)
            loads[t.rack_up.start : t.rack_up.start + t.racks * P] += np.outer(up, t.plane_share).ravel()
            loads[t.rack_down.start : t.rack_down.start + t.racks * P] += np.outer(down, t.plane_share).ravel()


def _relay(t: LinkTable, s: IntArray, d: IntArray) -> IntArray:
    """The GPU on the source node attached to the destination's rail (the source itself when it is)."""
    rail = t.rail_of(d)
    first = t.node_of(s) * t.per_node + rail * t.gpus_per_nic
    on_rail = t.rail_of(s) == rail
    return np.where(on_rail, s, first)


def _add_network(t: LinkTable, loads: FloatArray, s: IntArray, d: IntArray, w: FloatArray) -> None:
    if s.size == 0:
        return
    if not t.scale_out:
        raise GroupError(f"system {t.system.name!r} has no scale-out network between its NVLink domains")
    via = _relay(t, s, d)
    hop = via != s
    _add_nvlink(t, loads, s[hop], via[hop], w[hop])
    rail = t.rail_of(d)
    pieces = [
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
    idx = np.concatenate([p[0] for p in pieces])
    weights = np.concatenate([p[1] for p in pieces])
    loads += np.bincount(idx, weights=weights, minlength=t.size)


def link_loads(t: LinkTable, src: npt.ArrayLike, dst: npt.ArrayLike, nbytes: npt.ArrayLike) -> FloatArray:
    """Bytes carried by every link when each ``src[i]`` sends ``nbytes[i]`` to ``dst[i]`` (arrays broadcast).

    >>> # loads = link_loads(table, [0, 1], [1, 0], 1.0)   # one byte each way between GPUs 0 and 1
    """
    s, d, w = _as_arrays(src, dst, nbytes)
    if s.size and (min(s.min(), d.min()) < 0 or max(s.max(), d.max()) >= t.gpus):
        raise GroupError(f"GPU index outside system {t.system.name!r} (0..{t.gpus - 1})")
    loads = np.zeros(t.size)
    local = t.domain_of(s) == t.domain_of(d)
    _add_nvlink(t, loads, s[local], d[local], w[local])
    _add_network(t, loads, s[~local], d[~local], w[~local])
    return loads


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
