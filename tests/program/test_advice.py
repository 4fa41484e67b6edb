"""Advice per region: the binding resource, the best mechanism and schedule, and a rationale built from them."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import rooflib
from rooflib.cli import main
from rooflib.workloads import predict_workload


def test_gemm_all_reduce_on_nvswitch_advises_the_switch_reduction() -> None:
    p = predict_workload("gemm_ar", rooflib.load_system("hgx-h200"), gpus=8)
    (advice,) = p.as_dict()["advice"]
    assert advice["pattern"] == "gemm_ar" and advice["binding"] == "communication"
    assert advice["terms"]["comm_s"] > advice["terms"]["compute_s"]
    assert advice["best"]["mechanism"] == "multimem"  # the only mechanism that reduces in the switch
    assert advice["speedup"] == pytest.approx(advice["library_s"] / advice["best"]["time_s"])
    assert advice["speedup"] > 1.0
    assert min(advice["by_mechanism"].values()) == pytest.approx(advice["best"]["time_s"])
    assert "multimem" in advice["rationale"] and "NVSwitch reduces" in advice["rationale"]


def test_a_plain_collective_compares_the_library_with_the_fastest_kernel() -> None:
    p = predict_workload("collective", rooflib.load_system("hgx-h100"), gpus=8, params={"bytes": "1MiB"})
    (advice,) = [a for a in p.as_dict()["advice"] if a["ops"]]  # the program's own region (besides "graph")
    assert advice["pattern"] == "collective" and advice["by_mechanism"] == {}
    assert "Nothing to fuse" in advice["rationale"] and "NCCL's own algorithm" in advice["rationale"]


def test_every_catalog_region_has_advice_with_its_numbers() -> None:
    h100 = rooflib.load_system("hgx-h100")
    for name in ("gemm_rs", "ag_gemm", "moe", "ring_attention", "ulysses_attention", "fsdp"):
        d = predict_workload(name, h100, gpus=8).as_dict()
        assert d["advice"], name
        for a in d["advice"]:
            assert a["bound_s"] <= a["best"]["time_s"] * (1 + 1e-9)
            assert a["binding"] in ("compute", "memory", "communication")
            assert a["best"]["schedule"] in a["rationale"] or a["pattern"] == "collective"


def test_explain_prints_the_rationale() -> None:
    r = CliRunner().invoke(main, ["predict", "gemm_rs", "-s", "hgx-h100", "-n", "8", "--explain"])
    assert r.exit_code == 0, r.output
    assert "communication binds" in r.output and "Mechanism:" in r.output and "Schedule:" in r.output
    j = CliRunner().invoke(main, ["predict", "gemm_rs", "-s", "hgx-h100", "-n", "8", "--json"])
    assert json.loads(j.output)["advice"][0]["pattern"] == "gemm_rs"


def test_copies_of_the_moved_tensor_belong_to_the_fused_region() -> None:
    """PKB's gemm_allreduce clones the product before the all-reduce and allgather_gemm cats the pieces."""
    from rooflib.program import fusable_regions

    b = rooflib.ProgramBuilder("gemm_clone_ar", world=8)
    b.gemm(4096, 4096, 512, name="mm")
    b.copy(4096 * 4096 * 2, name="clone")
    b.collective("all_reduce", 4096 * 4096 * 2, name="ar")
    (region,) = fusable_regions(b.build())
    assert (region.pattern, region.glue) == ("gemm_ar", (1,))
    p = rooflib.predict_program(b.build(), rooflib.load_system("hgx-h200"))
    fused = p.best["fused"][0]
    assert (fused["ops"], fused["absorbs"]) == (["mm", "ar"], ["clone"]) and p.best["time_s"] < p.baseline_time_s
    other = rooflib.ProgramBuilder("gemm_copy_other", world=8)
    other.gemm(4096, 4096, 512)
    other.copy(123.0)  # a copy of something else breaks the chain
    other.collective("all_reduce", 4096 * 4096 * 2)
    assert not fusable_regions(other.build())


def test_a_host_bound_program_is_advised_a_cuda_graph() -> None:
    b = rooflib.ProgramBuilder("tiny", world=1)
    for _ in range(20):
        b.elementwise("add", 1024)
    p = rooflib.predict_program(b.build(), rooflib.load_system("hgx-h200"))
    first = p.advice[0]
    assert first["pattern"] == "graph" and first["binding"] == "host"
    assert first["speedup"] == pytest.approx(p.baseline_time_s / p.graph_time_s) and first["speedup"] > 1.5
    big = rooflib.ProgramBuilder("big", world=1)
    big.gemm(8192, 8192, 8192)
    assert not rooflib.predict_program(big.build(), rooflib.load_system("hgx-h200")).advice  # device-bound
