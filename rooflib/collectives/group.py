"""A group of GPUs placed on a topology: its nodes, NVLink domains and the rings and trees built over it."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import numpy.typing as npt

from rooflib.topology.links import LinkTable

__all__ = ["Group"]

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Group:
    """``members`` are system GPU indices, in rank order."""

    table: LinkTable
    members: tuple[int, ...]

    @property
    def n(self) -> int:
        return len(self.members)

    @cached_property
    def ranks(self) -> IntArray:
        return np.asarray(self.members, dtype=np.int64)

    @cached_property
    def by_node(self) -> list[IntArray]:
        """Members grouped by node, nodes in order of first appearance."""
        return self._split(self.table.node_of(self.ranks))

    @cached_property
    def by_domain(self) -> list[IntArray]:
        return self._split(self.table.domain_of(self.ranks))

    def _split(self, keys: IntArray) -> list[IntArray]:
        order: dict[int, list[int]] = {}
        for key, g in zip(keys.tolist(), self.members, strict=True):
            order.setdefault(key, []).append(g)
        return [np.asarray(v, dtype=np.int64) for v in order.values()]

    @property
    def nodes(self) -> int:
        return len(self.by_node)

    @property
    def domains(self) -> int:
        return len(self.by_domain)

    @property
    def single_domain(self) -> bool:
        return self.domains == 1

    @property
    def uniform_domains(self) -> bool:
        sizes = {len(d) for d in self.by_domain}
        return len(sizes) == 1

    @property
    def power_of_two(self) -> bool:
        return self.n & (self.n - 1) == 0

    def rings(self) -> list[IntArray]:
        """Rings in the style of NCCL: nodes in order, and one ring per rail on multi-node groups.

        Ring ``c`` enters every node at its ``c``-th member (so rings spread over the NICs); on one node a
        single ring suffices, as every ring loads the links the same.
        """
        if self.nodes == 1:
            return [self.ranks]
        channels = max(1, min(len(nd) for nd in self.by_node))
        if self.table.scale_out:
            channels = min(channels, self.table.rails)
        return [np.concatenate([np.roll(nd, -c) for nd in self.by_node]) for c in range(channels)]

    def node_heads(self, channel: int) -> IntArray:
        """The member of each node that carries inter-node traffic for ``channel``."""
        return np.asarray([nd[channel % len(nd)] for nd in self.by_node], dtype=np.int64)
