"""Ops whose output size depends on values: on CUDA the host waits for a count before it can size the output
(:func:`value_sized`; :func:`rooflib.trace.rules.lower_compute` charges the wait)."""

from __future__ import annotations

from rooflib.trace.records import Call, TensorMeta

__all__ = ["WAITING_HOST_OPS", "sparse_operand", "value_sized"]

_VALUE_SIZED = {
    "aten.nonzero": 2,
    "aten.argwhere": 2,
    "aten.masked_select": 2,
    "aten._unique": 3,
    "aten._unique2": 3,
    "aten.unique_dim": 3,
    "aten.unique_consecutive": 3,
    "aten.bincount": 2,
}
"""Ops that wait for the device on CUDA before they can size their output (each copies a count to the host and
synchronises), with the kernels such a call launches besides its main one (the default host cost where the host
block has no measured figure for it)."""


_SPARSE_PRODUCTS = {
    "aten._sparse_addmm": "aten._sparse_addmm",
    "aten._sparse_mm": "aten._sparse_addmm",
    "aten.bmm": "aten.bmm(sparse)",
}
"""Products of a sparse COO matrix and a dense one that wait for the device on CUDA, by the host op charged: a
2-D product coalesces the COO first (its unique indices counted on the host; a COO a program builds is not
coalesced), a batched one copies each matrix's end offset to the host and runs one cuSPARSE product per matrix."""


WAITING_HOST_OPS = frozenset(
    {*_VALUE_SIZED, "aten.index(bool)", "aten.index_put(bool)", "aten.repeat_interleave", *_SPARSE_PRODUCTS.values()}
)
"""Every host op :func:`value_sized` charges a wait to (the keys of their measured host figures)."""


def sparse_operand(call: Call) -> bool:
    """Whether an input of ``call`` is a sparse tensor (no strides, at least one dimension)."""
    return any(t.shape and not t.stride for t in call.inputs)


def value_sized(call: Call) -> tuple[str, int] | None:
    """``(host op, extra launches)`` when ``call`` makes the host wait for the device to size its output: the ops
    of :data:`_VALUE_SIZED`, indexing with a boolean mask (``x[mask]``, ``x[mask] = v``: a ``nonzero`` inside,
    named ``aten.index(bool)`` / ``aten.index_put(bool)``), ``repeat_interleave`` of a repeats tensor with no
    ``output_size`` (a sum inside) and the sparse-dense products of :data:`_SPARSE_PRODUCTS`; None otherwise."""
    base = call.name.rstrip("_")
    if base in _VALUE_SIZED:
        return base, _VALUE_SIZED[base]
    if base in _SPARSE_PRODUCTS and sparse_operand(call):
        return _SPARSE_PRODUCTS[base], 4
    if base in ("aten.index", "aten.index_put", "aten._index_put_impl"):
        indices = call.arg("indices") or ()
        if any(isinstance(i, TensorMeta) and i.dtype in ("bool", "uint8") for i in indices):
            name = "aten.index" if base == "aten.index" else "aten.index_put"
            return f"{name}(bool)", 2
    if base == "aten.repeat_interleave" and call.arg("output_size") is None:
        repeats = call.arg("repeats", call.arg("self"))
        if isinstance(repeats, TensorMeta) and repeats.on_gpu and repeats.numel > 1:
            return base, 2
    return None
