"""Shared pieces of the Display objects: axes creation, saving and axis formatting.

Displays follow scikit-learn's pattern: the object stores computed data, ``plot(ax=None)`` imports matplotlib
inside the method, creates a figure only when no ``ax`` is given and returns ``self``.

Figures that are only written to files are made with :func:`file_axes`: a plain ``matplotlib.figure.Figure`` on
the Agg canvas, outside pyplot, so nothing is left open and no GUI backend is touched.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rooflib.errors import RooflibError
from rooflib.units import format_bytes

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.legend import Legend

__all__ = [
    "DEFAULT_FIGSIZE",
    "Display",
    "NothingToPlotError",
    "byte_ticks",
    "eng_axis",
    "file_axes",
    "finite",
    "legend_outside",
    "new_axes",
    "note_handle",
    "number_axis",
    "time_axis",
    "time_unit",
]

DEFAULT_FIGSIZE = (7.0, 4.8)
FILE_MARGINS = {"left": 0.17, "right": 0.97, "bottom": 0.11, "top": 0.93}
TIME_UNITS = (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9))


class NothingToPlotError(RooflibError, ValueError):
    """The asked-for plot would be blank (no mechanism, kernel or prediction to draw); the message says why."""


def file_axes(figsize: tuple[float, float] = DEFAULT_FIGSIZE) -> Axes:
    """Axes on a new Agg-backed figure outside pyplot (for writing files without a GUI)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    fig.subplots_adjust(**FILE_MARGINS)  # fixed margins: a layout engine doubles the drawing time
    FigureCanvasAgg(fig)
    return fig.add_subplot()


def new_axes(figsize: tuple[float, float] = DEFAULT_FIGSIZE) -> Axes:
    """Axes on a new pyplot figure (shown in notebooks; close it with ``plt.close(fig)``)."""
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=figsize, layout="constrained")
    return fig.add_subplot()


def eng_axis(ax: Axes, axis: str, unit: str) -> None:
    """Label ticks of ``axis`` ('x' or 'y') with SI prefixes (``1e12`` -> ``1 T<unit>``); data stays in SI.

    Minor ticks stay unlabelled (log axes would otherwise label them with slow mathtext).
    """
    from matplotlib.ticker import EngFormatter, NullFormatter

    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_formatter(EngFormatter(unit=unit, places=0))
    target.set_minor_formatter(NullFormatter())


def number_axis(ax: Axes, axis: str) -> None:
    """Plain numbers on a log axis (``0.1``, ``10``, ``1,000``), minor ticks unlabelled."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    target.set_minor_formatter(NullFormatter())


def byte_ticks(ax: Axes, lo: float, hi: float, *, axis: str = "x", every: int = 4) -> None:
    """Ticks at powers of two from ``lo`` to ``hi`` (every ``every``-th), labelled ``1 KiB``, ``1 MiB``, ..."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    first, last = math.ceil(math.log2(max(lo, 1.0))), math.floor(math.log2(max(hi, 1.0)))
    ticks = [2.0**e for e in range(first, last + 1) if (e - first) % every == 0]
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(FixedLocator(ticks))
    target.set_minor_locator(NullLocator())
    target.set_major_formatter(FuncFormatter(lambda v, _pos: format_bytes(v).replace(".0 ", " ")))


def time_unit(values: Iterable[float]) -> tuple[str, float]:
    """``(unit, seconds per unit)`` for an axis showing ``values`` (s): the largest unit not above their maximum.

    >>> time_unit([1.3e-4, 1.2e-3])
    ('ms', 0.001)
    """
    top = max(finite(values), default=1.0)
    for unit, scale in TIME_UNITS:
        if top >= scale:
            return unit, scale
    return TIME_UNITS[-1]


def time_axis(ax: Axes, axis: str, values: Iterable[float], label: str = "time") -> str:
    """Times on ``axis`` in one readable unit (``time (ms)``, ticks ``0.2 0.5 1``); the data stay in seconds.

    On a log axis the ticks sit at 1, 2 and 5 per decade, so a range under one decade still gets labels.
    Returns the unit.
    """
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    unit, scale = time_unit(values)
    target = ax.xaxis if axis == "x" else ax.yaxis
    if (ax.get_xscale() if axis == "x" else ax.get_yscale()) == "log":
        target.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        target.set_minor_formatter(NullFormatter())
    target.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v / scale:.3g}"))
    target.set_label_text(f"{label} ({unit})")
    return unit


def note_handle() -> Artist:
    """An invisible legend handle, for a legend line that is only text (a note or a list of names)."""
    from matplotlib.patches import Rectangle

    return Rectangle((0, 0), 0, 0, fill=False, edgecolor="none", visible=False)


def legend_outside(ax: Axes, handles: list[Artist] | None = None, **kwargs: Any) -> Legend:
    """The legend to the right of the axes, so that no entry covers data (``savefig`` keeps it in the image)."""
    options: dict[str, Any] = {"loc": "upper left", "bbox_to_anchor": (1.02, 1.0), "borderaxespad": 0.0}
    options["fontsize"] = 7
    options.update(kwargs)
    if handles is None:
        return ax.legend(**options)
    return ax.legend(handles=handles, **options)


class Display:
    """Base of the plot objects: holds ``ax_`` and ``figure_`` once plotted."""

    ax_: Axes | None = None
    figure_: Figure | None = None
    figsize: tuple[float, float] = DEFAULT_FIGSIZE

    def plot(self, ax: Axes | None = None) -> Display:  # pragma: no cover - overridden
        raise NotImplementedError

    def _axes(self, ax: Axes | None) -> Axes:
        """``ax`` itself, or new pyplot axes when it is None; remembers both."""
        axes = new_axes(self.figsize) if ax is None else ax
        self.ax_ = axes
        self.figure_ = axes.get_figure(root=True)
        return axes

    def savefig(self, path: str | Path, *, dpi: int = 120, **kwargs: Any) -> Path:
        """Write the figure to ``path`` (format from the suffix); plots first, off-screen, when not yet plotted.

        The image is cropped to what is drawn (``bbox_inches="tight"``), legends outside the axes included.
        """
        if self.figure_ is None:
            self.plot(ax=file_axes(self.figsize))
        assert self.figure_ is not None
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        kwargs.setdefault("bbox_inches", "tight")
        self.figure_.savefig(out, dpi=dpi, **kwargs)
        return out


def finite(values: Iterable[float]) -> list[float]:
    """The finite, positive values (for axis limits on log axes)."""
    return [v for v in values if math.isfinite(v) and v > 0]
