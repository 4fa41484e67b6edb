"""The ``kernels`` part of the ``compute`` family: the op classes programs launch besides GEMMs, attention and the
streaming ops of the ``memory`` part, each over sizes from a few bytes to hundreds of MiB (torch passed in).

What ParallelKernelBench's single-GPU parts were seen to launch (docs/validation/pkb: every kernel of every op,
timed by CUPTI) and the model had no measured figure for:

- ``tiny``: the streaming ops (``copy``, ``add``, ``sum`` over rows of 1024, ``fill``) below the ``memory`` part's
  smallest size (256 KiB), down to one element: the device time of a launch-bound kernel;
- ``index_select``, ``gather``, ``index_add``, ``scatter_add``, ``scatter_add_rows``, ``index_put``: gathers and
  scatters (:mod:`rooflib.bench.index_cases`);
- ``sort``: ``torch.sort`` of one flat fp32 array (CUB's radix sort) and of rows (segmented; a bitonic sort in
  place for short rows);
- ``transpose``: ``x.t().contiguous()`` of a square matrix (bf16, fp32, complex64), and an elementwise op on a
  transposed view (``strided``: PyTorch's non-vectorised elementwise kernel);
- ``cast``, ``cast_to_i8``, ``cast_from_i8``: a contiguous tensor converted to another dtype
  (:mod:`rooflib.bench.cast_cases`);
- ``strided_copy``: a non-contiguous slice made contiguous (``x[:, :c // 2].contiguous()``: the elementwise
  kernel with an offset calculator, as ``.contiguous()`` of a chunk along the last dimension runs);
- ``sum_dim0``: column sums (``x.sum(dim=0)`` of ``[rows, 1024]``: a reduction over the leading dimension;
  ``sum_dim0@C``: of ``[rows, C]``);
- ``cumsum`` along rows of 1024;
- ``fft``: ``torch.fft.rfft`` (fp32 in) and ``torch.fft.fft`` (complex64) along rows of ``n`` points;
- ``bcast_*``: elementwise ops with a broadcast tensor operand (:mod:`rooflib.bench.broadcast_cases`).

Each builder returns a :class:`rooflib.bench.compute_ops.Case`: ``bytes_moved`` counts every input and output once
(indices included), the model's convention; ``extra`` names the op's own size (``elements``, ``rows``, ``cols``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from rooflib.bench.broadcast_cases import BROADCAST_OPS, broadcast_case
from rooflib.bench.cast_cases import CAST_OPS, cast_case
from rooflib.bench.compute_grids import KERNEL_OPS
from rooflib.bench.compute_ops import CHECK, ROW, Case, row_shape
from rooflib.bench.index_cases import index_case
from rooflib.bench.torch_common import rel_error

__all__ = ["kernel_case"]

_DTYPES = {"bf16": ("bfloat16", 2), "fp32": ("float32", 4), "complex64": ("complex64", 8)}


def _square(elements: int) -> tuple[int, int]:
    """A matrix of ``elements`` (a power of two) as close to square as whole powers of two allow."""
    rows = 1 << (int(math.log2(max(elements, 1))) // 2)
    return rows, max(1, elements // rows)


def kernel_case(torch: Any, dev: Any, op: str, tensor_bytes: int, dtype: str) -> Case:
    """``op`` over a ``tensor_bytes`` input (see the module docstring); the check compares up to 2**16 output
    elements (or rows) with a float64 reference computed on the host."""
    name, size = _DTYPES[dtype]
    dt = getattr(torch, name)
    n = max(1, tensor_bytes // size)
    op, _, cols = op.partition("@")
    if cols and op == "sum_dim0":
        return _sum_dim0(torch, dev, dt, size, n, int(cols))
    if op in BROADCAST_OPS:
        return broadcast_case(torch, dev, op, dt, size, n)
    if op in CAST_OPS:
        return cast_case(torch, dev, op, dt, size, n)
    builders: dict[str, Callable[[], Case]] = {
        "copy": lambda: _stream(torch, dev, dt, size, n, 1, lambda g: g[0].clone(), lambda g: g[0]),
        "add": lambda: _stream(torch, dev, dt, size, n, 2, lambda g: g[0] + g[1], lambda g: g[0] + g[1]),
        "fill": lambda: _fill(torch, dev, dt, size, n),
        "sum": lambda: _sum(torch, dev, dt, size, n),
        "index_select": lambda: index_case(torch, dev, "index_select", dt, size, n),
        "gather": lambda: index_case(torch, dev, "gather", dt, size, n),
        "index_add": lambda: index_case(torch, dev, "index_add", dt, size, n),
        "scatter_add": lambda: index_case(torch, dev, "scatter_add", dt, size, n),
        "scatter_add_rows": lambda: index_case(torch, dev, "scatter_add_rows", dt, size, n),
        "index_put": lambda: index_case(torch, dev, "index_put", dt, size, n),
        "sort": lambda: _sort(torch, dev, n, rows=False),
        "sort_rows": lambda: _sort(torch, dev, n, rows=True),
        "transpose": lambda: _transpose(torch, dev, dt, size, n),
        "strided": lambda: _strided(torch, dev, dt, size, n),
        "cumsum": lambda: _cumsum(torch, dev, dt, size, n),
        "strided_copy": lambda: _strided_copy(torch, dev, dt, size, n),
        "sum_dim0": lambda: _sum_dim0(torch, dev, dt, size, n),
        "rfft": lambda: _fft(torch, dev, n, real=True),
        "fft": lambda: _fft(torch, dev, n, real=False),
        "rfft_dim0": lambda: _fft(torch, dev, n, real=True, dim=0),
    }
    if op not in builders:
        raise ValueError(f"unknown kernels op {op!r}; valid: {', '.join(KERNEL_OPS)}")
    return builders[op]()


def _rel(torch: Any, got: Any, ref: Any) -> float:
    """:func:`rel_error`, complex tensors compared as pairs of reals."""
    if got.is_complex():
        got, ref = torch.view_as_real(got), torch.view_as_real(ref.to(got.dtype))
    return rel_error(torch, got, ref)


def _randn(torch: Any, shape: Any, dev: Any, dt: Any) -> Any:
    if dt == torch.complex64:
        return torch.randn(shape, device=dev, dtype=torch.complex64)
    return torch.randn(shape, device=dev, dtype=dt)


def _flat_check(torch: Any, ref: Callable[[Any], Any]) -> Callable[[Any, Any], float]:
    def check(g: Any, out: Any) -> float:
        want = ref(tuple(x.double() if x.is_floating_point() else x for x in g))
        got = out.reshape(-1)[:CHECK]
        return rel_error(torch, got, want.reshape(-1)[:CHECK])

    return check


def _stream(
    torch: Any, dev: Any, dt: Any, size: int, n: int, inputs: int, call: Callable[[Any], Any], ref: Any
) -> Case:
    def make(i: int) -> Any:
        return tuple(_randn(torch, (n,), dev, dt) for _ in range(inputs))

    return Case(
        make,
        call,
        _flat_check(torch, ref),
        float((inputs + 1) * n * size),
        float(n * size),
        2e-2,
        extra={"elements": n},
    )


def _fill(torch: Any, dev: Any, dt: Any, size: int, n: int) -> Case:
    def make(i: int) -> Any:
        return (torch.empty(n, device=dev, dtype=dt),)

    def call(g: Any) -> Any:
        return g[0].fill_(1.5)

    def check(g: Any, out: Any) -> float:
        return rel_error(torch, out[:CHECK], torch.full_like(out[:CHECK], 1.5))

    return Case(make, call, check, float(n * size), float(n * size), 0.0, extra={"elements": n})


def _sum(torch: Any, dev: Any, dt: Any, size: int, n: int) -> Case:
    rows, cols = row_shape(n, ROW)

    def make(i: int) -> Any:
        return (_randn(torch, (rows, cols), dev, dt),)

    def check(g: Any, out: Any) -> float:
        r = min(rows, 64)
        return rel_error(torch, out[:r], g[0][:r].double().sum(dim=-1))

    return Case(
        make,
        lambda g: g[0].sum(dim=-1),
        check,
        float((rows * cols + rows) * size),
        float(rows * size),
        2e-2,
        extra={"rows": rows, "cols": cols, "elements": rows * cols},
    )


def _sort(torch: Any, dev: Any, n: int, *, rows: bool) -> Case:
    """``torch.sort`` of fp32 keys (values and int64 indices out): one flat array, or rows of ``ROW``."""
    shape = row_shape(n, ROW) if rows else (n,)

    def make(i: int) -> Any:
        return (torch.randn(shape, device=dev, dtype=torch.float32),)

    def call(g: Any) -> Any:
        return torch.sort(g[0], dim=-1).values

    def check(g: Any, out: Any) -> float:
        x = g[0].reshape(-1, shape[-1])[: max(1, CHECK // shape[-1])]
        want = torch.sort(x.double().cpu(), dim=-1).values
        return rel_error(torch, out.reshape(-1, shape[-1])[: x.shape[0]].double().cpu(), want)

    extra = {"elements": n, "rows": shape[0] if rows else 1, "cols": shape[-1]}
    return Case(make, call, check, float(n * (4 + 4 + 8)), float(n * 12), 0.0, extra=extra)


def _transpose(torch: Any, dev: Any, dt: Any, size: int, n: int) -> Case:
    r, c = _square(n)

    def make(i: int) -> Any:
        return (_randn(torch, (r, c), dev, dt),)

    def check(g: Any, out: Any) -> float:
        k = min(c, 64)
        return _rel(torch, out[:k, : min(r, 64)], g[0][: min(r, 64), :k].t())

    return Case(
        make,
        lambda g: g[0].t().contiguous(),
        check,
        float(2 * n * size),
        float(n * size),
        0.0,
        extra={"rows": r, "cols": c, "elements": n},
    )


def _strided(torch: Any, dev: Any, dt: Any, size: int, n: int) -> Case:
    """``x.t() * 2``: an elementwise op over a transposed view (a non-contiguous input)."""
    r, c = _square(n)

    def make(i: int) -> Any:
        return (_randn(torch, (r, c), dev, dt),)

    def check(g: Any, out: Any) -> float:
        k = min(c, 64)
        return rel_error(torch, out[:k, : min(r, 64)], 2 * g[0][: min(r, 64), :k].t())

    return Case(
        make,
        lambda g: g[0].t() * 2,
        check,
        float(2 * n * size),
        float(n * size),
        0.0,
        extra={"rows": r, "cols": c, "elements": n},
    )


def _strided_copy(torch: Any, dev: Any, dt: Any, size: int, n: int) -> Case:
    """``x[:, :c // 2].contiguous()`` of an ``[r, c]`` matrix of ``n`` elements: half its columns copied."""
    r, c = _square(n)
    half = max(1, c // 2)

    def make(i: int) -> Any:
        return (_randn(torch, (r, c), dev, dt),)

    def check(g: Any, out: Any) -> float:
        k = min(r, 64)
        return _rel(torch, out[:k], g[0][:k, :half])

    return Case(
        make,
        lambda g: g[0][:, :half].contiguous(),
        check,
        float(2 * r * half * size),
        float(r * half * size),
        0.0,
        extra={"rows": r, "cols": c, "elements": r * half},
    )


def _sum_dim0(torch: Any, dev: Any, dt: Any, size: int, n: int, row: int = ROW) -> Case:
    """Column sums: ``x.sum(dim=0)`` of ``[rows, row]`` (``n`` elements)."""
    rows, cols = row_shape(n, row)

    def make(i: int) -> Any:
        return (_randn(torch, (rows, cols), dev, dt),)

    def check(g: Any, out: Any) -> float:
        k = min(cols, 64)
        return rel_error(torch, out[:k], g[0][:, :k].double().sum(dim=0))

    return Case(
        make,
        lambda g: g[0].sum(dim=0),
        check,
        float((rows * cols + cols) * size),
        float(cols * size),
        2e-2,
        extra={"rows": rows, "cols": cols, "elements": rows * cols},
    )


def _cumsum(torch: Any, dev: Any, dt: Any, size: int, n: int) -> Case:
    rows, cols = row_shape(n, ROW)

    def make(i: int) -> Any:
        return (torch.randn(rows, cols, device=dev, dtype=torch.float32).to(dt),)

    def check(g: Any, out: Any) -> float:
        r = min(rows, 16)
        return rel_error(torch, out[:r].double(), g[0][:r].double().cumsum(dim=-1))

    return Case(
        make,
        lambda g: torch.cumsum(g[0], dim=-1),
        check,
        float(2 * n * size),
        float(n * size),
        5e-2,
        extra={"rows": rows, "cols": cols, "elements": n},
    )


def _fft(torch: Any, dev: Any, n: int, *, real: bool, dim: int = -1) -> Case:
    """An FFT of ``cols`` points (4096, fewer for small inputs) over ``rows`` signals: ``rfft`` of fp32 (``n``
    elements in), or ``fft`` of complex64; along the last dimension, or (``dim=0``) along the first of a
    ``[cols, rows]`` input (strided signals)."""
    rows, cols = row_shape(n, 4096)
    dt = torch.float32 if real else torch.complex64
    size = 4 if real else 8
    out_elems = rows * (cols // 2 + 1) if real else rows * cols
    shape = (rows, cols) if dim == -1 else (cols, rows)

    def make(i: int) -> Any:
        return (torch.randn(shape, device=dev, dtype=dt),)

    def call(g: Any) -> Any:
        return torch.fft.rfft(g[0], dim=dim) if real else torch.fft.fft(g[0], dim=dim)

    def check(g: Any, out: Any) -> float:
        if dim == -1:
            x, got = g[0][: min(rows, 4)], out[: min(rows, 4)]
        else:
            x, got = g[0][:, : min(rows, 4)], out[:, : min(rows, 4)]
        x = x.cpu().to(torch.float64 if real else torch.complex128)
        want = torch.fft.rfft(x, dim=dim) if real else torch.fft.fft(x, dim=dim)
        return _rel(torch, got.cpu().to(torch.complex128), want)

    moved = rows * cols * size + out_elems * 8
    flops = 5.0 * rows * cols * math.log2(max(cols, 2)) * (0.5 if real else 1.0)
    return Case(
        make,
        call,
        check,
        float(moved),
        float(out_elems * 8),
        1e-4,
        flops=flops,
        extra={"rows": rows, "cols": cols, "elements": rows * cols, "dim": dim},
    )
