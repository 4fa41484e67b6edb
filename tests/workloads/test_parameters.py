"""Workload defaults at every GPU count, and parameters the model must use or refuse."""

from __future__ import annotations

import pytest

import rooflib
from rooflib.errors import GroupError
from rooflib.workloads import load_workloads, predict_workload


@pytest.mark.parametrize(("system", "gpus"), [("gb200-nvl72", 72), ("nvl576", 576), ("dgx-h100-superpod", 24)])
def test_defaults_work_at_every_gpu_count(system: str, gpus: int) -> None:
    s = rooflib.load_system(system, gpus=gpus)
    for name in load_workloads():
        p = predict_workload(name, s, gpus=gpus)
        assert p.bound_time_s <= p.best.time_s <= p.baseline_time_s


def test_rounded_defaults_are_reported_and_user_values_are_not_rounded() -> None:
    s = rooflib.load_system("gb200-nvl72")
    p = predict_workload("gemm_rs", s, gpus=72)
    assert p.params["k"] == 8208 and p.params["m"] == 8208
    assert any("k = 8192 rounded up to 8208" in n for n in p.notes)
    with pytest.raises(GroupError, match="k = 8192 is not divisible by the 72 GPUs"):
        predict_workload("gemm_rs", s, gpus=72, params={"k": 8192})


def test_topk_above_experts_is_refused() -> None:
    with pytest.raises(GroupError, match="topk = 100 exceeds experts = 64"):
        predict_workload("moe", rooflib.load_system("hgx-h100"), gpus=8, params={"topk": 100})


def test_buckets_and_layers_change_the_answer() -> None:
    h100 = rooflib.load_system("hgx-h100")
    with pytest.raises(GroupError, match="bucket_bytes = 1 is smaller than one fp32 gradient"):
        predict_workload("ddp_allreduce", h100, params={"bucket_bytes": 1})
    big = predict_workload("ddp_allreduce", h100, params={"bucket_bytes": "1GiB"})
    small = predict_workload("ddp_allreduce", h100, params={"bucket_bytes": "64KiB"})
    assert small.baseline_time_s > 1.5 * big.baseline_time_s  # one NCCL call per bucket
    few = predict_workload("fsdp", h100, params={"layers": 32})
    many = predict_workload("fsdp", h100, params={"layers": 100_000_000})
    assert many.baseline_time_s > 100 * few.baseline_time_s and many.best.time_s > few.best.time_s
    with pytest.raises(GroupError, match="layers = 100 exceeds params = 10"):
        predict_workload("fsdp", h100, params={"layers": 100, "params": 10})


def test_load_system_gpus_sizes_the_cluster() -> None:
    pod = rooflib.load_system("dgx-h100-superpod", gpus=12)
    assert pod.nodes == 2 and len(pod.group()) == 12
    assert rooflib.predict_collective("all_reduce", pod, nbytes=1 << 20).gpus == 12
    with pytest.raises(GroupError, match=r"nodes must be a whole number >= 1, got 2\.5"):
        rooflib.load_system("dgx-h100-superpod", nodes=2.5)  # type: ignore[arg-type]


def test_near_ties_are_reported_as_ties() -> None:
    s = rooflib.load_system("gb200-nvl72")
    p = predict_workload("gemm_rs", s, gpus=72)
    assert p.ties and all(c.time_s <= p.best.time_s * (1 + p.tie_tolerance) for c in p.ties)
    assert p.best not in p.ties
    strict = predict_workload("gemm_rs", s, gpus=72, tie_tolerance=0.0)
    assert all(c.time_s == strict.best.time_s for c in strict.ties)
    from click.testing import CliRunner

    from rooflib.cli import main

    out = CliRunner().invoke(main, ["predict", "gemm_rs", "--system", "gb200-nvl72", "--gpus", "72"])
    assert out.exit_code == 0 and "a tie the model cannot split" in out.output
    assert "rounded up to 8208" in out.output
