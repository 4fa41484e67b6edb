"""CollectiveBandwidthDisplay and MechanismMapDisplay: data match the collective and transfer models."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.axes import Axes

import rooflib
import rooflib.plot
from rooflib.plot import CollectiveBandwidthDisplay, MechanismMapDisplay, peak_link_bandwidth
from rooflib.specs import System

SIZES = 2.0 ** np.arange(10, 31, 4)


def test_collective_per_algorithm_matches_model(h100: System, ax: Axes) -> None:
    disp = CollectiveBandwidthDisplay.from_system(
        h100, "all_reduce", 8, algorithms=["ring", "nvls"], sizes=SIZES, ax=ax
    )
    for alg in ("ring", "nvls"):
        r = rooflib.predict_collective("all_reduce", h100, nbytes=SIZES, gpus=8, algorithm=alg)
        np.testing.assert_allclose(disp.lines_[alg].get_ydata(), r.busbw)
        np.testing.assert_allclose(disp.lines_[alg].get_xdata(), SIZES)
        np.testing.assert_allclose(disp.time_s[alg], r.time_s)
    peak = disp.peak_lines_["ring"]
    assert peak.get_linestyle() == "--"
    np.testing.assert_allclose(peak.get_ydata(), [h100.nvlink_bandwidth] * 2)
    assert ax.get_xscale() == "log"


def test_collective_default_algorithms_and_reasons(superpod: System, ax: Axes) -> None:
    disp = CollectiveBandwidthDisplay.from_system(superpod, "all_reduce", 64, sizes=SIZES, ax=ax)
    auto = rooflib.predict_collective("all_reduce", superpod, nbytes=SIZES, gpus=64)
    assert set(disp.lines_) == set(auto.candidates)
    assert set(disp.not_applicable) == set(auto.not_applicable)
    best = np.max(np.vstack([line.get_ydata() for line in disp.lines_.values()]), axis=0)
    np.testing.assert_allclose(best, auto.busbw)
    assert peak_link_bandwidth(superpod, 64)[0] == "ib"
    assert peak_link_bandwidth(superpod, 8) == ("nvlink", superpod.nvlink_bandwidth)


def test_collective_several_systems(ax: Axes) -> None:
    names = ["hgx-a100", "hgx-h100", "gb200-nvl72"]
    systems = [rooflib.load_system(n) for n in names]
    disp = CollectiveBandwidthDisplay.from_systems(systems, "all_gather", 8, sizes=SIZES, ax=ax)
    assert list(disp.lines_) == names
    for name, system in zip(names, systems, strict=True):
        r = rooflib.predict_collective("all_gather", system, nbytes=SIZES, gpus=8)
        np.testing.assert_allclose(disp.lines_[name].get_ydata(), r.busbw)
        assert disp.peak_lines_[name].get_ydata()[0] == pytest.approx(system.nvlink_bandwidth)
        assert disp.chosen[name] == r.algorithm


def test_collective_from_prediction(h100: System, ax: Axes) -> None:
    r = rooflib.predict_collective("all_reduce", h100, nbytes=SIZES)
    disp = CollectiveBandwidthDisplay.from_prediction(r, peak=("nvlink", 450e9), ax=ax)
    np.testing.assert_allclose(disp.lines_["auto"].get_ydata(), r.busbw)
    assert set(disp.lines_) == {*r.candidates, "auto"}


def test_collective_no_algorithm_runs(h100: System) -> None:
    with pytest.raises(rooflib.GroupError):
        CollectiveBandwidthDisplay.from_system(h100, "all_reduce", 8, algorithms=["hierarchical"])
    with pytest.raises(rooflib.UnknownNameError):
        CollectiveBandwidthDisplay.from_system(h100, "all_reduce", 8, algorithms=["bogus"])


def test_mechanism_map_matches_best_mechanism(h100: System, ax: Axes) -> None:
    disp = MechanismMapDisplay.from_system(h100, ax=ax)
    sms = int(h100.device.sms)
    assert disp.sizes[0] == 128 and disp.sizes[-1] == 2**30
    np.testing.assert_array_equal(disp.sms, np.arange(1, sms + 1))
    best, t = rooflib.best_mechanism(h100, disp.sizes[None, :], disp.sms[:, None])
    np.testing.assert_array_equal(disp.best, best)
    np.testing.assert_allclose(disp.time_s, t)
    assert disp.best.shape == (sms, disp.sizes.size)
    codes = np.asarray(disp.mesh_.get_array()).reshape(disp.best.shape)
    np.testing.assert_array_equal(np.asarray(disp.mechanisms)[codes], disp.best)
    legend = ax.get_legend()
    assert legend is not None
    assert len(legend.get_texts()) == len(disp.mechanisms) >= 2


def test_mechanism_map_switch_reduction(h100: System, ax: Axes) -> None:
    disp = MechanismMapDisplay.from_system(h100, reduction="switch", sizes=[4096, 2**20], sms=[1, 8], ax=ax)
    assert disp.mechanisms == ["multimem"]
    assert "switch" in ax.get_title()


@pytest.mark.parametrize("kind", ["collective", "mechanism"])
def test_network_displays_savefig_and_own_figure(kind: str, h100: System, tmp_path: Path) -> None:
    before = len(plt.get_fignums())
    if kind == "collective":
        disp: rooflib.plot.Display = CollectiveBandwidthDisplay.from_system(h100, "all_reduce", 8, sizes=SIZES)
    else:
        disp = MechanismMapDisplay.from_system(h100, sizes=SIZES, sms=[1, 16, 132])
    assert len(plt.get_fignums()) == before + 1
    out = disp.savefig(tmp_path / f"{kind}.png")
    assert out.stat().st_size > 1000
