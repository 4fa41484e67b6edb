from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rooflib.cli import main

RUNS = Path(__file__).resolve().parents[2] / "docs" / "validation" / "h200" / "runs"


def test_bench_without_a_gpu_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    result = CliRunner().invoke(main, ["bench", "all", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "no NVIDIA GPU is visible" in result.output


def test_calibrate_then_validate(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "lab.yaml"
    r = runner.invoke(main, ["calibrate", str(RUNS / "x1-quick"), "--system", "hgx-h200", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "fitted figures" in r.output and out.exists()
    r = runner.invoke(main, ["validate", str(RUNS / "x1-quick"), "-s", "hgx-h200", "--profile", str(out), "--json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)
    assert {"family", "name", "variant", "model", "median_abs_pct"} <= set(rows[0])


def test_shipped_profile_changes_predictions() -> None:
    runner = CliRunner()
    args = ["collective", "all_reduce", "-s", "hgx-h200", "-n", "2", "-b", "1GiB", "-a", "library", "--json"]
    base = json.loads(runner.invoke(main, args).output)
    tuned = json.loads(runner.invoke(main, [*args, "--profile", "h200-x2"]).output)
    assert tuned["time_s"] != base["time_s"]


def test_import_nccl_tests(tmp_path: Path) -> None:
    text = tmp_path / "ar.txt"
    text.write_text(
        "# Collective test starting: all_reduce_perf\n"
        "#  Rank  0 Group  0 Pid 1 on h device  0 [0x07] NVIDIA H200\n"
        "#  Rank  1 Group  0 Pid 1 on h device  1 [0x08] NVIDIA H200\n"
        "     1048576        262144     float     sum      -1    10.50   99.86   99.86      0    10.20  102.80  102.80      0\n"
    )
    r = CliRunner().invoke(main, ["import-nccl-tests", str(text), "--out", str(tmp_path / "res")])
    assert r.exit_code == 0, r.output
    assert "added 2 points" in r.output and (tmp_path / "res" / "results.csv").exists()
