"""The public API of rooflib.plot and rooflib.cli is explicit, its docstring examples hold, and the model layers
never import matplotlib."""

from __future__ import annotations

import doctest
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import rooflib.cli
import rooflib.plot

MODULES = [
    "rooflib.plot",
    "rooflib.plot.kernels",
    "rooflib.plot.roofline",
    "rooflib.plot.comm",
    "rooflib.plot.collective",
    "rooflib.plot.mechanism",
    "rooflib.plot.groups",
    "rooflib.plot.whatif",
    "rooflib.plot._base",
    "rooflib.cli",
]


def test_public_api() -> None:
    assert set(rooflib.plot.__all__) == {
        "CollectiveBandwidthDisplay", "CollectiveGroupsDisplay", "CommPoint", "CommRooflineDisplay", "Display",
        "HierarchicalRooflineDisplay", "Kernel", "KernelPoint", "MechanismMapDisplay", "NothingToPlotError",
        "TimelineDisplay", "WhatIfDisplay", "WhatIfSweepDisplay", "as_kernels", "example_kernels", "file_axes", "new_axes",
        "peak_link_bandwidth", "place_kernels",
    }  # fmt: skip


def test_model_layers_do_not_import_matplotlib() -> None:
    code = (
        "import sys, rooflib\n"
        "s = rooflib.load_system('hgx-h100')\n"
        "rooflib.predict_collective('all_reduce', s, nbytes=[1e6]); rooflib.predict_transfer(s, 1e6)\n"
        "rooflib.roofline(s, flops=1e12, hbm_bytes=1e9); import rooflib.plot\n"
        "assert 'matplotlib' not in sys.modules, 'matplotlib imported by a model layer or by rooflib.plot'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[2])


def test_cli_public_api() -> None:
    assert rooflib.cli.__all__ == ["main"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0
