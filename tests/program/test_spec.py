"""Programs in YAML (kind: program) from --catalog folders: parameters, shape expressions, repeat, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import rooflib
from rooflib.cli import main
from rooflib.program import ProgramError
from rooflib.program.expr import evaluate
from rooflib.program.spec import load_program

TP_MLP = """\
kind: program
name: tp_mlp
description: Megatron tensor-parallel MLP, all-reduce after the down projection
sources: ["Megatron-LM (Shoeybi et al., 2019)"]
parameters:
  tokens: {kind: int, default: 8192, min: 1, description: tokens per rank}
  hidden: {kind: int, default: 8192, min: 1, description: model width}
  ffn: {kind: int, default: 28672, min: 1, split: true, description: MLP width (split over the ranks)}
  layers: {kind: int, default: 2, min: 0, description: layers}
  dtype: {kind: dtype, default: bf16, description: activations and weights}
ops:
  - repeat: layers
    ops:
      - {kind: norm, op: rmsnorm, rows: tokens, cols: hidden, dtype: dtype}
      - {kind: gemm, name: up, m: tokens, n: "div(ffn, world)", k: hidden, dtype: dtype}
      - {kind: elementwise, op: gelu, elements: "tokens * ffn // world", dtype: dtype}
      - {kind: gemm, name: down, m: tokens, n: hidden, k: "ffn // world", dtype: dtype}
      - {kind: collective, name: allreduce, op: all_reduce, bytes: "tokens * hidden * bytes(dtype)"}
"""


@pytest.fixture()
def catalog(tmp_path: Path) -> Path:
    (tmp_path / "tp_mlp.yaml").write_text(TP_MLP)
    return tmp_path


def test_yaml_program_builds_and_predicts(catalog: Path) -> None:
    cat = rooflib.Catalog.load([catalog])
    program = load_program(cat, "tp_mlp", 8)
    assert len(program.ops) == 10 and program.ops[1].params["n"] == 3584
    assert program.ops[4].params["bytes"] == 8192 * 8192 * 2
    p = rooflib.predict_program(program, rooflib.load_system("hgx-h100"))
    assert p.bound_time_s <= p.best["time_s"] <= p.baseline_time_s
    assert len(p.best["fused"]) == 2  # one down + all-reduce per layer


def test_cli_predict_runs_a_catalog_program(catalog: Path) -> None:
    args = ["predict", "tp_mlp", "--system", "hgx-h100", "--gpus", "8", "--catalog", str(catalog)]
    out = CliRunner().invoke(main, [*args, "--json", "--set", "layers=1"])
    assert out.exit_code == 0, out.output
    d = json.loads(out.output)
    assert {"bound_time_s", "baseline_time_s", "graph_time_s", "host_time_s", "best", "ops", "unmodelled"} <= set(d)
    assert len(d["ops"]) == 5
    table = CliRunner().invoke(main, args)
    assert table.exit_code == 0 and "fuse down + allreduce (gemm_ar)" in table.output


def test_bad_program_files_are_one_line_errors(catalog: Path) -> None:
    (catalog / "bad.yaml").write_text(TP_MLP.replace("name: tp_mlp", "name: bad").replace("div(ffn, world)", "ffnn"))
    args = ["predict", "bad", "--system", "hgx-h100", "--gpus", "8", "--catalog", str(catalog)]
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 2 and "bad.yaml: program 'bad'" in out.output and "Traceback" not in out.output
    cat = rooflib.Catalog.load([catalog])
    with pytest.raises(ProgramError, match=r"div\(28672, 3\): 28672 is not divisible by 3"):
        load_program(cat, "tp_mlp", 3, {"ffn": 28672})


def test_expressions_are_arithmetic_only() -> None:
    assert evaluate("ceil(tokens / 128) * 128", {"tokens": 1000}) == 1024
    assert evaluate("all_reduce", {}) == "all_reduce"
    for bad in ("__import__('os').system('true')", "tokens.real", "open('x')", "2 ** 1000"):
        with pytest.raises(ProgramError, match=r"not allowed|too large|unknown name"):
            evaluate(bad, {"tokens": 4})


def test_timeline_plot_of_a_program(catalog: Path, tmp_path: Path) -> None:
    out = tmp_path / "timeline.png"
    args = ["predict", "tp_mlp", "--system", "hgx-h100", "--gpus", "8", "--catalog", str(catalog), "--out", str(out)]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    assert out.stat().st_size > 10_000
    from rooflib.plot import TimelineDisplay, file_axes

    cat = rooflib.Catalog.load([catalog])
    d = rooflib.predict_program(load_program(cat, "tp_mlp", 8), rooflib.load_system("hgx-h100")).as_dict()
    disp = TimelineDisplay.from_prediction(d, ax=file_axes())
    assert disp.lanes == ["host", "compute", "comm"]
    assert disp.ax_ is not None and disp.ax_.get_xlabel().startswith("time from the first issue (")
