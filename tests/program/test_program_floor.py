"""A kernel of many small programs (a Triton grid) is no faster than its program floor: programs over the SMs'
resident slots, times how long each holds its slot; without ``programs`` or a device figure nothing changes."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from pydantic import ValidationError

import rooflib
from rooflib.program.cost import op_cost
from rooflib.program.ir import Op, ProgramError
from rooflib.specs.compute_models import ProgramSlotsSpec, program_floor

SLOT = {"time": {"value": "1.3 us", "source": "assumption: test"}, "blocks_per_sm": 32, "warps_per_sm": 64}


def _with_slots(system: rooflib.System, spec: ProgramSlotsSpec | None) -> rooflib.System:
    dev = system.device
    assert dev.compute is not None
    compute = dev.compute.model_copy(update={"programs": spec})
    return dataclasses.replace(system, device=dev.model_copy(update={"compute": compute}))


@pytest.fixture(scope="module")
def h200() -> rooflib.System:
    spec = ProgramSlotsSpec.model_validate({**SLOT, "source": "assumption: test"})
    return _with_slots(rooflib.load_system("hgx-h200", gpus=1), spec)


def _time(system: rooflib.System, params: dict[str, Any]) -> float:
    return op_cost(system, Op("triton.k", "elementwise", params), (0,)).device_s


BASE = {"reads": 1, "writes": 1, "elements": 2**28, "dtype": "bf16"}


def test_slots_follow_the_residency_limits() -> None:
    spec = ProgramSlotsSpec.model_validate({**SLOT, "source": "s"})
    assert [spec.slots(w) for w in (1, 2, 4, 8, 32, 128)] == [32, 32, 16, 8, 2, 1]


def test_small_programs_are_floored_and_large_ones_stream(h200: rooflib.System) -> None:
    stream = _time(h200, BASE)
    tiny = _time(h200, {**BASE, "programs": 2**28 // 128, "warps": 4})
    floor = program_floor(h200.device.compute.programs, 132, 2**28 // 128, 4)  # type: ignore[union-attr]
    assert floor == pytest.approx(2**21 / (132 * 16) * 1.3e-6)
    assert tiny == pytest.approx(floor) and tiny > stream  # 2M programs of 128 elements: the floor binds
    assert _time(h200, {**BASE, "programs": 2**28 // 8192, "warps": 4}) == pytest.approx(stream)  # big blocks
    assert _time(h200, {**BASE, "programs": 2**21}) == pytest.approx(tiny)  # Triton's default: 4 warps
    # fewer warps per program: more resident at once, a lower floor
    assert _time(h200, {**BASE, "programs": 2**21, "warps": 1}) < tiny


def test_no_figure_or_no_grid_changes_nothing(h200: rooflib.System) -> None:
    bare = _with_slots(h200, None)
    assert _time(bare, {**BASE, "programs": 2**21}) == pytest.approx(_time(h200, BASE))


@pytest.mark.parametrize(("params", "named"), [({"programs": -1}, "programs"), ({"programs": 8, "warps": 0}, "warps")])
def test_bad_grid_is_named(h200: rooflib.System, params: dict[str, Any], named: str) -> None:
    with pytest.raises(ProgramError, match=named):
        _time(h200, {**BASE, **params})


@pytest.mark.parametrize("field", ["blocks_per_sm", "warps_per_sm"])
def test_residency_limits_are_whole_and_positive(field: str) -> None:
    with pytest.raises(ValidationError, match=field):
        ProgramSlotsSpec.model_validate({**SLOT, field: 0, "source": "s"})
