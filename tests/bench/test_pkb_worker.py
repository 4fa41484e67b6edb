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
