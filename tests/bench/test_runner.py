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
    assert [j.key for j in overlap] == ["overlap/t1056", "overlap/t4224", "overlap/b64k", "overlap/gather"]
    assert all(j.kind == "kernel" and j.target == "overlap" for j in overlap)
    assert all("--direction" not in j.args for j in overlap[:3])  # the scatter jobs run as before
    gather = overlap[3].args
    assert gather[gather.index("--direction") + 1] == "gather" and gather[gather.index("--reuse") + 1] == "8"
    assert gather[gather.index("--tiles") + 1] == "256" and gather[gather.index("--tile-bytes") + 1] == "32K"
    assert gather[gather.index("--iters") + 1].endswith(",1024") and "1,2,4,8,12,16,24,32" in gather
    tp = [j for j in two if j.family == "tp"]
    assert all(j.kind == "torchrun" and j.target == "rooflib.bench.tp_worker" for j in tp)
    assert tp[0].key == "tp/all" and "--impls" not in tp[0].args  # the worker's defaults: no ce_pipeline
    ce = tp[1:]  # the copy-engine pipeline: one process per (workload, M, K), with a timeout
    assert len(ce) == 18 and all(j.timeout_s and "ce_pipeline" in j.args for j in ce)
    assert len(one) == 14 and len(two) == 15 + 9 + 4 + 1 + 18
    assert all("multimem" not in j.target for j in two)  # multicast never runs from the runner


def test_quick_plan_is_small() -> None:
    quick = plan_jobs(["overlap", "tp"], 2, quick=True)
    assert [j.key for j in quick][:3] == ["overlap/t1056", "overlap/gather", "tp/all"]
    assert [j.key for j in quick][3:] == [f"tp/ce/{w}/4096/{k}" for w in ("gemm_rs", "ag_gemm") for k in (1024, 8192)]
    assert "1,16,128" in quick[0].args and "gather" in quick[1].args and "4096" in quick[2].args
    assert plan_jobs(["overlap", "tp"], 1) == []


def test_only_runs_the_named_jobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rooflib.bench import runner

    ran: list[str] = []
    monkeypatch.setattr(runner, "detect_gpus", lambda: ["GPU 0: H200", "GPU 1: H200"])
    monkeypatch.setattr(runner, "_run_job", lambda job, out, gpus, nvcc, *rest: ran.append(job.key))
    run_bench(["overlap"], tmp_path / "out", only=["overlap/gather"], progress=False)
    assert ran == ["overlap/gather"]
    assert (tmp_path / "out" / "done.txt").read_text().split() == ["overlap/gather"]
    with pytest.raises(RooflibError, match="no such job"):
        run_bench(["overlap"], tmp_path / "out2", only=["overlap/nope"], progress=False)


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
        "\n"
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
    with (raw / "latency.jsonl").open("a") as fh:
        fh.write("not json\n")
    with pytest.raises(RooflibError, match=r"latency.jsonl line 4: not a JSON record"):
        collect(tmp_path)


def test_a_job_past_its_timeout_is_killed_with_its_children(tmp_path: Path) -> None:
    import os
    import subprocess
    import time

    from rooflib.bench.runner import _call

    pid_file = tmp_path / "child.pid"
    start = time.monotonic()
    # a shell whose child would outlive a kill of the shell alone
    cmd = ["sh", "-c", f"sleep 30 & echo $! > {pid_file}; wait"]
    with pytest.raises(subprocess.TimeoutExpired):
        _call(cmd, subprocess.DEVNULL, subprocess.DEVNULL, dict(os.environ), 0.5)
    assert time.monotonic() - start < 10
    child = int(pid_file.read_text())
    for _ in range(50):  # the kill is asynchronous: give the child a moment to disappear
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the job's child process survived its timeout")
    code, out = _call(["sh", "-c", "echo done"], subprocess.PIPE, subprocess.DEVNULL, dict(os.environ), 5.0)
    assert code == 0 and out.strip() == "done"
