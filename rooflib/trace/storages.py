"""A number per tensor storage in a trace, in order of first sight: the identity the residency analysis
(:mod:`rooflib.trace.residency`) reads to tell which reads an earlier call left in the L2.

A storage freed and a new one at its address are two storages, so the numbering depends only on the program,
not on where the host's allocator puts things (host tensors, and every tensor of a run with values, are real).
Meta storages are kept alive (at no cost; each fake view of an input then gets the input's one fake storage),
so their addresses never come back. A real storage is taken as freed once every tensor seen on it is gone or on
another storage (``set_``): weak references to the tensors, as a weak reference to the storage itself would
keep its C++ object between the host allocator's blocks and slow a run with values several-fold.
"""

from __future__ import annotations

import weakref
from typing import Any

__all__ = ["StorageNumbers"]

SEEN = 8
"""Weak references kept per real storage (the latest tensors seen on it)."""


def _on(t: Any, key: int) -> bool:
    """Whether tensor ``t`` is alive and still on the storage at address ``key`` (``set_`` moves a tensor)."""
    if t is None:
        return False
    try:
        return int(t.untyped_storage()._cdata) == key
    except (RuntimeError, NotImplementedError, AttributeError):
        return False


class StorageNumbers:
    """The storage numbers of one trace (see the module docstring)."""

    def __init__(self) -> None:
        self._known: dict[int, tuple[int, list[Any] | None]] = {}  # address: (number, its tensors, weakly)
        self._count = 0
        self._keep: list[Any] = []  # the meta storages, alive for the trace

    def number(self, t: Any) -> int:
        """The number of ``t``'s storage (-1 where a tensor has none)."""
        try:
            storage = t.untyped_storage()
            key = int(storage._cdata)
        except (RuntimeError, NotImplementedError, AttributeError):
            return -1
        known = self._known.get(key)
        refs = None if known is None else known[1]
        if refs is not None:  # a real storage: alive while a tensor seen on it is
            live = [r for r in refs if _on(r(), key)]
            if not live:
                known = None
            else:
                if not any(r() is t for r in live):
                    live.append(weakref.ref(t))
                refs[:] = live[-SEEN:]
        if known is None:
            meta = storage.device.type == "meta"
            known = (self._count, None if meta else [weakref.ref(t)])
            self._known[key] = known
            self._count += 1
            if meta:
                self._keep.append(storage)
        return known[0]
