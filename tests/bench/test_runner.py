from __future__ import annotations

from pathlib import Path

import pytest

from rooflib.bench.runner import FAMILIES, collect, plan_jobs, run_bench
from rooflib.errors import RooflibError


def test_jobs_per_family() -> None:
    one = plan_jobs(FAMILIES, 1)
    two = plan_jobs(FAMILIES, 2)
    assert not [j for j in one if j.family == "nccl"]  # collectives need two GPUs
    nccl = [j for j in two if j.family == "nccl"]
    assert len(nccl) == 9 and all(j.env["NCCL_DEBUG_SUBSYS"] == "TUNING" for j in nccl)
    assert any(j.key == "p2p/bidirectional" for j in two) and not any(j.key == "p2p/bidirectional" for j in one)
    assert len({j.key for j in two}) == len(two)  # keys are unique: resume relies on them
    assert all("multimem" not in j.target for j in two)  # multicast never runs from the runner


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
    frame = collect(tmp_path)
    assert len(frame) == 1 and (tmp_path / "results.csv").exists()
    assert (tmp_path / "meta.json").read_text().count("2026-11-29") == 1
