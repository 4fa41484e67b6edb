"""Device time of the op classes the compute family's ``kernels`` part measures: gathers, scatters, sorts,
transposes, scans, fills and FFTs, each from its own measured curve.

Each class has one curve of achieved share of ``hbm_bandwidth`` against the bytes its benchmark counts
(:mod:`rooflib.bench.kernel_cases`, ``compute.memory_ops.hbm`` of the device file); :func:`moved_bytes` is that
count, written once here and used by the fit's report and by program costs alike:

=================  ================================================================================================
``fill``           bytes written
``index_select``   rows gathered by index: the output twice (read from the table, written) and the int64 indices
``gather``         one index per element: the same
``index_add``      rows added at indices: the source three times (read, destination read and written), indices
``scatter_add``    elements added at positions (atomics): the same
``scatter_add_rows`` rows added by ``scatter_add_`` with an index expanded along them (the MoE combine: ATen's
                   elementwise scatter kernel, atomics on consecutive addresses): the same; where the device has
                   not measured it, the ``index_add`` curve stands in (:data:`STAND_IN`)
``index_put``      elements written at positions: the same
``sort``           a flat array (CUB's radix sort): keys in, sorted keys and int64 indices out
``sort_rows``      rows of at most :data:`SORT_ROW_MAX` elements, each sorted in place by one block: the same
``transpose``      a matrix made contiguous from its transpose: read and written once, counted as bf16 (the
                   curve was measured in bf16; a transpose's time follows its element count more than its bytes:
                   fp32 and complex64 ran within 25 % of bf16 at the same element count on the H200)
``cumsum``         a scan along rows: read and written once
``fft``            complex-to-complex along the last dimension: input and output once
``rfft``           real-to-complex along the last dimension: the same
``rfft_dim0``      an FFT whose signals are strided (along a leading dimension): the same
``cast_up``        a contiguous tensor converted by PyTorch's unrolled elementwise kernel (a cast per element):
                   every conversion but fp32 to a 16-bit float; measured bf16 to fp32 (half the rate of
                   ``cast_down`` on the H200), checked on fp32 to int8 and int8 to fp32: input and output once
``cast_down``      fp32 to bf16 or fp16, PyTorch's vectorised conversion kernel
``strided_copy``   a non-contiguous view made contiguous (a slice, a chunk along the last dimension, an expanded
                   tensor; not a transpose): input and output once, counted as bf16 by element count as
                   ``transpose`` (the same non-vectorised kernel, which runs fp32 with half the unrolling)
``sum_dim0``       a reduction over the leading dimension (column sums): input and output once; measured and
                   reported, not used by programs (its time follows the reduction's strategy, which changes with
                   the shape, not its bytes: held out 59 % on the H200)
``broadcast``      an elementwise op with a broadcast tensor operand (a 0-dim CUDA tensor, a column, a row), 2-byte
                   elements: PyTorch's non-vectorised ``elementwise_kernel<128, 4>``; the tensor read and the
                   output written once, the broadcast operand once
``broadcast_fp32`` the same, 4-byte elements (``elementwise_kernel<128, 2>``: at the same bytes, half the elements
                   and faster)
``broadcast_cast`` the same where the operands' dtypes differ (a bf16 tensor times a 0-dim fp32 tensor: every
                   element cast, ``gpu_kernel_impl`` rather than ``_nocast``)
``conv_input``     cuDNN's conversion of a convolution's NCHW input to NHWC: read and written once
                   (:mod:`rooflib.compute.conv`; measured by CUPTI inside the ``conv`` part's calls)
``conv_filter``    the same for its filter (KCRS to KRSC: a transpose with the taps innermost, a third of the
                   input conversion's rate on the H200)
``conv_output``    the output converted back from NHWC to NCHW
``conv_depthwise`` ATen's depthwise convolution kernel: input, output and filter once (the ``conv`` part's whole
                   calls)
=================  ================================================================================================

A device without a curve for the class gets ``None`` from :func:`kernel_time`: the caller keeps its own
streaming estimate.

>>> moved_bytes("index_select", 1 << 20, index_bytes=8192)
2105344.0
"""

from __future__ import annotations

from rooflib.compute.memory import memory_time
from rooflib.specs.devices import DeviceSpec

__all__ = [
    "BROADCASTS",
    "GATHERS",
    "SCATTERS",
    "SORT_ROW_MAX",
    "STAND_IN",
    "bench_class",
    "broadcast_class",
    "kernel_time",
    "moved_bytes",
    "sort_bytes",
]

GATHERS = frozenset({"index_select", "gather"})
SCATTERS = frozenset({"index_add", "scatter_add", "scatter_add_rows", "index_put"})
SORT_ROW_MAX = 4096
"""Longest row PyTorch sorts in place, one block per row (``radixSortKVInPlace``; longer rows go to CUB)."""


BROADCASTS = frozenset({"broadcast", "broadcast_fp32", "broadcast_cast"})


def bench_class(op: str, dtype: str) -> str:
    """The class a ``kernels``-part record measures: its op, except ``cast`` (``dtype`` the input's: bf16 in is
    the widening ``cast_up``, fp32 in the narrowing ``cast_down``), the int8 casts (``cast_up``: the unrolled
    kernel; held out of every fit, they test that class on other dtypes) and the broadcast cases (``bcast_cast``:
    ``broadcast_cast``; ``bcast_scalar``, ``bcast_col``, ``bcast_row``: ``broadcast``, or ``broadcast_fp32`` in
    fp32)."""
    if op == "cast":
        return "cast_up" if dtype == "bf16" else "cast_down"
    if op in ("cast_to_i8", "cast_from_i8"):
        return "cast_up"
    if op == "bcast_cast":
        return "broadcast_cast"
    if op in ("bcast_scalar", "bcast_col", "bcast_row"):
        return "broadcast_fp32" if dtype == "fp32" else "broadcast"
    return op


def broadcast_class(dtype_bytes: float, mixed: bool) -> str:
    """The broadcast class an elementwise op of ``dtype_bytes``-byte elements runs as (``mixed``: its operands'
    dtypes differ)."""
    if mixed:
        return "broadcast_cast"
    return "broadcast_fp32" if dtype_bytes >= 4 else "broadcast"


def moved_bytes(kind: str, nbytes: float, *, index_bytes: float = 0.0, elements: float = 0.0) -> float:
    """The bytes ``kind``'s curve is measured against (module table). ``nbytes``: the bytes the op gathers or
    scatters (its output or source), sorts (the keys), fills, scans or transforms (input and output once);
    ``elements``: for ``transpose`` and ``strided_copy``, the elements copied (their bytes are then ignored)."""
    if kind in GATHERS:
        return 2.0 * nbytes + index_bytes
    if kind in SCATTERS:
        return 3.0 * nbytes + index_bytes
    if kind in ("sort", "sort_rows"):
        return nbytes  # keys in, keys and indices out: the caller counts them (sort_bytes)
    if kind in ("transpose", "strided_copy") and elements > 0:
        return 4.0 * elements
    return nbytes


def sort_bytes(elements: float, key_bytes: float) -> float:
    """Bytes a sort moves: keys in, sorted keys and int64 indices out."""
    return elements * (2.0 * key_bytes + 8.0)


STAND_IN = {"scatter_add_rows": "index_add"}
"""A class a device has no curve for, timed by another's: a row scatter with an expanded index runs as the
``index_add`` class on a device file without its curve (CUPTI: 514 us against index_add's 1141 us for the same
rows, ParallelKernelBench problem 29 at 8192x8192, docs/validation/pkb/runs/x1-kernels-2). The H200's file
carries one measured on an H100 (docs/validation/h100/runs/x1-gaps, ``tools/port_curves.py``)."""


def kernel_time(device: DeviceSpec, kind: str, moved: float) -> float | None:
    """Seconds the device's ``kind`` curve gives for ``moved`` bytes (:func:`moved_bytes`; its :data:`STAND_IN`'s
    where the device has no ``kind`` curve), or ``None`` when the device has neither (0 bytes take 0 s)."""
    models = device.compute
    if models is None or models.memory_ops is None:
        return None
    if not models.memory_ops.curves(kind) and kind in STAND_IN:
        kind = STAND_IN[kind]
    if not models.memory_ops.curves(kind):
        return None
    if moved <= 0:
        return 0.0
    return float(memory_time(device, kind, moved)[()])
