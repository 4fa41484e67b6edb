"""Implicit-GEMM convolutions, FFT FLOPs and the symmetric collective fill of a run with values."""

from __future__ import annotations

import math

import pytest

from rooflib.trace.special import conv_dims, fft_flops

from .conftest import tensor


def test_conv_dims_match_the_convolution_flops() -> None:
    x, w, out = tensor(2, 64, 32, 32), tensor(128, 64, 3, 3), tensor(2, 128, 32, 32)
    batch, m, n, k = conv_dims(x, w, out, 1, False)
    # 2 N C_out H W C_in R S, the direct definition
    assert 2 * batch * m * n * k == 2 * 2 * 128 * 32 * 32 * 64 * 3 * 3
    g = conv_dims(x, tensor(64, 1, 3, 3), tensor(2, 64, 32, 32), 64, False)  # depthwise
    assert g == (64, 2 * 32 * 32, 1, 9)


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
