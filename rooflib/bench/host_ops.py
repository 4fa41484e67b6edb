"""The ``op`` cases of the ``host`` family (:mod:`rooflib.bench.host_worker` times them): one eager call each
on tiny tensors. :data:`OP_CASES` are the calls programs write most (elementwise, row ops, cuBLAS, attention,
views, and three compositions held out as checks); :data:`PKB_CASES` the aten ops ParallelKernelBench's
references dispatch most (by host time in their traces), each called alone so that their host cost is measured,
not assumed to be an elementwise kernel's.

Each case names the aten op one call dispatches (as ``rooflib trace`` records it); ``triton`` is one launch of a
one-block Triton kernel (the cost of the Python launcher, charged to every traced ``triton.<kernel>``), present
only where Triton is installed. ``no_grad`` is a call of an empty ``@torch.no_grad()`` function (the trace
records each grad-mode context entry as ``python.no_grad``). The calls whose output size depends on values wait
for the device inside (``nonzero``, ``masked_select``, boolean-mask indexing and assignment, ``unique``,
``bincount``, ``repeat_interleave`` of a repeats tensor, the sparse-dense products): each call is timed whole,
its launches and its wait on an otherwise idle GPU, which is what ``rooflib trace`` charges such an op
(``rooflib.trace.value_sized.value_sized``; the names ``aten.index(bool)`` and ``aten.index_put(bool)`` are
the boolean-mask forms).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["OP_CASES", "PKB_CASES", "SYNC_CASES", "op_cases", "pkb_cases"]

OP_CASES: dict[str, tuple[str, ...]] = {
    "add": ("aten.add",),
    "mul_scalar": ("aten.mul",),
    "gelu": ("aten.gelu",),
    "silu": ("aten.silu",),
    "tanh": ("aten.tanh",),
    "div": ("aten.div",),
    "cast": ("aten._to_copy",),
    "softmax": ("aten._softmax",),
    "log_softmax": ("aten._log_softmax",),
    "sum_dim": ("aten.sum",),
    "topk": ("aten.topk",),
    "nll_loss": ("aten.nll_loss_forward",),
    "mm": ("aten.mm",),
    "gemv": ("aten.mm",),
    "sdpa": ("aten.scaled_dot_product_attention",),
    "view": ("aten.view",),
    "transpose": ("aten.transpose",),
    "reshape": ("aten.view",),
    "split": ("aten.split_with_sizes",),
    "matmul3d": ("aten.view", "aten.mm", "aten._unsafe_view"),
    "cross_entropy": ("aten._log_softmax", "aten.nll_loss_forward"),
    "chain": ("aten.mul", "aten.add", "aten.silu", "aten.mul", "aten.tanh", "aten.add"),
}
"""Each ``op`` case and the aten ops one call of it dispatches (as ``rooflib trace`` records them)."""


def op_cases(torch: Any, dev: Any) -> dict[str, Callable[[], Any]]:
    """The calls of :data:`OP_CASES` on tiny tensors of ``dev`` (bf16 on the GPU, fp32 on the CPU)."""
    import torch.nn.functional as F

    from rooflib.bench.programs import elementwise_chain

    dt = torch.bfloat16 if dev.type == "cuda" else torch.float32
    a, b = torch.randn(256, device=dev, dtype=dt), torch.randn(256, device=dev, dtype=dt)
    rows = torch.randn(4, 64, device=dev, dtype=torch.float32)
    logp = torch.log_softmax(rows, dim=-1)
    target = torch.randint(0, 64, (4,), device=dev)
    m1, m2 = torch.randn(64, 64, device=dev, dtype=dt), torch.randn(64, 64, device=dev, dtype=dt)
    v1, w1 = torch.randn(1, 1024, device=dev, dtype=dt), torch.randn(1024, 1024, device=dev, dtype=dt)
    x3 = torch.randn(1, 8, 64, device=dev, dtype=dt)
    q = torch.randn(1, 2, 64, 64, device=dev, dtype=dt)
    cases: dict[str, Callable[[], Any]] = {
        "add": lambda: a + b,
        "mul_scalar": lambda: a * 0.5,
        "gelu": lambda: F.gelu(a, approximate="tanh"),
        "silu": lambda: F.silu(a),
        "tanh": lambda: torch.tanh(a),
        "div": lambda: a / b,
        "cast": lambda: a.float(),
        "softmax": lambda: torch.softmax(rows, dim=-1),
        "log_softmax": lambda: F.log_softmax(rows, dim=-1),
        "sum_dim": lambda: rows.sum(dim=-1, keepdim=True),
        "topk": lambda: torch.topk(rows, 2, dim=-1),
        "nll_loss": lambda: F.nll_loss(logp, target),
        "mm": lambda: m1 @ m2,
        "gemv": lambda: v1 @ w1,
        "sdpa": lambda: F.scaled_dot_product_attention(q, q, q, is_causal=True),
        "view": lambda: m1.view(16, 256),
        "transpose": lambda: m1.transpose(0, 1),
        "reshape": lambda: m1.reshape(4096),
        "split": lambda: m1.split([32, 16, 16], dim=-1),
        "matmul3d": lambda: x3 @ m2,
        "cross_entropy": lambda: F.cross_entropy(rows, target),
        "chain": lambda: elementwise_chain(a, b),
    }
    return cases


PKB_CASES: dict[str, tuple[str, ...]] = {
    "mul": ("aten.mul",),
    "sub": ("aten.sub",),
    "eq": ("aten.eq",),
    "neg": ("aten.neg",),
    "pow": ("aten.pow",),
    "sqrt": ("aten.sqrt",),
    "mul_": ("aten.mul_",),
    "add_": ("aten.add_",),
    "addcmul_": ("aten.addcmul_",),
    "copy_": ("aten.copy_",),
    "clone": ("aten.clone",),
    "zeros_like": ("aten.zeros_like",),
    "arange": ("aten.arange",),
    "repeat": ("aten.repeat",),
    "roll": ("aten.roll",),
    "index_select": ("aten.index_select",),
    "index": ("aten.index",),
    "index_put_": ("aten.index_put_",),
    "gather": ("aten.gather",),
    "scatter_add_": ("aten.scatter_add_",),
    "masked_fill": ("aten.masked_fill",),
    "cumsum": ("aten.cumsum",),
    "sort": ("aten.sort",),
    "vector_norm": ("aten.linalg_vector_norm",),
    "bmm": ("aten.bmm",),
    "addmm": ("aten.addmm",),
    "conv2d": ("aten.convolution",),
    "rfft": ("aten._fft_r2c",),
    "fft": ("aten._fft_c2c",),
    "triton": ("triton",),
    "no_grad": ("python.no_grad",),
    "nonzero": ("aten.nonzero",),
    "masked_select": ("aten.masked_select",),
    "index_bool": ("aten.index(bool)",),
    "index_put_bool": ("aten.index_put(bool)",),
    "unique": ("aten._unique2",),
    "bincount": ("aten.bincount",),
    "repeat_interleave": ("aten.repeat_interleave",),
    "sparse_mm": ("aten._sparse_addmm",),
    "sparse_bmm": ("aten.bmm(sparse)",),
}
"""Each case and the aten op (or ``triton``) one call of it dispatches."""

SYNC_CASES = (
    "nonzero",
    "masked_select",
    "index_bool",
    "index_put_bool",
    "unique",
    "bincount",
    "repeat_interleave",
    "sparse_mm",
    "sparse_bmm",
)
"""The cases that wait for the device inside (their output size depends on values)."""


def _triton_case(torch: Any, dev: Any) -> Callable[[], Any] | None:
    try:
        import triton  # type: ignore[import-not-found, unused-ignore]
        import triton.language as tl  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return None

    def _scale(x_ptr, n, block: tl.constexpr):  # type: ignore[no-untyped-def]  # Triton reads the source as is
        offs = tl.arange(0, block)
        mask = offs < n
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 1.0, mask=mask)

    kernel = triton.jit(_scale)
    x = torch.ones(256, device=dev, dtype=torch.float32)

    def call() -> Any:
        kernel[(1,)](x, 256, block=256)
        return x

    return call


def _no_grad_call(torch: Any) -> Callable[[], Any]:
    """A call of an empty function decorated ``@torch.no_grad()`` (what 52 of PKB's 87 references are): the
    decorator's context entry and exit alone."""

    def empty() -> int:
        return 0

    decorated: Callable[[], Any] = torch.no_grad()(empty)
    return decorated


def _sparse_cases(torch: Any, dev: Any) -> dict[str, Callable[[], Any]]:
    """The sparse-dense products of PKB's graph and spherical-convolution references, fp32: ``sparse_mm``, a COO
    of 256 x 1024 with one entry per column as a program builds it (not coalesced: every product coalesces it
    again) times a dense 1024 x 64; ``sparse_bmm``, ``bmm`` of a coalesced 3 x 128 x 2048 COO with four entries
    per row times a dense 3 x 2048 x 64 (one cuSPARSE product per matrix)."""
    g = torch.Generator(device="cpu").manual_seed(0)
    rows = torch.randint(0, 256, (1024,), generator=g)
    coo = torch.sparse_coo_tensor(
        torch.stack([rows, torch.arange(1024)]), torch.ones(1024), (256, 1024), check_invariants=False
    ).to(dev)
    dense = torch.randn(1024, 64, generator=g).to(dev)
    nnz = 3 * 128 * 4
    at = torch.stack(
        [torch.arange(nnz) // 512, torch.arange(nnz) // 4 % 128, torch.randint(0, 2048, (nnz,), generator=g)]
    )
    batched = (
        torch.sparse_coo_tensor(at, torch.randn(nnz, generator=g), (3, 128, 2048), check_invariants=False)
        .coalesce()
        .to(dev)
    )
    right = torch.randn(3, 2048, 64, generator=g).to(dev)
    return {"sparse_mm": lambda: torch.sparse.mm(coo, dense), "sparse_bmm": lambda: torch.bmm(batched, right)}


def pkb_cases(torch: Any, dev: Any) -> dict[str, Callable[[], Any]]:
    """The calls of :data:`PKB_CASES` on tiny tensors of ``dev`` (``triton`` only on CUDA with Triton)."""
    import torch.nn.functional as F

    dt = torch.bfloat16 if dev.type == "cuda" else torch.float32
    a, b = torch.randn(256, device=dev, dtype=dt), torch.randn(256, device=dev, dtype=dt)
    f = torch.randn(256, device=dev, dtype=torch.float32)
    dst = torch.empty(256, device=dev, dtype=dt)
    pos, acc, src = f.abs() + 1.0, torch.zeros(256, device=dev), torch.ones(64, device=dev)
    idx = torch.randint(0, 256, (64,), device=dev)
    mask = a > 0
    m3a, m3b = torch.randn(4, 32, 32, device=dev, dtype=dt), torch.randn(4, 32, 32, device=dev, dtype=dt)
    m1, m2, bias = (torch.randn(32, 32, device=dev, dtype=dt) for _ in range(3))
    img, wconv = torch.randn(1, 4, 16, 16, device=dev, dtype=dt), torch.randn(4, 4, 3, 3, device=dev, dtype=dt)
    c = torch.randn(256, device=dev, dtype=torch.complex64)
    zero, reps = torch.zeros((), device=dev, dtype=dt), torch.randint(0, 4, (64,), device=dev)
    cases: dict[str, Callable[[], Any]] = {
        "mul": lambda: a * b,
        "sub": lambda: a - b,
        "eq": lambda: a == b,
        "neg": lambda: -a,
        "pow": lambda: a.pow(2),
        "sqrt": lambda: torch.sqrt(pos),
        "mul_": lambda: f.mul_(1.0),
        "add_": lambda: f.add_(0.0),
        "addcmul_": lambda: f.addcmul_(f, f, value=0.0),
        "copy_": lambda: dst.copy_(a),
        "clone": lambda: a.clone(),
        "zeros_like": lambda: torch.zeros_like(a),
        "arange": lambda: torch.arange(256, device=dev),
        "repeat": lambda: a.repeat(2),
        "roll": lambda: torch.roll(a, 1),
        "index_select": lambda: a.index_select(0, idx),
        "index": lambda: a[idx],
        "index_put_": lambda: dst.index_put_((idx,), a[:64]),
        "gather": lambda: torch.gather(a, 0, idx),
        "scatter_add_": lambda: acc.scatter_add_(0, idx, src),
        "masked_fill": lambda: a.masked_fill(mask, 0.0),
        "cumsum": lambda: torch.cumsum(f, 0),
        "sort": lambda: torch.sort(f),
        "vector_norm": lambda: torch.linalg.vector_norm(f),
        "bmm": lambda: torch.bmm(m3a, m3b),
        "addmm": lambda: F.linear(m1, m2, bias),
        "conv2d": lambda: F.conv2d(img, wconv, padding=1),
        "rfft": lambda: torch.fft.rfft(f),
        "fft": lambda: torch.fft.fft(c),
    }
    cases["no_grad"] = _no_grad_call(torch)
    cases.update(  # the calls that wait for the device inside
        nonzero=lambda: torch.nonzero(mask),
        masked_select=lambda: a.masked_select(mask),
        index_bool=lambda: a[mask],
        index_put_bool=lambda: dst.index_put_((mask,), zero),
        unique=lambda: torch.unique(idx),
        bincount=lambda: torch.bincount(idx),
        repeat_interleave=lambda: torch.repeat_interleave(reps),
        **_sparse_cases(torch, dev),
    )
    if dev.type == "cuda":
        tri = _triton_case(torch, dev)
        if tri is not None:
            cases["triton"] = tri
    return cases
