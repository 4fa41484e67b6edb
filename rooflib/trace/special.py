"""Lowering rules for ops that are one of the modelled kinds in disguise: convolutions (implicit GEMM), FFTs,
scans, searches, histograms and sparse-dense products.

=====================  ==========  ============================================================================
aten op                IR kind     how
=====================  ==========  ============================================================================
convolution,           gemm, copy  the kernels PyTorch runs (:mod:`rooflib.compute.conv`): cuDNN's layout conversions
_convolution,          elementwise of NCHW tensors (copies of their classes) around an implicit GEMM (Chetlur et al.
cudnn_convolution                  2014, sec. 3: per group, m = batch x output positions, n = output channels,
                                   k = input channels x kernel positions, FLOPs 2 m n k; the time at K padded per
                                   tap, ``k_pad``), ATen's depthwise kernel, the bias add (broadcast); transposed:
                                   m = batch x input positions, n = output channels x kernel positions,
                                   k = input channels
convolution_backward   gemm        the forward's GEMM once per gradient asked for (input, weight)
_fft_r2c, _fft_c2r,    elementwise reads the input and writes the output once (cuFFT runs sizes up to a few
_fft_c2c                           thousand points in one pass), FLOPs 5 N log2 N per complex transform of N
                                   points, 2.5 N log2 N per real one (the convention of FFTW's benchFFT), at
                                   the fp32 vector rate for complex64
searchsorted, bucketize index      every value looked up and every index written (the sorted sequence is
                                   small and stays in cache)
bincount, histc        index       every input element added into its bin (``scatter_add``), after a fill
_sparse_addmm,         index       the dense operand's rows gathered once per product, the output written
_sparse_mm, sspaddmm,              (the host's wait: :func:`rooflib.trace.value_sized.value_sized`)
bmm of a sparse COO
=====================  ==========  ============================================================================

Scans (``cumsum``, ``cumprod``, ``logcumsumexp``, ``cummax``, ``cummin``) read the input and write the output
once (a decoupled look-back scan; Merrill & Garland 2016) and lower as elementwise ops in :mod:`rooflib.trace.rules`.
"""

from __future__ import annotations

import math

from rooflib.compute.conv import conv_steps
from rooflib.trace.matmul import gemm
from rooflib.trace.pieces import Context, Piece, model_dtype, round_half_up
from rooflib.trace.records import Call, TensorMeta
from rooflib.trace.value_sized import sparse_operand

__all__ = ["SPECIAL_RULES", "conv_dims", "fft_flops"]


def conv_dims(x: TensorMeta, w: TensorMeta, out: TensorMeta, groups: int, transposed: bool) -> tuple[int, ...]:
    """``(batch, m, n, k)`` of the implicit GEMM of a convolution (``batch`` = groups)."""
    g = max(1, groups)
    kernel = math.prod(w.shape[2:])
    if transposed:  # weight [c_in, c_out / g, *kernel]
        return g, x.shape[0] * math.prod(x.shape[2:]), w.shape[1] * kernel, w.shape[0] // g
    return g, out.shape[0] * math.prod(out.shape[2:]), w.shape[0] // g, w.shape[1] * kernel


def _gemm_piece(dims: tuple[int, ...], dtype: str, name: str) -> list[Piece]:
    batch, m, n, k = dims
    if min(dims) <= 0:
        return []
    return [Piece("gemm", {"m": m, "n": n, "k": k, "batch": batch, "dtype": dtype}, name)]


def _channels_last(t: TensorMeta) -> bool:
    """Whether a 4-D or 5-D tensor is laid out channels-last (its channel stride 1, more than one channel)."""
    return len(t.shape) >= 4 and len(t.stride) == len(t.shape) and t.shape[1] > 1 and t.stride[1] == 1


def _conv(call: Call, ctx: Context) -> list[Piece]:
    """The kernels PyTorch runs for a convolution (:func:`rooflib.compute.conv.conv_steps`): cuDNN's layout
    conversions around its implicit GEMM, ATen's depthwise kernel, the bias add."""
    x, w = call.arg("input"), call.arg("weight")
    if not isinstance(x, TensorMeta) or not isinstance(w, TensorMeta) or not call.outputs or len(w.shape) < 3:
        return []
    out = call.outputs[0]
    groups, transposed = int(call.arg("groups", 1)), bool(call.arg("transposed", False))
    dtype = model_dtype(x)
    steps = conv_steps(
        x.shape,
        w.shape,
        out.shape,
        groups,
        x.itemsize,
        transposed=transposed,
        channels_last=_channels_last(x),
        weight_channels_last=_channels_last(w),
        bias=isinstance(call.arg("bias"), TensorMeta),
    )
    pieces = []
    for s in steps:
        if s.gemm is not None:
            batch, m, n, k, k_pad = s.gemm
            if min(s.gemm) <= 0:
                continue
            params: dict[str, object] = {"m": m, "n": n, "k": k, "batch": batch, "dtype": dtype}
            if k_pad > k:
                params["k_pad"] = k_pad
            if not transposed and math.prod(w.shape[2:]) > 1:  # the input, read tap by tap: not unfolded
                params["a_bytes"] = x.nbytes
            pieces.append(Piece("gemm", params, call.name))
        elif s.kind == "copy":
            pieces.append(Piece("copy", {"bytes": s.nbytes, "layout": s.cls}, call.name))
        else:
            taps = 2.0 * math.prod(w.shape[2:]) if s.cls == "conv_depthwise" else 1.0
            params = {"reads": 1, "writes": 1, "flops_per_element": taps, "elements": s.elements, "dtype": dtype}
            name = "aten._conv_depthwise2d" if s.cls == "conv_depthwise" else call.name  # the op ATen runs
            pieces.append(Piece("elementwise", {**params, "curve": s.cls, "curve_bytes": s.nbytes}, name))
    return pieces


def _conv_backward(call: Call, ctx: Context) -> list[Piece]:
    grad, x, w = call.arg("grad_output"), call.arg("input"), call.arg("weight")
    if not all(isinstance(t, TensorMeta) for t in (grad, x, w)) or len(w.shape) < 3:
        return []
    dims = conv_dims(x, w, grad, int(call.arg("groups", 1)), bool(call.arg("transposed", False)))
    mask = call.arg("output_mask") or (True, True, False)
    pieces = []
    for wanted, what in zip(mask[:2], ("input", "weight"), strict=False):
        if wanted:
            pieces += _gemm_piece(dims, model_dtype(x), f"{call.name}.{what}")
    return pieces


def fft_flops(points: int, transforms: int, *, real: bool) -> float:
    """FLOPs of ``transforms`` FFTs of ``points`` points: 5 N log2 N each (complex), half that for real data."""
    if points <= 1:
        return 0.0
    return (2.5 if real else 5.0) * points * math.log2(points) * transforms


def _scalars(t: TensorMeta) -> int:
    """Real numbers in a tensor (a complex element holds two)."""
    return t.numel * (2 if t.dtype.startswith("complex") else 1)


def _fft(call: Call, ctx: Context) -> list[Piece]:
    x = call.arg("self")
    if not isinstance(x, TensorMeta) or not call.outputs or x.numel == 0:
        return []
    out = call.outputs[0]
    dims = [int(d) % max(1, len(x.shape)) for d in (call.arg("dim") or ())]
    signal = out if call.name == "aten._fft_c2r" else x
    points = math.prod(signal.shape[d] for d in dims) if dims else 1
    transforms = signal.numel // max(1, points)
    flops = fft_flops(points, transforms, real=call.name != "aten._fft_c2c")
    elements = max(_scalars(x), _scalars(out))
    unit = x.nbytes / _scalars(x)  # bytes of one real number (4 for complex64 and float32)
    dtype = {8.0: "fp64", 4.0: "fp32", 2.0: "fp16"}.get(unit, "fp32")
    reads = max(1, round_half_up(x.nbytes / (elements * unit)))
    writes = max(1, round_half_up(out.nbytes / (elements * unit)))
    params = {"reads": reads, "writes": writes, "flops_per_element": flops / elements, "elements": elements}
    last = len(signal.shape) - 1
    curve = "rfft_dim0" if any(d != last for d in dims) else ("fft" if call.name == "aten._fft_c2c" else "rfft")
    measured = {"curve": curve, "curve_bytes": float(x.nbytes + out.nbytes)}  # rooflib.compute.kernels
    return [Piece("elementwise", {**params, "dtype": dtype, **measured}, call.name)]


def _lookup(call: Call, ctx: Context) -> list[Piece]:
    values = call.arg("self", call.arg("input"))
    moved = (values.nbytes if isinstance(values, TensorMeta) else 0.0) + sum(t.nbytes for t in call.outputs)
    return [Piece("index", {"bytes": moved}, call.name)] if moved else []


def _histogram(call: Call, ctx: Context) -> list[Piece]:
    """Every input element added into its bin with an atomic (the ``scatter_add`` class: one bin count per
    element, the input as its indices), after the bins are zeroed (a fill)."""
    x, weights = call.arg("self"), call.arg("weights")
    if not isinstance(x, TensorMeta) or x.numel == 0:
        return []
    out = call.outputs[0] if call.outputs else None
    unit = out.itemsize if out is not None else 8.0
    counted = {"bytes": x.numel * unit, "op": "scatter_add", "index_bytes": x.nbytes}
    if isinstance(weights, TensorMeta):
        counted["index_bytes"] = x.nbytes + weights.nbytes
    pieces = [Piece("index", counted, call.name)]
    if out is not None and out.numel:
        dtype = {8.0: "fp64", 4.0: "fp32", 2.0: "bf16"}.get(out.itemsize, "fp64")
        fill = {"reads": 0, "writes": 1, "flops_per_element": 0.0, "elements": out.numel, "dtype": dtype}
        pieces.insert(0, Piece("elementwise", {**fill, "curve": "fill", "curve_bytes": out.nbytes}, call.name))
    return pieces


def _sparse_mm(call: Call, ctx: Context) -> list[Piece]:
    dense = [t for t in call.inputs if t.stride]  # a sparse tensor has no strides
    moved = sum(t.nbytes for t in dense) + sum(t.nbytes for t in call.outputs)
    return [Piece("index", {"bytes": moved}, call.name)] if moved else []


def _bmm(call: Call, ctx: Context) -> list[Piece]:
    """``bmm``: a GEMM, or with a sparse COO operand (cuSPARSE, not a dense GEMM) as the 2-D sparse products."""
    return _sparse_mm(call, ctx) if sparse_operand(call) else gemm(call, ctx)


SPECIAL_RULES = {
    **dict.fromkeys(("aten.convolution", "aten._convolution", "aten.cudnn_convolution"), _conv),
    "aten.convolution_backward": _conv_backward,
    **dict.fromkeys(("aten._fft_r2c", "aten._fft_c2r", "aten._fft_c2c"), _fft),
    **dict.fromkeys(("aten.searchsorted", "aten.bucketize"), _lookup),
    **dict.fromkeys(("aten.bincount", "aten.histc"), _histogram),
    **dict.fromkeys(("aten._sparse_addmm", "aten._sparse_mm", "aten.sspaddmm"), _sparse_mm),
    "aten.bmm": _bmm,
}
"""Rules by aten name, merged into :data:`rooflib.trace.rules.RULES`."""
