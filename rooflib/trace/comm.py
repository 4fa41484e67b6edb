"""Lowering rules for communication: c10d and functional collectives -> ``collective`` and ``send_recv`` ops.

Sizes follow nccl-tests (:mod:`rooflib.conventions`): all-reduce, broadcast and reduce: the buffer;
all-gather: the OUTPUT (every rank's part); reduce-scatter: the INPUT; all-to-all: the rank's buffer, with
variable splits the larger of what the rank sends and receives in all; gather and scatter: the gathered (or
scattered) whole. Coalesced calls are one op of their total.

=========================  ===========================================================================
collective                 c10d (``torch.distributed``)                 functional (``_c10d_functional``)
=========================  ===========================================================================
all_reduce                 allreduce_, allreduce_coalesced_             all_reduce(_), all_reduce_coalesced(_)
all_gather                 allgather_, _allgather_base_,                all_gather_into_tensor(_out, _coalesced)
                           allgather_coalesced_,
                           allgather_into_tensor_coalesced_
reduce_scatter             reduce_scatter_, _reduce_scatter_base_,      reduce_scatter_tensor(_out, _coalesced)
                           reduce_scatter_tensor_coalesced_
all_to_all                 alltoall_, alltoall_base_                    all_to_all_single
broadcast, reduce          broadcast_, reduce_                          broadcast(_)
gather, scatter            gather_, scatter_
send_recv                  send, recv_ (``isend``, ``irecv``,           isend, irecv, batch_p2p_ops
                           ``batch_isend_irecv``)
barrier                    barrier, monitored_barrier_: a 4-byte all-reduce and a host sync (what NCCL's
                           barrier does)
=========================  ===========================================================================

A send to rank ``r + k`` and a receive from rank ``r - k`` next to each other are one SPMD transfer (every rank
sends ``k`` ranks on): they lower to one ``send_recv`` op with ``offset = k`` (see :func:`pair_p2p`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rooflib.trace.pieces import Context, Piece
from rooflib.trace.records import Call, Group, tensors_in

__all__ = ["COLLECTIVES", "P2P", "is_comm", "lower_comm", "pair_p2p"]

Size = Callable[[Call], float]


def _sum(*names: str) -> Size:
    def size(call: Call) -> float:
        return sum(t.nbytes for n in names for t in tensors_in(call.arg(n)))

    return size


def _outputs(call: Call) -> float:
    out = call.arg("out")
    return sum(t.nbytes for t in tensors_in(out)) if out is not None else sum(t.nbytes for t in call.outputs)


def _functional_input(call: Call) -> float:
    return sum(t.nbytes for t in tensors_in((call.arg("input"), call.arg("inputs"))))


def _larger(send: Size, recv: Size) -> Size:
    def size(call: Call) -> float:
        return max(send(call), recv(call))

    return size


def _whole(part: Size) -> Size:
    def size(call: Call) -> float:
        group = _group(call)
        return part(call) * (group.size if group is not None else 1)

    return size


_C = "c10d."
_F = "_c10d_functional."
_FA = "_c10d_functional_autograd."
COLLECTIVES: dict[str, tuple[str, Size]] = {
    _C + "allreduce_": ("all_reduce", _sum("tensors")),
    _C + "allreduce_coalesced_": ("all_reduce", _sum("tensors")),
    _C + "allgather_": ("all_gather", _sum("output_tensors")),
    _C + "_allgather_base_": ("all_gather", _sum("output_tensor")),
    _C + "allgather_coalesced_": ("all_gather", _sum("output_lists")),
    _C + "allgather_into_tensor_coalesced_": ("all_gather", _sum("outputs")),
    _C + "reduce_scatter_": ("reduce_scatter", _sum("input_tensors")),
    _C + "_reduce_scatter_base_": ("reduce_scatter", _sum("input_tensor")),
    _C + "reduce_scatter_tensor_coalesced_": ("reduce_scatter", _sum("inputs")),
    _C + "alltoall_": ("all_to_all", _larger(_sum("input_tensors"), _sum("output_tensors"))),
    _C + "alltoall_base_": ("all_to_all", _larger(_sum("input"), _sum("output"))),
    _C + "broadcast_": ("broadcast", _sum("tensors")),
    _C + "reduce_": ("reduce", _sum("tensors")),
    _C + "gather_": ("gather", _whole(_sum("input_tensors"))),
    _C + "scatter_": ("scatter", _whole(_sum("output_tensors"))),
    **{
        prefix + name: value
        for prefix in (_F, _FA)
        for name, value in {
            "all_reduce": ("all_reduce", _functional_input),
            "all_reduce_": ("all_reduce", _functional_input),
            "all_reduce_coalesced": ("all_reduce", _functional_input),
            "all_reduce_coalesced_": ("all_reduce", _functional_input),
            "all_gather_into_tensor": ("all_gather", _outputs),
            "all_gather_into_tensor_out": ("all_gather", _outputs),
            "all_gather_into_tensor_coalesced": ("all_gather", _outputs),
            "reduce_scatter_tensor": ("reduce_scatter", _functional_input),
            "reduce_scatter_tensor_out": ("reduce_scatter", _functional_input),
            "reduce_scatter_tensor_coalesced": ("reduce_scatter", _functional_input),
            "all_to_all_single": ("all_to_all", _larger(_functional_input, _outputs)),
            "broadcast": ("broadcast", _functional_input),
            "broadcast_": ("broadcast", _functional_input),
        }.items()
    },
}
"""Collective calls: ``name -> (collective, its nccl-tests size in bytes)``."""

P2P: dict[str, tuple[str, str, str]] = {
    _C + "send": ("send", "dst", "tensors"),
    _C + "recv_": ("recv", "src", "tensors"),
    _F + "isend": ("send", "dst", "tensor"),
    _F + "irecv": ("recv", "src", "tensor"),
}
"""Point-to-point calls: ``name -> (direction, peer argument, tensor argument)``."""

_BARRIERS = {_C + "barrier", _C + "monitored_barrier_"}
WAITS = {"c10d.wait", _F + "wait_tensor"}
BARRIER_BYTES = 4.0  # ProcessGroupNCCL's barrier all-reduces one fp32 element


def is_comm(call: Call) -> bool:
    return call.name in COLLECTIVES or call.name in P2P or call.name in _BARRIERS or call.name == _F + "batch_p2p_ops"


def _group(call: Call) -> Group | None:
    group = call.arg("process_group", call.arg("group"))
    return group if isinstance(group, Group) else None


def _ranks(group: Group | None, ctx: Context) -> tuple[int, ...] | None:
    """The group param of the op: absent for the program's whole world."""
    if group is None or group.ranks == tuple(range(ctx.world)):
        return None
    return group.ranks


_FLOATS = ("float", "bfloat", "half", "complex")


def _integer(call: Call) -> bool:
    """Whether the call moves integer or boolean tensors (split sizes, counts, a byte view of fp8 data)."""
    return any(not t.dtype.startswith(_FLOATS) for t in (*call.inputs, *call.outputs))


def _collective(op: str, nbytes: float, call: Call, ctx: Context) -> Piece:
    params: dict[str, Any] = {"op": op, "bytes": float(nbytes)}
    if call.name not in _BARRIERS and _integer(call):  # a barrier's tensor is a placeholder
        params["integer"] = True
    ranks = _ranks(_group(call), ctx)
    if ranks is not None:
        params["group"] = ranks
    return Piece("collective", params, call.name)


def _p2p(direction: str, peer: int, nbytes: float, call: Call, ctx: Context) -> Piece:
    group = _group(call)
    size, me = (group.size, group.rank) if group is not None else (ctx.world, ctx.rank)
    offset = (peer - me) % size if direction == "send" else (me - peer) % size
    return Piece("send_recv", {"bytes": float(nbytes), "offset": offset}, call.name, p2p=(direction, offset))


def lower_comm(call: Call, ctx: Context) -> list[Piece]:
    """The pieces of a communication call (see the module table)."""
    if call.name in COLLECTIVES:
        op, size = COLLECTIVES[call.name]
        return [_collective(op, size(call), call, ctx)]
    if call.name in P2P:
        direction, peer, tensor = P2P[call.name]
        nbytes = sum(t.nbytes for t in tensors_in(call.arg(tensor)))
        return [_p2p(direction, int(call.arg(peer)), nbytes, call, ctx)]
    if call.name == _F + "batch_p2p_ops":
        ops: Sequence[str] = call.arg("op_list") or ()
        peers: Sequence[int] = call.arg("peer_list") or ()
        tensors = list(tensors_in(call.arg("tensors")))
        return [
            _p2p("send" if "send" in kind else "recv", int(peer), t.nbytes, call, ctx)
            for kind, peer, t in zip(ops, peers, tensors, strict=False)
        ]
    if call.name in _BARRIERS:
        return [_collective("all_reduce", BARRIER_BYTES, call, ctx), Piece("sync", {}, call.name)]
    return []


def pair_p2p(pieces: list[list[Piece]], calls: Sequence[Call]) -> dict[int, int]:
    """Merge each receive into a send of the same offset and size in the same run of point-to-point calls
    (calls with no ops between them); returns ``{merged call: the call it merged into}`` and empties the
    merged calls' pieces (a call's pieces are all merged, or none)."""
    merged: dict[int, int] = {}
    run: list[int] = []
    for i, call in enumerate(calls):
        if call.name in WAITS or not pieces[i]:
            continue
        if any(p.p2p is None for p in pieces[i]):
            run = []
            continue
        if len(pieces[i]) > 1:  # batch_p2p_ops: pair inside the call first
            pieces[i] = _pair_within(pieces[i])
        run.append(i)
        _pair_run(run, pieces, merged)
    return merged


def _pair_within(group: list[Piece]) -> list[Piece]:
    kept: list[Piece] = []
    for piece in group:
        if piece.p2p is None:
            kept.append(piece)
            continue
        direction, offset = piece.p2p
        other = ("recv" if direction == "send" else "send", offset)
        match = next((k for k in kept if k.p2p == other and k.params["bytes"] == piece.params["bytes"]), None)
        if match is not None:
            kept[kept.index(match)] = Piece(match.kind, match.params, match.name)  # paired: no longer open
            continue
        kept.append(piece)
    return kept


def _pair_run(run: list[int], pieces: list[list[Piece]], merged: dict[int, int]) -> None:
    """Pair the newest call of ``run`` with an earlier call of the opposite direction."""
    new = run[-1]
    p2p = pieces[new][0].p2p if len(pieces[new]) == 1 else None
    if p2p is None:
        return
    (direction, offset), nbytes = p2p, pieces[new][0].params["bytes"]
    for old in run[:-1]:
        if old in merged.values() or len(pieces[old]) != 1:
            continue
        piece = pieces[old][0]
        if piece.p2p == ("recv" if direction == "send" else "send", offset) and piece.params["bytes"] == nbytes:
            merged[new] = old
            pieces[new] = []
            run.remove(new)
            run.remove(old)
            return
