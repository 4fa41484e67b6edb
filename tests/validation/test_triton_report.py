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
    slot, n = tool.fit_pkb(int(dev.sms.value))
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
        floor = p["programs"] / sms * spec.time.value
        assert floor == pytest.approx(p["time_s"], rel=0.06), p


def test_report_is_current(tool: Any) -> None:
    assert tool.OUT.read_text() == tool.report(), "run: python tools/triton_report.py"


def test_the_h100_grid_starts_programs_at_the_h200_fitted_interval(tool: Any) -> None:
    """The H100 run (docs/validation/h100/runs/x1-triton, never fitted): where the floor binds (blocks of at most
    128 elements), 1, 2 and 4 warps per program start at the catalog's interval, fitted on the H200's problem 20."""
    dev = default_catalog().device("h200-sxm")
    assert dev.compute is not None and dev.compute.programs is not None
    meta, rows = tool._points(ROOT / "docs/validation/h100/runs/x1-triton")
    assert meta["device"].startswith("NVIDIA H100") and len(rows) == 288  # every point verified
    small = [r for r in rows if r["block"] <= 128 and r["warps"] <= 4]
    assert len(small) == 3 * 3 * 3 * 3  # sizes, kernels, blocks, warps
    for r in small:
        interval = r["time_s"] / (r["programs"] / meta["sms"])
        assert interval == pytest.approx(dev.compute.programs.time.value, rel=0.05), r  # 79.5-83 ns measured
