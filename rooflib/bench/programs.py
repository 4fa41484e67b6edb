"""Six small single-GPU PyTorch programs, each defined once for the ``programs`` benchmark family and the tracer.

Each program is a plain function of tensors (``mlp_block(x, w1, w2)``, ...) and has an inputs function
``<name>_inputs(rank, world, device, **params)`` returning the program's positional arguments as a tuple: fresh
random normal data (weights scaled by ``1 / sqrt(fan_in)``), bf16 unless ``dtype`` says otherwise. ``rank`` and
``world`` follow the tracer's SPMD convention; these programs run on one GPU and ignore them, except that each
rank draws its own data. So a program can be traced and predicted later::

    rooflib trace rooflib/bench/programs.py:mlp_block --inputs rooflib/bench/programs.py:mlp_inputs

=====================  ==========================================================================================
program                what it runs (eager kernels, in order)
=====================  ==========================================================================================
``mlp_block``          ``x + gelu_tanh(x @ w1) @ w2``: GEMM, GELU, GEMM, add
``attention_block``    QKV projection, causal SDPA (GQA when ``kv_heads < heads``), output projection, residual add
``gemv_chain``         ``x @ w1 @ w2 ... @ wL`` for a few rows ``x`` (decode): L GEMV-shaped GEMMs
``elementwise_chain``  ``tanh(silu(x * y + x) * 0.5) + y``: six elementwise kernels
``router``             ``x @ w_router``, fp32 softmax, top-k, renormalised weights (a mixture-of-experts router)
``cross_entropy``      ``x @ w_vocab`` (logits), fp32 cast, ``F.cross_entropy`` against integer targets
=====================  ==========================================================================================

:data:`PROGRAMS` maps each name to its function, its inputs function and the parameter sets the benchmark
measures (a small, host-bound size first, then device-bound ones). Imports torch only inside the functions.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "PROGRAMS",
    "Program",
    "attention_block",
    "attention_inputs",
    "cross_entropy",
    "cross_entropy_inputs",
    "elementwise_chain",
    "elementwise_inputs",
    "gemv_chain",
    "gemv_inputs",
    "mlp_block",
    "mlp_inputs",
    "router",
    "router_inputs",
]


def _torch() -> Any:
    import torch

    return torch


def _gen(device: Any, rank: int, seed: int | None) -> Any:
    torch = _torch()
    try:
        gen = torch.Generator(device=device)
    except RuntimeError:  # traced by rooflib trace: GPU tensors are fake (meta), random values do not matter
        return None
    if seed is None:
        gen.seed()
    else:
        gen.manual_seed(seed * 1_000_003 + rank)
    return gen


def _randn(shape: tuple[int, ...], gen: Any, device: Any, dtype: str, scale: float = 1.0) -> Any:
    torch = _torch()
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dtype]
    t = torch.randn(shape, generator=gen, device=device, dtype=torch.float32)
    return (t * scale).to(dt)


# --- the programs ---------------------------------------------------------------------------------------------


def mlp_block(x: Any, w1: Any, w2: Any) -> Any:
    """``x + gelu_tanh(x @ w1) @ w2`` for ``x [tokens, hidden]``, ``w1 [hidden, ffn]``, ``w2 [ffn, hidden]``."""
    import torch.nn.functional as F

    return x + F.gelu(x @ w1, approximate="tanh") @ w2


def attention_block(x: Any, wqkv: Any, wo: Any, heads: int, kv_heads: int) -> Any:
    """Causal self-attention with a residual: ``x [batch, seq, hidden]``, ``wqkv [hidden, (heads + 2 kv_heads) d]``,
    ``wo [hidden, hidden]``, head size ``d = hidden / heads``."""
    import torch.nn.functional as F

    b, s, hidden = x.shape
    d = hidden // heads
    q, k, v = (x @ wqkv).split([heads * d, kv_heads * d, kv_heads * d], dim=-1)
    q = q.view(b, s, heads, d).transpose(1, 2)
    k = k.view(b, s, kv_heads, d).transpose(1, 2)
    v = v.view(b, s, kv_heads, d).transpose(1, 2)
    if kv_heads != heads:
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    else:
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return x + o.transpose(1, 2).reshape(b, s, hidden) @ wo


def gemv_chain(x: Any, *weights: Any) -> Any:
    """``x @ w1 @ w2 ... @ wL`` for a few rows ``x [batch, hidden]`` and square weights (decode-shaped GEMMs)."""
    y = x
    for w in weights:
        y = y @ w
    return y


def elementwise_chain(x: Any, y: Any) -> Any:
    """``tanh(silu(x * y + x) * 0.5) + y``: six elementwise kernels over tensors of one shape."""
    import torch
    import torch.nn.functional as F

    z = x * y
    z = z + x
    z = F.silu(z)
    z = z * 0.5
    z = torch.tanh(z)
    return z + y


def router(x: Any, w: Any, k: int) -> tuple[Any, Any]:
    """Mixture-of-experts router: fp32 softmax of ``x @ w`` over the experts, top-``k``, weights renormalised to
    sum to one. Returns ``(weights [tokens, k] fp32, experts [tokens, k] int64)``."""
    import torch

    probs = torch.softmax((x @ w).float(), dim=-1)
    top, idx = torch.topk(probs, k, dim=-1)
    return top / top.sum(dim=-1, keepdim=True), idx


def cross_entropy(x: Any, w: Any, targets: Any) -> Any:
    """Vocabulary cross-entropy: ``F.cross_entropy((x @ w).float(), targets)`` (mean over tokens, a scalar)."""
    import torch.nn.functional as F

    return F.cross_entropy((x @ w).float(), targets)


# --- their inputs ---------------------------------------------------------------------------------------------


def mlp_inputs(
    rank: int,
    world: int,
    device: Any,
    *,
    tokens: int = 4096,
    hidden: int = 4096,
    ffn: int = 14336,
    dtype: str = "bf16",
    seed: int | None = None,
) -> tuple[Any, ...]:
    g = _gen(device, rank, seed)
    return (
        _randn((tokens, hidden), g, device, dtype),
        _randn((hidden, ffn), g, device, dtype, 1 / math.sqrt(hidden)),
        _randn((ffn, hidden), g, device, dtype, 1 / math.sqrt(ffn)),
    )


def attention_inputs(
    rank: int,
    world: int,
    device: Any,
    *,
    batch: int = 1,
    seq: int = 4096,
    hidden: int = 4096,
    heads: int = 32,
    kv_heads: int = 8,
    dtype: str = "bf16",
    seed: int | None = None,
) -> tuple[Any, ...]:
    g = _gen(device, rank, seed)
    d = hidden // heads
    return (
        _randn((batch, seq, hidden), g, device, dtype),
        _randn((hidden, (heads + 2 * kv_heads) * d), g, device, dtype, 1 / math.sqrt(hidden)),
        _randn((hidden, hidden), g, device, dtype, 1 / math.sqrt(hidden)),
        heads,
        kv_heads,
    )


def gemv_inputs(
    rank: int,
    world: int,
    device: Any,
    *,
    batch: int = 1,
    hidden: int = 4096,
    layers: int = 8,
    dtype: str = "bf16",
    seed: int | None = None,
) -> tuple[Any, ...]:
    g = _gen(device, rank, seed)
    x = _randn((batch, hidden), g, device, dtype)
    return (x, *(_randn((hidden, hidden), g, device, dtype, 1 / math.sqrt(hidden)) for _ in range(layers)))


def elementwise_inputs(
    rank: int, world: int, device: Any, *, elements: int = 1 << 24, dtype: str = "bf16", seed: int | None = None
) -> tuple[Any, ...]:
    g = _gen(device, rank, seed)
    return (_randn((elements,), g, device, dtype), _randn((elements,), g, device, dtype))


def router_inputs(
    rank: int,
    world: int,
    device: Any,
    *,
    tokens: int = 8192,
    hidden: int = 4096,
    experts: int = 64,
    k: int = 2,
    dtype: str = "bf16",
    seed: int | None = None,
) -> tuple[Any, ...]:
    g = _gen(device, rank, seed)
    return (
        _randn((tokens, hidden), g, device, dtype),
        _randn((hidden, experts), g, device, dtype, 1 / math.sqrt(hidden)),
        k,
    )


def cross_entropy_inputs(
    rank: int,
    world: int,
    device: Any,
    *,
    tokens: int = 4096,
    hidden: int = 4096,
    vocab: int = 32768,
    dtype: str = "bf16",
    seed: int | None = None,
) -> tuple[Any, ...]:
    torch = _torch()
    g = _gen(device, rank, seed)
    targets = torch.randint(0, vocab, (tokens,), generator=g, device=device)
    return (
        _randn((tokens, hidden), g, device, dtype),
        _randn((hidden, vocab), g, device, dtype, 1 / math.sqrt(hidden)),
        targets,
    )


@dataclass(frozen=True)
class Program:
    """A program, its inputs function and the parameter sets the benchmark measures (``quick``: the first two)."""

    fn: Callable[..., Any]
    inputs: Callable[..., tuple[Any, ...]]
    sizes: tuple[dict[str, int], ...]


PROGRAMS: dict[str, Program] = {
    "mlp_block": Program(
        mlp_block,
        mlp_inputs,
        (
            {"tokens": 64, "hidden": 1024, "ffn": 4096},
            {"tokens": 2048, "hidden": 4096, "ffn": 14336},
            {"tokens": 8192, "hidden": 4096, "ffn": 14336},
            {"tokens": 512, "hidden": 2048, "ffn": 8192},
        ),
    ),
    "attention_block": Program(
        attention_block,
        attention_inputs,
        (
            {"batch": 1, "seq": 512, "hidden": 1024, "heads": 8, "kv_heads": 8},
            {"batch": 4, "seq": 2048, "hidden": 4096, "heads": 32, "kv_heads": 8},
            {"batch": 1, "seq": 8192, "hidden": 4096, "heads": 32, "kv_heads": 8},
            {"batch": 2, "seq": 1024, "hidden": 2048, "heads": 16, "kv_heads": 4},
        ),
    ),
    "gemv_chain": Program(
        gemv_chain,
        gemv_inputs,
        (
            {"batch": 1, "hidden": 1024, "layers": 8},
            {"batch": 1, "hidden": 4096, "layers": 8},
            {"batch": 8, "hidden": 8192, "layers": 8},
            {"batch": 4, "hidden": 2048, "layers": 8},
        ),
    ),
    "elementwise_chain": Program(
        elementwise_chain,
        elementwise_inputs,
        (
            {"elements": 1 << 16},
            {"elements": 1 << 22},
            {"elements": 1 << 28},
            {"elements": 1 << 20},
        ),
    ),
    "router": Program(
        router,
        router_inputs,
        (
            {"tokens": 256, "hidden": 2048, "experts": 64, "k": 2},
            {"tokens": 16384, "hidden": 4096, "experts": 64, "k": 2},
            {"tokens": 16384, "hidden": 4096, "experts": 128, "k": 8},
            {"tokens": 4096, "hidden": 2048, "experts": 128, "k": 4},
        ),
    ),
    "cross_entropy": Program(
        cross_entropy,
        cross_entropy_inputs,
        (
            {"tokens": 512, "hidden": 1024, "vocab": 32768},
            {"tokens": 4096, "hidden": 4096, "vocab": 32768},
            {"tokens": 4096, "hidden": 4096, "vocab": 128256},
            {"tokens": 1024, "hidden": 2048, "vocab": 50304},
        ),
    ),
}
"""Every program by name."""
