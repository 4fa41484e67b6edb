"""Lowering rules for matrix products and attention: m, n, k, batch (and heads, sequence lengths, head size)
from the operands' shapes.

========================  ================================================================================
aten op                   dims (``a @ b``; FLOPs ``2 batch m n k``)
========================  ================================================================================
mm, _scaled_mm, _int_mm   a [m, k], b [k, n]
addmm                     mat1 [m, k], mat2 [k, n] (the bias add is the GEMM's epilogue)
bmm, baddbmm, addbmm      batch1 [batch, m, k], batch2 [batch, k, n]
mv, addmv, dot, vdot      n = 1 (and m = 1 for dot products)
linear                    input [..., k] (every leading dim is m), weight [n, k]
_grouped_mm               [tokens, k] x [groups, k, n]: m = tokens (each token meets one group's weight);
                          [groups, m, k] x [groups, k, n]: batch = groups
========================  ================================================================================

Attention: ``scaled_dot_product_attention`` and the ``_scaled_dot_product_*_attention`` ops take
``[..., heads, seq, head_dim]`` (every dim before the heads is batch; key/value heads < query heads is GQA);
``_flash_attention_forward`` and ``_efficient_attention_forward`` take ``[batch, seq, heads, head_dim]`` or,
variable-length, ``[tokens, heads, head_dim]`` with ``max_q`` tokens a sequence. The ``*_backward`` ops are
attention with ``backward=True``.
"""

from __future__ import annotations

import math

from rooflib.trace.pieces import Context, Piece, model_dtype
from rooflib.trace.records import Call, TensorMeta

__all__ = ["ATTENTION_OPS", "GEMM_OPERANDS", "attention", "gemm", "gemm_dims"]


GEMM_OPERANDS = {
    "aten.mm": ("self", "mat2"),
    "aten.addmm": ("mat1", "mat2"),
    "aten.bmm": ("self", "mat2"),
    "aten.baddbmm": ("batch1", "batch2"),
    "aten.addbmm": ("batch1", "batch2"),
    "aten.mv": ("self", "vec"),
    "aten.addmv": ("mat", "vec"),
    "aten.dot": ("self", "tensor"),
    "aten.vdot": ("self", "other"),
    "aten.linear": ("input", "weight"),
    "aten._scaled_mm": ("self", "mat2"),
    "aten._int_mm": ("self", "mat2"),
    "aten._grouped_mm": ("self", "mat2"),
    "aten._scaled_grouped_mm": ("self", "mat2"),
}


def gemm_dims(name: str, a: TensorMeta, b: TensorMeta) -> tuple[int, int, int, int]:
    """``(batch, m, n, k)`` of ``a @ b`` as the op computes it (FLOPs ``2 batch m n k``)."""
    sa, sb = a.shape, b.shape
    if name == "aten.linear":  # weight is [n, k]
        k = sa[-1] if sa else 1
        return 1, math.prod(sa[:-1]), sb[0] if len(sb) == 2 else 1, k
    if name in ("aten.dot", "aten.vdot"):
        return 1, 1, 1, sa[0]
    if name in ("aten.mv", "aten.addmv"):
        return 1, sa[0], 1, sa[1]
    if name in ("aten._grouped_mm", "aten._scaled_grouped_mm"):
        if len(sa) == 3 and len(sb) == 3:
            return sa[0], sa[1], sb[2], sa[2]
        if len(sa) == 2 and len(sb) == 3:  # tokens of every group against the group's weight
            return 1, sa[0], sb[2], sa[1]
        if len(sa) == 3 and len(sb) == 2:
            return 1, sa[0] * sa[1], sb[1] // max(sa[0], 1), sa[2]
        return 1, sa[0], sb[-1], sa[-1]  # 2d x 2d: groups along k
    if len(sa) == 3:
        return sa[0], sa[1], sb[2], sa[2]
    return 1, sa[0], sb[1], sa[1]


def gemm(call: Call, ctx: Context) -> list[Piece]:
    first, second = GEMM_OPERANDS[call.name]
    a, b = call.arg(first), call.arg(second)
    batch, m, n, k = gemm_dims(call.name, a, b)
    if min(batch, m, n, k) <= 0:
        return []
    dtype = model_dtype(a)
    if dtype == "fp32":
        dtype = ctx.float32_matmul
    return [Piece("gemm", {"m": m, "n": n, "k": k, "batch": batch, "dtype": dtype}, call.name)]


_BHLD = {
    "aten.scaled_dot_product_attention",
    "aten._scaled_dot_product_flash_attention",
    "aten._scaled_dot_product_efficient_attention",
    "aten._scaled_dot_product_cudnn_attention",
    "aten._scaled_dot_product_flash_attention_for_cpu",
    "aten._scaled_dot_product_flash_attention_backward",
    "aten._scaled_dot_product_efficient_attention_backward",
    "aten._scaled_dot_product_cudnn_attention_backward",
}
_BLHD = {
    "aten._flash_attention_forward",
    "aten._efficient_attention_forward",
    "aten._flash_attention_backward",
    "aten._efficient_attention_backward",
}


def attention(call: Call, ctx: Context) -> list[Piece]:
    q, k = call.arg("query"), call.arg("key")
    varlen = False
    if call.name in _BHLD:  # [..., heads, seq, dim]: every dim before the heads is a batch dim
        batch, heads = math.prod(q.shape[:-3]), (q.shape[-3] if len(q.shape) >= 3 else 1)
        kv_heads = k.shape[-3] if len(k.shape) >= 3 else heads
        seq_q, seq_kv = q.shape[-2], k.shape[-2]
    elif len(q.shape) == 4:  # [batch, seq, heads, dim]
        batch, seq_q, heads = q.shape[0], q.shape[1], q.shape[2]
        seq_kv, kv_heads = k.shape[1], k.shape[2]
    else:  # variable-length [tokens, heads, dim]: max_q tokens per sequence
        longest = call.arg("max_q", call.arg("max_seqlen_q")) or q.shape[0]
        batch, seq_q, heads = max(1, math.ceil(q.shape[0] / longest)), int(longest), q.shape[1]
        seq_kv, kv_heads = int(call.arg("max_k", call.arg("max_seqlen_k")) or k.shape[0]), k.shape[1]
        varlen = True  # the lengths are data, unknown under fake tensors: the bound counts one longest sequence
    head_dim = q.shape[-1]
    if min(batch, heads, seq_q, seq_kv, head_dim) <= 0:
        return []
    mask = call.arg("custom_mask_type")
    causal = bool(call.arg("is_causal", False)) or (mask is not None and int(mask) > 0)
    params = {
        "batch": batch,
        "heads": heads,
        "seq_q": seq_q,
        "seq_kv": seq_kv,
        "head_dim": head_dim,
        "kv_heads": kv_heads,
        "causal": causal,
        "dtype": model_dtype(q),
    }
    if call.name.endswith("_backward"):
        params["backward"] = True
    if varlen:
        params["varlen"] = True
    return [Piece("attention", params, call.name)]


ATTENTION_OPS = _BHLD | _BLHD
