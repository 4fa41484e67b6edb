"""fp32 GEMMs on CUDA cores by their own tile model (``compute.sgemm``, fitted on runs/x1-sgemm)."""

from __future__ import annotations

import pandas as pd
import pytest

from rooflib.calibrate.compute_kernels import sgemm_tile_pairs
from rooflib.compute.gemm import gemm
from rooflib.specs import default_catalog


def test_sgemm_tiles_are_read_off_cublas_kernel_names() -> None:
    names = pd.Series(
        [
            "['sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x64x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4']",
            "['void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(...)']",
            "['nvjet_sm90_tst_64x128_64x8_2x1_v_bz_NNN']",  # a tensor-core kernel: not an SGEMM tile
            None,
        ]
    )
    assert sgemm_tile_pairs(names) == [(32, 64), (64, 32), (128, 256), (256, 128)]


def test_fp32_gemms_take_the_cuda_core_tile_model() -> None:
    h200 = default_catalog().device("h200-sxm")
    assert h200.compute is not None and h200.compute.sgemm is not None
    bare = h200.model_copy(update={"compute": None})
    small = gemm(h200, 4, 4, 64, "fp32", batch=128)  # ring attention's backward: 2.5-3.9 us by CUPTI
    assert small.time_s < gemm(bare, 4, 4, 64, "fp32", batch=128).time_s  # the one-tile model's floor: 8.3 us
    assert small.unit == "vector"
    big = gemm(h200, 4096, 4096, 4096, "fp32")
    assert big.time_s > big.flops / h200.vector_peak("fp32")  # never above the CUDA-core peak
    assert gemm(h200, 4096, 4096, 4096, "fp32", ideal=True).time_s == pytest.approx(big.flops / 67e12, rel=0.01)
    assert gemm(h200, 2048, 2048, 2048, "fp32").time_s < gemm(h200, 2048, 2048, 4096, "fp32").time_s
