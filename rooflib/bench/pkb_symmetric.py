"""Symmetric integer outputs for the fake process group in a single-GPU run (``pkb_worker --mode local``).

torch's ``fake`` process group moves no data: an all-to-all's output keeps whatever its fresh buffer held. Where
the program then reads sizes from it (split sizes exchanged with an all-to-all, counts summed with an
all-reduce, shapes gathered with ``all_gather_object``), the sizes are garbage: problems 61, 64, 68, 70, 78, 81
and 85 failed on the H200 that way (negative or 10^18-element allocations), and the ones that ran sized their
work from whatever the buffer held. :func:`install` wraps torch.distributed's collectives so that, after the
fake call, their **integer and boolean** outputs are filled as if every rank held this rank's data, the rule
``rooflib trace`` applies in a run with values (:mod:`rooflib.trace.values`): an all-to-all hands back the
chunk this rank sends to itself, a sum over ``n`` ranks is ``n`` times the input, a gather repeats the input,
a receive gets zeros. Floating-point outputs are left as the fake group leaves them: the fill would add device
copies of the data the real collective moves, and no size depends on them. A list all-gather whose parts differ
in size from the input (problem 81 gathers a variable number of rows per rank) is refused by the fake backend:
the wrapper calls it with parts of the input's size and then copies the input into the real parts, any dtype.

Problem 78 is not symmetric (each rank decodes different tiles, whose shapes it gathers as objects), so its
single-GPU part still fails.

The fills are host work the real program does not do; :class:`Fills` counts them and their host seconds (the
argument binding and the fill, not the fake call itself) so the record can say what they cost (``fills``,
``fill_s``: per call). A call whose arguments hold no integer or boolean tensor and no list of tensors of mixed
shapes goes straight to the fake call (:func:`_plain`): it pays one scan of its arguments, not the binding
(``inspect.Signature.bind``, several microseconds; every collective call paid it on x1-lease-9 to -15).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from rooflib.trace import values

__all__ = ["Fills", "install"]


@dataclass
class Fills:
    """How many outputs the wrappers filled, and the host seconds spent filling them, since the last reset."""

    count: int = 0
    seconds: float = 0.0

    def reset(self) -> None:
        self.count, self.seconds = 0, 0.0


def _is_int(torch: Any, t: Any) -> bool:
    return isinstance(t, torch.Tensor) and not (t.is_floating_point() or t.is_complex())


def _tensors(x: Any) -> Iterator[Any]:
    if isinstance(x, (list, tuple)):
        for y in x:
            yield from _tensors(y)
    elif x is not None:
        yield x


def _plain(torch: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> bool:
    """No integer or boolean tensor among the arguments, and no list of tensors whose shapes differ from each
    other or from a tensor argument: nothing to fill, nothing the fake backend refuses.

    >>> import types
    >>> _plain(types.SimpleNamespace(Tensor=int), (1.5, None), {})
    True
    """
    shapes, listed = set(), False
    for v in (*args, *kwargs.values()):
        if isinstance(v, (list, tuple)):
            listed = True
        for t in _tensors(v):
            if not isinstance(t, torch.Tensor):
                continue
            if _is_int(torch, t):
                return False
            shapes.add(tuple(t.shape))
    return not listed or len(shapes) <= 1


def _op(dist: Any, op: Any) -> str:
    return "sum" if op is None or op == dist.ReduceOp.SUM else "other"


# torch.distributed's signature -> (the arguments of rooflib.trace.values' c10d rule, the outputs, the rule)
def _a2a_single(dist: Any, b: Mapping[str, Any]) -> tuple[dict[str, Any], Any, str]:
    args = {k: b.get(k) for k in ("output_split_sizes", "input_split_sizes")}
    return {**args, "input": b["input"], "output": b["output"]}, b["output"], "alltoall_base_"


def _a2a(dist: Any, b: Mapping[str, Any]) -> tuple[dict[str, Any], Any, str]:
    args = {"output_tensors": b["output_tensor_list"], "input_tensors": b["input_tensor_list"]}
    return args, b["output_tensor_list"], "alltoall_"


def _gather_list(dist: Any, b: Mapping[str, Any]) -> tuple[dict[str, Any], Any, str]:
    return {"output_tensors": [b["tensor_list"]], "input_tensors": [b["tensor"]]}, b["tensor_list"], "allgather_"


def _gather_tensor(dist: Any, b: Mapping[str, Any]) -> tuple[dict[str, Any], Any, str]:
    return {"outputs": [b["output_tensor"]], "inputs": [b["input_tensor"]]}, b["output_tensor"], "_allgather_base_"


def _all_reduce(dist: Any, b: Mapping[str, Any]) -> tuple[dict[str, Any], Any, str]:
    return {"tensors": [b["tensor"]], "op": _op(dist, b.get("op"))}, b["tensor"], "allreduce_"


def _rs_tensor(dist: Any, b: Mapping[str, Any]) -> tuple[dict[str, Any], Any, str]:
    args = {"outputs": [b["output"]], "inputs": [b["input"]], "op": _op(dist, b.get("op"))}
    return args, b["output"], "_reduce_scatter_base_"


def _rs_list(dist: Any, b: Mapping[str, Any]) -> tuple[dict[str, Any], Any, str]:
    args = {"output_tensors": [b["output"]], "input_tensors": [b["input_list"]], "op": _op(dist, b.get("op"))}
    return args, b["output"], "reduce_scatter_"


def _gather(dist: Any, b: Mapping[str, Any]) -> tuple[dict[str, Any], Any, str]:
    outs = b.get("gather_list") or []
    return {"output_tensors": [outs], "input_tensors": [b["tensor"]]}, outs, "gather_"


def _scatter(dist: Any, b: Mapping[str, Any]) -> tuple[dict[str, Any], Any, str]:
    ins = b.get("scatter_list") or []
    return {"output_tensors": [b["tensor"]], "input_tensors": [ins]}, b["tensor"], "scatter_"


def _recv(dist: Any, b: Mapping[str, Any]) -> tuple[dict[str, Any], Any, str]:
    return {"tensors": [b["tensor"]]}, b["tensor"], "recv_"


_WRAPPED: dict[str, Callable[[Any, Mapping[str, Any]], tuple[dict[str, Any], Any, str]]] = {
    "all_to_all_single": _a2a_single,
    "all_to_all": _a2a,
    "all_gather": _gather_list,
    "all_gather_into_tensor": _gather_tensor,
    "_all_gather_base": _gather_tensor,
    "all_reduce": _all_reduce,
    "reduce_scatter_tensor": _rs_tensor,
    "reduce_scatter": _rs_list,
    "gather": _gather,
    "scatter": _scatter,
    "recv": _recv,
    "irecv": _recv,
}


class _Group:
    """What :func:`rooflib.trace.values.fill_outputs` asks of a recorder: the group's size and this rank in it."""

    def __init__(self, dist: Any) -> None:
        self.dist = dist

    def convert(self, group: Any) -> Any:
        size, rank = self.dist.get_world_size(group), self.dist.get_rank(group)
        return SimpleNamespace(size=size, rank=max(rank, 0))


def install(torch: Any, dist: Any) -> tuple[Fills, Callable[[], None]]:
    """Wrap torch.distributed's collectives (module docstring); returns the fill counter and a function that
    puts the originals back. ``all_gather_object`` needs no wrapper of its own: it calls the wrapped
    ``all_gather`` (sizes and bytes, both integer tensors)."""
    import inspect

    c10d = dist.distributed_c10d
    fills, group, saved = Fills(), _Group(dist), {}
    for name, shape in _WRAPPED.items():
        orig = getattr(c10d, name, None)
        if orig is None:
            continue
        saved[name] = (orig, getattr(dist, name, None))
        sig = inspect.signature(orig)

        def wrapper(*a: Any, _orig: Any = orig, _sig: Any = sig, _shape: Any = shape, **k: Any) -> Any:
            if _plain(torch, a, k):
                return _orig(*a, **k)
            t0 = time.perf_counter()
            bound = _sig.bind(*a, **k)
            bound.apply_defaults()
            b = bound.arguments
            uneven = "tensor_list" in b and any(t.shape != b["tensor"].shape for t in b["tensor_list"])
            if uneven:  # the fake backend refuses parts of other sizes; NCCL gathers them (one broadcast each)
                a, k = (), {**b, "tensor_list": [b["tensor"].new_empty(b["tensor"].shape) for _ in b["tensor_list"]]}
            t1 = time.perf_counter()
            out = _orig(*a, **k)
            t0 += time.perf_counter() - t1  # the fake call itself is not the wrapper's cost
            args, outputs, rule = _shape(dist, b)
            if uneven or any(_is_int(torch, t) for t in _tensors(outputs)):
                values.fill_outputs(torch, rule, {**args, "group": b.get("group")}, None, group)
                fills.count += 1
            fills.seconds += time.perf_counter() - t0
            return out

        setattr(c10d, name, wrapper)
        if getattr(dist, name, None) is orig:
            setattr(dist, name, wrapper)

    def restore() -> None:
        for name, (orig, public) in saved.items():
            setattr(c10d, name, orig)
            if public is not None:
                setattr(dist, name, public)

    return fills, restore
