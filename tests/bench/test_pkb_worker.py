"""The pkb benchmark worker: record keys, resuming without losing or repeating records, a CPU run."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rooflib.bench.pkb_worker import done_keys, record_key

ROOT = Path(os.environ.get("ROOFLIB_PKB", Path(__file__).resolve().parents[3] / "shared" / "pkb"))


def test_done_keys_ignore_a_torn_line_and_other_families(tmp_path: Path) -> None:
    rec = {"record": "point", "family": "pkb", "problem": "1_allreduce", "mode": "local", "world": 2, "rank": 0}
    rec.update(size=[8, 8], dtype="bfloat16", solution="reference")
    other = {**rec, "family": "compute"}
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(rec) + "\n" + json.dumps(other) + "\n" + '{"record": "po')
    assert done_keys(str(path)) == {record_key(rec)}
    assert record_key({**rec, "world": 8}) != record_key(rec)


@pytest.mark.skipif(not (ROOT / "reference").is_dir(), reason=f"no ParallelKernelBench at {ROOT}")
@pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")
def test_cpu_run_resumes_without_duplicates(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from rooflib.bench.pkb_worker import main

    out = str(tmp_path / "local.jsonl")
    args = ["--pkb", str(ROOT), "--out", out, "--device", "cpu", "--problems", "1,13", "--worlds", "2"]
    args += ["--warmup", "1", "--iters", "2", "--size", "64x64"]
    assert main(args) == 0
    assert main(args) == 0  # resumed: nothing to do
    points = [json.loads(x) for x in Path(out).read_text().splitlines() if '"point"' in x]
    assert sorted(p["problem"] for p in points) == ["13_gemm_allreduce", "1_allreduce"]
    assert all(p["verified"] is True and p["time_s"] > 0 for p in points)


def test_died_keys_are_started_and_never_finished(tmp_path: Path) -> None:
    from rooflib.bench.pkb_worker import died_keys

    base = {"family": "pkb", "problem": "1_allreduce", "mode": "local", "world": 2, "rank": 0}
    base.update(size=[8, 8], dtype="bfloat16", solution="reference")
    other = {**base, "problem": "3_broadcast"}
    third = {**base, "problem": "4_reduce"}
    lines = [{"record": "started", **base}, {"record": "started", **other}, {"record": "point", **other}]
    lines += [{"record": "started", **third}, {"record": "aborted", **third}]
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    assert died_keys(str(path)) == {record_key(base)}  # finished and interrupted ones are not
    assert died_keys(str(tmp_path / "none.jsonl")) == set()


@pytest.mark.skipif(not (ROOT / "reference").is_dir(), reason=f"no ParallelKernelBench at {ROOT}")
@pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")
def test_a_problem_that_killed_the_process_is_skipped_once(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from rooflib.bench.pkb_worker import main

    out = tmp_path / "local.jsonl"
    started = {"record": "started", "family": "pkb", "problem": "1_allreduce", "id": 1, "mode": "local"}
    started.update(size=[64, 64], dtype="bfloat16", world=2, rank=0, solution="reference")
    out.write_text(json.dumps(started) + "\n")  # as a run killed inside problem 1 leaves it
    args = ["--pkb", str(ROOT), "--out", str(out), "--device", "cpu", "--problems", "1,3", "--worlds", "2"]
    args += ["--warmup", "1", "--iters", "2", "--size", "64x64"]
    assert main(args) == 0 and main(args) == 0
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    first = [r for r in recs if r.get("problem") == "1_allreduce" and r["record"] in ("point", "skipped")]
    assert [r["record"] for r in first] == ["skipped"] and "process ended" in first[0]["reason"]
    assert [r["problem"] for r in recs if r["record"] == "point"] == ["3_broadcast"]


@pytest.mark.skipif(not (ROOT / "reference").is_dir(), reason=f"no ParallelKernelBench at {ROOT}")
@pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")
def test_profile_mode_lists_the_top_level_ops(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from rooflib.bench.pkb_worker import main

    out = str(tmp_path / "profile.jsonl")
    args = ["--pkb", str(ROOT), "--out", out, "--device", "cpu", "--problems", "1", "--worlds", "2", "--mode"]
    assert main([*args, "profile", "--warmup", "1", "--iters", "3", "--size", "64x64"]) == 0
    (point,) = [json.loads(x) for x in Path(out).read_text().splitlines() if '"point"' in x]
    names = {name: count for name, count, _ in point["ops"]}
    assert point["mode"] == "profile" and names["aten::clone"] == 1 and names["c10d::allreduce_"] == 1
    assert not any(n.startswith("ProfilerStep") for n in names)  # the step markers are not ops
    assert point["ops_s"] == pytest.approx(sum(t for _, _, t in point["ops"])) and point["ops_s"] > 0
    assert point["time_s"] > 0 and point["profiled_s"] > 0
