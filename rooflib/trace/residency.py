"""What an op reads that an earlier op of the same trace touched, and how much was touched in between: whether
those bytes can still be in the L2 when it runs (:mod:`rooflib.program.cost` applies the device's measured L2
curves; the program stays device-independent).

Tensors are told apart by storage and place in it (:attr:`~rooflib.trace.records.TensorMeta.storage`,
``offset``, shape and strides). Walking the calls in issue order with a clock of bytes touched (each call's
distinct views, inputs and outputs, once), a call **reads** its GPU inputs except the buffers it writes (a
``copy_`` destination, an ``out=``); where the buffers it writes are all it reads (``add_``), those. A read is
**warm** where an earlier call touched it (wrote or read: both leave lines in the L2): the same view, or a dense
span of the storage around it. Slices of one buffer are not warm for each other (the eight column blocks of a
matrix copied out one by one each come from HBM), and the program's inputs, touched by no call of the trace,
are cold, as PKB's timing makes them (input groups cycled past 3x the L2).

Writes: PyTorch's caching allocator hands an op the block a tensor of that size freed last (in the same call,
or the previous call of the timed loop), whose lines the earlier writes left in the L2; so an op's writes are
warm when one call of the program touches no more than the L2 holds. Every memory-bound piece gets
``l2_warm_out`` (its writes' share of the bytes it moves) and ``l2_reuse_out`` (the bytes one call touches:
:func:`traffic`). Measured (h200/runs/x1-eager-chain): a 2 MiB clone queued eagerly runs 2.64 us against 2.93 us
in a CUDA graph whose 64 calls each keep their own output, and 2.26 us of kernel.

A memory-bound piece (:data:`MEMORY_KINDS`) of a call with warm reads gets ``l2_warm`` (its warm reads' share
of all the bytes it reads and writes, 0-1: a copy from a warm source is 0.5, as its writes still go to HBM in
the end) and ``l2_reuse`` (bytes touched since the oldest warm one was last touched). A call's later pieces (one
ATen op run as several kernels, ``logsumexp``) read what its first piece just read or wrote: ``l2_warm``
:data:`LATER_WARM` with ``l2_reuse`` the bytes the call touches.

>>> from rooflib.trace.records import Call, TensorMeta, Trace
>>> a = TensorMeta((1024,), "float32", 4.0, (1,), "gpu", storage=0)
>>> b = TensorMeta((1024,), "float32", 4.0, (1,), "gpu", storage=1)
>>> c = TensorMeta((1024,), "float32", 4.0, (1,), "gpu", storage=2)
>>> calls = (Call(0, "aten.neg", args={"self": a}, outputs=(b,)), Call(1, "aten.add", args={"self": b, "other": a},
...          outputs=(c,)))
>>> warm_reads(Trace("t", 1, 0, calls), [1, 1])
{1: (0.667, 0.0)}
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rooflib.trace.pieces import Piece
from rooflib.trace.records import TensorMeta, Trace

__all__ = ["MEMORY_KINDS", "mark_warm", "traffic", "warm_reads"]

MEMORY_KINDS = frozenset({"elementwise", "norm", "reduction", "copy"})
"""Piece kinds whose time is their bytes' (the kinds with measured L2 curves)."""


LATER_WARM = 0.5
"""``l2_warm`` of a call's later pieces: what they read (half of what a kernel that reads and writes once moves)
the piece before them just touched."""


def _span(t: TensorMeta) -> tuple[int, int]:
    """The elements a view spans in its storage, first to one past the last."""
    if not t.stride or t.numel == 0:
        return t.offset, t.offset + t.numel
    return t.offset, t.offset + 1 + sum((n - 1) * abs(st) for n, st in zip(t.shape, t.stride, strict=False))


def _dense(t: TensorMeta) -> bool:
    lo, hi = _span(t)
    return hi - lo == t.numel


@dataclass
class _Touched:
    """What calls touched of one storage: dense spans (grouped by length) and exact strided views, with the clock
    of their last touch.

    Spans are grouped by length so that a query scans only the spans longer than itself: a span as long as the
    query covers it only when it is the same span (one dict lookup). A loop over a tensor's slices (a recurrence
    touching ``x[:, t]`` at every step) then costs a lookup per step, not a scan of every slice touched so far."""

    spans: dict[int, dict[tuple[int, int], float]] = field(default_factory=dict)
    views: dict[tuple[int, tuple[int, ...], tuple[int, ...]], float] = field(default_factory=dict)

    def when(self, t: TensorMeta) -> float | None:
        """The clock of the latest touch that covers ``t`` (its exact view, or a dense span around it)."""
        lo, hi = _span(t)
        length = hi - lo
        hits = []
        same = self.spans.get(length)
        if same is not None and (lo, hi) in same:
            hits.append(same[(lo, hi)])
        for span_length, group in self.spans.items():
            if span_length > length:
                hits.extend(c for (a, b), c in group.items() if a <= lo and hi <= b)
        exact = self.views.get((t.offset, t.shape, t.stride))
        if exact is not None:
            hits.append(exact)
        return max(hits) if hits else None

    def touch(self, t: TensorMeta, clock: float) -> None:
        if _dense(t):
            lo, hi = _span(t)
            self.spans.setdefault(hi - lo, {})[(lo, hi)] = clock
        else:
            self.views[(t.offset, t.shape, t.stride)] = clock


def warm_reads(trace: Trace, launched: Sequence[Any]) -> dict[int, tuple[float, float]]:
    """``{call index: (warm share of its reads, bytes touched since the oldest warm read was last touched)}``
    for the calls that launch work (``launched[i]`` truthy) and read something an earlier call touched."""
    clock = 0.0
    seen: dict[int, _Touched] = {}
    out: dict[int, tuple[float, float]] = {}
    for call in trace.calls:
        if not launched[call.index]:
            continue
        ins = [t for t in call.inputs if t.on_gpu]
        outs = [t for t in call.outputs if t.on_gpu]
        written = {t.storage for t in outs}
        reads = [t for t in ins if t.storage not in written] or ins
        total = sum(t.nbytes for t in reads) + sum(t.nbytes for t in outs)
        when = [seen[t.storage].when(t) if t.storage in seen else None for t in reads]
        warm = [(t, c) for t, c in zip(reads, when, strict=True) if c is not None]
        if total > 0 and warm:
            share = sum(t.nbytes for t, _ in warm) / total
            out[call.index] = (round(min(1.0, share), 3), clock - min(c for _, c in warm))
        views = {(t.storage, t.offset, t.shape, t.stride): t for t in ins + outs}
        clock += sum(t.nbytes for t in views.values())
        for t in views.values():
            if t.storage >= 0:
                seen.setdefault(t.storage, _Touched()).touch(t, clock)
    return out


def traffic(trace: Trace, launched: Sequence[Any]) -> float:
    """Bytes one call of the traced function touches (each call's distinct views, inputs and outputs, once)."""
    total = 0.0
    for call in trace.calls:
        if launched[call.index]:
            views = {(t.storage, t.offset, t.shape, t.stride): t for t in (*call.inputs, *call.outputs) if t.on_gpu}
            total += sum(t.nbytes for t in views.values())
    return total


def _write_share(call: Any) -> float:
    """The share of a call's bytes (reads and writes) that are writes."""
    outs = [t for t in call.outputs if t.on_gpu]
    written = {t.storage for t in outs}
    ins = [t for t in call.inputs if t.on_gpu]
    reads = [t for t in ins if t.storage not in written] or ins
    total = sum(t.nbytes for t in reads) + sum(t.nbytes for t in outs)
    return sum(t.nbytes for t in outs) / total if total > 0 else 0.0


def mark_warm(trace: Trace, pieces: Sequence[list[Piece]]) -> list[list[Piece]]:
    """``pieces`` (one list per call) with ``l2_warm`` and ``l2_reuse`` (warm reads), ``l2_warm_out`` and
    ``l2_reuse_out`` (writes into reused blocks) on the memory-bound pieces (module docstring)."""
    warm = warm_reads(trace, pieces)
    loop = round(traffic(trace, pieces))
    out: list[list[Piece]] = []
    for call, own in zip(trace.calls, pieces, strict=True):
        first, marked = True, []
        touched = sum(t.nbytes for t in (*call.inputs, *call.outputs) if t.on_gpu)
        writes = round(_write_share(call), 3)
        for piece in own:
            if piece.kind not in MEMORY_KINDS:
                marked.append(piece)
                continue
            share, reuse = warm.get(call.index, (0.0, 0.0)) if first else (LATER_WARM, touched)
            first = False
            extra: dict[str, float] = {}
            if share > 0:
                extra = {"l2_warm": round(share, 3), "l2_reuse": round(reuse)}
            if writes > 0 and loop > 0:
                extra.update(l2_warm_out=writes, l2_reuse_out=loop)
            if extra:
                piece = replace(piece, params={**piece.params, **extra})
            marked.append(piece)
        out.append(marked)
    return out
