"""Plots fit for a design doc: legends name every line style and never cover data, time axes carry units,
curves that exceed the link say why, and plots that would be blank are refused with a one-line error.

Structure only (labels, styles, units, errors): the model's numbers are not asserted here.
"""

from __future__ import annotations

import re
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.figure import Figure

import rooflib
from rooflib.plot import (
    CollectiveBandwidthDisplay,
    CollectiveGroupsDisplay,
    CommRooflineDisplay,
    Display,
    HierarchicalRooflineDisplay,
    MechanismMapDisplay,
    NothingToPlotError,
    WhatIfDisplay,
    WhatIfSweepDisplay,
    file_axes,
)
from rooflib.specs import System

from .conftest import legend_texts

SIZES = 2.0 ** np.arange(10, 31, 5)
NVLS_NOTE = "in-switch reduction: busbw can exceed the link"


def _prediction(system: str, k: object, scale: float = 1.0, gpus: int = 8) -> dict[str, Any]:
    """A what-if record shaped like ``Prediction.as_dict()`` (made-up times: the plots are under test)."""
    return {
        "workload": "gemm_rs",
        "system": system,
        "gpus": gpus,
        "params": {"k": k},
        "bound_time_s": 1.5e-4 * scale,
        "baseline_time_s": 4.0e-4 * scale,
        "best": {"time_s": 2.5e-4 * scale, "schedule": "inter_sm", "mechanism": "tma"},
    }


def _sweep(values: list[object]) -> list[dict[str, Any]]:
    return [_prediction(s, v, scale=(i + 1) * (j + 1)) for i, s in enumerate(["a", "b"]) for j, v in enumerate(values)]


def _legend_outside(ax: Axes) -> bool:
    fig = ax.get_figure(root=True)
    assert isinstance(fig, Figure)
    fig.canvas.draw()
    legend = ax.get_legend()
    assert legend is not None
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    return bool(legend.get_window_extent(renderer).x0 >= ax.get_window_extent(renderer).x1)


# --- collective ---------------------------------------------------------------------------------------------
def test_link_peak_and_nvls_are_explained(h100: System, ax: Axes) -> None:
    CollectiveBandwidthDisplay.from_system(h100, "all_reduce", 8, algorithms=["ring", "nvls"], sizes=SIZES, ax=ax)
    labels = legend_texts(ax)
    assert f"nvls ({NVLS_NOTE})" in labels
    assert any(t.startswith("NVLink link peak") and "per GPU" in t for t in labels)
    assert "8 GPUs, one NVLink domain" in ax.get_title()


def test_coinciding_curves_are_named(ax: Axes) -> None:
    same = np.linspace(1e9, 2e11, SIZES.size)
    CollectiveBandwidthDisplay("all_gather", SIZES, {"ring": same, "tree": same.copy(), "direct": same / 2}).plot(ax)
    assert legend_texts(ax)[:3] == ["ring", "tree (overlaps ring)", "direct"]
    markers = {line.get_marker() for line in ax.get_lines()[:3]}
    assert len(markers) == 3  # a curve hidden under another still shows its own markers


def test_sizes_where_nvls_is_chosen_are_starred(ax: Axes) -> None:
    chosen = ["ring", "ring", "nvls", "nvls", "nvls"]
    disp = CollectiveBandwidthDisplay(
        "all_reduce", SIZES, {"x": np.linspace(1e9, 5e11, SIZES.size)}, chosen={"x": chosen}, peaks={"x": 4.5e11}
    ).plot(ax)
    assert f"NVLS chosen ({NVLS_NOTE})" in legend_texts(ax)
    stars = [line for line in ax.get_lines() if line.get_marker() == "*"]
    assert len(stars) == 1 and len(stars[0].get_xdata()) == chosen.count("nvls")
    assert disp.peak_lines_["x"].get_label() == "link peak 450 GB/s"  # no link class given


def test_not_applicable_algorithms_are_listed(superpod: System, ax: Axes) -> None:
    disp = CollectiveBandwidthDisplay.from_system(superpod, "all_reduce", 64, sizes=SIZES, ax=ax)
    assert disp.not_applicable
    assert f"not applicable here: {', '.join(disp.not_applicable)}" in legend_texts(ax)
    assert "64 GPUs, 8 NVLink domains of 8" in ax.get_title()


def test_no_algorithm_is_one_line(h100: System) -> None:
    with pytest.raises(rooflib.GroupError) as info:
        CollectiveBandwidthDisplay.from_system(h100, "all_reduce", 1, sizes=SIZES, ax=file_axes())
    assert len(str(info.value).splitlines()) == 1 and str(info.value).count("at least two GPUs") == 1


# --- several groups of one cluster -----------------------------------------------------------------------------
def test_groups_display_has_a_panel_per_group(superpod: System) -> None:
    ax = file_axes((7.0, 8.6))
    fig = ax.get_figure(root=True)
    disp = CollectiveGroupsDisplay.from_system(superpod, "all_reduce", [8, 64], sizes=SIZES, ax=ax)
    assert disp.gpus == [8, 64] and len(disp.axes_) == 2
    assert fig is not None and list(fig.axes) == disp.axes_  # the given axes was split into two panels
    titles = [a.get_title() for a in disp.axes_]
    assert "on 8 GPUs, one NVLink domain" in titles[0] and "on 64 GPUs, 8 NVLink domains" in titles[1]
    assert [p.peak_links["ring"] for p in disp.panels] == ["nvlink", "ib"]
    assert any(t.startswith("IB link peak") for t in legend_texts(disp.axes_[1]))


def test_groups_display_takes_a_list_of_axes_or_makes_its_figure(superpod: System) -> None:
    fig = Figure()
    axes = [fig.add_subplot(2, 1, i + 1) for i in range(2)]
    disp = CollectiveGroupsDisplay.from_system(superpod, "all_gather", [8, 16], sizes=SIZES, ax=axes)
    assert disp.axes_ == axes and disp.figure_ is fig
    with pytest.raises(NothingToPlotError):
        CollectiveGroupsDisplay.from_system(superpod, "all_gather", [8, 16], sizes=SIZES, ax=axes[:1])
    before = len(plt.get_fignums())
    CollectiveGroupsDisplay.from_system(superpod, "all_gather", [8], sizes=SIZES)
    assert len(plt.get_fignums()) == before + 1


# --- rooflines and the mechanism map ----------------------------------------------------------------------------
def test_roofline_legend_names_every_style(superpod: System, ax: Axes) -> None:
    HierarchicalRooflineDisplay.from_system(superpod, achievable=True, kernels=[("g", 1e12, 1e9, {"ib": 1e8})], ax=ax)
    labels = legend_texts(ax)
    assert "ridge point (roof meets peak)" in labels and "other dtypes' peaks (labelled)" in labels
    assert any(t.endswith("achievable") for t in labels) and any("compute peak" in t for t in labels)
    assert "kernel at its IB intensity" in labels
    assert not [t for t in ax.texts if "FLOP/B" in t.get_text()]  # ridge values are in the legend, not on the roofs


def test_roofline_refuses_kernels_it_cannot_place(h100: System) -> None:
    with pytest.raises(NothingToPlotError, match="'idle' has no FLOPs"):
        HierarchicalRooflineDisplay.from_system(h100, kernels=[("idle", 0.0, 1e9, {"nvlink": 1e8})], ax=file_axes())
    with pytest.raises(NothingToPlotError, match="no kernel with network bytes"):
        CommRooflineDisplay.from_system(h100, [("local", 1e12, 1e9, {"nvlink": 0.0})], ax=file_axes())


def test_mechanism_map_refuses_a_reduction_the_switch_cannot_do() -> None:
    a100 = rooflib.load_system("hgx-a100")
    with pytest.raises(NothingToPlotError) as info:
        MechanismMapDisplay.from_system(a100, reduction="switch", ax=file_axes())
    text = str(info.value)
    assert len(text.splitlines()) == 1 and "hgx-a100" in text and "in-network reduction" in text


def test_mechanism_map_refuses_an_empty_grid(h100: System) -> None:
    with pytest.raises(NothingToPlotError, match="no mechanism can run"):
        MechanismMapDisplay("hgx-h100", [1024.0], [0], [[""]], [[np.inf]]).plot(file_axes())


# --- what-if -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("scale", [1.0, 1e-3, 1e3], ids=["ms", "us", "s"])
def test_what_if_bars_show_times_with_a_unit(scale: float) -> None:
    disp = WhatIfDisplay.from_predictions([_prediction("a", 1, scale), _prediction("b", 1, 2 * scale)], ax=file_axes())
    assert disp.ax_ is not None
    assert disp.ax_.get_ylabel() == {1.0: "time (us)", 1e-3: "time (ns)", 1e3: "time (ms)"}[scale]
    assert "on 8 GPUs" in disp.ax_.get_title()
    assert legend_texts(disp.ax_) == ["bound (no kernel beats it)", "best schedule", "PyTorch + NCCL"]


def test_what_if_refuses_no_predictions() -> None:
    with pytest.raises(NothingToPlotError):
        WhatIfDisplay.from_predictions([], ax=file_axes())
    with pytest.raises(NothingToPlotError):
        WhatIfSweepDisplay.from_predictions([], "k", ax=file_axes())


def test_sweep_axis_is_named_by_the_parameter_with_its_values() -> None:
    disp = WhatIfSweepDisplay.from_predictions(_sweep([1024, 4096, 16384]), "k", ax=file_axes())
    ax = disp.ax_
    assert ax is not None and ax.get_xlabel() == "k" and ax.get_xscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1,024", "4,096", "16,384"]
    assert re.fullmatch(r"time \((us|ms|s)\)", ax.get_ylabel())


def test_sweep_of_text_values_is_categorical() -> None:
    disp = WhatIfSweepDisplay.from_predictions(_sweep(["bf16", "fp8"]), "k", ax=file_axes())
    assert disp.ax_ is not None and not disp.numeric
    assert [t.get_text() for t in disp.ax_.get_xticklabels()] == ["bf16", "fp8"]


def test_sweep_legend_names_every_line_style() -> None:
    disp = WhatIfSweepDisplay.from_predictions(_sweep([1, 2]), "k", ax=file_axes())
    assert disp.ax_ is not None
    legend = disp.ax_.get_legend()
    assert legend is not None
    named = {h.get_linestyle() for h in legend.legend_handles if hasattr(h, "get_linestyle")}
    assert {line.get_linestyle() for line in disp.lines_} <= named
    assert {"a", "b", "bound (no kernel beats it)", "best schedule", "PyTorch + NCCL"} <= set(legend_texts(disp.ax_))


# --- every display: the legend sits beside the axes, never over the data ------------------------------------------
def _displays(h100: System) -> dict[str, Display]:
    return {
        "collective": CollectiveBandwidthDisplay.from_system(h100, "all_reduce", 8, sizes=SIZES, ax=file_axes()),
        "roofline": HierarchicalRooflineDisplay.from_system(h100, ax=file_axes()),
        "comm": CommRooflineDisplay.from_system(h100, ax=file_axes()),
        "mechanism": MechanismMapDisplay.from_system(h100, sizes=SIZES, sms=[1, 8, 132], ax=file_axes()),
        "what-if": WhatIfDisplay.from_predictions([_prediction("a", 1)], ax=file_axes()),
        "sweep": WhatIfSweepDisplay.from_predictions(_sweep([1, 2]), "k", ax=file_axes()),
    }


def test_legends_never_cover_data(h100: System) -> None:
    for name, disp in _displays(h100).items():
        assert disp.ax_ is not None
        assert _legend_outside(disp.ax_), name
