"""Plot tests: the Agg backend (no display), systems from the built-in catalog, every figure closed after each test."""

from __future__ import annotations

from collections.abc import Iterator

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
from matplotlib.axes import Axes

import rooflib
from rooflib.specs import System


@pytest.fixture(autouse=True)
def _close_figures() -> Iterator[None]:
    yield
    plt.close("all")


@pytest.fixture
def ax() -> Axes:
    _, axes = plt.subplots()
    return axes


@pytest.fixture(scope="session")
def h100() -> System:
    return rooflib.load_system("hgx-h100")


@pytest.fixture(scope="session")
def superpod() -> System:
    return rooflib.load_system("dgx-h100-superpod")


def legend_texts(ax: Axes) -> list[str]:
    """The texts of the axes' legend (an AssertionError when it has none)."""
    legend = ax.get_legend()
    assert legend is not None, "the plot has no legend"
    return [t.get_text() for t in legend.get_texts()]
