"""A kernel of many small programs (a Triton grid) is no faster than its program floor: programs over the SMs,
times the interval between two program starts on one SM, whatever the warps; without ``programs`` or a device
figure nothing changes."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from pydantic import ValidationError

import rooflib
from rooflib.program.cost import op_cost
from rooflib.program.ir import Op, ProgramError
from rooflib.specs.compute_models import ProgramSlotsSpec, program_floor

SLOT = {"time": {"value": "80 ns", "source": "assumption: test"}}


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


def test_small_programs_are_floored_and_large_ones_stream(h200: rooflib.System) -> None:
    stream = _time(h200, BASE)
    tiny = _time(h200, {**BASE, "programs": 2**28 // 128, "warps": 4})
    floor = program_floor(h200.device.compute.programs, 132, 2**28 // 128)  # type: ignore[union-attr]
    assert floor == pytest.approx(2**21 / 132 * 80e-9)
    assert tiny == pytest.approx(floor) and tiny > stream  # 2M programs of 128 elements: the floor binds
    assert _time(h200, {**BASE, "programs": 2**28 // 8192, "warps": 4}) == pytest.approx(stream)  # big blocks
    assert _time(h200, {**BASE, "programs": 2**21}) == pytest.approx(tiny)  # Triton's default: 4 warps
    # 1, 2 and 4 warps per program start alike (docs/validation/h100/runs/x1-triton)
    assert _time(h200, {**BASE, "programs": 2**21, "warps": 1}) == pytest.approx(tiny)


def test_no_figure_or_no_grid_changes_nothing(h200: rooflib.System) -> None:
    bare = _with_slots(h200, None)
    assert _time(bare, {**BASE, "programs": 2**21}) == pytest.approx(_time(h200, BASE))


@pytest.mark.parametrize(("params", "named"), [({"programs": -1}, "programs"), ({"programs": 8, "warps": 0}, "warps")])
def test_bad_grid_is_named(h200: rooflib.System, params: dict[str, Any], named: str) -> None:
    with pytest.raises(ProgramError, match=named):
        _time(h200, {**BASE, **params})


@pytest.mark.parametrize(("field", "value"), [("time", {"value": "-80 ns", "source": "s"}), ("blocks_per_sm", 32)])
def test_a_bad_or_retired_field_is_named(field: str, value: Any) -> None:
    with pytest.raises(ValidationError, match=field):  # a negative interval; the residency limits retired
        ProgramSlotsSpec.model_validate({**SLOT, field: value, "source": "s"})
