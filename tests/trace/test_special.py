"""Implicit-GEMM convolutions, FFT FLOPs and the symmetric collective fill of a run with values."""

from __future__ import annotations

import math

import pytest

from rooflib.trace.special import conv_dims, fft_flops

from .conftest import call, tensor, trace_of


def test_conv_dims_match_the_convolution_flops() -> None:
    x, w, out = tensor(2, 64, 32, 32), tensor(128, 64, 3, 3), tensor(2, 128, 32, 32)
    batch, m, n, k = conv_dims(x, w, out, 1, False)
    # 2 N C_out H W C_in R S, the direct definition
    assert 2 * batch * m * n * k == 2 * 2 * 128 * 32 * 32 * 64 * 3 * 3
    g = conv_dims(x, tensor(64, 1, 3, 3), tensor(2, 64, 32, 32), 64, False)  # depthwise
    assert g == (64, 2 * 32 * 32, 1, 9)


def test_a_convolution_lowers_to_the_kernels_pytorch_runs() -> None:
    """NCHW in: cuDNN's three layout conversions around its implicit GEMM (K padded per tap to the channel
    block), then ATen's bias add; the bound keeps the convolution's true FLOPs."""
    from rooflib.program import predict_program
    from rooflib.specs import load_system
    from rooflib.trace.lower import lower

    x, w, out, bias = tensor(1, 96, 28, 28), tensor(128, 96, 3, 3), tensor(1, 128, 28, 28), tensor(128)
    conv = call("aten.convolution", (out,), input=x, weight=w, bias=bias, groups=1, transposed=False)
    p = lower(trace_of(conv))
    assert [(op.kind, op.params.get("layout") or op.params.get("curve")) for op in p.ops] == [
        ("copy", "conv_input"), ("copy", "conv_filter"), ("gemm", None), ("copy", "conv_output"),
        ("elementwise", "broadcast"),
    ]  # fmt: skip
    gemm = dict(p.ops[2].params)
    assert (gemm["m"], gemm["n"], gemm["k"], gemm["k_pad"]) == (28 * 28, 128, 96 * 9, 128 * 9)
    h200 = load_system("hgx-h200", gpus=1)
    got = predict_program(p, h200, gpus=1)
    row = got.ops[2]
    assert row["flops"] == 2.0 * 28 * 28 * 128 * 96 * 9  # the true work, not the padded K's
    assert gemm["a_bytes"] == x.nbytes  # the input read tap by tap, not unfolded into 784 x 864
    assert row["hbm_bytes"] == x.nbytes + 864 * 128 * 2 + 784 * 128 * 2
    unpadded = predict_program(lower(trace_of(call("aten.mm", (tensor(784, 128),), self=tensor(784, 864),
                                                   mat2=tensor(864, 128)))), h200, gpus=1)
    assert row["device_time_s"] > unpadded.ops[0]["device_time_s"]  # the padded K runs longer
    dw = call("aten.convolution", (tensor(2, 64, 100),), input=tensor(2, 64, 106), weight=tensor(64, 1, 7),
              groups=64, transposed=False)  # fmt: skip
    (piece,) = lower(trace_of(dw)).ops
    assert piece.name == "aten._conv_depthwise2d" and piece.params["curve"] == "conv_depthwise"


def test_fft_flops_are_5_n_log2_n() -> None:
    assert fft_flops(1024, 3, real=False) == 5 * 1024 * 10 * 3
    assert fft_flops(1024, 1, real=True) == pytest.approx(fft_flops(1024, 1, real=False) / 2)
    assert fft_flops(1, 8, real=False) == 0.0 and math.isfinite(fft_flops(7, 1, real=True))


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_values_run_fills_an_all_gather_symmetrically() -> None:
    torch = pytest.importorskip("torch")
    import torch.distributed as dist

    from rooflib.trace.capture import capture

    seen = []

    def prog(x: torch.Tensor) -> None:
        out = torch.empty(4 * x.numel(), dtype=x.dtype, device=x.device)
        dist.all_gather_into_tensor(out, x)
        seen.append(out.tolist())
        n = int(out.sum().item())
        torch.empty(n, device=x.device).fill_(1.0)

    t = capture(prog, lambda r, w, d: (torch.arange(3.0, device=d),), world=4, values=True)
    assert seen == [[0.0, 1.0, 2.0] * 4]
    fills = [c for c in t.calls if c.name == "aten.fill_"]
    assert fills and fills[-1].outputs[0].shape == (12,)  # the size came from the gathered values
