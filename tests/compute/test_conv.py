"""Convolutions kernel by kernel (rooflib.compute.conv): which kernels PyTorch runs, and their time."""

from __future__ import annotations

import math

import pytest

from rooflib.compute.conv import CHANNEL_BLOCK, conv_steps, conv_time
from rooflib.compute.gemm import gemm
from rooflib.specs import default_catalog


def _names(steps: list) -> list[str]:
    return [s.cls or s.kind for s in steps]


def test_an_nchw_convolution_converts_its_layouts_around_the_implicit_gemm() -> None:
    steps = conv_steps((2, 96, 28, 28), (128, 96, 3, 3), (2, 128, 28, 28), 1, 2.0, bias=True)
    assert _names(steps) == ["conv_input", "conv_filter", "gemm", "conv_output", "broadcast"]
    assert steps[0].nbytes == 2 * 96 * 28 * 28 * 2.0 and steps[1].nbytes == 128 * 96 * 9 * 2.0
    _, m, n, k, k_pad = steps[2].gemm  # type: ignore[misc]
    assert (m, n, k) == (2 * 28 * 28, 128, 96 * 9)
    assert k_pad == 9 * 2 * CHANNEL_BLOCK  # 96 channels walked in two blocks of 64, per tap
    assert steps[-1].nbytes == 2 * 2 * 128 * 28 * 28 * 2.0  # the bias add reads and writes the output


@pytest.mark.parametrize(
    ("x", "w", "kw", "names"),
    [
        ((1, 64, 32, 32), (64, 64, 1, 1), {}, ["gemm"]),  # 1 x 1: a GEMM
        ((1, 64, 32, 32), (64, 64, 3, 3), {"channels_last": True, "weight_channels_last": True}, ["gemm"]),
        ((1, 64, 32, 32), (64, 64, 3, 3), {"channels_last": True}, ["gemm"]),  # input NHWC: no conversion
        ((1, 3, 64, 64), (64, 3, 7, 7), {}, ["gemm"]),  # an RGB stem: cuDNN's NCHW kernel
        ((1, 64, 32, 32), (64, 64, 3, 3), {"weight_channels_last": True}, ["conv_input", "gemm", "conv_output"]),
        ((2, 256, 1024), (256, 1, 7), {}, ["conv_depthwise"]),  # ATen's depthwise kernel
    ],
)
def test_which_kernels_run(x: tuple, w: tuple, kw: dict, names: list[str]) -> None:
    out = (x[0], w[0] if w[1] != 1 else x[1], *x[2:])
    groups = x[1] if w[1] == 1 else 1
    assert _names(conv_steps(x, w, out, groups, 2.0, **kw)) == names


def test_stem_keeps_its_true_k() -> None:
    (step,) = conv_steps((1, 3, 64, 64), (64, 3, 7, 7), (1, 64, 64, 64), 1, 2.0)
    assert step.gemm is not None and step.gemm[3] == step.gemm[4] == 3 * 49


def test_time_is_the_sum_of_its_kernels_and_grows_with_size() -> None:
    h200 = default_catalog().device("h200-sxm")
    small = conv_steps((1, 64, 28, 28), (64, 64, 3, 3), (1, 64, 28, 28), 1, 2.0)
    big = conv_steps((8, 64, 56, 56), (64, 64, 3, 3), (8, 64, 56, 56), 1, 2.0)
    t_small, t_big = conv_time(h200, small), conv_time(h200, big)
    assert 0 < t_small < t_big
    _, m, n, _, k_pad = big[2].gemm  # type: ignore[misc]
    assert t_big > gemm(h200, m, n, k_pad).time_s  # the layout conversions cost on top of the GEMM
    a100 = default_catalog().device("a100-sxm4-80gb")  # no conv curves: the copy curve or the HBM rate
    assert math.isfinite(conv_time(a100, big)) and conv_time(a100, big) > gemm(a100, m, n, k_pad).time_s
