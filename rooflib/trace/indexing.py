"""Rules for copies, gathers and scatters (:mod:`rooflib.trace.rules` lists them by aten name).

How a copy runs (:func:`copy_layout`): one that reads across its source's memory order is a transpose
(``layout: transpose``, timed by the measured ``transpose`` curve where the device has one); one between dense
tensors of different dtypes is a cast (``layout: cast_down`` from fp32 to a 16-bit float, PyTorch's vectorised
conversion, ``cast_up`` otherwise, its unrolled kernel); one from
or into a non-contiguous view that is not a transpose (a slice, a chunk along the last dimension, an expanded
tensor) is ``layout: strided_copy``; a same-dtype copy between dense tensors is the copy engine's memcpy (the
``copy`` curve). A gather or scatter names its measured class (``op``: ``index_select`` or ``gather``;
``index_add``, ``scatter_add``, ``scatter_add_rows`` or ``index_put``) and the bytes of its indices, counted by
the elements they hold in memory (an index expanded along rows moves whole rows): :mod:`rooflib.compute.kernels`.
"""

from __future__ import annotations

import math

from rooflib.trace.pieces import Context, Piece, nbytes
from rooflib.trace.records import Call, TensorMeta, tensors_in

__all__ = ["copy_layout", "copy_rule", "dense", "index_rule", "transposed"]


def copy_rule(call: Call, ctx: Context) -> list[Piece]:
    if call.name == "aten.copy_" or call.name == "aten.copy":
        src, dst = call.arg("src"), call.arg("self")
        moved = (src.nbytes + dst.nbytes) / 2
        to_host, blocking = src.on_gpu and not dst.on_gpu, not call.arg("non_blocking", False)
    else:
        inputs = nbytes(tuple(v for k, v in call.args.items() if k != "out"))
        outputs = sum(t.nbytes for t in call.outputs)
        moved = (inputs + outputs) / 2
        to_host = any(t.on_gpu for t in call.inputs) and not all(t.on_gpu for t in call.outputs)
        blocking = not call.arg("non_blocking", False)
    if moved == 0:
        return []
    params: dict[str, object] = {"bytes": moved}
    if call.name in _LAYOUT_COPIES:
        src = call.arg("src") if call.name in ("aten.copy_", "aten.copy") else call.arg("self")
        dst = call.arg("self") if call.name in ("aten.copy_", "aten.copy") else (call.outputs or (None,))[0]
        if isinstance(src, TensorMeta) and isinstance(dst, TensorMeta):
            layout = copy_layout(src, dst)
            if layout is not None:
                params["layout"] = layout
            if layout in ("transpose", "strided_copy"):  # timed by element count
                params["elements"] = dst.numel
    pieces = [Piece("copy", params, call.name)]
    if to_host and blocking:  # .cpu(), .to("cpu"), .numpy(): the host waits for the copy
        pieces.append(Piece("sync", {}, call.name))
    return pieces


_LAYOUT_COPIES = frozenset({"aten.copy_", "aten.copy", "aten.clone", "aten._to_copy", "aten.contiguous"})


def _unit_dim(t: TensorMeta) -> int | None:
    """The one dimension of more than one element with stride 1 (innermost in memory), or None."""
    ones = [d for d, (n, st) in enumerate(zip(t.shape, t.stride, strict=False)) if n > 1 and st == 1]
    return ones[0] if len(ones) == 1 else None


def transposed(src: TensorMeta, dst: TensorMeta) -> bool:
    """Whether a copy from ``src`` to ``dst`` (same shape) reads across ``src``'s memory order: the two have a
    stride-1 dimension each and not the same one (``x.t().contiguous()``, a copy into a permuted layout). A
    clone that keeps the strides, or a strided slice copied row by row, is not."""
    if src.shape != dst.shape or src.numel < 2 or len(src.stride) != len(src.shape):
        return False
    s, d = _unit_dim(src), _unit_dim(dst)
    return s is not None and d is not None and s != d


def dense(t: TensorMeta) -> bool:
    """Whether ``t`` is contiguous in some order with no gaps or repeats: its strides, sorted, are those of a
    contiguous tensor of its sizes in that order (dimensions of one element ignored)."""
    if len(t.stride) != len(t.shape):
        return True
    dims = sorted((st, n) for n, st in zip(t.shape, t.stride, strict=True) if n > 1)
    expect = 1
    for st, n in dims:
        if st != expect:
            return False
        expect *= n
    return True


_VECTORISED_CASTS = {("float32", "bfloat16"), ("float32", "float16")}
"""The conversions PyTorch runs with a vectorised kernel of their own (``cast_down``); every other one runs the
unrolled elementwise kernel (``cast_up``): fp32 to int8 at 183 us and int8 to fp32 at 185 us for 2**26 elements,
as bf16 to fp32 (194 us), where fp32 to bf16 took 95 us (CUPTI, docs/validation/pkb/runs/x1-kernels-2,
problem 44 at 8192x8192)."""


def copy_layout(src: TensorMeta, dst: TensorMeta) -> str | None:
    """How a copy from ``src`` into ``dst`` runs: ``transpose``, ``cast_up``, ``cast_down``, ``strided_copy``, or
    None (a same-dtype copy between dense tensors: the copy engine's memcpy)."""
    if src.numel < 1 or src.on_gpu != dst.on_gpu:
        return None
    if transposed(src, dst):
        return "transpose"
    if not (dense(src) and dense(dst)) or src.numel != dst.numel:  # a view, or a broadcast
        return "strided_copy"
    if src.dtype != dst.dtype:
        return "cast_down" if (src.dtype, dst.dtype) in _VECTORISED_CASTS else "cast_up"
    return None


_GATHERS = {"aten.index_select", "aten.gather", "aten.embedding", "aten.index", "aten._unsafe_index", "aten.take"}
_SCATTER_SOURCE = ("src", "source", "values")
_INDEX_ARGS = ("index", "indices", "mask")
_ACCUMULATE = {"aten.scatter_add", "aten.scatter_reduce", "aten.index_add", "aten.index_reduce"}
_ELEMENTWISE_SCATTERS = {"aten.scatter_add", "aten.scatter_reduce"}
"""Scatters ATen runs as an elementwise kernel over the source (``_scatter_gather_elementwise_kernel``), also
where the index moves whole rows (``scatter_add_rows``); ``index_add`` and row-wise ``index_put`` run its index
kernel."""
_ROW_ELEMENTS = 8
"""Elements moved per index from which a gather or scatter runs row by row (``index_select``'s kernel family)."""


def _stored(t: TensorMeta) -> int:
    """Elements ``t`` holds in memory: an expanded (stride-0) dimension repeats the same ones."""
    if len(t.stride) != len(t.shape):
        return t.numel
    return math.prod(n for n, st in zip(t.shape, t.stride, strict=True) if st != 0)


def index_rule(call: Call, ctx: Context) -> list[Piece]:
    base = call.name.rstrip("_")
    index = [t for k in _INDEX_ARGS for t in tensors_in(call.arg(k)) if t.on_gpu]
    count = max(1, sum(_stored(t) for t in index))  # distinct indices: an expanded index moves whole rows
    params: dict[str, object] = {}
    if base in _GATHERS or base == "aten.masked_select":
        moved = sum(t.nbytes for t in call.outputs)
        per = sum(t.numel for t in call.outputs) / count
        params["op"] = "index_select" if per >= _ROW_ELEMENTS and base != "aten.masked_select" else "gather"
    else:
        source = next((call.arg(k) for k in _SCATTER_SOURCE if isinstance(call.arg(k), TensorMeta)), None)
        moved = source.nbytes if source is not None else sum(t.nbytes for t in call.outputs)
        accumulate = base in _ACCUMULATE or bool(call.arg("accumulate", False)) or base.endswith("dense_backward")
        if source is not None or base.endswith("dense_backward"):
            rows = (source.numel if source is not None else moved) / count >= _ROW_ELEMENTS
            row_class = "scatter_add_rows" if base in _ELEMENTWISE_SCATTERS else "index_add"
            params["op"] = row_class if rows else ("scatter_add" if accumulate else "index_put")
        elif index and base == "aten.scatter" and call.outputs:  # a value written at each index
            moved = count * call.outputs[0].itemsize
            params["op"] = "index_put"
    if not moved:
        return []
    if "op" in params:
        params["index_bytes"] = float(sum(_stored(t) * t.itemsize for t in index))
    return [Piece("index", {"bytes": moved, **params}, call.name)]
