"""HierarchicalRooflineDisplay and CommRooflineDisplay: data match rooflib.roof, lines and points drawn."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.axes import Axes

import rooflib
from rooflib.plot import CommRooflineDisplay, HierarchicalRooflineDisplay, Kernel, example_kernels, file_axes
from rooflib.roof import roofline
from rooflib.specs import System

from .conftest import legend_texts

GEMM = Kernel("gemm", 1.1e12, 4e8, {"nvlink": 2e8})


def test_hierarchical_roofs_match_model(h100: System, ax: Axes) -> None:
    disp = HierarchicalRooflineDisplay.from_system(h100, ax=ax)
    r = rooflib.roofs(h100, "bf16")
    assert disp.ax_ is ax and disp.figure_ is ax.figure
    assert set(disp.roof_lines_) == {"l2", "hbm", "nvlink"}
    x = np.asarray(disp.roof_lines_["hbm"].get_xdata(), dtype=float)
    np.testing.assert_allclose(disp.roof_lines_["hbm"].get_ydata(), np.minimum(r.compute, r.hbm * x))
    np.testing.assert_allclose(disp.roof_lines_["nvlink"].get_ydata(), np.minimum(r.compute, r.links["nvlink"] * x))
    for level in ("l2", "hbm", "nvlink"):
        assert disp.ridge_points[level] == pytest.approx(r.ridge(level))
    assert disp.compute_lines_["bf16"].get_ydata()[0] == pytest.approx(r.compute)
    assert disp.compute_peaks["fp8"] == pytest.approx(rooflib.roofs(h100, "fp8").compute)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert not disp.achievable_lines_


def test_hierarchical_has_ib_roof_and_dashed_achievable(superpod: System, ax: Axes) -> None:
    disp = HierarchicalRooflineDisplay.from_system(superpod, achievable=True, ax=ax)
    assert "ib" in disp.roof_lines_
    ach = rooflib.roofs(superpod, "bf16", achievable=True)
    line = disp.achievable_lines_["hbm"]
    assert line.get_linestyle() == "--"
    x = np.asarray(line.get_xdata(), dtype=float)
    np.testing.assert_allclose(line.get_ydata(), np.minimum(ach.compute, ach.hbm * x))


def test_hierarchical_kernels_sit_at_their_bound(h100: System, ax: Axes) -> None:
    disp = HierarchicalRooflineDisplay.from_system(h100, kernels=[GEMM], ax=ax)
    line = roofline(h100, flops=GEMM.flops, hbm_bytes=GEMM.hbm_bytes, net_bytes=GEMM.net_bytes)
    k = disp.kernel_lines_["gemm"]
    np.testing.assert_allclose(k.get_xdata(), [line.intensity_hbm, line.intensity_net["nvlink"]])
    np.testing.assert_allclose(k.get_ydata(), [line.attainable_flops] * 2)
    labels = legend_texts(ax)
    assert any(t.startswith("gemm: compute-bound") for t in labels)  # kernels are named in the legend
    assert {"kernel at its HBM intensity", "kernel at its NVLink intensity"} <= set(labels)


def test_hierarchical_dtypes_can_be_chosen(h100: System, ax: Axes) -> None:
    disp = HierarchicalRooflineDisplay.from_system(h100, dtype="fp8", dtypes=["fp8", "bf16"], ax=ax)
    assert set(disp.compute_peaks) == {"fp8", "bf16"}
    assert disp.roofs.compute == pytest.approx(rooflib.roofs(h100, "fp8").compute)
    with pytest.raises(rooflib.RooflibError):
        HierarchicalRooflineDisplay.from_system(rooflib.load_system("hgx-a100"), dtypes=["fp4"], ax=file_axes())


def test_comm_roofline_points_match_model(h100: System, ax: Axes) -> None:
    kernels = [GEMM, ("memcpy", 0.0, 1e9, {"nvlink": 0.0}), ("ar", 4e9, 2e9, {"nvlink": 1e9})]
    disp = CommRooflineDisplay.from_system(h100, kernels, ax=ax)
    assert [p.name for p in disp.points] == ["gemm", "ar"]
    assert disp.skipped == ["memcpy"]
    for i, (name, flops, hbm, net) in enumerate([GEMM, kernels[2]]):
        line = roofline(h100, flops=flops, hbm_bytes=hbm, net_bytes=net)
        point = disp.point_lines_[name]
        assert point.get_xdata()[0] == pytest.approx(line.intensity_net["nvlink"])
        assert point.get_ydata()[0] == pytest.approx(line.attainable_flops)
        assert disp.points[i].limiter == line.limiter
    r = rooflib.roofs(h100)
    x = np.asarray(disp.roof_lines_["nvlink"].get_xdata(), dtype=float)
    np.testing.assert_allclose(disp.roof_lines_["nvlink"].get_ydata(), np.minimum(r.compute, r.links["nvlink"] * x))
    assert disp.compute_line_.get_ydata()[0] == pytest.approx(r.compute)
    labels = legend_texts(ax)
    assert any(t.startswith("gemm: on NVLink, compute-bound") for t in labels)
    assert any(t.startswith("ar: on NVLink, nvlink-bound") for t in labels)
    assert "not drawn (no network bytes): memcpy" in labels
    assert len({disp.point_lines_[n].get_marker() for n in ("gemm", "ar")}) == 2  # one marker shape per kernel


def test_comm_roofline_places_ib_kernels_on_the_ib_roof(superpod: System, ax: Axes) -> None:
    disp = CommRooflineDisplay.from_system(superpod, ax=ax)  # example kernels
    assert {p.name for p in disp.points} == {k.name for k in example_kernels(superpod)}
    assert {p.link for p in disp.points} == {"nvlink", "ib"}
    assert set(disp.roof_lines_) == {"nvlink", "ib"}


@pytest.mark.parametrize("cls", [HierarchicalRooflineDisplay, CommRooflineDisplay])
def test_savefig_and_own_figure(cls: type[HierarchicalRooflineDisplay], h100: System, tmp_path: Path) -> None:
    before = len(plt.get_fignums())
    disp = cls.from_system(h100)
    assert len(plt.get_fignums()) == before + 1
    assert disp.figure_ is not None and disp.ax_ in disp.figure_.axes
    out = disp.savefig(tmp_path / "sub" / "plot.png")
    assert out.stat().st_size > 1000
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_savefig_before_plot_stays_out_of_pyplot(h100: System, tmp_path: Path) -> None:
    disp = HierarchicalRooflineDisplay(rooflib.roofs(h100))
    before = plt.get_fignums()
    disp.savefig(tmp_path / "r.svg")
    assert plt.get_fignums() == before
    assert (tmp_path / "r.svg").read_text().lstrip().startswith("<?xml")
    assert disp.ax_ is not None


def test_example_kernels_are_valid(h100: System, superpod: System) -> None:
    assert all(k.flops > 0 and k.hbm_bytes > 0 for k in example_kernels(h100))
    assert not any("ib" in k.net_bytes for k in example_kernels(h100))
    assert any("ib" in k.net_bytes for k in example_kernels(superpod))
