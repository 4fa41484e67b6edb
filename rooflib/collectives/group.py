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

    def channels(self) -> int:
        """Parallel rings (or tree pairs) the library builds across NVLink domains, as NCCL does: one per member
        of the smallest domain, at most one per NIC the domain's members reach (each channel leaves a domain
        through its own NIC), capped by the library's ``max_channels``."""
        if self.single_domain:
            return 1
        count = min(len(d) for d in self.by_domain)
        if self.table.scale_out:
            nics = min(int(np.unique(self.table.nic_of(d)).size) for d in self.by_domain)
            count = min(count, nics)
        cap = self.table.system.library.max_channels
        return max(1, min(count, int(cap.value))) if cap is not None else max(1, count)

    def rings(self) -> list[IntArray]:
        """Rings in the style of NCCL: NVLink domains in order, one ring per channel on multi-domain groups.

        Ring ``c`` enters every domain at a different member (``c`` times the domain's size over the channel
        count), so the rings leave each domain through different GPUs and NICs; inside one domain a single ring
        suffices, as every ring loads the switch links the same.
        """
        if self.single_domain:
            return [self.ranks]
        channels = self.channels()
        out = []
        for c in range(channels):
            out.append(np.concatenate([np.roll(d, -(c * len(d) // channels)) for d in self.by_domain]))
        return out

    def domain_heads(self, channel: int) -> IntArray:
        """The member of each domain that carries inter-domain traffic for ``channel``."""
        channels = self.channels()
        return np.asarray([d[(channel * len(d) // channels) % len(d)] for d in self.by_domain], dtype=np.int64)
