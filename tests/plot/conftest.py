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
