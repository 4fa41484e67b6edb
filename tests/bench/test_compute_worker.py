"""The compute family's worker, grids and timing helpers on the CPU (no GPU): the same code paths the H200 ran."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rooflib.bench.compute_grids import (
    MEMORY_OPS,
    AttentionShape,
    attention_shapes,
    gemm_shapes,
    holdout_attention_shapes,
    holdout_gemm_shapes,
    holdout_memory_points,
    memory_points,
)
from rooflib.bench.plan import FAMILIES, SINGLE_GPU_FAMILIES, plan_jobs
from rooflib.bench.records import read_jsonl
from rooflib.bench.torch_timing import groups_for, stats, sweep_counts

torch = pytest.importorskip("torch")
RUNS = Path(__file__).parents[2] / "docs" / "validation" / "h200" / "runs"


def test_help_needs_no_torch_or_pydantic() -> None:
    code = (
        "import sys; sys.modules['torch'] = None; sys.modules['pydantic'] = None; "
        "from rooflib.bench import compute_worker, host_worker, programs_worker, programs; "
        "compute_worker.parser(); host_worker.parser(); programs_worker.parser()"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr


def test_grids_are_what_the_committed_runs_measured() -> None:
    """The grids are deterministic (fixed seeds): the committed records are exactly these points."""
    main = read_jsonl(RUNS / "x1-compute" / "raw" / "compute.jsonl").records
    shapes = [(r["m"], r["n"], r["k"]) for r in main if r.get("op") == "gemm" and r["dtype"] == "bf16"]
    assert shapes == gemm_shapes()
    memory = [
        (r["op"], r["mode"], r["tensor_bytes"], r.get("cols") or 8192, r["dtype"])
        for r in main
        if r.get("record") == "point" and r["op"] in MEMORY_OPS
    ]
    assert memory == memory_points()
    att = [r for r in main if r.get("op") == "attention"]
    assert [(r["seq_q"], r["head_dim"], r["causal"], r["backend"]) for r in att] == [
        (s.seq_q, s.head_dim, s.causal, s.backend) for s in attention_shapes()
    ]
    second = read_jsonl(RUNS / "x1-compute-holdout" / "raw" / "compute-holdout.jsonl").records
    shapes = [(r["m"], r["n"], r["k"]) for r in second if r.get("op") == "gemm" and r["dtype"] == "bf16"]
    assert shapes == holdout_gemm_shapes()
    assert sum(1 for r in second if r.get("op") in MEMORY_OPS) == len(holdout_memory_points())
    assert sum(1 for r in second if r.get("op") == "attention") == len(holdout_attention_shapes())


def test_every_committed_point_verified_and_sampled_clocks() -> None:
    for run, name in (("x1-compute", "compute"), ("x1-compute-holdout", "compute-holdout")):
        recs = read_jsonl(RUNS / run / "raw" / f"{name}.jsonl").records
        points = [r for r in recs if r.get("record") == "point"]
        assert points and all(r["verified"] for r in points)
        assert not [r for r in recs if r.get("record") == "skipped"]
        assert all(r["time_p10_s"] <= r["time_s"] <= r["time_p90_s"] for r in points)
        ends = [r for r in recs if r.get("record") == "meta" and r.get("phase") == "end"]
        assert len(ends) == 3 and all(e["clocks"]["samples"] > 0 for e in ends)


def test_groups_defeat_the_l2() -> None:
    l2 = 60 << 20
    for nbytes in (1 << 18, 1 << 20, 7 << 20, 64 << 20, 179 << 20):
        assert groups_for(nbytes, l2) * nbytes > 3 * l2
    assert groups_for(3 * l2, l2) == 1 and groups_for(0, l2) == 1
    assert groups_for(16, l2, cap=1024) == 1024


def test_stats_and_counts() -> None:
    s = stats([3.0, 1.0, 2.0, 4.0, 5.0])
    assert s["time_s"] == 3.0 and s["time_p10_s"] == 1.0 and s["time_p90_s"] == 5.0 and s["time_n"] == 5
    assert stats([], "graph") == {"graph_s": None, "graph_n": 0}
    assert sweep_counts(0.0) == 200 and sweep_counts(1e-3, target_s=0.01) == 10


def test_plan_registers_the_families_outside_all() -> None:
    assert not set(SINGLE_GPU_FAMILIES) & set(FAMILIES)  # `rooflib bench all` is unchanged
    jobs = plan_jobs(SINGLE_GPU_FAMILIES, 1)
    keys = [j.key for j in jobs]
    assert keys == [
        "compute/gemm",
        "compute/memory",
        "compute/attention",
        "compute-holdout/gemm",
        "compute-holdout/memory",
        "compute-holdout/attention",
        "host/local",
        "programs/all",
    ]
    assert all(j.timeout_s for j in jobs)
    assert "--grid" in jobs[3].args and "--grid" not in jobs[0].args
    two = plan_jobs(["host"], 2)
    assert [j.key for j in two] == ["host/local", "host/nccl"] and two[1].kind == "torchrun"
    assert "--quick" in plan_jobs(["compute"], 1, quick=True)[0].args


@pytest.mark.parametrize("op", MEMORY_OPS)
def test_memory_cases_are_right_on_the_cpu(op: str) -> None:
    from rooflib.bench.compute_ops import memory_case
    from rooflib.bench.compute_worker import time_case

    dev = torch.device("cpu")
    case = memory_case(torch, dev, op, 1 << 15, 256, "fp32")
    rec = time_case(torch, dev, case, 2, quick=True)
    assert rec["verified"] and rec["timing"] == "eager" and rec["time_s"] > 0
    inputs = 2 if op in ("add", "mul") else 1
    rows = (1 << 13) // 256
    out = rows * 4 if op == "sum" else 1 << 15
    params = {"rmsnorm": 1, "layernorm": 2}.get(op, 0) * 256 * 4
    assert case.bytes_moved == inputs * (1 << 15) + out + params


def test_gemm_and_attention_cases_on_the_cpu() -> None:
    from rooflib.bench.compute_ops import attention_case, gemm_case
    from rooflib.bench.compute_worker import time_case

    dev = torch.device("cpu")
    g = gemm_case(torch, dev, 33, 48, 64, "bf16")
    assert g.flops == 2 * 33 * 48 * 64 and g.bytes_moved == 2 * (33 * 64 + 64 * 48) + 2 * 33 * 48
    assert time_case(torch, dev, g, 3)["verified"]
    for shape in (
        AttentionShape(2, 4, 2, 64, 64, 32, causal=True),  # GQA, causal
        AttentionShape(2, 4, 4, 1, 96, 32, causal=False),  # decode
        AttentionShape(1, 4, 4, 64, 64, 32, causal=True, backward=True),
    ):
        rec = time_case(torch, dev, attention_case(torch, dev, shape), 1)
        assert rec["verified"], shape


def test_a_wrong_output_is_not_verified() -> None:
    from rooflib.bench.compute_ops import memory_case
    from rooflib.bench.compute_worker import time_case

    dev = torch.device("cpu")
    case = memory_case(torch, dev, "gelu", 1 << 14, 256, "fp32")
    case.call = lambda g: g[0] * 0.5  # not a GELU
    assert not time_case(torch, dev, case, 1)["verified"]


def test_worker_writes_records_on_the_cpu(tmp_path: Path) -> None:
    from rooflib.bench.compute_worker import main

    out = tmp_path / "c.jsonl"
    main(["--part", "memory", "--device", "cpu", "--quick", "--limit", "2", "--no-kernels", "--out", str(out)])
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["record"] for r in recs] == ["meta", "point", "point", "meta"]
    assert recs[1]["op"] == "copy" and recs[1]["grid"] == "main" and recs[1]["verified"]
    assert recs[-1]["phase"] == "end" and recs[-1]["points"] == 2


def test_short_rows_grid_measures_every_rowwise_op_below_1024_columns(tmp_path: Path) -> None:
    from rooflib.bench.compute_grids import ROWWISE, SHORT_ROWS, short_row_points
    from rooflib.bench.compute_worker import main

    points = short_row_points()
    assert {(op, c) for op, _, _, c, _ in points} == {(op, c) for op in ROWWISE for c in SHORT_ROWS}
    assert max(SHORT_ROWS) < 1024 and all(mode == "cold" and dt == "bf16" for _, mode, _, _, dt in points)
    assert set(short_row_points(quick=True)) < set(points)
    out = tmp_path / "s.jsonl"
    main(["--part", "memory", "--grid", "short_rows", "--device", "cpu", "--quick", "--limit", "2", "--no-kernels",
          "--out", str(out)])
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    got = [r for r in recs if r["record"] == "point"]
    assert len(got) == 2 and all(r["grid"] == "short_rows" and r["verified"] for r in got)
    assert got[0]["op"] == ROWWISE[0] and got[0]["cols"] == short_row_points(quick=True)[0][3] < 1024


def test_kernels_grid_is_what_the_committed_run_measured() -> None:
    from rooflib.bench.compute_grids import kernel_points

    # x1-kernels measured the grid's first 17 ops, x1-kernels-2 (OPS=cast,strided_copy,sum_dim0) the next three,
    # x1-kernels-3 and -4 (OPS=...) the one-group points of casts, strided copies and transposes, repeating the
    # cold points of their ops (x1-kernels-3 with graphs of 8-13 calls, x1-kernels-4 of 256 and more), x1-kernels-6
    # (OPS=sum_dim0) the column sums of every row length, x1-bcast (OPS=bcast_*) the broadcast operands
    grid = kernel_points()
    seen = set()

    def op(r: dict[str, Any]) -> str:  # the grid names column sums of other row lengths sum_dim0@cols
        return f"sum_dim0@{r['cols']}" if r["op"] == "sum_dim0" and r["cols"] != 1024 else str(r["op"])

    for run in ("x1-kernels", "x1-kernels-2", "x1-kernels-3", "x1-kernels-4", "x1-kernels-6", "x1-bcast"):
        recs = [r for r in read_jsonl(RUNS / run / "raw" / "compute.jsonl").records if r.get("record") == "point"]
        keys = [(op(r), r["mode"], r["tensor_bytes"], r["dtype"]) for r in recs]
        assert keys == [k for k in grid if k in set(keys)], run  # each run in the grid's order, nothing outside it
        assert all(r["verified"] and r["grid"] == "kernels" for r in recs), run
        seen |= set(keys)
    pending = {"cast_to_i8", "cast_from_i8", "scatter_add_rows"}  # on an H100 only: docs/validation/h100/runs/x1-gaps
    assert seen == {k for k in grid if k[0] not in pending}
    recs4 = read_jsonl(RUNS / "x1-kernels-4" / "raw" / "compute.jsonl").records
    assert min(r["graph_calls"] for r in recs4 if r.get("record") == "point" and r["mode"] == "hot") >= 256


@pytest.mark.parametrize("op", ["copy", "add", "sum", "fill", "index_select", "gather", "index_add", "scatter_add",
                                "index_put", "scatter_add_rows", "sort", "sort_rows", "transpose", "strided", "cumsum", "rfft", "fft",
                                "rfft_dim0", "cast", "cast:fp32", "cast_to_i8:fp32", "cast_from_i8:fp32", "strided_copy", "sum_dim0", "sum_dim0@64"])  # fmt: skip
def test_kernel_cases_are_right_on_the_cpu(op: str) -> None:
    from rooflib.bench.compute_worker import time_case
    from rooflib.bench.kernel_cases import kernel_case

    dev = torch.device("cpu")
    op, _, given = op.partition(":")
    dtype = given or {"sort": "fp32", "sort_rows": "fp32", "rfft": "fp32", "rfft_dim0": "fp32", "fft": "complex64"}.get(
        op, "bf16"
    )
    case = kernel_case(torch, dev, op, 1 << 16, dtype)
    rec = time_case(torch, dev, case, 2, quick=True)
    assert rec["verified"], (op, rec["rel_error"])
    assert case.bytes_moved > 0 and case.extra["elements"] > 0


def test_a_wrong_kernel_output_is_not_verified() -> None:
    from rooflib.bench.compute_worker import time_case
    from rooflib.bench.kernel_cases import kernel_case

    dev = torch.device("cpu")
    case = kernel_case(torch, dev, "transpose", 1 << 14, "fp32")
    case.call = lambda g: g[0].contiguous()  # not transposed
    assert not time_case(torch, dev, case, 1)["verified"]
    case = kernel_case(torch, dev, "sort", 1 << 12, "fp32")
    case.call = lambda g: g[0]  # not sorted
    assert not time_case(torch, dev, case, 1)["verified"]
    for op in ("index_add", "scatter_add", "scatter_add_rows"):  # added twice: each position holds twice its sum
        case = kernel_case(torch, dev, op, 1 << 14, "bf16")
        case.call = lambda g, f=case.call: (f(g), f(g))[1]
        assert not time_case(torch, dev, case, 1)["verified"], op
    case = kernel_case(torch, dev, "cast_to_i8", 1 << 12, "fp32")
    case.call = lambda g: g[0].round().to(torch.int8)  # rounded, where a cast truncates
    assert not time_case(torch, dev, case, 1)["verified"]


def test_kernels_grid_measures_every_class_the_model_has_a_curve_for() -> None:
    from rooflib.bench.broadcast_cases import BROADCAST_OPS
    from rooflib.bench.compute_grids import KERNEL_OPS, kernel_points
    from rooflib.compute.kernels import BROADCASTS
    from rooflib.specs.compute_models import KERNEL_OP_KINDS

    conv = {"conv_input", "conv_filter", "conv_output", "conv_depthwise"}  # the conv part's (conv_cases)
    classes = set(KERNEL_OP_KINDS) - {"cast_up", "cast_down"} - BROADCASTS - conv
    casts = {"cast", "cast_to_i8", "cast_from_i8"}  # measure cast_up and cast_down (rooflib.bench.cast_cases)
    pending = {"scatter_add_rows"}  # a class once measured (benchmarks/device/gaps_h200.sh)
    assert set(KERNEL_OPS) == {"copy", "add", "sum", "strided", *casts, *BROADCAST_OPS, *pending} | classes
    assert {op.partition("@")[0] for op, *_ in kernel_points()} == set(KERNEL_OPS)


def test_one_group_memory_points_measured_again_agree() -> None:
    """runs/x1-compute's one-group (``hot``) memory points replayed graphs of 9-15 calls; x1-compute-hot-2
    (``--part memory --modes hot``, at least 256 calls) measured them again, within 4 % median per op (sum 6 %);
    the ``l2_resident`` curves are fitted on the second (rooflib.calibrate.compute.HOT_MIN_CALLS)."""
    from rooflib.bench.compute_grids import memory_points

    def hot(run: str) -> dict[tuple[str, int], dict[str, Any]]:
        recs = read_jsonl(RUNS / run / "raw" / "compute.jsonl").records
        return {(r["op"], r["tensor_bytes"]): r for r in recs if r.get("record") == "point" and r["mode"] == "hot"}

    old, new = hot("x1-compute"), hot("x1-compute-hot-2")
    assert set(new) == {(op, s) for op, mode, s, _, _ in memory_points() if mode == "hot"} == set(old)
    assert all(r["verified"] and r["graph_calls"] >= 256 for r in new.values())
    for op in {op for op, _ in new}:
        ratios = [new[k]["time_s"] / old[k]["time_s"] for k in new if k[0] == op]
        assert abs(statistics.median(ratios) - 1.0) < 0.08, op


def test_ops_and_modes_pick_points(tmp_path: Path) -> None:
    from rooflib.bench.compute_worker import main

    out = tmp_path / "c.jsonl"
    main(["--part", "memory", "--device", "cpu", "--quick", "--modes", "hot", "--ops", "add,copy", "--no-kernels",
          "--out", str(out)])  # fmt: skip
    recs = [r for r in read_jsonl(out).records if r.get("record") == "point"]
    assert recs and {(r["op"], r["mode"]) for r in recs} == {("add", "hot"), ("copy", "hot")}


@pytest.mark.parametrize(
    ("part", "flag", "value", "message"),
    [("kernels", "--ops", "cats", "--ops: unknown 'cats'"), ("memory", "--modes", "hott", "--modes: unknown 'hott'"),
     ("gemm", "--ops", "add", "--ops applies to the kernels and memory parts")],
)  # fmt: skip
def test_a_misspelt_filter_is_a_one_line_error(tmp_path: Path, part: str, flag: str, value: str, message: str) -> None:
    out = tmp_path / "c.jsonl"
    cmd = [sys.executable, "-m", "rooflib.bench.compute_worker", "--part", part, flag, value, "--device", "cpu"]
    got = subprocess.run([*cmd, "--out", str(out)], capture_output=True, text=True, check=False)
    assert got.returncode == 2 and message in got.stderr and len(got.stderr.strip().splitlines()) == 1
    assert not out.exists()
