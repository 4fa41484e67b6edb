"""Reads left in L2 by an earlier op (``l2_warm``, ``l2_reuse``): faster by the device's measured L2 curve where
they still fit, never below the op's ideal time, and no change where nothing was measured."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import pytest

import rooflib
from rooflib.compute.memory import l2_ratio
from rooflib.program.cost import op_cost
from rooflib.program.ir import Op


@pytest.fixture(scope="module")
def h200() -> rooflib.System:
    return rooflib.load_system("hgx-h200", gpus=1)


def _time(system: rooflib.System, kind: str, params: dict[str, Any]) -> float:
    return op_cost(system, Op("op", kind, params), (0,)).device_s  # type: ignore[arg-type]


OPS = [
    ("copy", {"bytes": 2.0 * 2**20}, "copy"),
    ("copy", {"bytes": 2.0 * 2**20, "layout": "transpose", "elements": 2**20}, "transpose"),
    ("copy", {"bytes": 2.0 * 2**20, "layout": "cast_up", "elements": 2**20}, "cast_up"),
    ("elementwise", {"op": "add", "elements": 2**20}, "add"),
    ("elementwise", {"reads": 1, "writes": 1, "elements": 2**20}, "add"),  # no curve of its own: add's
    ("norm", {"op": "rmsnorm", "rows": 1024, "cols": 1024}, "rmsnorm"),
    ("reduction", {"elements": 2**20, "outputs": 1024}, "sum"),
]


@pytest.mark.parametrize(("kind", "params", "curve"), OPS)
def test_warm_reads_scale_the_time_by_the_measured_curve(
    h200: rooflib.System, kind: str, params: dict[str, Any], curve: str
) -> None:
    cold = op_cost(h200, Op("op", kind, params), (0,))  # type: ignore[arg-type]
    ratio = l2_ratio(h200.device, curve, cold.hbm_bytes)
    assert ratio is not None and ratio < 1.0
    half = _time(h200, kind, {**params, "l2_warm": 0.5})
    full = _time(h200, kind, {**params, "l2_warm": 1.0})
    floor = max(cold.ideal_compute_s, cold.ideal_memory_s)
    assert full == pytest.approx(max(floor, cold.device_s * ratio), rel=1e-9)
    assert half == pytest.approx(max(floor, cold.device_s * (1 - 0.5 * (1 - ratio))), rel=1e-9)
    assert floor <= full <= half < cold.device_s


def test_no_gain_once_the_bytes_in_between_have_evicted_them(h200: rooflib.System) -> None:
    params = {"op": "add", "elements": 2**20}
    l2 = h200.device.l2_size.value
    cold = _time(h200, "elementwise", params)
    assert _time(h200, "elementwise", {**params, "l2_warm": 1.0, "l2_reuse": l2 / 2}) < cold
    assert _time(h200, "elementwise", {**params, "l2_warm": 1.0, "l2_reuse": l2}) == cold


def test_devices_without_l2_curves_and_unmeasured_classes_are_unchanged(h200: rooflib.System) -> None:
    h100 = rooflib.load_system("hgx-h100", gpus=1)
    bare = dataclasses.replace(h100, device=h100.device.model_copy(update={"compute": None}))  # no curves at all
    params = {"op": "add", "elements": 2**20}
    assert _time(bare, "elementwise", {**params, "l2_warm": 1.0}) == _time(bare, "elementwise", params)
    assert _time(h100, "elementwise", {**params, "l2_warm": 1.0}) < _time(h100, "elementwise", params)  # carried
    fft = {"elements": 2**20, "curve": "fft", "curve_bytes": 2.0**23}  # an FFT: no L2 curve measured
    assert _time(h200, "elementwise", {**fft, "l2_warm": 1.0}) == _time(h200, "elementwise", fft)
    gather = {"bytes": 2.0**20, "op": "index_select", "index_bytes": 8192.0}
    assert _time(h200, "index", {**gather, "l2_warm": 1.0}) == _time(h200, "index", gather)


def test_time_stays_non_decreasing_in_bytes_when_warm(h200: rooflib.System) -> None:
    sizes = [2**k for k in range(4, 26)]
    times = [_time(h200, "elementwise", {"op": "add", "elements": n, "l2_warm": 0.667}) for n in sizes]
    assert all(b >= a * 0.999 for a, b in itertools.pairwise(times)), times


def test_writes_into_a_reused_block_count_while_one_call_fits(h200: rooflib.System) -> None:
    params = {"op": "add", "elements": 2**20}
    l2 = h200.device.l2_size.value
    cold = _time(h200, "elementwise", params)
    reads = _time(h200, "elementwise", {**params, "l2_warm": 2 / 3})
    both = _time(h200, "elementwise", {**params, "l2_warm": 2 / 3, "l2_warm_out": 1 / 3, "l2_reuse_out": l2 / 2})
    assert both == pytest.approx(_time(h200, "elementwise", {**params, "l2_warm": 1.0}), rel=1e-9)
    assert both < reads < cold
    big = {**params, "l2_warm": 2 / 3, "l2_warm_out": 1 / 3, "l2_reuse_out": 2 * l2}  # one call evicts them
    assert _time(h200, "elementwise", big) == reads
