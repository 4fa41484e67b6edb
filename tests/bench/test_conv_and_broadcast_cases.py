"""The ``conv`` part and the broadcast cases of the ``kernels`` part, run on the CPU (checks and byte counts)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from rooflib.bench.broadcast_cases import BROADCAST_OPS, broadcast_case  # noqa: E402
from rooflib.bench.compute_worker import main, time_case  # noqa: E402
from rooflib.bench.conv_cases import ConvShape, conv_case, conv_shapes  # noqa: E402

RUNS = Path(__file__).parents[2] / "docs/validation/h200/runs"


@pytest.mark.parametrize("op", BROADCAST_OPS)
@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_broadcast_cases_are_right_on_the_cpu(op: str, dtype: str) -> None:
    dt, size = (torch.bfloat16, 2) if dtype == "bf16" else (torch.float32, 4)
    n = 1 << 14
    case = broadcast_case(torch, torch.device("cpu"), op, dt, size, n)
    rec = time_case(torch, torch.device("cpu"), case, 2, quick=True)
    assert rec["verified"], (op, dtype, rec["rel_error"])
    other = {"bcast_col": n // 1024 * size, "bcast_row": 1024 * size, "bcast_scalar": size, "bcast_cast": 4}[op]
    assert case.bytes_moved == 2 * n * size + other


def test_a_wrong_broadcast_output_is_not_verified() -> None:
    case = broadcast_case(torch, torch.device("cpu"), "bcast_col", torch.float32, 4, 1 << 12)
    g = case.make(0)
    assert case.check(g, case.call(g)) < 1e-6
    assert case.check(g, g[0] * 2.5) > 0.01  # a scalar in place of the column


@pytest.mark.parametrize(
    "shape",
    [
        ConvShape(1, 16, 24, (12, 12), (3, 3)),
        ConvShape(2, 8, 8, (4, 6, 6), (3, 3, 3)),
        ConvShape(1, 32, 32, (64,), (7,), depthwise=True),
        ConvShape(1, 16, 32, (8, 8), (1, 1)),
        ConvShape(1, 16, 16, (8, 8), (3, 3), channels_last=True),
    ],
)
def test_conv_cases_are_right_on_the_cpu(shape: ConvShape) -> None:
    case = conv_case(torch, torch.device("cpu"), shape, "fp32")
    rec = time_case(torch, torch.device("cpu"), case, 2, quick=True)
    assert rec["verified"], (shape, rec["rel_error"])
    g, m, n, k = shape.gemm()
    assert case.flops == 2.0 * g * m * n * k and m == shape.n * math.prod(shape.spatial)
    weight = shape.k * (shape.c // shape.groups) * math.prod(shape.kernel)
    assert case.bytes_moved == 4.0 * (shape.n * (shape.c + shape.k) * math.prod(shape.spatial) + weight)
    bad = case.make(0)
    assert case.check(bad, case.call(bad) + 1.0) > 0.01  # a shifted output fails the check


def test_conv_grids_hold_their_families() -> None:
    main_grid, hold = conv_shapes(), conv_shapes("holdout")
    assert len(main_grid) == len(set(main_grid)) and not set(main_grid) & set(hold)
    assert {s.dims for s in main_grid} == {1, 2, 3} and any(s.depthwise for s in hold)
    assert any(s.channels_last for s in main_grid) and any(s.kernel == (1, 1) for s in main_grid)
    assert all(s.k % s.groups == 0 and s.c % s.groups == 0 for s in main_grid + hold)


def test_conv_part_runs_on_the_cpu(tmp_path: Path) -> None:
    out = tmp_path / "conv.jsonl"
    main(["--part", "conv", "--device", "cpu", "--quick", "--limit", "2", "--no-kernels", "--out", str(out)])
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    points = [r for r in recs if r["record"] == "point"]
    assert len(points) == 2 and all(r["verified"] for r in points)
    assert {"gemm_m", "gemm_n", "gemm_k", "spatial", "kernel", "channels_last"} <= set(points[0])
    assert points[0]["profile"] is None  # CUPTI only on a GPU


def test_committed_conv_run_is_the_grid() -> None:
    """runs/x1-conv measured the main and holdout grids in order, every output checked, every call's kernels
    timed by CUPTI."""
    for name, grid in (("compute.jsonl", conv_shapes()), ("compute-holdout.jsonl", conv_shapes("holdout"))):
        recs = [json.loads(line) for line in (RUNS / "x1-conv/raw" / name).read_text().splitlines()]
        points = [r for r in recs if r["record"] == "point"]
        assert [(r["n"], r["c"], r["k"], tuple(r["spatial"])) for r in points] == [
            (s.n, s.c, s.k, s.spatial) for s in grid
        ]
        assert all(r["verified"] and r["profile"] for r in points)
