"""The ``conv`` part of the ``compute`` family: convolutions as PyTorch runs them (cuDNN, or ATen's depthwise
kernels), their shapes and their cases (pure Python at import: torch passed in).

What ParallelKernelBench's parts launch for a convolution (docs/validation/pkb, CUPTI): for a bf16 ``conv2d`` or
``conv3d`` of NCHW tensors, cuDNN converts the input and the filter to NHWC (``nchwToNhwcKernel``), runs an
implicit GEMM (``sm90_xmma_fprop_implicit_gemm_...``) and converts the output back (``nhwcToNchwKernel``); a
depthwise ``conv1d`` (``groups`` = channels) runs ATen's ``conv_depthwise2d_forward_kernel_generic``. The grid
measures both, and each point's kernels one by one (``profile``), so the model can cost the layout
conversions, the implicit GEMM and the depthwise kernel apart.

Shapes: 2-D 3x3 (structured and drawn log-uniformly from a fixed seed), 1x1, 5x5 and 7x7, 3-D 3x3x3, 1-D
(kernel 3 and 7), depthwise 1-D and 2-D, and 2-D in ``channels_last`` (no conversion expected). The ``holdout``
grid draws the same families from another seed. Stride 1, "same" padding (``k // 2``), one group except the
depthwise ones.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

from rooflib.bench.compute_ops import Case
from rooflib.bench.torch_common import rel_error

__all__ = ["ConvShape", "conv_case", "conv_shapes"]


@dataclass(frozen=True)
class ConvShape:
    """``n x c x spatial`` input, ``k`` output channels, ``kernel`` positions per dimension; ``depthwise``: one
    group per channel (``k == c``); ``channels_last``: NHWC / NDHWC memory format for input and weight."""

    n: int
    c: int
    k: int
    spatial: tuple[int, ...]
    kernel: tuple[int, ...]
    depthwise: bool = False
    channels_last: bool = False

    @property
    def dims(self) -> int:
        return len(self.spatial)

    @property
    def groups(self) -> int:
        return self.c if self.depthwise else 1

    def gemm(self) -> tuple[int, int, int, int]:
        """``(groups, m, n, k)`` of the implicit GEMM (stride 1, same padding: output positions = input's)."""
        g = self.groups
        return g, self.n * math.prod(self.spatial), self.k // g, (self.c // g) * math.prod(self.kernel)

    def fields(self) -> dict[str, Any]:
        g, m, n, k = self.gemm()
        return {
            "n": self.n,
            "c": self.c,
            "k": self.k,
            "spatial": list(self.spatial),
            "kernel": list(self.kernel),
            "groups": g,
            "channels_last": self.channels_last,
            "gemm_m": m,
            "gemm_n": n,
            "gemm_k": k,
        }


def _log_int(rng: random.Random, lo: int, hi: int, step: int = 1) -> int:
    return max(lo, step * round(2 ** rng.uniform(math.log2(lo), math.log2(hi)) / step))


def _drawn(seed: int, count: int) -> list[ConvShape]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        family = i % 6
        if family in (0, 1):  # 2-D 3x3
            hw = _log_int(rng, 8, 128)
            out.append(
                ConvShape(
                    rng.choice((1, 2, 4)), _log_int(rng, 16, 1024, 16), _log_int(rng, 16, 1024, 16), (hw, hw), (3, 3)
                )
            )
        elif family == 2:  # 3-D 3x3x3
            hw = _log_int(rng, 12, 64)
            out.append(
                ConvShape(
                    1, _log_int(rng, 16, 256, 16), _log_int(rng, 32, 512, 16), (_log_int(rng, 4, 16), hw, hw), (3, 3, 3)
                )
            )
        elif family == 3:  # 1-D
            out.append(
                ConvShape(
                    rng.choice((1, 2, 4)),
                    _log_int(rng, 32, 1024, 16),
                    _log_int(rng, 32, 1024, 16),
                    (_log_int(rng, 128, 8192),),
                    (rng.choice((3, 7)),),
                )
            )
        elif family == 4:  # depthwise 1-D
            c = _log_int(rng, 64, 2048, 16)
            out.append(
                ConvShape(
                    rng.choice((1, 2, 4)), c, c, (_log_int(rng, 256, 8192),), (rng.choice((3, 7)),), depthwise=True
                )
            )
        else:  # 1x1 or channels_last 3x3
            hw = _log_int(rng, 8, 96)
            c, k = _log_int(rng, 32, 1024, 16), _log_int(rng, 32, 1024, 16)
            last = rng.random() < 0.5
            out.append(ConvShape(rng.choice((1, 4)), c, k, (hw, hw), (3, 3) if last else (1, 1), channels_last=last))
    return out


def conv_shapes(grid: str = "main", quick: bool = False) -> list[ConvShape]:
    """The ``conv`` part's shapes: ``main`` (structured families plus 24 drawn, about 75) or ``holdout`` (24
    drawn from another seed); ``quick``: 4."""
    if quick:
        return [
            ConvShape(1, 64, 64, (32, 32), (3, 3)),
            ConvShape(1, 32, 64, (8, 16, 16), (3, 3, 3)),
            ConvShape(1, 256, 256, (1024,), (7,), depthwise=True),
            ConvShape(1, 64, 64, (32, 32), (3, 3), channels_last=True),
        ]
    if grid == "holdout":
        return _drawn(20261204, 24)
    s2 = [
        (1, 64, 64, 56),
        (1, 128, 128, 56),
        (1, 256, 256, 28),
        (1, 512, 512, 14),
        (8, 64, 64, 56),
        (8, 256, 256, 28),
        (4, 320, 320, 64),
        (1, 3, 64, 224),
        (16, 128, 256, 32),
        (1, 640, 640, 64),
        (2, 1024, 1024, 32),
        (1, 128, 512, 96),
    ]
    out = [ConvShape(n, c, k, (hw, hw), (3, 3)) for n, c, k, hw in s2]
    out += [ConvShape(1, 960, 960, (16, 128), (3, 3)), ConvShape(1, 512, 512, (64, 128), (3, 3))]
    out += [
        ConvShape(n, c, k, (hw, hw), (1, 1))
        for n, c, k, hw in ((1, 256, 1024, 56), (8, 512, 128, 28), (1, 1024, 1024, 32), (4, 64, 256, 56))
    ]
    out += [
        ConvShape(n, c, k, (hw, hw), (r, r))
        for n, c, k, hw, r in ((1, 64, 64, 64, 5), (1, 3, 64, 224, 7), (1, 128, 128, 32, 5), (2, 256, 256, 28, 7))
    ]
    out += [
        ConvShape(1, c, k, (t, hw, hw), (3, 3, 3))
        for c, k, t, hw in (
            (32, 64, 8, 32),
            (64, 128, 9, 34),
            (128, 256, 5, 24),
            (256, 256, 4, 16),
            (64, 64, 16, 64),
            (128, 512, 7, 32),
        )
    ]
    out += [
        ConvShape(n, c, k, (length,), (r,))
        for n, c, k, length, r in (
            (1, 256, 256, 4096, 3),
            (4, 512, 512, 1024, 3),
            (1, 1024, 1024, 2048, 7),
            (8, 128, 128, 512, 7),
        )
    ]
    out += [
        ConvShape(n, c, c, (length,), (r,), depthwise=True)
        for n, c, length, r in (
            (1, 512, 2048, 3),
            (2, 1024, 1030, 7),
            (4, 256, 4096, 7),
            (1, 2048, 512, 3),
            (2, 768, 8192, 7),
            (8, 128, 1024, 15),
        )
    ]
    out += [
        ConvShape(n, c, c, (hw, hw), (3, 3), depthwise=True)
        for n, c, hw in (
            (1, 64, 112),
            (4, 256, 28),
            (1, 512, 14),
            (8, 128, 56),
        )
    ]
    out += [ConvShape(n, c, k, (hw, hw), (3, 3), channels_last=True) for n, c, k, hw in s2[:6]]
    return out + _drawn(20251113, 24)


_TORCH_DTYPES = {"bf16": ("bfloat16", 2), "fp32": ("float32", 4)}


def conv_case(torch: Any, dev: Any, s: ConvShape, dtype: str = "bf16") -> Case:
    """``torch.nn.functional.conv{1,2,3}d`` of shape ``s`` with bias-free weights (fresh normal inputs per group,
    scaled so the output stays of order one). The check compares the first output image's first 64 channels
    with a float32 convolution (TF32 off) of the same inputs."""
    import torch.nn.functional as F

    name, size = _TORCH_DTYPES[dtype]
    dt = getattr(torch, name)
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[s.dims]
    pad = tuple(r // 2 for r in s.kernel)
    fmt = {2: torch.channels_last, 3: torch.channels_last_3d}.get(s.dims) if s.channels_last else None
    x_shape = (s.n, s.c, *s.spatial)
    w_shape = (s.k, s.c // s.groups, *s.kernel)
    scale = 1.0 / math.sqrt((s.c // s.groups) * math.prod(s.kernel))

    def make(i: int) -> Any:
        x = torch.randn(x_shape, device=dev, dtype=dt)
        w = (torch.randn(w_shape, device=dev, dtype=torch.float32) * scale).to(dt)
        if fmt is not None:
            x, w = x.contiguous(memory_format=fmt), w.contiguous(memory_format=fmt)
        return (x, w)

    def call(g: Any) -> Any:
        return conv(g[0], g[1], None, 1, pad, 1, s.groups)

    def check(g: Any, out: Any) -> float:
        kk = min(s.k, 64)
        cc = kk if s.depthwise else s.c
        w = g[1][:kk].float()
        prev = torch.backends.cudnn.allow_tf32
        torch.backends.cudnn.allow_tf32 = False
        try:
            ref = conv(g[0][:1, :cc].float(), w, None, 1, pad, 1, kk if s.depthwise else 1)
        finally:
            torch.backends.cudnn.allow_tf32 = prev
        return rel_error(torch, out[:1, :kk], ref)

    g, m, n, k = s.gemm()
    elements_in, elements_out = s.n * s.c * math.prod(s.spatial), s.n * s.k * math.prod(s.spatial)
    weight = s.k * (s.c // s.groups) * math.prod(s.kernel)
    moved = float((elements_in + elements_out + weight) * size)
    extra = {**s.fields(), "elements": elements_out}
    return Case(make, call, check, moved, float(elements_out * size), 3e-2, flops=2.0 * g * m * n * k, extra=extra)
