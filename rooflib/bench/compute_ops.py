"""The calls the ``compute`` family times, with their inputs, byte counts and float32 references (torch passed in).

Each builder returns a :class:`Case`: ``make(i)`` draws input group ``i`` (fresh random normal data), ``call(g)``
runs the op on a group, ``check(g, out)`` compares the output with a float32 reference on a slice and returns
the relative error, ``bytes_moved`` counts every input and output tensor once, ``out_bytes`` the output.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rooflib.bench.compute_grids import ROWWISE, AttentionShape
from rooflib.bench.torch_common import rel_error

__all__ = ["CHECK", "ROW", "Case", "attention_case", "gemm_case", "memory_case", "row_shape"]

_CHECK_ELEMENTS = 1 << 20  # elements of the output compared with the reference
CHECK = 1 << 16
"""Output elements (or rows' worth) the ``kernels`` part's cases compare with their reference."""
ROW = 1024
"""Row length of the ``kernels`` part's row ops (``sum``, ``cumsum``, ``index_select``, ``index_add``, the
broadcast rows)."""


def row_shape(elements: int, cols: int) -> tuple[int, int]:
    """``(rows, cols)`` of ``elements`` in rows of ``cols`` (fewer when there are fewer elements)."""
    c = min(cols, elements)
    return max(1, elements // c), c


@dataclass
class Case:
    make: Callable[[int], Any]
    call: Callable[[Any], Any]
    check: Callable[[Any, Any], float]
    bytes_moved: float
    out_bytes: float
    tolerance: float
    flops: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    graph_ok: bool = True


def _nbytes(t: Any) -> int:
    return int(t.numel() * t.element_size())


def gemm_case(torch: Any, dev: Any, m: int, n: int, k: int, dtype: str) -> Case:
    """``[m, k] @ [k, n]``: bf16 and fp32 (TF32 off) through ``torch.matmul``, fp8 (e4m3, column-major B, bf16
    out) through ``torch._scaled_mm`` with unit scales. The check compares a corner of up to 64 x 64 with float32."""
    if dtype == "bf16":

        def make(i: int) -> Any:
            return (
                torch.randn(m, k, device=dev, dtype=torch.bfloat16),
                torch.randn(k, n, device=dev, dtype=torch.bfloat16),
            )

        def call(g: Any) -> Any:
            return g[0] @ g[1]

        elem, tol = 2, 2e-2
    elif dtype == "fp32":  # SGEMM on CUDA cores: the worker keeps TF32 off, as PyTorch's default does

        def make(i: int) -> Any:
            return (torch.randn(m, k, device=dev), torch.randn(k, n, device=dev))

        def call(g: Any) -> Any:
            return g[0] @ g[1]

        elem, tol = 4, 1e-3
    elif dtype == "fp8":
        one = torch.ones((), device=dev, dtype=torch.float32)
        f8 = torch.float8_e4m3fn

        def make(i: int) -> Any:
            a = torch.randn(m, k, device=dev).to(f8)
            b = torch.randn(n, k, device=dev).to(f8).t()  # column-major second operand
            return (a, b)

        def call(g: Any) -> Any:
            return torch._scaled_mm(g[0], g[1], scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

        elem, tol = 1, 3e-2
    else:
        raise ValueError(f"unknown GEMM dtype {dtype!r}")

    def check(g: Any, out: Any) -> float:
        r, c = min(m, 64), min(n, 64)
        ref = g[0][:r].float() @ g[1][:, :c].float()
        return rel_error(torch, out[:r, :c], ref)

    out = 4 if dtype == "fp32" else 2
    return Case(
        make, call, check, float(elem * (m * k + k * n) + out * m * n), float(out * m * n), tol, 2.0 * m * n * k
    )


def _memory_call(torch: Any, op: str, cols: int) -> Callable[[Any], Any]:
    import torch.nn.functional as F

    calls: dict[str, Callable[[Any], Any]] = {
        "copy": lambda g: g[0].clone(),
        "add": lambda g: g[0] + g[1],
        "mul": lambda g: g[0] * g[1],
        "gelu": lambda g: F.gelu(g[0], approximate="tanh"),
        "silu": lambda g: F.silu(g[0]),
        "rmsnorm": lambda g: F.rms_norm(g[0], (cols,), g[1], 1e-6),
        "layernorm": lambda g: F.layer_norm(g[0], (cols,), g[1], g[2], 1e-5),
        "softmax": lambda g: torch.softmax(g[0], dim=-1),
        "sum": lambda g: g[0].sum(dim=-1),
    }
    return calls[op]


def memory_case(torch: Any, dev: Any, op: str, tensor_bytes: int, cols: int, dtype: str) -> Case:
    """``op`` over a ``tensor_bytes`` tensor (rows of ``cols`` for row-wise ops), float32 reference on the first
    rows or elements (up to 2**20 elements)."""
    dt = {"bf16": torch.bfloat16, "fp32": torch.float32}[dtype]
    size = 2 if dtype == "bf16" else 4
    elements = tensor_bytes // size
    rowwise = op in ROWWISE
    shape = (elements // cols, cols) if rowwise else (elements,)
    inputs = 2 if op in ("add", "mul") else 1
    params = {"rmsnorm": 1, "layernorm": 2}.get(op, 0)

    def make(i: int) -> Any:
        xs = [torch.randn(shape, device=dev, dtype=dt) for _ in range(inputs)]
        ps = [torch.randn(cols, device=dev, dtype=dt) for _ in range(params)]
        return (*xs, *ps)

    call = _memory_call(torch, op, cols)

    def check(g: Any, out: Any) -> float:
        if rowwise:
            rows = max(1, min(shape[0], _CHECK_ELEMENTS // cols))
            sub = (g[0][:rows], *g[1:])
        else:
            sub = tuple(x[:_CHECK_ELEMENTS] for x in g)
        ref = call(tuple(x.float() for x in sub))
        got = out[: ref.shape[0]]
        return rel_error(torch, got, ref)

    out_elements = shape[0] if op == "sum" else elements
    moved = inputs * elements * size + out_elements * size + params * cols * size
    tol = 2e-2 if dtype == "bf16" else 1e-4
    extra = {"rows": shape[0] if rowwise else None, "cols": cols if rowwise else None, "elements": elements}
    return Case(make, call, check, float(moved), float(out_elements * size), tol, extra=extra)


def _sdpa(torch: Any, s: AttentionShape) -> Callable[[Any, Any, Any], Any]:
    import torch.nn.functional as F

    gqa = s.kv_heads != s.heads

    def run(q: Any, k: Any, v: Any) -> Any:
        if gqa:
            return F.scaled_dot_product_attention(q, k, v, is_causal=s.causal, enable_gqa=True)
        return F.scaled_dot_product_attention(q, k, v, is_causal=s.causal)

    return run


def attention_reference(torch: Any, q: Any, k: Any, v: Any, causal: bool, rows: slice) -> Any:
    """float32 attention of query ``rows`` (heads of ``q`` mapped onto ``k``/``v`` heads in groups), top-left
    causal alignment as SDPA's ``is_causal`` (query i sees keys 0..i)."""
    hq, hk = q.shape[1], k.shape[1]
    kk = k.float().repeat_interleave(hq // hk, dim=1)
    vv = v.float().repeat_interleave(hq // hk, dim=1)
    qq = q[:, :, rows].float()
    scores = qq @ kk.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        qi = torch.arange(q.shape[2], device=q.device)[rows][:, None]
        kj = torch.arange(k.shape[2], device=q.device)[None, :]
        scores = scores.masked_fill(kj > qi, float("-inf"))
    return torch.softmax(scores, dim=-1) @ vv


def attention_flops(s: AttentionShape) -> float:
    """FlashAttention's convention, as :func:`rooflib.compute.attention_flops` (4 b h sq skv d; causal x0.5;
    backward x2.5)."""
    flops = 4.0 * s.batch * s.heads * s.seq_q * s.seq_kv * s.head_dim
    return flops * (0.5 if s.causal else 1.0) * (2.5 if s.backward else 1.0)


def attention_case(torch: Any, dev: Any, s: AttentionShape) -> Case:
    """One SDPA call (forward, or the backward pass of one through ``torch.autograd.grad``)."""
    run = _sdpa(torch, s)
    bf = torch.bfloat16
    qshape = (s.batch, s.heads, s.seq_q, s.head_dim)
    kvshape = (s.batch, s.kv_heads, s.seq_kv, s.head_dim)
    q_bytes, kv_bytes = 2 * math.prod(qshape), 2 * math.prod(kvshape)
    stats = 4.0 * s.batch * s.heads * s.seq_q

    def make(i: int) -> Any:
        grad = s.backward
        q = torch.randn(qshape, device=dev, dtype=bf, requires_grad=grad)
        k = torch.randn(kvshape, device=dev, dtype=bf, requires_grad=grad)
        v = torch.randn(kvshape, device=dev, dtype=bf, requires_grad=grad)
        if not s.backward:
            return (q, k, v)
        out = run(q, k, v)
        return (q, k, v, out, torch.randn_like(out))

    if s.backward:

        def call(g: Any) -> Any:
            return torch.autograd.grad(g[3], (g[0], g[1], g[2]), g[4], retain_graph=True)

    else:

        def call(g: Any) -> Any:
            return run(g[0], g[1], g[2])

    rows = slice(max(0, s.seq_q - 128), s.seq_q)

    def check(g: Any, out: Any) -> float:
        if not s.backward:
            ref = attention_reference(torch, g[0][:1, :1], g[1][:1, :1], g[2][:1, :1], s.causal, rows)
            return rel_error(torch, out[:1, :1, rows], ref)
        # backward: dV of batch 0, KV head 0 (fed by the query heads of its group) against float32 autograd of
        # the reference over all query rows
        group = s.heads // s.kv_heads
        q = g[0][:1, :group].detach().float().requires_grad_(True)
        k, v = (t[:1, :1].detach().float().requires_grad_(True) for t in g[1:3])
        ref_out = attention_reference(torch, q, k, v, s.causal, slice(0, s.seq_q))
        (dv,) = torch.autograd.grad(ref_out, (v,), g[4][:1, :group].float())
        return rel_error(torch, out[2][:1, :1], dv)

    if s.backward:  # read Q, O, dO, K, V and the LSE, write dQ, dK, dV
        moved = 4.0 * q_bytes + 4.0 * kv_bytes + stats
    else:
        moved = 2.0 * q_bytes + 2.0 * kv_bytes + stats
    return Case(make, call, check, moved, float(q_bytes), 3e-2, attention_flops(s), graph_ok=not s.backward)
