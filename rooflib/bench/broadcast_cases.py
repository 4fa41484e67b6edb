"""Elementwise ops with a broadcast operand, for the ``kernels`` part of the ``compute`` family (torch passed in).

PyTorch runs an elementwise op through its vectorised kernel only when every tensor operand is dense in the
output's order; a python number is folded into the functor, but a *tensor* operand that is broadcast (stride 0
along a dimension) sends the whole op to the non-vectorised ``elementwise_kernel<128, 4>`` with an offset
calculator: a 0-dim CUDA tensor (``x * norm`` in gradient clipping), a column ``[r, 1]`` or a row ``[1, c]``
(``x / x.sum(-1, keepdim=True)``, a bias). ParallelKernelBench's parts launch it often (the CUPTI traces of
docs/validation/pkb: ``mul_`` of a 2 MiB bf16 gradient by a 0-dim fp32 tensor 5.0 us, where a multiply by a
python number runs 1.8 us).

- ``bcast_scalar``: ``x * s``, ``s`` a 0-dim CUDA tensor of ``x``'s dtype;
- ``bcast_cast``: ``x * s`` with ``s`` a 0-dim fp32 CUDA tensor and ``x`` bf16 (the result bf16: ``mul_``'s
  promotion; the kernel casts every element, ``gpu_kernel_impl`` rather than ``_nocast``);
- ``bcast_col``: ``x[r, c] * v[r, 1]``;
- ``bcast_row``: ``x[r, c] * v[1, c]`` (rows of :data:`rooflib.bench.compute_ops.ROW`).

``bytes_moved`` counts ``x`` read, the output written and the broadcast operand once.
"""

from __future__ import annotations

from typing import Any

from rooflib.bench.compute_ops import CHECK, ROW, Case
from rooflib.bench.torch_common import rel_error

__all__ = ["BROADCAST_OPS", "broadcast_case"]

BROADCAST_OPS = ("bcast_scalar", "bcast_cast", "bcast_col", "bcast_row")


def broadcast_case(torch: Any, dev: Any, op: str, dt: Any, size: int, n: int) -> Case:
    """``op`` (module docstring) over ``n`` elements of ``dt`` (``size`` bytes each)."""
    if op not in BROADCAST_OPS:
        raise ValueError(f"unknown broadcast op {op!r}; valid: {', '.join(BROADCAST_OPS)}")
    cols = min(ROW, n)
    rows = max(1, n // cols)
    other_dt = torch.float32 if op == "bcast_cast" else dt
    other_shape = {"bcast_scalar": (), "bcast_cast": (), "bcast_col": (rows, 1), "bcast_row": (1, cols)}[op]
    other_n = {"bcast_col": rows, "bcast_row": cols}.get(op, 1)
    other_size = 4 if other_dt == torch.float32 else size

    def make(i: int) -> Any:
        x = torch.randn((rows, cols), device=dev, dtype=dt)
        v = torch.randn(other_shape, device=dev, dtype=other_dt) + 2.0  # away from zero: a relative check
        return (x, v)

    def call(g: Any) -> Any:
        return g[0] * g[1]  # a 0-dim operand does not promote: bf16 * fp32 0-dim is bf16

    def check(g: Any, out: Any) -> float:
        r = max(1, min(rows, CHECK // cols))
        v = g[1][:r] if op == "bcast_col" else g[1]
        ref = g[0][:r].double() * v.double()
        return rel_error(torch, out[:r], ref) if out.dtype == dt and tuple(out.shape) == (rows, cols) else 1.0

    moved = float(2 * rows * cols * size + other_n * other_size)
    extra = {"rows": rows, "cols": cols, "elements": rows * cols}
    return Case(make, call, check, moved, float(rows * cols * size), 2e-2, extra=extra)
