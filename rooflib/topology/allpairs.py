"""Exact link loads of uniform all-pairs traffic without listing the pairs (O(GPUs), not O(GPUs^2)).

Every member sends ``w`` bytes to every other member (all-to-all, one-shot all-reduce). Routing is the same as
:func:`rooflib.topology.routing.link_loads`; the loads follow from counts of members per domain, rack, node,
scalable unit and rail:

- NVLink egress of ``s``: ``w x`` (peers in its domain) ``+ w x`` (peers in other domains on other rails, relayed
  over NVLink to the GPU of ``s``'s node on the destination's rail, NCCL's PXN); ingress likewise, the relay GPU
  receiving its node's traffic for its rail;
- NIC and PCIe up of node ``n``'s rail-``r`` GPU: ``w x`` (members on ``n``) ``x`` (members on rail ``r`` outside
  ``s``'s domain); down at a destination: ``w x`` (members outside its domain);
- rail-``r`` leaf uplink of unit ``u``: ``w x`` (members in ``u``) ``x`` (members on rail ``r`` outside ``u``).

``tests/topology/test_allpairs.py`` checks it against routing every pair on groups of up to a few hundred GPUs.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from rooflib.topology.links import LinkTable

__all__ = ["all_pairs_loads"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def _count(keys: IntArray, size: int) -> FloatArray:
    return np.bincount(keys, minlength=size).astype(np.float64)


def _nvlink(t: LinkTable, loads: FloatArray, egress: FloatArray, ingress: FloatArray) -> None:
    P = t.planes
    loads[t.nv_up.start : t.nv_up.start + t.gpus * P] += np.outer(egress, t.plane_share).ravel()
    loads[t.nv_down.start : t.nv_down.start + t.gpus * P] += np.outer(ingress, t.plane_share).ravel()


def all_pairs_loads(t: LinkTable, members: npt.ArrayLike, w: float) -> FloatArray:
    """Bytes on every link when each of ``members`` sends ``w`` bytes to each other member."""
    m = np.unique(np.asarray(members, dtype=np.int64))
    loads = np.zeros(t.size)
    if m.size < 2:
        return loads
    n_dom = int(t.domain_of(np.asarray([t.gpus - 1]))[0]) + 1
    dom = t.domain_of(m)
    per_dom = _count(dom, n_dom)
    egress = np.zeros(t.gpus)
    ingress = np.zeros(t.gpus)
    egress[m] = ingress[m] = w * (per_dom[dom] - 1)  # peers inside the domain
    if t.has_rack_tier:
        rack = t.rack_of(m)
        per_rack = _count(rack, t.racks)
        # a rack's members each reach the domain's members outside the rack
        out_rack = np.zeros(t.racks)
        np.add.at(out_rack, rack, w * (per_dom[dom] - per_rack[rack]))
        P = t.planes
        loads[t.rack_up.start : t.rack_up.start + t.racks * P] += np.outer(out_rack, t.plane_share).ravel()
        loads[t.rack_down.start : t.rack_down.start + t.racks * P] += np.outer(out_rack, t.plane_share).ravel()
    if n_dom > 1 and (per_dom > 0).sum() > 1:
        _network(t, loads, m, dom, per_dom, egress, ingress, w)
    _nvlink(t, loads, egress, ingress)
    return loads


def _network(
    t: LinkTable,
    loads: FloatArray,
    m: IntArray,
    dom: IntArray,
    per_dom: FloatArray,
    egress: FloatArray,
    ingress: FloatArray,
    w: float,
) -> None:
    rails = t.rails
    rail = t.rail_of(m)
    node = t.node_of(m)
    unit = t.unit_of(m)
    n_nodes, n_units = t.system.nodes, t.units
    per_rail = _count(rail, rails)
    dom_rail = np.zeros((per_dom.size, rails))
    np.add.at(dom_rail, (dom, rail), 1.0)
    # destinations on rail r outside a member's domain
    away_on_rail = per_rail[None, :] - dom_rail[dom]  # shape (members, rails)
    away = m.size - per_dom[dom]
    # PXN relay over NVLink: to every remote destination on another rail
    relayed = away - away_on_rail[np.arange(m.size), rail]
    egress[m] += w * relayed
    node_rail_relay = np.zeros((n_nodes, rails))  # bytes the node's rail-r GPU receives to forward
    for r in range(rails):
        mask = rail != r
        np.add.at(node_rail_relay[:, r], node[mask], w * away_on_rail[mask, r])
    relay_gpu = (np.arange(n_nodes)[:, None] * t.per_node + np.arange(rails)[None, :] * t.gpus_per_nic).ravel()
    ingress[relay_gpu] += node_rail_relay.ravel()
    # NIC and PCIe: up at the node's rail GPU (all its node's traffic for that rail), down at each destination
    node_rail_up = np.zeros((n_nodes, rails))
    for r in range(rails):
        np.add.at(node_rail_up[:, r], node, w * away_on_rail[:, r])
    # PCIe up: a source's own-rail traffic leaves through itself, relayed traffic through the rail's first GPU
    np.add.at(loads, t.pcie_up.start + m, w * away_on_rail[np.arange(m.size), rail])
    loads[t.pcie_up.start + relay_gpu] += node_rail_relay.ravel()
    nic = (np.arange(n_nodes)[:, None] * rails + np.arange(rails)[None, :]).ravel()
    loads[t.nic_up.start + nic] += node_rail_up.ravel()
    np.add.at(loads, t.nic_down.start + t.nic_of(m), w * away)
    np.add.at(loads, t.pcie_down.start + m, w * away)
    # spine: from a unit's members to rail-r members outside the unit
    per_unit = _count(unit, n_units)
    unit_rail = np.zeros((n_units, rails))
    np.add.at(unit_rail, (unit, rail), 1.0)
    up = per_unit[:, None] * (per_rail[None, :] - unit_rail)  # members in u x rail-r members outside u
    down = unit_rail * (m.size - per_unit)[:, None]  # rail-r members of u x members outside u
    idx = (np.arange(n_units)[:, None] * rails + np.arange(rails)[None, :]).ravel()
    loads[t.leaf_up.start + idx] += w * up.ravel()
    loads[t.leaf_down.start + idx] += w * down.ravel()
