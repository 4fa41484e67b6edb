"""Collective model: algorithms as phases of concurrent transfers, routed over the topology."""

from rooflib.collectives.api import CollectiveResult, LinkLoad, predict_collective
from rooflib.collectives.plans import ALGORITHMS_FOR
from rooflib.conventions import ALGORITHMS, OPS, Algorithm, Op, bandwidths, bus_factor

__all__ = [
    "ALGORITHMS",
    "ALGORITHMS_FOR",
    "OPS",
    "Algorithm",
    "CollectiveResult",
    "LinkLoad",
    "Op",
    "bandwidths",
    "bus_factor",
    "predict_collective",
]
