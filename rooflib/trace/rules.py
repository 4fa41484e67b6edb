"""Lowering rules for compute ops: one aten call -> the program ops it costs (``Piece`` s), from shapes alone.

=================  ============================================================================================
IR kind            aten ops (``name`` is the op's aten name; in-place variants ``add_`` lower as ``add``)
=================  ============================================================================================
gemm               mm, addmm, bmm, baddbmm, addbmm, mv, addmv, dot, vdot, linear, _scaled_mm, _int_mm,
                   _grouped_mm (m, n, k, batch from the operands; fp32 runs as tf32 when torch allows it)
attention          scaled_dot_product_attention (recorded whole), _scaled_dot_product_{flash,efficient,cudnn}
                   _attention, _flash_attention_forward, _efficient_attention_forward and their backward ops
norm               native_layer_norm (layernorm), rms_norm / _fused_rms_norm (rmsnorm), _softmax, _safe_softmax,
                   _log_softmax (softmax): rows x cols from the input and the normalised dims
reduction          ops torch tags ``reduction`` (sum, mean, amax, argmax, var, ...) and nll_loss, losses:
                   elements read, outputs written; logsumexp as ATen runs it (two reductions, seven
                   elementwise)
elementwise        ops torch tags ``pointwise`` (add, mul, gelu, silu, where, exp, ...), dropout, masked_fill,
                   scans (cumsum, cumprod, cummax, ...: read and write once), loss and softmax backwards, fills
                   (zeros, full, fill_, arange, randn, ...; no reads): reads/writes in output-sized tensors; a
                   pointwise op with a GPU tensor operand laid out otherwise than its output (a 0-dim tensor, a
                   broadcast column or row, a permuted view) names the non-vectorised kernel's class
                   (``curve: broadcast``, ``broadcast_fp32``, ``broadcast_cast``: :func:`broadcast_operands`)
copy               _to_copy, clone, copy_, cat, stack, repeat, repeat_interleave, nonzero, unique, pad, flip,
                   roll, tril/triu, *_scatter, *_copy; a copy to
                   the host (``.cpu()``) is a copy and a host sync unless ``non_blocking``; a transposing copy
                   says so (:mod:`rooflib.trace.indexing`)
index              gathers (index_select, gather, embedding, index, take): bytes gathered; scatters (scatter,
                   scatter_add, index_add, index_copy, index_put, masked_scatter): bytes scattered; each names
                   its measured class (:mod:`rooflib.trace.indexing`)
sort               sort, topk, kthvalue, msort
elementwise        ``triton.kernel`` (a Triton launch, :mod:`rooflib.trace.triton_stub`): a streaming kernel touching
                   each of its tensor arguments once, no faster than its grid's program floor where the grid is
                   known (``programs``, ``warps``: :class:`rooflib.specs.compute_models.ProgramSlotsSpec`)
sync               _local_scalar_dense (``.item()``, ``.tolist()``, ``bool(t)``), ``torch.cuda.synchronize``;
                   and before the pieces of an op whose output size depends on values (nonzero, masked_select,
                   unique, bincount, boolean-mask indexing, repeat_interleave of a tensor): :func:`value_sized`
(nothing)          views (ops torch marks as views: view, t, transpose, permute, expand, slice, ...) and
                   allocations (empty, empty_like, empty_strided, ...)
(special)          convolutions (implicit GEMM), FFTs, searchsorted, bincount, sparse products:
                   :mod:`rooflib.trace.special`
unmodelled         anything else on the GPU: costed by the bytes its inputs and outputs touch
=================  ============================================================================================

FLOPs per element of elementwise ops are bookkeeping (the table in :mod:`rooflib.compute.elementwise`; 1 for
ops not listed). Integer and bool tensors are costed as the float dtype of their width (int64 as fp64, bool as
fp8): their bytes are exact, their arithmetic rate approximate.

How to add an op: write a rule ``(call, ctx) -> list[Piece]`` (read its arguments with ``call.arg(name)``,
by the names of its aten schema) and list the op's name in :data:`RULES`; add a test in
``tests/trace/test_lower.py`` with the hand-computed shapes (gemm and attention rules live in
:mod:`rooflib.trace.matmul`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from rooflib.compute.kernels import broadcast_class
from rooflib.trace.indexing import copy_rule as _copy
from rooflib.trace.indexing import index_rule as _index
from rooflib.trace.matmul import ATTENTION_OPS, GEMM_OPERANDS, attention, gemm
from rooflib.trace.pieces import SIZES, Context, Piece, model_dtype, nbytes, round_half_up
from rooflib.trace.records import Call, TensorMeta
from rooflib.trace.special import SPECIAL_RULES
from rooflib.trace.value_sized import value_sized

__all__ = ["RULES", "Rule", "broadcast_operands", "lower_compute", "value_sized"]


# --- norms, reductions, sorts -------------------------------------------------------------------------------------
_NORMS = {
    "aten.native_layer_norm": "layernorm",
    "aten.rms_norm": "rmsnorm",
    "aten._fused_rms_norm": "rmsnorm",
    "aten._softmax": "softmax",
    "aten._safe_softmax": "softmax",
    "aten._log_softmax": "softmax",
}


def _norm(call: Call, ctx: Context) -> list[Piece]:
    x = call.arg("input", call.arg("self"))
    shape = x.shape or (1,)
    if call.name in ("aten._softmax", "aten._safe_softmax", "aten._log_softmax"):
        cols = shape[int(call.arg("dim", -1))]
    else:
        normalized = call.arg("normalized_shape") or (shape[-1],)
        cols = math.prod(int(d) for d in normalized)
    rows = x.numel // cols if cols else 0
    if rows <= 0 or cols <= 0:
        return []
    return [Piece("norm", {"op": _NORMS[call.name], "rows": rows, "cols": cols, "dtype": model_dtype(x)}, call.name)]


def _first_tensor(call: Call) -> TensorMeta | None:
    return next(iter(call.inputs), None)


def _reduction(call: Call, ctx: Context) -> list[Piece]:
    x = _first_tensor(call)
    if x is None or x.numel == 0:
        return []
    elements = call.arg("target").numel if call.name.startswith("aten.nll_loss") else x.numel
    outputs = call.outputs[0].numel if call.outputs else 1
    return [Piece("reduction", {"elements": elements, "outputs": outputs, "dtype": model_dtype(x)}, call.name)]


def _logsumexp(call: Call, ctx: Context) -> list[Piece]:
    """``logsumexp`` as ATen runs it (``logsumexp_out_impl``): the maxima (a reduction), ``abs() == inf`` and a
    masked fill on them, ``exp(x - max)`` (two full-size ops), the sum (a reduction), then ``log`` and the add of
    the maxima back, each one kernel: nine launches where a fused kernel would take one."""
    x = _first_tensor(call)
    if x is None or x.numel == 0:
        return []
    outputs = call.outputs[0].numel if call.outputs else 1
    dtype = model_dtype(x)
    reduce = Piece("reduction", {"elements": x.numel, "outputs": outputs, "dtype": dtype}, call.name)

    def ew(elements: int, reads: int) -> Piece:
        params = {"reads": reads, "writes": 1, "flops_per_element": 1.0, "elements": elements, "dtype": dtype}
        return Piece("elementwise", params, call.name)

    small = [ew(outputs, 1) for _ in range(3)]  # abs, == inf, masked_fill_
    return [reduce, *small, ew(x.numel, 2), ew(x.numel, 1), reduce, ew(outputs, 1), ew(outputs, 2)]


def _sort(call: Call, ctx: Context) -> list[Piece]:
    x = _first_tensor(call)
    if x is None or x.numel == 0:
        return []
    params: dict[str, object] = {"elements": x.numel, "dtype": model_dtype(x)}
    if x.shape and call.name != "aten.topk":  # the sorted dimension's length (rows up to 4096 sort in place)
        params["cols"] = (
            x.shape[int(call.arg("dim", -1) or 0) % len(x.shape)] if call.name != "aten.msort" else x.shape[0]
        )
    return [Piece("sort", params, call.name)]


# --- elementwise -----------------------------------------------------------------------------------------------
_FLOPS = {
    "gelu": 9.0,
    "gelu_backward": 12.0,
    "silu": 4.0,
    "silu_backward": 7.0,
    "sigmoid": 4.0,
    "sigmoid_backward": 2.0,
    "tanh_backward": 2.0,
    "softplus": 4.0,
    "mish": 6.0,
    "hardswish": 4.0,
    "elu": 4.0,
    "leaky_relu": 2.0,
    "clamp": 2.0,
    "addcmul": 3.0,
    "addcdiv": 3.0,
    "lerp": 3.0,
    "native_dropout": 2.0,
    "copy": 0.0,
}


def _layout(t: TensorMeta) -> tuple[tuple[int, int], ...]:
    """A view's shape and strides without its size-1 dimensions (whose strides say nothing)."""
    return tuple((d, st) for d, st in zip(t.shape, t.stride, strict=False) if d != 1)


def broadcast_operands(call: Call, main: TensorMeta) -> tuple[bool, bool]:
    """``(broadcast, mixed)`` of a pointwise call writing ``main``: whether a GPU tensor operand is laid out
    otherwise than the output (a 0-dim CUDA tensor, a column or row broadcast, an expanded or permuted view), which
    sends the op to PyTorch's non-vectorised ``elementwise_kernel`` (a python number or a CPU scalar tensor does
    not: it is folded into the functor); and whether the operands' dtypes differ (every element then cast)."""
    operands = [v for k, v in call.args.items() if k != "out" and isinstance(v, TensorMeta) and v.on_gpu]
    if not operands or main.numel <= 1 or not main.stride:
        return False, False
    want = _layout(main)
    broadcast = any(t.shape != main.shape or (t.stride and _layout(t) != want) for t in operands)
    mixed = any(t.dtype != main.dtype for t in operands)
    return broadcast, mixed


def _elementwise(call: Call, ctx: Context, *, fill: bool = False) -> list[Piece]:
    if not call.outputs:
        return []
    main = max(call.outputs, key=lambda t: t.numel)
    n = main.numel
    if n == 0:
        return []
    dtype = model_dtype(main)
    unit = n * SIZES[dtype]
    reads = 0 if fill else round_half_up(nbytes(tuple(v for k, v in call.args.items() if k != "out")) / unit)
    writes = max(1, round_half_up(sum(t.nbytes for t in call.outputs) / unit))
    base = call.name.removeprefix("aten.").rstrip("_")
    flops = 0.0 if fill else _FLOPS.get(base, 1.0)
    params: dict[str, object] = {
        "reads": reads,
        "writes": writes,
        "flops_per_element": flops,
        "elements": n,
        "dtype": dtype,
    }
    broadcast, mixed = (False, False) if fill or "pointwise" not in call.tags else broadcast_operands(call, main)
    if broadcast:  # the non-vectorised kernel's measured class (rooflib.compute.kernels): operands and outputs once
        moved = nbytes(tuple(v for k, v in call.args.items() if k != "out")) + sum(t.nbytes for t in call.outputs)
        params.update(curve=broadcast_class(main.itemsize, mixed), curve_bytes=float(moved))
    return [Piece("elementwise", params, call.name)]


_FILLS = frozenset(
    "zeros ones full zeros_like ones_like full_like fill zero scalar_tensor new_zeros new_ones new_full arange "
    "linspace logspace eye".split()
)
"""Write-only ops that run a fill-like kernel (the measured ``fill`` curve); random number generators do not."""
_SCANS = frozenset("cumsum cumprod logcumsumexp cummax cummin".split())


def _with_curve(pieces: list[Piece], curve: str) -> list[Piece]:
    """The elementwise pieces timed by a measured op class's curve at the bytes they read and write."""
    out = []
    for p in pieces:
        moved = (p.params["reads"] + p.params["writes"]) * p.params["elements"] * SIZES[p.params["dtype"]]
        out.append(replace(p, params={**p.params, "curve": curve, "curve_bytes": float(moved)}))
    return out


def _fill(call: Call, ctx: Context) -> list[Piece]:
    pieces = _elementwise(call, ctx, fill=True)
    return _with_curve(pieces, "fill") if call.name.removeprefix("aten.").rstrip("_") in _FILLS else pieces


def _scan_or_elementwise(call: Call, ctx: Context) -> list[Piece]:
    pieces = _elementwise(call, ctx)
    return _with_curve(pieces, "cumsum") if call.name.removeprefix("aten.").rstrip("_") in _SCANS else pieces


def _kernel(call: Call, ctx: Context) -> list[Piece]:
    """A Triton launch: every tensor argument read or written once, over the largest one's elements."""
    tensors = [t for t in call.inputs if t.on_gpu and t.numel]
    if not tensors:
        return []
    main = max(tensors, key=lambda t: t.numel)
    dtype = model_dtype(main)
    touched = round_half_up(sum(t.nbytes for t in tensors) / (main.numel * SIZES[dtype]))
    params = {"reads": max(0, touched - 1), "writes": 1, "flops_per_element": 1.0, "elements": main.numel}
    programs = call.arg("programs", None)
    if programs is not None:  # the grid's program count and warps (Triton's default: 4): the launch's floor
        params.update(programs=int(programs), warps=int(call.arg("num_warps", 4)))
    return [Piece("elementwise", {**params, "dtype": dtype}, f"triton.{call.arg('kernel', 'kernel')}")]


def _sync(call: Call, ctx: Context) -> list[Piece]:
    return [Piece("sync", {}, call.name)]


def _unmodelled(call: Call, ctx: Context) -> list[Piece]:
    touched = nbytes(tuple(v for k, v in call.args.items() if k != "out")) + sum(t.nbytes for t in call.outputs)
    return [Piece("unmodelled", {"bytes": float(touched), "op": call.name}, call.name)]


Rule = Callable[[Call, Context], list[Piece]]


def _names(prefix: str, names: str) -> list[str]:
    return [f"{prefix}.{n}" for n in names.split()]


def _free(call: Call, ctx: Context) -> list[Piece]:
    return []


RULES: dict[str, Rule] = {
    **dict.fromkeys(GEMM_OPERANDS, gemm),
    **dict.fromkeys(ATTENTION_OPS, attention),
    **dict.fromkeys(_NORMS, _norm),
    **dict.fromkeys(
        _names(
            "aten",
            "nll_loss_forward nll_loss2d_forward count_nonzero mse_loss l1_loss huber_loss smooth_l1_loss "
            "binary_cross_entropy binary_cross_entropy_with_logits kl_div argmax argmin all any prod aminmax "
            "var_mean std_mean linalg_vector_norm norm nansum",
        ),
        _reduction,
    ),
    "aten.logsumexp": _logsumexp,
    **dict.fromkeys(_names("aten", "sort topk kthvalue msort argsort"), _sort),
    **dict.fromkeys(
        _names(
            "aten",
            "zeros ones full zeros_like ones_like full_like fill zero scalar_tensor arange linspace logspace eye "
            "new_zeros new_ones new_full randn rand randint randn_like rand_like randint_like normal uniform "
            "bernoulli exponential random randperm cauchy geometric log_normal",
        ),
        _fill,
    ),
    **SPECIAL_RULES,
    **dict.fromkeys(
        _names(
            "aten",
            "native_dropout native_dropout_backward floor_divide hardswish masked_fill cumsum cumprod logcumsumexp "
            "cummax cummin mse_loss_backward l1_loss_backward smooth_l1_loss_backward huber_loss_backward "
            "log_sigmoid_forward log_sigmoid_backward binary_cross_entropy_backward nll_loss_backward "
            "_softmax_backward_data _log_softmax_backward_data threshold_backward",
        ),
        _scan_or_elementwise,
    ),
    **dict.fromkeys(
        _names(
            "aten",
            "_to_copy clone copy cat repeat constant_pad_nd flip roll tril triu slice_scatter select_scatter "
            "diagonal_scatter as_strided_scatter lift_fresh_copy expand_copy permute_copy transpose_copy "
            "view_copy t_copy unsqueeze_copy squeeze_copy detach_copy slice_copy select_copy split_copy "
            "split_with_sizes_copy unbind_copy narrow_copy alias_copy unfold_copy diagonal_copy as_strided_copy "
            "_reshape_copy contiguous _foreach_copy stack hstack vstack repeat_interleave nonzero unique_consecutive "
            "_unique2 unique_dim tile",
        ),
        _copy,
    ),
    **dict.fromkeys(
        _names(
            "aten",
            "index_select gather embedding index _unsafe_index take masked_select scatter scatter_add "
            "scatter_reduce index_add index_copy index_put _index_put_impl masked_scatter put index_fill "
            "index_reduce embedding_dense_backward",
        ),
        _index,
    ),
    **dict.fromkeys(["aten._local_scalar_dense", "cuda.synchronize"], _sync),
    "triton.kernel": _kernel,
    **dict.fromkeys(
        _names(
            "aten",
            "empty empty_like empty_strided new_empty new_empty_strided empty_permuted resize resize_as set "
            "record_stream detach lift_fresh lift alias _unsafe_view _reshape_alias _assert_async _assert_scalar "
            "sym_constrain_range sym_constrain_range_for_size _functional_sym_constrain_range is_same_size "
            "_has_compatible_shallow_copy_type sym_size sym_stride sym_numel sym_storage_offset dim "
            "_make_dep_token _assert_tensor_metadata _sparse_coo_tensor_with_dims_and_tensors "
            "_sparse_coo_tensor_unsafe sparse_coo_tensor _coalesced _indices _values indices values",
        ),
        _free,
    ),
}
"""Rules by aten name (in-place variants, ``add_``, are looked up without their trailing underscore)."""


def lower_compute(call: Call, ctx: Context) -> list[Piece]:
    """The pieces of a GPU call that is not communication (see the module table); a call whose output size
    depends on values (:func:`value_sized`) starts with a host sync charged that call's own host figure, and its
    kernels cost the host nothing more."""
    pieces = _lower(call, ctx)
    sized = value_sized(call) if call.on_gpu else None
    if sized is None:
        return pieces
    host_op, launches = sized
    sync = Piece("sync", {"host_op": host_op, "launches": launches + 1}, call.name)
    return [sync, *(replace(p, host="none") for p in pieces)]


def _lower(call: Call, ctx: Context) -> list[Piece]:
    rule = RULES.get(call.name) or RULES.get(call.name.rstrip("_"))
    if rule is not None:
        return rule(call, ctx)
    if "view" in call.tags:
        return []
    if "reduction" in call.tags:
        return _reduction(call, ctx)
    if "pointwise" in call.tags:
        return _elementwise(call, ctx)
    return _unmodelled(call, ctx)
