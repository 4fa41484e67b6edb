"""Convolutions as PyTorch runs them on an NVIDIA GPU, kernel by kernel (:func:`conv_steps`), and their time
(:func:`conv_time`).

Measured on one H200 (torch 2.11, cuDNN 9.19; docs/validation/h200/runs/x1-conv, every kernel of each call timed
by CUPTI), for bf16 convolutions with stride 1:

===========================  =======================================================================================
case                         kernels, in launch order
===========================  =======================================================================================
depthwise (one input         ATen's ``conv_depthwise2d`` kernel (1-D and 2-D): the ``conv_depthwise`` class, by input
channel per group)           and output bytes (one thread per output, about 10-12 ns per million outputs at any tap
                             count from 3 to 15)
1 x 1 kernel                 a GEMM (cuBLAS ``nvjet``), no layout conversion
fewer than 8 input channels  cuDNN's NCHW ``implicit_convolve_sgemm``: costed as the implicit GEMM alone (measured 2-6x
                             slower than that: not modelled)
channels-last input          the implicit GEMM (NHWC in, NHWC out)
NCHW input                   the input converted to NHWC (``conv_input``), the filter KCRS to KRSC (``conv_filter``;
                             not when it is channels-last already), the implicit GEMM, the output back to NCHW
                             (``conv_output``); each conversion reads and writes its tensor once
bias                         a broadcast add over the output, after cuDNN's call (ATen adds it): ``broadcast``
===========================  =======================================================================================

The implicit GEMM, per group: ``m`` = batch x output positions, ``n`` = output channels, ``k`` = input channels x
filter taps (FLOPs ``2 m n k``, what the bound counts). cuDNN's Hopper kernels walk the filter taps, each over
the input channels in blocks of the tile's 64 (``..._tilesize128x128x64_...``; CUTLASS's implicit GEMM iterates
R, S and C the same way), so the time is the GEMM model's at ``k_pad = taps x ceil(channels / 64) x 64``: on the
H200 grid that took the median measured / modelled of the GEMM kernels from 1.16 to 1.08 (aligned shapes 1.02).
Transposed convolutions are costed as their GEMM alone (not measured).

>>> steps = conv_steps((1, 64, 56, 56), (64, 64, 3, 3), (1, 64, 56, 56), 1, 2.0)
>>> [s.cls or s.kind for s in steps]
['conv_input', 'conv_filter', 'gemm', 'conv_output']
>>> steps[2].gemm
(1, 3136, 64, 576, 576)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rooflib.compute.gemm import gemm
from rooflib.compute.kernels import broadcast_class, kernel_time
from rooflib.compute.memory import memory_time
from rooflib.specs.devices import DeviceSpec

__all__ = ["CHANNEL_BLOCK", "ConvStep", "conv_steps", "conv_time"]

CHANNEL_BLOCK = 64
"""Input channels per step of cuDNN's implicit-GEMM K loop on Hopper (the tile's K)."""
_NCHW_NATIVE_BELOW = 8
"""Input channels under which cuDNN ran its NCHW kernel with no layout conversion (an RGB stem: 3)."""


@dataclass(frozen=True)
class ConvStep:
    """One kernel of a convolution: a layout conversion or the bias add (``cls``: its measured class, ``nbytes``:
    the tensor converted, read and written once; for ``elementwise``, the bytes its class curve counts) or the
    implicit GEMM (``gemm``: ``(groups, m, n, k, k_pad)``)."""

    kind: Literal["copy", "gemm", "elementwise"]
    cls: str | None = None
    nbytes: float = 0.0
    gemm: tuple[int, int, int, int, int] | None = None
    elements: int = 0


def conv_steps(
    x_shape: Sequence[int],
    w_shape: Sequence[int],
    out_shape: Sequence[int],
    groups: int,
    itemsize: float,
    *,
    transposed: bool = False,
    channels_last: bool = False,
    weight_channels_last: bool = False,
    bias: bool = False,
) -> list[ConvStep]:
    """The kernels of one convolution (module table): input ``x_shape`` (``[n, c, *spatial]``), weight ``w_shape``
    (``[k, c / groups, *taps]``; transposed: ``[c, k / groups, *taps]``), output ``out_shape``, ``itemsize``
    bytes per element."""
    g = max(1, groups)
    taps = math.prod(w_shape[2:])
    x_bytes = math.prod(x_shape) * itemsize
    out_bytes = math.prod(out_shape) * itemsize
    w_bytes = math.prod(w_shape) * itemsize
    c_in = int(x_shape[1]) if len(x_shape) > 1 else 1
    out_elements = math.prod(out_shape)
    bias_step = ConvStep("elementwise", broadcast_class(itemsize, False), 2.0 * out_bytes, elements=out_elements)
    if transposed:  # weight [c_in, c_out / g, *taps]: m = batch x input positions, n = c_out x taps, k = c_in / g
        m, n, k = x_shape[0] * math.prod(x_shape[2:]), w_shape[1] * taps, w_shape[0] // g
        return [ConvStep("gemm", gemm=(g, m, n, k, k)), *([bias_step] if bias else [])]
    m, n, k = out_shape[0] * math.prod(out_shape[2:]), w_shape[0] // g, w_shape[1] * taps
    if g > 1 and g == c_in and w_shape[1] == 1:  # depthwise: ATen's own kernel
        moved = x_bytes + out_bytes + w_bytes
        return [ConvStep("elementwise", "conv_depthwise", moved, elements=out_elements), *([bias_step] if bias else [])]
    per_group = int(w_shape[1])
    k_pad = taps * math.ceil(per_group / CHANNEL_BLOCK) * CHANNEL_BLOCK if per_group >= _NCHW_NATIVE_BELOW else k
    core = ConvStep("gemm", gemm=(g, m, n, k, max(k, k_pad)))
    steps = [core]
    if taps > 1 and not channels_last and per_group >= _NCHW_NATIVE_BELOW:
        steps = [ConvStep("copy", "conv_input", x_bytes)]
        if not weight_channels_last:
            steps.append(ConvStep("copy", "conv_filter", w_bytes))
        steps += [core, ConvStep("copy", "conv_output", out_bytes)]
    return [*steps, *([bias_step] if bias else [])]


def conv_time(device: DeviceSpec, steps: Sequence[ConvStep], dtype: str = "bf16") -> float:
    """Seconds of a convolution's kernels on ``device``, each as a program costs it: the layout conversions and
    the depthwise and bias kernels at their class curves (the ``copy`` curve, or the bytes at the HBM rate, where
    the device has none), the implicit GEMM by the GEMM model at ``k_pad``."""
    total = 0.0
    for s in steps:
        if s.gemm is not None:
            batch, m, n, _, k_pad = s.gemm
            total += gemm(device, m, n, k_pad, dtype, batch=batch).time_s
            continue
        moved = 2.0 * s.nbytes if s.kind == "copy" else s.nbytes
        got = kernel_time(device, str(s.cls), moved)
        if got is None:
            got = float(memory_time(device, "copy", moved)[()])
        total += got
    return total
