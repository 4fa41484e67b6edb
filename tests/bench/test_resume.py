"""Measurements are never lost or duplicated: reruns after failures, cut-off files, leftovers of killed runs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from rooflib.bench.plan import Job
from rooflib.bench.runner import run_bench
from rooflib.bench.store import read_done, running_path
from rooflib.errors import RooflibError

FakeJobs = Callable[[list[Any]], None]


def _kernel(key: str, *args: str) -> Job:
    return Job("fake", key, "kernel", "fake", args)


def _worker(key: str, *args: str) -> Job:
    return Job("fake", key, "torchrun", "fake", args)


def _raw(out: Path) -> list[dict[str, Any]]:
    lines = (out / "raw" / "fake.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def _points(out: Path) -> list[dict[str, Any]]:
    return [r for r in _raw(out) if r["record"] == "point"]


def test_a_rerun_replaces_a_failed_jobs_records(tmp_path: Path, fake_jobs: FakeJobs) -> None:
    out = tmp_path / "run"
    fake_jobs([_kernel("fake/a", "--points", "2", "--exit", "1", "--tag", "first"), _kernel("fake/b")])
    failed: list[str] = []
    run_bench(["fake"], out, progress=False, on_error=lambda job, exc: failed.append(f"{job.key}: {exc}"))
    assert failed and "fake/a failed (exit 1); 3 records kept as incomplete" in failed[0]
    first = [r for r in _points(out) if r["job"] == "fake/a"]
    assert len(first) == 2 and not any(r["complete"] for r in first)  # kept, marked incomplete
    assert read_done(out) == {"fake/b"}
    fake_jobs([_kernel("fake/a", "--points", "3", "--tag", "second"), _kernel("fake/b")])
    for _ in range(2):  # two reruns: fake/a replaced once, nothing ever duplicated
        run_bench(["fake"], out, progress=False)
    points = _points(out)
    a = [r for r in points if r["job"] == "fake/a"]
    assert len(a) == 3 and {r["tag"] for r in a} == {"second"} and all(r["complete"] for r in a)
    assert len([r for r in points if r["job"] == "fake/b"]) == 3
    table = pd.read_csv(out / "results.csv")
    assert len(table) == 6 and not table.duplicated().any()
    assert (out / "done.txt").read_text().split() == ["fake/b", "fake/a"]


def test_every_record_says_where_it_was_measured(tmp_path: Path, fake_jobs: FakeJobs, monkeypatch: Any) -> None:
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "false")  # not clearly off: replaced by 0
    monkeypatch.setenv("TORCH_SYMM_MEM_DISABLE_MULTICAST", "true")  # PyTorch only reads "1"
    fake_jobs([_kernel("fake/k"), _worker("fake/w")])
    out = tmp_path / "run"
    run_bench(["fake"], out, progress=False)
    for rec in _raw(out):
        assert rec["gpu"] == "NVIDIA H200" and rec["driver"] == "580.159.04" and rec["nvls"] == "off"
        assert rec["family"] == "fake" and rec["job"] in ("fake/k", "fake/w") and rec["complete"] is True
    points = _points(out)
    assert {r["seen_nvls"] for r in points} == {"0"} and {r["seen_symm"] for r in points} == {"1"}
    assert {r["nccl"] for r in points} == {"2.99.1"}  # the version the job reported, on every record
    log = (out / "raw" / "fake.stderr.log").read_text()
    assert "NCCL_NVLS_ENABLE='false' -> '0'" in log and "TORCH_SYMM_MEM_DISABLE_MULTICAST='true' -> '1'" in log
    assert not list((out / "raw" / ".running").glob("*"))  # nothing left behind


def test_a_cut_off_last_line_is_dropped_and_the_job_redone(tmp_path: Path, fake_jobs: FakeJobs) -> None:
    out = tmp_path / "run"
    fake_jobs([_worker("fake/w", "--partial", "--exit", "137")])  # killed while writing a record
    with pytest.raises(RooflibError, match="fake/w failed"):
        run_bench(["fake"], out, progress=False)
    assert len(_points(out)) == 3 and "dropped a cut-off last line" in (out / "raw" / "fake.stderr.log").read_text()
    for line in (out / "raw" / "fake.jsonl").read_text().splitlines():
        json.loads(line)  # the family file never holds a partial line
    fake_jobs([_worker("fake/w", "--partial")])  # exit 0, but the output was cut: not a finished job either
    with pytest.raises(RooflibError, match="fake/w ended in a cut-off line"):
        run_bench(["fake"], out, progress=False)
    assert read_done(out) == set()
    fake_jobs([_worker("fake/w")])
    run_bench(["fake"], out, progress=False)
    assert len(_points(out)) == 3 and read_done(out) == {"fake/w"}


def test_a_killed_runs_leftovers_are_repaired(tmp_path: Path, fake_jobs: FakeJobs) -> None:
    out = tmp_path / "run"
    raw = out / "raw"
    raw.mkdir(parents=True)
    rec = {"record": "point", "program": "fake", "time_s_median": 1e-6, "verified": True}
    (raw / "fake.jsonl").write_text(json.dumps({**rec, "job": "fake/old"}) + '\n{"record": "po')  # cut off
    left = running_path(out, "fake/a")
    left.parent.mkdir(parents=True)
    left.write_text(json.dumps({**rec, "bytes": 7}) + "\n")  # the runner died while fake/a ran
    (out / "done.txt").write_text("fake/old\nfake/a")  # cut off too: "fake/a" has no newline: not done
    notes: list[str] = []
    fake_jobs([_kernel("fake/a", "--points", "1")])
    run_bench(["fake"], out, progress=False, on_note=notes.append)
    assert any("dropped a cut-off last line" in n for n in notes)
    assert any("1 records of the interrupted job fake/a kept as incomplete" in n for n in notes)
    points = _points(out)
    assert [r["job"] for r in points] == ["fake/old", "fake/a"]  # the leftover was replaced by the rerun
    assert points[1]["complete"] is True and "bytes" in points[1] and points[1]["bytes"] == 1024
    assert read_done(out) == {"fake/old", "fake/a"}
    assert (out / "done.txt").read_text() == "fake/old\nfake/a\nfake/a\n"


def test_lines_that_are_not_records_fail_the_job_but_keep_the_rest(tmp_path: Path, fake_jobs: FakeJobs) -> None:
    fake_jobs([_kernel("fake/a", "--bad-line", "--nan")])
    out = tmp_path / "run"
    with pytest.raises(RooflibError, match=r"wrote 1 line\(s\) that are not JSON records \(first, line 6"):
        run_bench(["fake"], out, progress=False)
    points = _points(out)
    assert len(points) == 3 and points[0]["bytes_per_s"] is None  # NaN written as null: strict JSON
    text = (out / "raw" / "fake.jsonl").read_text()
    assert "NaN" not in text and read_done(out) == set()


def test_a_job_past_its_time_limit_is_stopped_and_resumed(tmp_path: Path, fake_jobs: FakeJobs) -> None:
    out = tmp_path / "run"
    fake_jobs([_kernel("fake/slow", "--sleep", "30")])
    with pytest.raises(RooflibError, match=r"timed out after 0\.5 s \(its process group was killed\)"):
        run_bench(["fake"], out, progress=False, job_timeout_s=0.5)
    assert len(_points(out)) == 3 and read_done(out) == set()
    fake_jobs([_kernel("fake/slow")])
    run_bench(["fake"], out, progress=False, job_timeout_s=30)
    assert len(_points(out)) == 3 and read_done(out) == {"fake/slow"}
    with pytest.raises(RooflibError, match="time limit must be > 0"):
        run_bench(["fake"], out, progress=False, job_timeout_s=0)


def test_a_corrupt_line_in_the_middle_is_refused_by_name(tmp_path: Path, fake_jobs: FakeJobs) -> None:
    raw = tmp_path / "run" / "raw"
    raw.mkdir(parents=True)
    (raw / "fake.jsonl").write_text('{"record": "point"}\n{"record": "po\n{"record": "point"}\n')
    fake_jobs([_kernel("fake/a")])
    with pytest.raises(RooflibError, match=r"fake.jsonl line 2: not a JSON record"):
        run_bench(["fake"], tmp_path / "run", progress=False)


def test_the_results_folder_must_be_a_folder(tmp_path: Path, fake_jobs: FakeJobs) -> None:
    (tmp_path / "file").write_text("x")
    fake_jobs([_kernel("fake/a")])
    with pytest.raises(RooflibError, match="cannot make the results folder"):
        run_bench(["fake"], tmp_path / "file" / "run", progress=False)


def test_one_writer_at_a_time(tmp_path: Path, fake_jobs: FakeJobs) -> None:
    from rooflib.bench.nccl_import import import_nccl_tests
    from rooflib.bench.store import locked

    out = tmp_path / "run"
    (out / "raw").mkdir(parents=True)
    fake_jobs([_kernel("fake/a")])
    with locked(out):
        with pytest.raises(RooflibError, match="is in use by another rooflib command"):
            run_bench(["fake"], out, progress=False)
        with pytest.raises(RooflibError, match="is in use by another rooflib command"):
            import_nccl_tests(Path(__file__).with_name("data") / "all_reduce_h100.log", out)
    run_bench(["fake"], out, progress=False)  # released
    (tmp_path / "file").write_text("x")
    with pytest.raises(RooflibError, match="cannot make the results folder"):
        import_nccl_tests(Path(__file__).with_name("data") / "all_reduce_h100.log", tmp_path / "file")
