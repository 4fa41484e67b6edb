"""Prediction errors against measured tables: signed error against message size, and median error per category.

Both follow the Display pattern of :mod:`rooflib.plot`: the object holds computed errors (percent, signed
``predicted / measured - 1``), ``plot(ax=None)`` draws them and returns itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rooflib.plot._base import Display, NothingToPlotError, byte_ticks, finite, legend_outside

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["ErrorBySizeDisplay", "MedianErrorBarsDisplay"]

_STYLES = ("-", "--", ":", "-.")


@dataclass
class ErrorBySizeDisplay(Display):
    """Signed error (%) against message size, one line per series.

    ``series[label] = (sizes_bytes, errors_pct)``; ``groups[label]`` (optional) picks the colour (one per
    group, e.g. the system) and the line style cycles within a group (e.g. the GPU count).
    """

    series: Mapping[str, tuple[Sequence[float], Sequence[float]]]
    groups: Mapping[str, str] = field(default_factory=dict)
    title: str = ""
    figsize: tuple[float, float] = (8.0, 4.8)

    def plot(self, ax: Axes | None = None) -> ErrorBySizeDisplay:
        if not self.series:
            raise NothingToPlotError("no errors to plot")
        axes = self._axes(ax)
        colours: dict[str, str] = {}
        styles: dict[str, int] = {}
        sizes: list[float] = []
        for label, (xs, ys) in self.series.items():
            group = self.groups.get(label, label)
            colour = colours.setdefault(group, f"C{len(colours) % 10}")
            style = _STYLES[styles.get(group, 0) % len(_STYLES)]
            styles[group] = styles.get(group, 0) + 1
            axes.plot(list(xs), list(ys), style, color=colour, marker=".", ms=3, lw=1.2, label=label)
            sizes += finite(xs)
        axes.axhline(0.0, color="k", lw=0.8)
        axes.set_xscale("log", base=2)
        if sizes:
            byte_ticks(axes, min(sizes), max(sizes))
        axes.set_xlabel("message size (nccl-tests S)")
        axes.set_ylabel("error, predicted / measured - 1 (%)")
        if self.title:
            axes.set_title(self.title)
        axes.grid(True, alpha=0.3)
        legend_outside(axes, fontsize=7)
        return self


@dataclass
class MedianErrorBarsDisplay(Display):
    """Median |error| (%) per category, one bar per series in each category group.

    ``values[series][category]`` is the median absolute error in percent (missing: no bar).
    """

    values: Mapping[str, Mapping[str, float]]
    categories: Sequence[str] = ()
    label: str = "median |error| (%)"
    title: str = ""
    figsize: tuple[float, float] = (9.0, 4.5)

    def plot(self, ax: Axes | None = None) -> MedianErrorBarsDisplay:
        series = list(self.values)
        cats = list(self.categories) or sorted({c for v in self.values.values() for c in v})
        if not series or not cats:
            raise NothingToPlotError("no errors to plot")
        axes = self._axes(ax)
        width = 0.8 / len(series)
        palette: list[Any] = [f"C{j}" for j in range(len(series))]
        if len(series) > 10:  # more series than the default cycle has colours
            from matplotlib import colormaps

            palette = [colormaps["tab20"](j % 20) for j in range(len(series))]
        for j, name in enumerate(series):
            xs = [i + (j - (len(series) - 1) / 2) * width for i, c in enumerate(cats) if c in self.values[name]]
            ys = [float(self.values[name][c]) for c in cats if c in self.values[name]]
            axes.bar(xs, ys, width=width * 0.9, color=palette[j], label=name)
        axes.set_xticks(range(len(cats)), cats, rotation=20, ha="right", fontsize=8)
        axes.set_ylabel(self.label)
        if self.title:
            axes.set_title(self.title)
        axes.grid(True, axis="y", alpha=0.3)
        legend_outside(axes, fontsize=7)
        return self
