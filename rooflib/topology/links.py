"""The link table of a system: every directed link with its bandwidth, latency and class, addressed by arithmetic.

Links are numbered in blocks so that routing is index arithmetic on numpy arrays (no graph search, no
O(N^2) structures), which keeps a 16,384-GPU cluster cheap. The blocks, for G GPUs and P switch planes:

- ``nv_up[g, p]`` / ``nv_down[g, p]``: GPU g to / from NVSwitch plane p of its domain (or rack);
- ``rack_up[r, p]`` / ``rack_down[r, p]``: rack r's plane-p switch to / from the second NVLink tier;
- ``pcie_up[g]`` / ``pcie_down[g]``: GPU g to / from its NIC (GPUDirect RDMA over PCIe);
- ``nic_up[g]`` / ``nic_down[g]``: NIC to / from its rail leaf switch;
- ``leaf_up[u, r]`` / ``leaf_down[u, r]``: leaf of scalable unit u on rail r to / from rail r's spines
  (the spine layer of a rail is one aggregated node; ECMP spreads flows evenly over its switches).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from rooflib.errors import GroupError
from rooflib.specs.resolve import System

__all__ = ["LINK_CLASSES", "LinkTable"]

LINK_CLASSES = ("nvlink", "pcie", "ib")
NV, PCIE, IB = 0, 1, 2

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class _Block:
    start: int
    size: int
    cls: int
    name: str


class LinkTable:
    """Directed links of one system as flat arrays, with index helpers for each block."""

    def __init__(self, system: System) -> None:
        self.system = system
        spec = system.spec
        su = spec.scale_up
        self.gpus = system.gpus
        self.planes = su.planes
        self.per_node = spec.gpus_per_node
        self.domain = min(su.domain_gpus, self.gpus)
        self.rack = su.racks.gpus_per_rack if su.racks is not None else self.domain
        self.rack = min(self.rack, self.gpus)
        self.racks = -(-self.gpus // self.rack)
        self.has_rack_tier = su.racks is not None and self.racks > 1
        link_bw = system.link.per_link_bandwidth.value
        lpp = np.asarray(su.links_per_plane, dtype=np.float64)
        self.plane_share = lpp / lpp.sum()
        plane_bw = lpp * link_bw

        blocks: list[_Block] = []
        bw: list[FloatArray] = []
        lat: list[FloatArray] = []

        def add(name: str, size: int, cls: int, bandwidth: FloatArray | float, latency: float) -> _Block:
            start = blocks[-1].start + blocks[-1].size if blocks else 0
            block = _Block(start, size, cls, name)
            blocks.append(block)
            bw.append(np.broadcast_to(np.asarray(bandwidth, dtype=np.float64), (size,)).copy())
            lat.append(np.full(size, latency))
            return block

        G, P = self.gpus, self.planes
        nv_lat = system.link.latency.value / 2 + system.switch.latency.value / 2
        self.nv_up = add("nv_up", G * P, NV, np.tile(plane_bw, G), nv_lat)
        self.nv_down = add("nv_down", G * P, NV, np.tile(plane_bw, G), nv_lat)
        if self.has_rack_tier:
            assert su.racks is not None
            up_bw = plane_bw * self.rack * su.racks.uplink_fraction.value
            tier_lat = su.racks.latency.value / 2
            self.rack_up = add("rack_up", self.racks * P, NV, np.tile(up_bw, self.racks), tier_lat)
            self.rack_down = add("rack_down", self.racks * P, NV, np.tile(up_bw, self.racks), tier_lat)
        so = spec.scale_out
        self.scale_out = so is not None and self.gpus > self.domain
        self.rails, self.gpus_per_nic, self.nodes_per_unit, self.units = 1, self.per_node, system.nodes, 1
        if so is not None and self.scale_out:
            assert system.nic is not None and system.host_link is not None
            if self.per_node % so.nics_per_node:
                raise GroupError(f"{spec.name}: gpus_per_node {self.per_node} not a multiple of nics_per_node")
            self.rails = so.nics_per_node
            self.gpus_per_nic = self.per_node // so.nics_per_node
            self.nodes_per_unit = so.nodes_per_leaf
            self.units = -(-system.nodes // so.nodes_per_leaf)
            radix = int(system.nic.switch_radix.value)
            if self.units > radix:
                raise GroupError(
                    f"{spec.name}: {system.nodes} nodes need {self.units} leaf switches per rail, more than a "
                    f"two-tier fat tree of radix-{radix} switches joins; a third tier is not modelled"
                )
            port = system.nic.port_bandwidth.value
            host = system.host_link.bandwidth.value
            ib_lat = system.nic.latency.value / 2
            spine_lat = system.nic.switch_latency.value
            self.pcie_up = add("pcie_up", G, PCIE, host, system.host_link.latency.value / 2)
            self.pcie_down = add("pcie_down", G, PCIE, host, system.host_link.latency.value / 2)
            n_nic = system.nodes * self.rails
            self.nic_up = add("nic_up", n_nic, IB, port, ib_lat)
            self.nic_down = add("nic_down", n_nic, IB, port, ib_lat)
            # a leaf sees one NIC of its rail per node of its scalable unit
            uplink = so.nodes_per_leaf * port / so.oversubscription
            n_leaf = self.units * self.rails
            self.leaf_up = add("leaf_up", n_leaf, IB, uplink, spine_lat)
            self.leaf_down = add("leaf_down", n_leaf, IB, uplink, spine_lat)
        self.blocks = tuple(blocks)
        self.bandwidth: FloatArray = np.concatenate(bw) if bw else np.zeros(0)
        self.latency: FloatArray = np.concatenate(lat) if lat else np.zeros(0)
        self.cls: IntArray = np.concatenate([np.full(b.size, b.cls, dtype=np.int64) for b in blocks])
        self.size = int(self.bandwidth.size)

    # --- placement -------------------------------------------------------------------------------
    def domain_of(self, g: IntArray) -> IntArray:
        return g // self.domain

    def rack_of(self, g: IntArray) -> IntArray:
        return g // self.rack

    def node_of(self, g: IntArray) -> IntArray:
        return g // self.per_node

    def rail_of(self, g: IntArray) -> IntArray:
        return (g % self.per_node) // self.gpus_per_nic

    def unit_of(self, g: IntArray) -> IntArray:
        return self.node_of(g) // self.nodes_per_unit

    def nic_of(self, g: IntArray) -> IntArray:
        return self.node_of(g) * self.rails + self.rail_of(g)

    # --- names, for the graph and for reports ---------------------------------------------------
    def endpoints(self, link: int) -> tuple[str, str]:
        """``(from, to)`` node names of link ``link``."""
        for b in self.blocks:
            if b.start <= link < b.start + b.size:
                i = link - b.start
                return self._names(b.name, i)
        raise IndexError(link)

    def _switch(self, g: int, p: int) -> str:
        if self.has_rack_tier:
            return f"rack{g // self.rack}/nvswitch{p}"
        return f"domain{g // self.domain}/nvswitch{p}"

    def _names(self, block: str, i: int) -> tuple[str, str]:
        P = self.planes
        if block in ("nv_up", "nv_down"):
            g, p = divmod(i, P)
            pair = (f"gpu{g}", self._switch(g, p))
        elif block in ("rack_up", "rack_down"):
            r, p = divmod(i, P)
            d = r * self.rack // self.domain
            pair = (f"rack{r}/nvswitch{p}", f"domain{d}/spine{p}")
        elif block in ("pcie_up", "pcie_down"):
            pair = (f"gpu{i}", f"nic{i // self.gpus_per_nic * self.gpus_per_nic}")
        elif block in ("nic_up", "nic_down"):
            g = (i // self.rails) * self.per_node + (i % self.rails) * self.gpus_per_nic
            unit = g // self.per_node // self.nodes_per_unit
            pair = (f"nic{g}", f"unit{unit}/leaf{i % self.rails}")
        else:
            u, r = divmod(i, self.rails)
            pair = (f"unit{u}/leaf{r}", f"rail{r}/spine")
        return pair if block.endswith("up") else (pair[1], pair[0])

    def block_of(self, link: int) -> str:
        for b in self.blocks:
            if b.start <= link < b.start + b.size:
                return b.name
        raise IndexError(link)
