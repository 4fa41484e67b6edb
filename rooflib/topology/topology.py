"""The topology of a system: link table, routing and queries, and a networkx graph built on demand.

>>> from rooflib.specs import load_system
>>> topo = Topology(load_system("hgx-h100"))
>>> topo.bottleneck(0, 1) / 1e9
450.0
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from rooflib.errors import GroupError
from rooflib.specs.resolve import System
from rooflib.topology.links import LINK_CLASSES, LinkTable
from rooflib.topology.routing import link_loads, path_latency

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["Topology", "topology_of"]


class Topology:
    """GPUs, NVSwitch planes, NICs and InfiniBand switches of a system, with per-direction link bandwidths."""

    def __init__(self, system: System) -> None:
        self.system = system
        self.links = LinkTable(system)

    @property
    def gpus(self) -> int:
        return self.system.gpus

    def _check(self, *gpus: int) -> None:
        for g in gpus:
            if not 0 <= g < self.gpus:
                raise GroupError(f"GPU {g} is outside system {self.system.name!r} (0..{self.gpus - 1})")

    def loads(self, src: npt.ArrayLike, dst: npt.ArrayLike, nbytes: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Bytes on every link for concurrent transfers ``src[i] -> dst[i]`` of ``nbytes[i]`` bytes."""
        return link_loads(self.links, src, dst, nbytes)

    def route(self, src: int, dst: int) -> list[tuple[str, str, float]]:
        """Links used by one transfer as ``(from, to, share of the bytes)``, in link-table order."""
        self._check(src, dst)
        load = self.loads([src], [dst], [1.0])
        return [(*self.links.endpoints(int(i)), float(load[i])) for i in np.flatnonzero(load)]

    def path(self, src: int, dst: int) -> list[str]:
        """One representative node path from ``src`` to ``dst`` (through the first switch plane)."""
        self._check(src, dst)
        if src == dst:
            return [f"gpu{src}"]
        import networkx as nx

        graph = self.subgraph_for(src, dst)
        nodes: list[str] = nx.shortest_path(graph, f"gpu{src}", f"gpu{dst}", weight="hops")
        return nodes

    def bottleneck(self, src: int, dst: int) -> float:
        """Largest rate (B/s, one direction) of a single ``src -> dst`` flow spread over all its paths."""
        self._check(src, dst)
        if src == dst:
            return float("inf")
        load = self.loads([src], [dst], [1.0])
        used = load > 0
        return float(np.min(self.links.bandwidth[used] / load[used]))

    def latency(self, src: int, dst: int) -> float:
        """One-way small-message latency from ``src`` to ``dst`` (s), summed over the links of its path."""
        self._check(src, dst)
        return float(path_latency(self.links, [src], [dst])[0])

    def egress(self, gpu: int) -> dict[str, float]:
        """Raw outgoing bandwidth of one GPU per link class (B/s): NVLink and, with scale-out, its NIC share."""
        self._check(gpu)
        t = self.links
        out = {
            "nvlink": float(t.bandwidth[t.nv_up.start + gpu * t.planes : t.nv_up.start + (gpu + 1) * t.planes].sum())
        }
        if t.scale_out:
            out["pcie"] = float(t.bandwidth[t.pcie_up.start + gpu])
            out["ib"] = float(t.bandwidth[t.nic_up.start + int(t.nic_of(np.asarray([gpu]))[0])]) / t.gpus_per_nic
        return out

    def scale_up_domains(self) -> list[range]:
        """GPU index ranges of the NVLink domains."""
        d = self.links.domain
        return [range(i, min(i + d, self.gpus)) for i in range(0, self.gpus, d)]

    def bisection_bandwidth(self) -> float:
        """Bandwidth (B/s, one direction) with which the first half of the GPUs can send to the second half,
        each GPU to its partner ``g + G/2``, all at once: the limiting links decide."""
        half = self.gpus // 2
        if half == 0:
            return 0.0
        src = np.arange(half)
        load = self.loads(src, src + half, 1.0)
        used = load > 0
        per_flow = float(np.min(self.links.bandwidth[used] / load[used]))
        return per_flow * half

    def class_bandwidth(self) -> dict[str, float]:
        """Total raw bandwidth per link class over the whole system (B/s)."""
        t = self.links
        return {name: float(t.bandwidth[t.cls == i].sum()) for i, name in enumerate(LINK_CLASSES)}

    # --- networkx views ------------------------------------------------------------------------------
    @cached_property
    def graph(self) -> nx.DiGraph:
        """The whole system as a ``networkx.DiGraph`` (edges carry bandwidth, latency, cls, link)."""
        return self._build(range(self.links.size))

    def subgraph_for(self, *gpus: int) -> nx.DiGraph:
        """A graph with only the links that transfers among ``gpus`` (all pairs) can use."""
        g = np.asarray(gpus)
        s, d = np.meshgrid(g, g)
        used = np.flatnonzero(self.loads(s.ravel(), d.ravel(), 1.0))
        return self._build(used)

    def _build(self, link_ids: Sequence[int] | npt.NDArray[np.int64]) -> nx.DiGraph:
        import networkx as nx

        t = self.links
        graph = nx.DiGraph(system=self.system.name)
        for g in range(self.gpus) if len(link_ids) == t.size else ():
            graph.add_node(f"gpu{g}", kind="gpu")
        for i in link_ids:
            a, b = t.endpoints(int(i))
            attrs: dict[str, Any] = {
                "bandwidth": float(t.bandwidth[i]),
                "latency": float(t.latency[i]),
                "cls": LINK_CLASSES[int(t.cls[i])],
                "link": int(i),
                "hops": 1,
            }
            graph.add_edge(a, b, **attrs)
        for node in graph.nodes:
            graph.nodes[node]["kind"] = node.split("/")[-1].rstrip("0123456789")
        return graph


_TOPOLOGIES: weakref.WeakKeyDictionary[System, Topology] = weakref.WeakKeyDictionary()


def topology_of(system: System) -> Topology:
    """The topology of ``system``, built once per system object and cached."""
    topo = _TOPOLOGIES.get(system)
    if topo is None:
        topo = _TOPOLOGIES[system] = Topology(system)
    return topo
