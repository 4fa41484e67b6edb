"""The tensor-parallel harness's pieces that need no GPU: shapes, FLOP and byte counts."""

from __future__ import annotations

from rooflib.bench.tp_harness import Shape
from rooflib.bench.tp_worker import IMPLS, WORKLOADS


def test_counts() -> None:
    assert WORKLOADS == ("gemm_rs", "ag_gemm", "gemm_ar") and "fused" in IMPLS
    rs = Shape("gemm_rs", 4096, 8192, 1024, 2)
    assert rs.flops("sequential") == 2.0 * 4096 * 512 * 8192  # each GPU multiplies A[M, K/g] by W[K/g, N]
    assert rs.flops("comm_only") == 0.0
    assert rs.comm_bytes() == 2 * 4096 * 8192  # reduce-scatter input, bf16
    ag = Shape("ag_gemm", 4096, 8192, 1024, 2)
    assert ag.flops("fused") == 2.0 * 4096 * 1024 * 4096  # all-gathered X[M, K] by W[K, N/g]
    assert ag.comm_bytes() == 2 * 4096 * 1024  # all-gather output
    assert Shape("gemm_ar", 4096, 8192, 1024, 2).comm_bytes() == 2 * 4096 * 8192
