from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from rooflib.cli import main


def test_predict_json_keys() -> None:
    r = CliRunner().invoke(main, ["predict", "gemm_rs", "-s", "hgx-h100", "-n", "8", "--set", "k=16384", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    kept = {"workload", "system", "gpus", "params", "bound_time_s", "baseline_time_s", "best", "ties", "tie_tolerance", "schedules", "terms", "notes"}
    timeline = {"program", "graph_time_s", "host_time_s", "ops", "unmodelled", "advice"}  # the keys of `rooflib trace`
    assert set(d) == kept | timeline
    assert d["params"]["k"] == 16384 and d["gpus"] == 8
    assert d["bound_time_s"] <= d["best"]["time_s"] <= d["baseline_time_s"]


def test_predict_bad_set() -> None:
    r = CliRunner().invoke(main, ["predict", "gemm_rs", "-s", "hgx-h100", "--set", "kk=3"])
    assert r.exit_code == 2 and "unknown gemm_rs parameter 'kk'" in r.output
    r = CliRunner().invoke(main, ["predict", "gemm_rs", "-s", "hgx-h100", "--set", "k"])
    assert r.exit_code == 2 and "expected key=value" in r.output


def test_workloads_lists_the_catalog() -> None:
    r = CliRunner().invoke(main, ["workloads", "--json"])
    names = {w["name"] for w in json.loads(r.output)}
    assert {"gemm_rs", "ag_gemm", "moe", "ring_attention"} <= names


def test_what_if_across_systems(tmp_path: Path) -> None:
    out = tmp_path / "w.png"
    args = ["what-if", "ag_gemm", "--systems", "hgx-a100,hgx-h100,hgx-b200", "--gpus", "8", "--out", str(out), "--json"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)
    assert [x["system"] for x in rows] == ["hgx-a100", "hgx-h100", "hgx-b200"]
    assert rows[0]["bound_time_s"] > rows[2]["bound_time_s"]  # newer hardware is faster
    assert out.stat().st_size > 1000


def test_what_if_sweep(tmp_path: Path) -> None:
    out = tmp_path / "sweep.png"
    args = ["what-if", "gemm_rs", "--systems", "hgx-h100,hgx-b200", "--sweep", "k=1024,16384", "--out", str(out), "--json"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)
    assert [(x["system"], x["params"]["k"]) for x in rows] == [
        ("hgx-h100", 1024), ("hgx-h100", 16384), ("hgx-b200", 1024), ("hgx-b200", 16384)
    ]
    assert rows[1]["bound_time_s"] > rows[0]["bound_time_s"]  # more K, more work
    assert out.stat().st_size > 1000
    bad = CliRunner().invoke(main, ["what-if", "gemm_rs", "--systems", "hgx-h100", "--sweep", "k"])
    assert bad.exit_code == 2 and "expected KEY=V1,V2" in bad.output


def test_what_if_refuses_empty_systems_and_repeated_sweeps() -> None:
    runner = CliRunner()
    for systems in ("", " ", ","):
        out = runner.invoke(main, ["what-if", "gemm_rs", "--systems", systems])
        assert out.exit_code == 2 and "names no system" in out.output and "Traceback" not in out.output
    out = runner.invoke(main, ["what-if", "gemm_rs", "--systems", "hgx-h100", "--sweep", "k=1024", "--sweep", "m=1024"])
    assert out.exit_code == 2 and "given 2 times (k=1024, m=1024); sweep one parameter at a time" in out.output
    out = runner.invoke(main, ["what-if", "gemm_rs", "--systems", "hgx-h100", "--sweep", "k=1024", "--set", "k=2048"])
    assert out.exit_code == 2 and "k is both swept and set" in out.output
    out = runner.invoke(main, ["what-if", "gemm_rs", "--systems", "hgx-h100", "--profile", "h200-x2"])
    assert out.exit_code == 2 and "is for none of the systems hgx-h100" in out.output


def test_what_if_with_a_profile_uses_it_for_its_system() -> None:
    args = ["what-if", "gemm_rs", "--systems", "hgx-h200", "--gpus", "2", "--json"]
    plain = CliRunner().invoke(main, args)
    calibrated = CliRunner().invoke(main, [*args, "--profile", "h200-x2"])
    assert plain.exit_code == 0 and calibrated.exit_code == 0, calibrated.output
    assert json.loads(plain.output)[0]["baseline_time_s"] != json.loads(calibrated.output)[0]["baseline_time_s"]
