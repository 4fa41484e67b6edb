"""Lower a :class:`~rooflib.trace.records.Trace` to a :class:`~rooflib.program.Program`: one program op per
costed piece of each GPU call, on its stream, with the dependencies the program's waits create.

Per call: views and allocations lower to nothing (but the next op's ``host_calls`` counts them: each costs the
host a dispatch, ``HostSpec.view``); host-only calls (no GPU tensor) to nothing; compute ops by
:mod:`rooflib.trace.rules`; communication by :mod:`rooflib.trace.comm`; anything else is ``unmodelled`` with
the bytes it touches, so nothing is dropped silently. Memory-bound pieces that read what an earlier call touched
carry ``l2_warm`` and ``l2_reuse`` (:mod:`rooflib.trace.residency`).

Streams and dependencies:

- an op runs on the stream its call was issued to (``compute`` unless the program used a side stream, see
  :mod:`rooflib.trace.cuda`); stream and event waits become ``deps`` of the next op on the waiting stream;
- a collective (or send/recv) is **synchronous** when it is waited for before any other device work is issued
  (``dist.all_reduce(x)``, or ``async_op=True`` waited at once): it stays on its stream, in order;
- otherwise it is **asynchronous** (work issued between the call and its ``wait()``, or never waited, or issued
  while an earlier asynchronous collective of its group is still in flight): it runs on the group's
  communication stream (``comm`` for the whole world, ``comm.1``, ``comm.2``, ... for other groups, as NCCL
  runs each process group on its own stream), after the work issued before it, and the first op after its
  ``wait()`` on the waiting stream depends on it.

>>> from rooflib.trace.records import Call, TensorMeta, Trace
>>> a, b = TensorMeta((8, 16), "bfloat16", 2, (16, 1), "gpu"), TensorMeta((16, 4), "bfloat16", 2, (4, 1), "gpu")
>>> out = TensorMeta((8, 4), "bfloat16", 2, (4, 1), "gpu")
>>> p = lower(Trace("mm", 1, 0, (Call(0, "aten.mm", args={"self": a, "mat2": b}, outputs=(out,)),)))
>>> p.ops[0].kind, dict(p.ops[0].params)
('gemm', {'m': 8, 'n': 4, 'k': 16, 'batch': 1, 'dtype': 'bf16'})
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from rooflib.program.ir import Program, ProgramBuilder
from rooflib.trace.comm import WAITS, is_comm, lower_comm, pair_p2p
from rooflib.trace.pieces import Context, Piece
from rooflib.trace.records import Call, Group, Trace
from rooflib.trace.residency import mark_warm
from rooflib.trace.rules import lower_compute

__all__ = ["lower", "lower_call"]


def lower_call(call: Call, ctx: Context) -> list[Piece]:
    """The pieces one call costs (empty for views, allocations, waits and host-only work)."""
    if call.name in WAITS:
        return []
    if is_comm(call):
        return lower_comm(call, ctx)
    if call.name == "cuda.synchronize":
        return [Piece("sync", {}, call.name)]
    if not call.on_gpu:
        return []
    return lower_compute(call, ctx)


def _comm_streams(trace: Trace) -> dict[tuple[int, ...], str]:
    """``comm`` for the whole world's group, ``comm.1``, ``comm.2``, ... for the others in order of first use."""
    names: dict[tuple[int, ...], str] = {tuple(range(trace.world)): "comm"}
    for call in trace.calls:
        if is_comm(call):
            group = call.arg("process_group", call.arg("group"))
            if isinstance(group, Group) and group.ranks not in names:
                names[group.ranks] = f"comm.{len(names)}"
    return names


@dataclass
class _State:
    """Where the lowering stands: the ops emitted so far and what each stream waits for."""

    builder: ProgramBuilder
    streams: list[str] = field(default_factory=list)  # stream of each emitted op
    kinds: list[str] = field(default_factory=list)  # kind of each emitted op
    last: dict[str, int] = field(default_factory=dict)  # last op of each stream
    pending: dict[str, set[int]] = field(default_factory=dict)  # ops the next op of a stream waits for
    anchor: dict[int, int] = field(default_factory=dict)  # call -> last op of its stream at that call
    op_of: dict[int, int] = field(default_factory=dict)  # call -> the (last) op it emitted
    host_calls: int = 0  # GPU calls since the last op that launched nothing (views, splits, empty)
    host_extra: list[str] = field(default_factory=list)  # host-only Python work since the last op (python.*)

    def synced(self) -> bool:
        """Whether the last op emitted is a host sync (a second sync right after it waits for nothing)."""
        return bool(self.kinds) and self.kinds[-1] == "sync"

    def emit(self, piece: Piece, stream: str, deps: set[int]) -> int:
        after = sorted(d for d in deps if self.streams[d] != stream)
        params = {**piece.params, "host_calls": self.host_calls} if self.host_calls else dict(piece.params)
        if self.host_extra:
            params["host_extra"] = tuple(self.host_extra)
        self.host_calls, self.host_extra = 0, []
        index = self.builder.add(piece.kind, params, name=piece.name, stream=stream, after=after, host=piece.host)
        self.streams.append(stream)
        self.kinds.append(piece.kind)
        self.last[stream] = index
        return index


def _wait_of(calls: tuple[Call, ...], alias: dict[int, int]) -> dict[int, int]:
    """``{collective call: its first wait call}``."""
    waits: dict[int, int] = {}
    for call in calls:
        if call.name in WAITS and call.target is not None:
            waits.setdefault(alias.get(call.target, call.target), call.index)
    return waits


def _asynchronous(trace: Trace, pieces: list[list[Piece]], waits: dict[int, int]) -> set[int]:
    """The communication calls that overlap other work (see the module docstring)."""
    out: set[int] = set()
    in_flight: dict[str, set[int]] = {}
    streams = _comm_streams(trace)
    for call in trace.calls:
        i = call.index
        for stream, pending in in_flight.items():  # drop the ones waited for by now
            in_flight[stream] = {c for c in pending if waits.get(c, len(pieces)) > i}
        if not pieces[i] or not is_comm(call) or any(p.kind == "sync" for p in pieces[i]):
            continue
        stream = _stream_of(call, streams)
        end = waits.get(i)
        between = range(i + 1, end if end is not None else len(pieces))
        other_work = any(pieces[j] and not is_comm(trace.calls[j]) for j in between)
        if end is None or other_work or in_flight.get(stream):
            out.add(i)
            in_flight.setdefault(stream, set()).add(i)
    return out


def _stream_of(call: Call, streams: dict[tuple[int, ...], str]) -> str:
    group = call.arg("process_group", call.arg("group"))
    return streams.get(group.ranks, "comm") if isinstance(group, Group) else "comm"


def lower(trace: Trace) -> Program:
    """The program of ``trace`` (see the module docstring)."""
    ctx = Context(trace.world, trace.rank, trace.float32_matmul)
    pieces = mark_warm(trace, [lower_call(call, ctx) for call in trace.calls])
    alias = pair_p2p(pieces, trace.calls)
    waits = _wait_of(trace.calls, alias)
    overlapped = _asynchronous(trace, pieces, waits)
    comm = _comm_streams(trace)
    st = _State(ProgramBuilder(trace.name, trace.world))
    for call in trace.calls:
        i, stream = call.index, call.stream
        if not pieces[i] and call.on_gpu and call.name not in WAITS and not is_comm(call):
            st.host_calls += 1
        elif call.name.startswith("python."):
            st.host_extra.append(call.name)
        waiting = st.pending.setdefault(stream, set())
        waiting.update(st.anchor[j] for j in call.after if j in st.anchor)
        if call.name in WAITS and call.target is not None:
            target = alias.get(call.target, call.target)
            if target in overlapped and target in st.op_of:
                waiting.add(st.op_of[target])
        if i in overlapped:
            side = _stream_of(call, comm)
            deps = set(waiting) | ({st.last[stream]} if stream in st.last else set())
            for piece in pieces[i]:
                st.op_of[i] = st.emit(piece, side, deps)
                deps = set()
        else:
            for piece in pieces[i]:
                if piece.kind == "sync" and st.synced() and "host_op" not in piece.params:
                    continue  # the host already waits for the device (.tolist() reads element by element)
                st.op_of[i] = st.emit(piece, stream, waiting)
                waiting = st.pending[stream] = set()
        if stream in st.last:
            st.anchor[i] = st.last[stream]
    return replace(st.builder.build(), source=trace.source)
