"""Dtype conversions, for the ``kernels`` part of the ``compute`` family (torch passed in).

PyTorch converts fp32 to bf16 or fp16 with a vectorised kernel of its own (``bfloat16_copy_kernel_cuda``); every
other conversion it measured here runs the unrolled elementwise kernel with a cast per element
(``unrolled_elementwise_kernel<direct_copy_kernel_cuda...>``, the CUPTI names of ParallelKernelBench problem 44
in docs/validation/pkb/runs/x1-kernels-2):

- ``cast``: bf16 to fp32 (``dtype`` bf16) and fp32 to bf16 (``dtype`` fp32);
- ``cast_to_i8``: fp32 to int8 (``x.to(torch.int8)``, values inside int8's range: the quantisers' last step);
- ``cast_from_i8``: int8 to fp32 (a dequantiser's first step).

``dtype`` is the float side's (``tensor_bytes`` its bytes); ``bytes_moved`` counts input and output once.
"""

from __future__ import annotations

from typing import Any

from rooflib.bench.compute_ops import CHECK, Case
from rooflib.bench.torch_common import rel_error

__all__ = ["CAST_OPS", "cast_case"]

CAST_OPS = ("cast", "cast_to_i8", "cast_from_i8")
_I8 = 120  # |value| of the int8 casts' inputs at most: inside int8's range, so truncation is defined


def cast_case(torch: Any, dev: Any, op: str, dt: Any, size: int, n: int) -> Case:
    """``op`` over ``n`` contiguous elements of ``dt`` (``size`` bytes each; module docstring)."""
    if op not in CAST_OPS:
        raise ValueError(f"unknown cast op {op!r}; valid: {', '.join(CAST_OPS)}")
    if op == "cast":
        return _float_cast(torch, dev, dt, size, n)
    to_int = op == "cast_to_i8"

    def make(i: int) -> Any:
        if to_int:
            return ((torch.rand(n, device=dev, dtype=torch.float32) * 2 - 1) * _I8,)
        return (torch.randint(-_I8, _I8 + 1, (n,), device=dev, dtype=torch.int8),)

    def check(g: Any, out: Any) -> float:
        k = min(n, CHECK)
        want = torch.trunc(g[0][:k].double()) if to_int else g[0][:k].double()
        if out.dtype != (torch.int8 if to_int else torch.float32):
            return 1.0
        return rel_error(torch, out[:k], want)

    return Case(
        make,
        lambda g: g[0].to(torch.int8 if to_int else torch.float32),
        check,
        float(n * (4 + 1)),
        float(n * (1 if to_int else 4)),
        1e-6,
        extra={"elements": n, "to": "int8" if to_int else "float32"},
    )


def _float_cast(torch: Any, dev: Any, dt: Any, size: int, n: int) -> Case:
    """``x.to(other)``: bf16 to fp32, fp32 to bf16."""
    to = torch.float32 if dt == torch.bfloat16 else torch.bfloat16
    out_size = 4 if to == torch.float32 else 2

    def make(i: int) -> Any:
        return (torch.randn(n, device=dev, dtype=dt),)

    def check(g: Any, out: Any) -> float:
        k = min(n, CHECK)
        return rel_error(torch, out[:k], g[0][:k].double()) if out.dtype == to else 1.0

    return Case(
        make,
        lambda g: g[0].to(to),
        check,
        float(n * (size + out_size)),
        float(n * out_size),
        1e-2,
        extra={"elements": n},
    )
