from __future__ import annotations

from pathlib import Path

import pytest

from rooflib.bench.runner import FAMILIES, collect, plan_jobs, run_bench
from rooflib.errors import RooflibError


def test_jobs_per_family() -> None:
    one = plan_jobs(FAMILIES, 1)
    two = plan_jobs(FAMILIES, 2)
    assert not [j for j in one if j.family in ("nccl", "overlap", "tp")]  # these need two GPUs
    nccl = [j for j in two if j.family == "nccl"]
    assert len(nccl) == 9 and all(j.env["NCCL_DEBUG_SUBSYS"] == "TUNING" for j in nccl)
    assert any(j.key == "p2p/bidirectional" for j in two) and not any(j.key == "p2p/bidirectional" for j in one)
    assert len({j.key for j in two}) == len(two)  # keys are unique: resume relies on them
    overlap = [j for j in two if j.family == "overlap"]
    assert [j.key for j in overlap] == ["overlap/t1056", "overlap/t4224", "overlap/b64k"]
    assert all(j.kind == "kernel" and j.target == "overlap" for j in overlap)
    tp = [j for j in two if j.family == "tp"]
    assert len(tp) == 1 and tp[0].kind == "torchrun" and tp[0].target == "rooflib.bench.tp_worker"
    assert len(one) == 14 and len(two) == 15 + 9 + 3 + 1
    assert all("multimem" not in j.target for j in two)  # multicast never runs from the runner


def test_quick_plan_is_small() -> None:
    quick = plan_jobs(["overlap", "tp"], 2, quick=True)
    assert [j.key for j in quick] == ["overlap/t1056", "tp/all"]
    assert "1,16,128" in quick[0].args and "4096" in quick[1].args
    assert plan_jobs(["overlap", "tp"], 1) == []


def test_unknown_family() -> None:
    with pytest.raises(RooflibError, match="unknown benchmark family 'p2q'"):
        plan_jobs(["p2q"], 2)


def test_no_gpu_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi
    with pytest.raises(RooflibError, match="no NVIDIA GPU is visible"):
        run_bench(["latency"], tmp_path / "out")


def test_collect_keeps_points_and_meta(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "latency.jsonl").write_text(
        '{"record":"meta","program":"latency","date":"2026-11-29"}\n'
        '{"record":"point","program":"latency","test":"intra_sm_mbarrier","one_way_ns_median":67.0,"verified":true}\n'
        "not json\n"
    )
    (raw / "tp.jsonl").write_text(
        '{"record":"meta","family":"tp","date":"2026-11-30"}\n'
        '{"record":"tp","family":"tp","workload":"gemm_rs","impl":"fused","time_s":0.001,"verified":true}\n'
        '{"record":"skipped","family":"tp","workload":"gemm_rs","impl":"fused","reason":"no op"}\n'
    )
    (raw / "overlap.jsonl").write_text(
        '{"record":"point","program":"overlap","schedule":"intra_sm","iters":8,"time_s":0.0001,"verified":true}\n'
        '{"record":"compute_rate","program":"overlap","name":"compute_rate","flop_per_s_per_sm":4.8e12}\n'
    )
    frame = collect(tmp_path)
    assert len(frame) == 4 and (tmp_path / "results.csv").exists()
    assert set(frame["record"]) == {"point", "tp", "compute_rate"}
    assert (tmp_path / "meta.json").read_text().count("2026-11-29") == 1
