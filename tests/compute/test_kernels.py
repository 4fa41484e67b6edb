"""The measured op classes (gathers, scatters, sorts, transposes, scans, fills, FFTs): their byte conventions, the
H200's curves against the held-out half of the run they were fitted on, and their use in program costs."""

from __future__ import annotations

import itertools
import statistics
from pathlib import Path

import numpy as np
import pytest

import rooflib
from rooflib.calibrate.compute import compute_rows, fit_split, load_runs
from rooflib.compute.kernels import bench_class, kernel_time, moved_bytes, sort_bytes
from rooflib.program.cost import op_cost
from rooflib.program.ir import Op
from rooflib.specs.compute_models import KERNEL_OP_KINDS

RUNS = [Path(__file__).parents[2] / "docs" / "validation" / "h200" / "runs" / r for r in ("x1-kernels", "x1-kernels-2")]
RUN = RUNS[0]


@pytest.fixture(scope="module")
def h200() -> rooflib.System:
    return rooflib.load_system("hgx-h200", gpus=1)


def test_byte_conventions() -> None:
    assert moved_bytes("gather", 1000.0, index_bytes=80.0) == 2080.0  # output read from the table, written
    assert moved_bytes("scatter_add", 1000.0, index_bytes=80.0) == 3080.0  # source read, destination read and written
    assert moved_bytes("transpose", 12345.0, elements=1000) == 4000.0  # as bf16, whatever the dtype
    assert moved_bytes("strided_copy", 12345.0, elements=1000) == 4000.0  # the same kernel family
    assert moved_bytes("cast_up", 6000.0) == 6000.0  # input and output once
    assert (bench_class("cast", "bf16"), bench_class("cast", "fp32"), bench_class("sort", "fp32")) == (
        "cast_up",
        "cast_down",
        "sort",
    )
    assert moved_bytes("fill", 1000.0) == 1000.0
    assert sort_bytes(1000, 4) == 16000.0  # fp32 keys in, keys and int64 indices out


def test_a_device_without_curves_has_no_time() -> None:
    bare = rooflib.load_system("hgx-h100", gpus=1).device.model_copy(update={"compute": None})
    assert all(kernel_time(bare, k, 1e6) is None for k in KERNEL_OP_KINDS)


def test_a_device_with_carried_curves_times_every_class(h200: rooflib.System) -> None:
    h100 = rooflib.load_system("hgx-h100", gpus=1).device  # the H200's curves at the H100's HBM rate
    for kind in KERNEL_OP_KINDS:
        small, large = kernel_time(h100, kind, 1.0), kernel_time(h100, kind, 1e9)
        assert small is not None and large is not None, kind
        assert small == pytest.approx(kernel_time(h200.device, kind, 1.0), rel=0.05), (
            kind
        )  # launch-bound: about the same
        assert large > kernel_time(h200.device, kind, 1e9), kind  # type: ignore[operator]  # slower HBM


def test_a_class_not_measured_yet_takes_its_stand_ins_curve(h200: rooflib.System) -> None:
    from rooflib.compute.kernels import STAND_IN

    models = h200.device.compute
    assert models is not None and models.memory_ops is not None
    hbm = {k: c for k, c in models.memory_ops.hbm.items() if k not in STAND_IN}  # as a file without them
    ops = models.memory_ops.model_copy(update={"hbm": hbm})
    bare = h200.device.model_copy(update={"compute": models.model_copy(update={"memory_ops": ops})})
    for kind, other in STAND_IN.items():
        assert kernel_time(bare, kind, 1e8) == kernel_time(bare, other, 1e8), kind
        if models.memory_ops.curves(kind):  # the H200's file carries its own (measured on an H100)
            assert kernel_time(h200.device, kind, 1e8) != kernel_time(h200.device, other, 1e8), kind
    assert kernel_time(h200.device, "index_add", 1e8) != kernel_time(h200.device, "scatter_add", 1e8)


def test_h200_curves_never_get_faster_with_bytes(h200: rooflib.System) -> None:
    sizes = np.logspace(0, 10, 60)
    for kind in KERNEL_OP_KINDS:
        times = [kernel_time(h200.device, kind, float(b)) for b in sizes]
        assert all(t is not None and t > 0 for t in times), kind
        assert all(b >= a * (1 - 1e-9) for a, b in itertools.pairwise(times)), kind  # type: ignore[operator]
        # a launch-bound kernel lasts about a microsecond, not nothing (what the streaming estimate gave)
        assert 4e-7 < times[0] < 3e-5, (kind, times[0])  # type: ignore[operator]


@pytest.mark.skipif(not RUN.exists(), reason="the H200 kernels run is not in this checkout")
def test_held_out_points_of_the_kernels_run(h200: rooflib.System) -> None:
    """Every other size of each sweep was fitted; the others are predicted here (runs/x1-kernels, 2026-12-03)."""
    rows = compute_rows(load_runs(RUNS))
    rows = rows.assign(cls=[bench_class(o, d) for o, d in zip(rows["op"], rows["dtype"], strict=True)])
    rows = rows[rows["cls"].isin(KERNEL_OP_KINDS) & ~fit_split(rows) & (rows["cls"] != "sum_dim0")]
    errors = []
    for r in rows.to_dict("records"):
        moved = float(r["bytes_moved"])  # the benchmark counts bytes as the curve does; these two by elements
        if r["cls"] in ("transpose", "strided_copy"):
            moved = moved_bytes(str(r["cls"]), moved, elements=float(r["elements"]))
        got = kernel_time(h200.device, str(r["cls"]), moved)
        assert got is not None
        errors.append(abs(got / float(r["time_s"]) - 1.0))
    assert len(errors) >= 60
    assert statistics.median(errors) < 0.20  # measured: 12.9 % (4x steps between sizes: 16x between fitted ones)
    assert max(errors) < 0.6


def _cost(system: rooflib.System, kind: str, **params: object) -> float:
    return op_cost(system, Op("x", kind, params), (0,)).device_s  # type: ignore[arg-type]


def test_program_ops_take_the_measured_times(h200: rooflib.System) -> None:
    dev = h200.device
    scatter = _cost(h200, "index", bytes=1 << 20, op="scatter_add", index_bytes=1 << 21)
    assert scatter == pytest.approx(kernel_time(dev, "scatter_add", 3 * (1 << 20) + (1 << 21)))
    plain = _cost(h200, "index", bytes=1 << 20)  # no class: the streaming estimate stays
    assert plain < scatter
    rows = _cost(h200, "sort", elements=4096 * 64, dtype="fp32", cols=64)
    assert rows == pytest.approx(kernel_time(dev, "sort_rows", sort_bytes(4096 * 64, 4)))
    flat = _cost(h200, "sort", elements=1 << 20, dtype="fp32")  # one row of 2**20: CUB's radix sort
    assert flat == pytest.approx(kernel_time(dev, "sort", sort_bytes(1 << 20, 4)))
    tiny = _cost(h200, "sort", elements=16, dtype="fp64", cols=16)
    assert tiny > 1e-6  # a sort is a few kernels, never free
    t = _cost(h200, "copy", bytes=1 << 26, layout="transpose", elements=1 << 25)
    assert t == pytest.approx(kernel_time(dev, "transpose", 4.0 * (1 << 25)))
    assert t > _cost(h200, "copy", bytes=1 << 26)  # a bf16 transpose is slower than a copy of its bytes
    up = _cost(h200, "copy", bytes=3 << 20, layout="cast_up")  # bf16 to fp32 of 2**20 elements
    assert up == pytest.approx(kernel_time(dev, "cast_up", 6.0 * (1 << 20)))
    assert up > _cost(h200, "copy", bytes=3 << 20, layout="cast_down") > 0  # widening: half the rate (measured)
    sliced = _cost(h200, "copy", bytes=1 << 21, layout="strided_copy", elements=1 << 20)
    assert sliced == pytest.approx(kernel_time(dev, "strided_copy", 4.0 * (1 << 20)))
    fill = _cost(h200, "elementwise", reads=0, writes=1, elements=1 << 20, dtype="bf16", curve="fill",
                 curve_bytes=float(1 << 21))  # fmt: skip
    assert fill == pytest.approx(kernel_time(dev, "fill", float(1 << 21)))


def test_unknown_curve_is_refused(h200: rooflib.System) -> None:
    with pytest.raises(rooflib.RooflibError, match="unknown curve 'fil'"):
        _cost(h200, "elementwise", reads=0, writes=1, elements=8, dtype="bf16", curve="fil", curve_bytes=16.0)
