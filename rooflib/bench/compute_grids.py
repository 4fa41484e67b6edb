"""The shapes and sizes the ``compute`` benchmark family measures (pure Python: no torch, no pydantic).

GEMM ``[m, k] @ [k, n]`` shapes, one list for bf16 and fp8: squares, an m sweep at n = k = 8192 from decode
(m = 1) to large, m = 128 j + 1 (one row past a 128-row tile), decode GEMMs (m = 1, 8, 32 against LLM weight
shapes), skinny n, short k, small m and n with long k (split-K territory), tensor-parallel and LLM layer shapes,
and 64 shapes drawn log-uniformly from a fixed seed. Memory-bound ops over tensor sizes 256 KiB to 4 GiB (inputs
cycled to defeat the L2: ``cold``) and, up to 16 MiB, repeated on one L2-resident set (``hot``). Attention
(``torch.nn.functional.scaled_dot_product_attention``) over sequence lengths 512-16384, head_dim 64/128/256,
causal or not, MHA and GQA, forward and backward, plus decode (one query against a long KV cache). The
``kernels`` part: the op classes of :data:`KERNEL_OPS` from a few bytes to 256 MiB (:func:`kernel_points`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = [
    "ATTENTION",
    "GRIDS",
    "KERNEL_OPS",
    "MEMORY_OPS",
    "ROWWISE",
    "SHORT_ROWS",
    "AttentionShape",
    "attention_shapes",
    "gemm_shapes",
    "holdout_attention_shapes",
    "holdout_gemm_shapes",
    "holdout_memory_points",
    "kernel_points",
    "memory_points",
    "short_row_points",
]

GemmShape = tuple[int, int, int]


def _unique(shapes: list[GemmShape]) -> list[GemmShape]:
    seen: set[GemmShape] = set()
    out = []
    for s in shapes:
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


def _random_shapes(count: int, seed: int, m_bits: tuple[float, float] = (6, 14)) -> list[GemmShape]:
    """``count`` shapes with m log-uniform in ``2**m_bits`` (any whole number), n and k log-uniform in
    [64, 16384] (multiples of 16)."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        m = round(2 ** rng.uniform(*m_bits))
        n = 16 * max(4, round(2 ** rng.uniform(6, 14) / 16))
        k = 16 * max(4, round(2 ** rng.uniform(6, 14) / 16))
        out.append((m, n, k))
    return out


def gemm_shapes(quick: bool = False) -> list[GemmShape]:
    """The GEMM grid (about 160 shapes; ``quick``: 5)."""
    if quick:
        return [(1, 8192, 8192), (129, 4096, 4096), (2048, 2048, 2048), (8192, 8192, 8192), (128, 128, 16384)]
    square = [(s, s, s) for s in (256, 512, 1024, 2048, 4096, 8192, 16384)]
    odd = [(128 * j + 1, nk, nk) for nk in (4096, 8192) for j in (1, 2, 3, 5, 8, 16, 32, 64)]
    odd += [(128 * j + 1, 14336, 4096) for j in (4, 24)] + [(128 * j + 1, 4096, 14336) for j in (4, 24)]
    m_sweep = [
        (m, 8192, 8192)
        for m in (1, 2, 4, 8, 16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144)
    ]
    weights = ((4096, 4096), (4096, 14336), (14336, 4096), (1024, 8192), (28672, 8192), (8192, 28672), (16384, 16384))
    decode = [(m, n, k) for m in (1, 8, 32) for n, k in weights]
    skinny_n = [(8192, n, 8192) for n in (64, 128, 256, 384, 640, 1024, 2048)]
    short_k = [(8192, 8192, k) for k in (64, 128, 256, 512, 1024, 2048, 4096)]
    split_k = [
        (128, 128, 16384),
        (256, 256, 16384),
        (128, 1024, 32768),
        (512, 512, 32768),
        (256, 2048, 16384),
        (1024, 1024, 65536),
        (64, 4096, 65536),
        (2048, 2048, 32768),
    ]
    layers = [
        (16384, 4096, 16384),
        (4096, 28672, 8192),
        (8192, 1024, 8192),
        (4096, 14336, 4096),
        (4096, 4096, 14336),
        (2048, 6144, 4096),
        (16384, 8192, 2048),
        (32768, 4096, 4096),
        (8192, 3584, 4096),
        (8192, 4096, 3584),
    ]
    grid = square + odd + m_sweep + decode + skinny_n + short_k + split_k + layers + _random_shapes(64, seed=2026)
    return _unique(grid)


MEMORY_OPS = ("copy", "add", "mul", "gelu", "silu", "rmsnorm", "layernorm", "softmax", "sum")
"""Memory-bound op kinds measured (``sum``: a row reduction over the last dimension)."""

ROWWISE = ("rmsnorm", "layernorm", "softmax", "sum")
"""Ops over rows of ``cols`` columns (the rest are flat elementwise)."""


def memory_points(quick: bool = False) -> list[tuple[str, str, int, int, str]]:
    """``(op, cache, tensor_bytes, cols, dtype)``: each op over 256 KiB-4 GiB tensors (bf16, ``cold``: inputs cycled
    through more than 3x the L2), the same up to 16 MiB on one L2-resident set (``hot``), row-wise ops also at
    1024 and 32768 columns, and fp32 copy and add."""
    # 256 KiB to 4 GiB in steps of sqrt(2) (rounded to 4 KiB)
    sizes = [1 << p for p in (20, 26, 30)] if quick else [int(2 ** (h / 2)) // 4096 * 4096 for h in range(36, 65)]
    ops = ("copy", "add", "gelu", "rmsnorm", "softmax") if quick else MEMORY_OPS
    out = [(op, "cold", s, 8192, "bf16") for op in ops for s in sizes]
    out += [(op, "hot", s, 8192, "bf16") for op in ops for s in sizes if s <= (16 << 20)]
    if not quick:
        out += [
            (op, "cold", s, c, "bf16") for op in ROWWISE for c in (1024, 32768) for s in (4 << 20, 64 << 20, 1 << 30)
        ]
        out += [(op, "cold", s, 8192, "fp32") for op in ("copy", "add") for s in sizes]
    return out


@dataclass(frozen=True)
class AttentionShape:
    """One SDPA call: Q ``[batch, heads, seq_q, head_dim]``, K and V ``[batch, kv_heads, seq_kv, head_dim]``."""

    batch: int
    heads: int
    kv_heads: int
    seq_q: int
    seq_kv: int
    head_dim: int
    causal: bool
    backward: bool = False
    backend: str = "default"


ATTENTION_TOKENS = 16384
"""Query tokens per prefill call (batch x seq_q), so every sequence length does comparable work."""


def attention_shapes(quick: bool = False) -> list[AttentionShape]:
    """Prefill forward over 512-16384 (head_dim 64 and 128, causal or not, 16 heads, MHA or GQA 4:1), head_dim 256,
    backward passes, decode (seq_q = 1, KV caches of 1-64 Ki tokens), and the explicit backends at one shape."""
    seqs = (1024, 8192) if quick else (512, 1024, 2048, 4096, 8192, 16384)

    def prefill(
        s: int, d: int, causal: bool, kv: int, backward: bool = False, backend: str = "default"
    ) -> AttentionShape:
        return AttentionShape(ATTENTION_TOKENS // s, 16, kv, s, s, d, causal, backward, backend)

    out = [prefill(s, d, c, kv) for d in (64, 128) for s in seqs for c in (False, True) for kv in (16, 4)]
    if quick:
        return [*out[:4], prefill(4096, 128, True, 16, backward=True), AttentionShape(16, 32, 8, 1, 8192, 128, False)]
    out += [AttentionShape(1, 16, kv, 32768, 32768, 128, c) for c in (False, True) for kv in (16, 4)]
    out += [prefill(s, d, c, 16) for d in (96, 256) for s in (1024, 4096) for c in (False, True)]
    out += [prefill(s, 128, c, 2) for s in (2048, 8192) for c in (False, True)]
    out += [prefill(s, 128, c, kv, backward=True) for s in (1024, 4096, 16384) for c in (False, True) for kv in (16, 4)]
    out += [prefill(s, 64, c, 16, backward=True) for s in (1024, 4096) for c in (False, True)]
    out += [AttentionShape(16, 32, 8, 1, s, d, False) for d in (64, 128) for s in (1024, 4096, 16384, 65536)]
    out += [AttentionShape(b, 32, 8, 1, 4096, 128, False) for b in (1, 4, 64)]
    out += [AttentionShape(4, 32, 8, sq, 8192, 128, False) for sq in (256, 1024)]
    out += [prefill(4096, 128, c, 16, backend=b) for b in ("flash", "cudnn", "efficient") for c in (False, True)]
    return out


def holdout_gemm_shapes(quick: bool = False) -> list[GemmShape]:
    """A second GEMM grid for an out-of-sample check: 48 shapes from another seed, 16 decode-like ones (m 1-64),
    and the squares and the m sweep again (a repeat: run-to-run spread)."""
    fresh = _random_shapes(48, seed=7) + _random_shapes(16, seed=8, m_bits=(0, 6))
    if quick:
        return fresh[:3]
    repeat = [(s, s, s) for s in (1024, 4096, 8192)] + [(m, 8192, 8192) for m in (1, 16, 128, 129, 1024, 4096)]
    return _unique(fresh + repeat)


def holdout_memory_points(quick: bool = False) -> list[tuple[str, str, int, int, str]]:
    """Row-wise ops over 256 KiB-1 GiB at 1024, 2048, 4096, 16384 and 32768 columns, and the flat ops at 12
    sizes drawn log-uniformly between 300 KiB and 3 GiB (whole rows of 8192 bf16 for the row-wise ones)."""
    rng = random.Random(11)
    odd = sorted(int(2 ** rng.uniform(18.2, 31.5)) // 16384 * 16384 for _ in range(12))
    sizes = [1 << p for p in range(18, 31)]
    cols = (2048, 32768) if quick else (1024, 2048, 4096, 16384, 32768)
    out = [(op, "cold", s, c, "bf16") for op in ROWWISE for c in cols for s in (sizes[::6] if quick else sizes)]
    flat = ("copy", "add", "mul", "gelu", "silu")
    out += [(op, "cold", s, 8192, "bf16") for op in flat for s in (odd[:2] if quick else odd)]
    out += [(op, "hot", s, 8192, "bf16") for op in ("add", "rmsnorm") for s in odd if s <= (16 << 20)]
    return out


def holdout_attention_shapes(quick: bool = False) -> list[AttentionShape]:
    """30 prefill shapes drawn at random (sequence 384-16384, not always a multiple of 128; head_dim 64 or 128;
    8-32 heads; MHA or GQA; causal or not; about 16384 query tokens), 6 decode shapes and 4 backward passes."""
    rng = random.Random(13)
    out = []
    for i in range(40):
        s = int(2 ** rng.uniform(8.6, 14))
        heads = rng.choice((8, 16, 32))
        kv = rng.choice((heads, heads // 4))
        d = rng.choice((64, 128))
        causal = rng.random() < 0.5
        if i < 30:
            out.append(AttentionShape(max(1, 16384 // s), heads, kv, s, s, d, causal))
        elif i < 36:
            out.append(AttentionShape(rng.choice((1, 4, 16, 64)), 32, 8, 1, 4 * s, d, False))
        else:
            out.append(AttentionShape(max(1, 16384 // s), heads, heads, s, s, 128, causal, backward=True))
    return out[:3] if quick else out


GRIDS = ("main", "holdout", "short_rows")
"""``main``: the grid the models are fitted on (every other point) and tested on (the rest); ``holdout``: a second
grid, measured later, for an out-of-sample check; ``short_rows`` (memory part only): the row-wise ops over rows
shorter than the other grids' 1024 (:func:`short_row_points`)."""

SHORT_ROWS = (16, 32, 64, 128, 256, 512)
"""Row lengths of the ``short_rows`` grid: block-quantisation scales (rows of 128), norms over a head (64, 128),
softmax over a few experts (16-64). Below 1024 the other grids' curves do not reach: a row of 128 reduced by
``amax(dim=1)`` ran 4.3x slower than the 1024-column curve predicts (ParallelKernelBench problem 44 at
8192x8192, docs/validation/pkb runs/x1-kernels-2)."""


def short_row_points(quick: bool = False) -> list[tuple[str, str, int, int, str]]:
    """``(op, cache, tensor_bytes, cols, dtype)``: every row-wise op (:data:`ROWWISE`) at each of
    :data:`SHORT_ROWS` columns over 16 KiB-1 GiB tensors (bf16, inputs cycled past the L2; from 16 KiB, so that the
    curves say what a launch-bound call costs: runs/x1-gaps on an H100 started at 1 MiB)."""
    sizes = (1 << 20, 1 << 22) if quick else tuple(1 << p for p in (14, 16, 18, 20, 22, 24, 26, 28, 30))
    cols = SHORT_ROWS[2:4] if quick else SHORT_ROWS
    return [(op, "cold", s, c, "bf16") for op in ROWWISE for c in cols for s in sizes]


ATTENTION = attention_shapes()


KERNEL_OPS = (
    "copy",
    "add",
    "sum",
    "fill",
    "index_select",
    "gather",
    "index_add",
    "scatter_add",
    "scatter_add_rows",
    "index_put",
    "sort",
    "sort_rows",
    "transpose",
    "strided",
    "cumsum",
    "rfft",
    "fft",
    "rfft_dim0",
    "cast",
    "cast_to_i8",
    "cast_from_i8",
    "strided_copy",
    "sum_dim0",
    "bcast_scalar",
    "bcast_cast",
    "bcast_col",
    "bcast_row",
)
"""Op names of the ``kernels`` part (``rooflib.bench.kernel_cases``; ``copy``, ``add``, ``sum`` and ``fill`` at
launch-bound sizes)."""


SUM_DIM0_COLS = (8, 64, 256, 4096, 16384)
"""Row lengths of the column sums measured besides 1024 (``sum_dim0@cols``): ATen's reduction picks its strategy
by the number of columns and rows, not by bytes alone."""


def kernel_points(quick: bool = False) -> list[tuple[str, str, int, str]]:
    """``(op, cache, tensor_bytes, dtype)``: each op over input tensors from a few bytes (launch-bound) to 256 MiB
    or more, cold (inputs cycled through more than 3x the L2), and the streaming ops also hot (one group)."""
    tiny = [1 << p for p in range(1, 19, 2)]  # 2 B .. 128 KiB
    big = [1 << p for p in range(10, 29, 2)]  # 1 KiB .. 256 MiB
    if quick:
        tiny, big = tiny[::4], big[::4]
    out: list[tuple[str, str, int, str]] = []
    for op in ("copy", "add", "sum", "fill"):
        lo = 2048 if op == "sum" else 2  # sum: at least two rows of 1024 bf16
        out += [(op, cache, s, "bf16") for cache in ("cold", "hot") for s in tiny if s >= lo]
    out += [("fill", "cold", s, "bf16") for s in big if s > tiny[-1]]
    for op in ("index_select", "gather", "index_add", "scatter_add", "index_put", "cumsum"):
        out += [(op, "cold", s, "bf16") for s in big if s >= 4096]
    out += [("scatter_add_rows", "cold", s, "bf16") for s in big if s >= 4096]
    out += [("sort", "cold", s, "fp32") for s in big]
    out += [("sort_rows", "cold", s, "fp32") for s in big if s >= 4096]
    for dt in ("bf16", "fp32", "complex64"):
        out += [("transpose", "cold", s, dt) for s in big if s >= 4096]
    out += [("strided", "cold", s, "bf16") for s in big if s >= 4096]
    out += [("rfft", "cold", s, "fp32") for s in big if s >= 16384]
    out += [("fft", "cold", s, "complex64") for s in big if s >= 16384]
    out += [("rfft_dim0", "cold", s, "fp32") for s in big if s >= 16384]
    out += [("cast", "cold", s, dt) for dt in ("bf16", "fp32") for s in tiny[1:] + big[4:]]
    out += [(op, "cold", s, "fp32") for op in ("cast_to_i8", "cast_from_i8") for s in tiny[2:] + big[4:]]
    out += [("strided_copy", "cold", s, "bf16") for s in tiny[3:] + big[4:]]
    out += [("sum_dim0", "cold", s, "bf16") for s in big if s >= 4096]
    for cols in SUM_DIM0_COLS:  # column sums of other row lengths: op@cols, rows from 4 (at least 1024 elements)
        sizes = [2 * cols * (4**k) for k in range(1, 13)]
        out += [(f"sum_dim0@{cols}", "cold", s, "bf16") for s in sizes if 2048 <= s <= big[-1]][:: 2 if quick else 1]
    for op in ("bcast_scalar", "bcast_col", "bcast_row", "bcast_cast"):  # a broadcast tensor operand
        for dt in ("bf16",) if op == "bcast_cast" else ("bf16", "fp32"):
            out += [(op, "cold", s, dt) for s in tiny[3:] + big[4:]][:: 2 if quick else 1]
    out += [
        (op, "hot", s, "bf16") for op in ("bcast_scalar", "bcast_col") for s in (1 << 14, 1 << 17, 1 << 20, 1 << 22)
    ]
    # the same classes with their input left in L2 (one group), up to 4 MiB: a program's op reads what the op
    # before it just wrote, where the cold curves read from HBM
    small = [1 << p for p in range(10, 23, 2)]  # 1 KiB .. 4 MiB
    for op, dt in (("cast", "bf16"), ("cast", "fp32"), ("strided_copy", "bf16"), ("transpose", "bf16")):
        out += [(op, "hot", s, dt) for s in small if s >= 4096 or op == "cast"]
    return out
