"""Topology: the link table of a system, vectorised routing, queries, and a networkx graph on demand."""

from rooflib.topology.links import LINK_CLASSES, LinkTable
from rooflib.topology.routing import link_loads, path_latency
from rooflib.topology.topology import Topology, topology_of

__all__ = ["LINK_CLASSES", "LinkTable", "Topology", "link_loads", "path_latency", "topology_of"]
