"""Collective bus bandwidth of one system on several GPU groups, one panel each: the NVLink domain and a
multi-node group of a cluster, each against its own link peak (NVLink inside a domain, the NICs across).

>>> from rooflib.plot import file_axes
>>> from rooflib.specs import load_system
>>> pod = load_system("dgx-h100-superpod")
>>> d = CollectiveGroupsDisplay.from_system(pod, "all_reduce", [8, 64], ax=file_axes((7.0, 8.6)))
>>> [p.peak_links["ring"] for p in d.panels]
['nvlink', 'ib']
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy.typing as npt

from rooflib.collectives.model import Launch
from rooflib.plot._base import DEFAULT_FIGSIZE, Display, NothingToPlotError
from rooflib.plot.collective import CollectiveBandwidthDisplay
from rooflib.specs.resolve import System

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["PANEL_HEIGHT", "CollectiveGroupsDisplay"]

PANEL_HEIGHT = 4.3  # inches per panel of a figure this display makes


class CollectiveGroupsDisplay(Display):
    """Panels of :class:`CollectiveBandwidthDisplay` stacked in one figure, one per GPU group.

    Attributes: ``panels`` (one display per group), ``gpus`` (group sizes). After :meth:`plot`: ``axes_`` (one
    Axes per panel); ``ax_`` is the first.
    """

    def __init__(self, panels: Sequence[CollectiveBandwidthDisplay]) -> None:
        if not panels:
            raise NothingToPlotError("a collective groups plot needs at least one group")
        self.panels = list(panels)
        self.gpus = [max(p.gpus.values(), default=0) for p in self.panels]
        self.figsize = (DEFAULT_FIGSIZE[0], PANEL_HEIGHT * len(self.panels))
        self.axes_: list[Axes] = []

    @classmethod
    def from_system(
        cls,
        system: System,
        op: str,
        groups: Iterable[int],
        *,
        sizes: npt.ArrayLike | None = None,
        launch: Launch = "stream",
        ax: Axes | Sequence[Axes] | None = None,
    ) -> CollectiveGroupsDisplay:
        """One panel per group size in ``groups`` (the first n GPUs), every applicable algorithm in each."""
        panels = [CollectiveBandwidthDisplay.compute(system, op, n, sizes=sizes, launch=launch) for n in groups]
        return cls(panels).plot(ax=ax)

    def plot(self, ax: Axes | Sequence[Axes] | None = None) -> CollectiveGroupsDisplay:
        """Draw every panel; ``ax``: one Axes per panel, or one Axes that is split into a column of panels."""
        axes = self._panel_axes(ax)
        for panel, one in zip(self.panels, axes, strict=True):
            panel.plot(ax=one)
        self.axes_ = axes
        self.ax_ = axes[0]
        self.figure_ = axes[0].get_figure(root=True)
        return self

    def _panel_axes(self, ax: Axes | Sequence[Axes] | None) -> list[Axes]:
        n = len(self.panels)
        if ax is None:
            import matplotlib.pyplot as plt

            fig = plt.figure(figsize=self.figsize, layout="constrained")
            return list(fig.subplots(n, 1, squeeze=False)[:, 0])
        if isinstance(ax, Sequence):
            if len(ax) != n:
                raise NothingToPlotError(f"{n} panels need {n} axes, got {len(ax)}")
            return list(ax)
        if n == 1:
            return [ax]
        spec = ax.get_subplotspec()
        if spec is None:
            raise NothingToPlotError("an Axes to split into panels must be a subplot (fig.add_subplot)")
        parent = ax.get_figure(root=False)
        assert parent is not None
        ax.remove()
        grid = spec.subgridspec(n, 1, hspace=0.38)
        return [parent.add_subplot(grid[i]) for i in range(n)]
