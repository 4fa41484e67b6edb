from __future__ import annotations

import pytest

import rooflib
from rooflib.errors import GroupError, UnitError, UnknownNameError
from rooflib.workloads import load_workloads, predict_workload

EXPECTED = {
    "gemm_rs",
    "ag_gemm",
    "gemm_ar",
    "gemm_ag",
    "ring_attention",
    "ulysses_attention",
    "moe",
    "ddp_allreduce",
    "fsdp",
    "pipeline_sendrecv",
    "collective",
    "allreduce_rmsnorm",
}


def test_catalog_has_every_workload() -> None:
    assert set(load_workloads()) == EXPECTED
    for spec, _ in load_workloads().values():
        assert spec.sources and spec.parameters


@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.parametrize("system", ["hgx-a100", "hgx-h100", "hgx-b200", "gb200-nvl72"])
def test_every_workload_predicts(name: str, system: str) -> None:
    p = predict_workload(name, rooflib.load_system(system, gpus=8), gpus=8)
    d = p.as_dict()
    assert set(d) == {
        "workload",
        "system",
        "gpus",
        "params",
        "bound_time_s",
        "baseline_time_s",
        "best",
        "ties",
        "tie_tolerance",
        "schedules",
        "terms",
        "notes",
        # the program path adds the timeline (as `rooflib trace`): CUDA-graph and host times, the ops, what no
        # model knows
        "program",
        "graph_time_s",
        "host_time_s",
        "ops",
        "unmodelled",
        "advice",
    }
    assert set(d["best"]) == {"schedule", "comm_sms", "mechanism", "algorithm", "time_s", "graph_time_s", "fused"}
    assert [o["kind"] for o in d["ops"]] and not d["unmodelled"]
    assert set(d["terms"]) == {"compute_s", "memory_s", "comm_s"}
    assert 0 < d["bound_time_s"] <= d["best"]["time_s"] * (1 + 1e-12)
    assert d["best"]["time_s"] <= d["baseline_time_s"] * (1 + 1e-12)  # the baseline is one of the schedules


def test_tensor_parallel_conventions(h100: rooflib.System) -> None:
    rs = predict_workload("gemm_rs", h100, gpus=8, params={"m": 8192, "n": 4096, "k": 16384})
    # each GPU multiplies A[M, K/g] by W[K/g, N]: 2 M N K / g FLOPs
    assert rs.terms["compute_s"] == pytest.approx(2 * 8192 * 4096 * 16384 / 8 / 989e12, rel=1e-6)
    ag = predict_workload("ag_gemm", h100, gpus=8, params={"m": 8192, "n": 4096, "k": 16384})
    assert ag.terms["compute_s"] == pytest.approx(rs.terms["compute_s"], rel=1e-6)


def test_bad_parameters(h100: rooflib.System) -> None:
    with pytest.raises(
        UnknownNameError, match=r"unknown gemm_rs parameter 'kk'; valid gemm_rs parameters: dtype, k, m, n"
    ):
        predict_workload("gemm_rs", h100, params={"kk": 1})
    with pytest.raises(UnitError, match=r"workload 'gemm_rs': parameter m=-4"):
        predict_workload("gemm_rs", h100, params={"m": -4})
    with pytest.raises(UnitError, match="dtype must be one of"):
        predict_workload("gemm_rs", h100, params={"dtype": "fp7"})
    with pytest.raises(GroupError, match="k = 1001 is not divisible by the 8 GPUs"):
        predict_workload("gemm_rs", h100, gpus=8, params={"k": 1001})
    with pytest.raises(UnknownNameError, match="unknown workload 'gemm_xx'"):
        predict_workload("gemm_xx", h100)


def test_sizes_accept_units(h100: rooflib.System) -> None:
    p = predict_workload("collective", h100, params={"op": "all_gather", "bytes": "64MiB"})
    assert p.params["bytes"] == 64 << 20
