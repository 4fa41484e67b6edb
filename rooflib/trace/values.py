"""Collective outputs in a run with values (:func:`rooflib.trace.capture.capture` with ``values=True``).

A run with values executes the program on real host tensors, so that sizes computed from tensor values (split
sizes from ``bincount(...).tolist()``, ``int(t.sum())`` allocations, numpy round trips) come out as on the GPU.
The fake process group moves no data; this module fills each collective's output as if **every rank held this
rank's data** (SPMD symmetry): an all-gather repeats the input, an all-to-all hands back the chunk this rank
sends to itself, a sum over ``n`` ranks is ``n`` times the input, a receive gets zeros. The values are then
plausible (the right sizes and ranges for a balanced run), not the other ranks' real ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

__all__ = ["fill_outputs", "one_copy"]


class _Groups(Protocol):
    def convert(self, value: Any) -> Any: ...


def _size_rank(args: Mapping[str, Any], rec: _Groups) -> tuple[int, int]:
    group = rec.convert(args.get("process_group", args.get("group")))
    size, rank = getattr(group, "size", None), getattr(group, "rank", None)
    return (int(size), int(rank)) if size and rank is not None else (1, 0)


def _put(dst: Any, src: Any) -> None:
    """``dst[...] = src``, flattened, truncated or zero-padded to ``dst``'s size."""
    flat_dst, flat_src = dst.reshape(-1), src.reshape(-1).to(dst.dtype)
    n = min(flat_dst.numel(), flat_src.numel())
    if flat_dst.numel() > n:
        flat_dst[n:] = 0
    if n:
        flat_dst[:n] = flat_src[:n]


def _chunks(t: Any, splits: Sequence[int] | None, n: int) -> list[Any]:
    if splits:
        return list(t.split([int(s) for s in splits], dim=0))
    return list(t.chunk(n, dim=0)) if t.shape and t.shape[0] % n == 0 else [t] * n


def _is_sum(args: Mapping[str, Any]) -> bool:
    """Whether the reduction sums (c10d's ReduceOp script object: ``.op() == 0``; functional: ``'sum'``)."""
    op = args.get("reduce_op", args.get("op"))
    if op is None:
        return True
    if hasattr(op, "op"):
        try:
            return int(op.op()) == 0
        except (TypeError, RuntimeError):
            return False
    return str(op).lower() in ("sum", "0")


def _scale(t: Any, n: int, args: Mapping[str, Any]) -> None:
    if n > 1 and _is_sum(args) and str(t.dtype) != "torch.bool":
        t.mul_(n)


def _all_reduce(args: Mapping[str, Any], n: int, me: int) -> None:
    for t in args["tensors"]:
        _scale(t, n, args)


def one_copy(out: Any, src: Any, out_splits: Sequence[int] | None, n: int) -> bool:
    """Every one of ``out``'s ``n`` chunks set to ``src`` in one broadcast copy, where each chunk has ``src``'s
    shape and dtype (always, once split sizes were exchanged symmetrically): one dispatch instead of about six per
    chunk. False, with ``out`` untouched, where that does not hold."""
    if not src.shape or out.dtype != src.dtype or not out.is_contiguous():
        return False
    rows = src.shape[0]
    if tuple(out.shape) != (n * rows, *src.shape[1:]) or any(int(s) != rows for s in out_splits or ()):
        return False
    if out.numel():
        out.view(n, *src.shape).copy_(src.unsqueeze(0).expand(n, *src.shape))
    return True


def _to_all(x: Any, out: Any, in_splits: Any, out_splits: Any, n: int, me: int) -> None:
    """An all-to-all: every chunk of ``out`` is the chunk of ``x`` this rank sends itself."""
    ins = _chunks(x, in_splits, n)
    src = ins[me % len(ins)]
    if not one_copy(out, src, out_splits, n):
        for o in _chunks(out, out_splits, n):
            _put(o, src)


def _all_to_all_base(args: Mapping[str, Any], n: int, me: int) -> None:
    _to_all(args["input"], args["output"], args.get("input_split_sizes"), args.get("output_split_sizes"), n, me)


def _all_to_all(args: Mapping[str, Any], n: int, me: int) -> None:
    for o in args["output_tensors"]:
        _put(o, args["input_tensors"][me % len(args["input_tensors"])])


def _gather_lists(args: Mapping[str, Any], n: int, me: int) -> None:
    outs, ins = args.get("output_tensors", args.get("output_lists")), args["input_tensors"]
    for row in outs:
        pairs = zip(row, ins, strict=False) if len(row) == len(ins) else ((o, ins[0]) for o in row)
        for o, i in pairs:
            _put(o, i)


def _pairs(args: Mapping[str, Any]) -> Any:
    outs = args.get("outputs", [args.get("output_tensor")])
    return zip(outs, args.get("inputs", [args.get("input_tensor")]), strict=False)


def _gather_base(args: Mapping[str, Any], n: int, me: int) -> None:
    for o, i in _pairs(args):
        for part in _chunks(o, None, n):
            _put(part, i)


def _reduce_scatter_base(args: Mapping[str, Any], n: int, me: int) -> None:
    for o, i in _pairs(args):
        _put(o, _chunks(i, None, n)[me])
        _scale(o, n, args)


def _reduce_scatter(args: Mapping[str, Any], n: int, me: int) -> None:
    for o, row in zip(args["output_tensors"], args["input_tensors"], strict=False):
        _put(o, row[me % len(row)])
        _scale(o, n, args)


def _scatter(args: Mapping[str, Any], n: int, me: int) -> None:
    for o, row in zip(args["output_tensors"], args.get("input_tensors") or [], strict=False):
        if row:
            _put(o, row[me % len(row)])


def _recv(args: Mapping[str, Any], n: int, me: int) -> None:
    for t in args["tensors"]:
        t.zero_()


_C10D = {
    "allreduce_": _all_reduce,
    "allreduce_coalesced_": _all_reduce,
    "alltoall_base_": _all_to_all_base,
    "alltoall_": _all_to_all,
    "allgather_": _gather_lists,
    "allgather_coalesced_": _gather_lists,
    "gather_": _gather_lists,
    "_allgather_base_": _gather_base,
    "allgather_into_tensor_coalesced_": _gather_base,
    "_reduce_scatter_base_": _reduce_scatter_base,
    "reduce_scatter_tensor_coalesced_": _reduce_scatter_base,
    "reduce_scatter_": _reduce_scatter,
    "scatter_": _scatter,
    "recv_": _recv,
}
_FUNCTIONAL = ("all_gather_into_tensor", "all_to_all_single", "reduce_scatter_tensor", "all_reduce")


def fill_outputs(torch: Any, name: str, args: Mapping[str, Any], out: Any, rec: _Groups) -> None:
    """Fill the outputs of c10d op ``name`` (its arguments by schema name) as described in the module docstring."""
    n, me = _size_rank(args, rec)
    with torch.no_grad():
        if name in _C10D:
            _C10D[name](args, n, me)
        elif name in _FUNCTIONAL:
            _functional(torch, name, args, out, n, me)


def _functional(torch: Any, name: str, args: Mapping[str, Any], out: Any, n: int, me: int) -> None:
    x = args.get("input")
    if not isinstance(out, torch.Tensor) or x is None:
        return
    if name == "all_gather_into_tensor":
        for part in _chunks(out, None, n):
            _put(part, x)
    elif name == "all_to_all_single":
        _to_all(x, out, args.get("input_split_sizes"), args.get("output_split_sizes"), n, me)
    elif name == "reduce_scatter_tensor":
        _put(out, _chunks(x, None, n)[me])
        _scale(out, n, args)
    else:
        _put(out, x)
        _scale(out, n, args)
