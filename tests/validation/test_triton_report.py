"""The program floor's slot time (``compute.programs``) is what tools/triton_report.py fits on the committed PKB
lease runs, its report is current, and the held-out problem-20 points stay where the report says."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from rooflib.specs import default_catalog

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tool() -> Any:
    spec = importlib.util.spec_from_file_location("triton_report", ROOT / "tools" / "triton_report.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_catalog_holds_the_fit(tool: Any) -> None:
    dev = default_catalog().device("h200-sxm")
    assert dev.compute is not None and dev.compute.programs is not None
    slot, n = tool.fit_pkb(int(dev.sms.value), dev.compute.programs.slots(4))
    assert n == 3
    assert dev.compute.programs.time.value == pytest.approx(slot, rel=1e-3)  # the file holds four digits
    assert all(lease in dev.compute.programs.time.source for lease in tool.PKB_FIT)


def test_held_out_points_are_predicted_by_the_floor(tool: Any) -> None:
    dev = default_catalog().device("h200-sxm")
    assert dev.compute is not None and dev.compute.programs is not None
    spec, sms = dev.compute.programs, int(dev.sms.value)
    held = [p for p in tool.pkb_points() if not p["fit"]]
    assert len(held) >= 10
    big = [p for p in held if p["time_s"] > 1e-4]  # the floor alone; smaller parts add a few us of fixed time
    for p in big:
        floor = p["programs"] / (sms * spec.slots(4)) * spec.time.value
        assert floor == pytest.approx(p["time_s"], rel=0.06), p


def test_report_is_current(tool: Any) -> None:
    assert tool.OUT.read_text() == tool.report(), "run: python tools/triton_report.py"
