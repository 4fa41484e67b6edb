"""What-if across systems: bound, best schedule and PyTorch + NCCL baseline of one workload per system, and the
same three times against one swept workload parameter.

Both read the dictionaries of :meth:`rooflib.workloads.Prediction.as_dict` (``bound_time_s``, ``baseline_time_s``,
``best.time_s``, ``params``); times stay in seconds and the axis shows them in one readable unit (us, ms or s).

>>> from rooflib.plot import file_axes
>>> p = {"workload": "w", "system": "s", "gpus": 8, "params": {"k": 1024}, "bound_time_s": 1e-4,
...      "baseline_time_s": 3e-4, "best": {"time_s": 2e-4, "schedule": "inter_sm", "mechanism": "tma"}}
>>> WhatIfDisplay.from_predictions([p], ax=file_axes()).ax_.get_ylabel()
'time (us)'
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rooflib.plot._base import Display, NothingToPlotError, finite, legend_outside, time_axis

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.lines import Line2D

__all__ = ["WhatIfDisplay", "WhatIfSweepDisplay"]

_SERIES = (
    ("bound_time_s", "bound (no kernel beats it)"),
    ("best_time_s", "best schedule"),
    ("baseline_time_s", "PyTorch + NCCL"),
)
_STYLES = {"bound_time_s": ":", "best_time_s": "-", "baseline_time_s": "--"}
LOG_SPAN = 20.0  # a bar chart goes to a log axis when its times span more than this factor


def _gpus_text(predictions: Sequence[Mapping[str, Any]]) -> str:
    counts = sorted({int(p["gpus"]) for p in predictions if "gpus" in p})
    return f" on {counts[0]} GPUs" if len(counts) == 1 else ""


class WhatIfDisplay(Display):
    """Grouped bars per system (bound, best schedule, baseline); above each group the speed-up of the best
    schedule over the baseline and the schedule / mechanism that gets it.

    The time axis is linear unless the times span more than :data:`LOG_SPAN`; ticks are in us, ms or s.
    """

    def __init__(
        self,
        workload: str,
        systems: Sequence[str],
        series: Mapping[str, Sequence[float]],
        labels: Sequence[str],
        *,
        title: str = "",
    ) -> None:
        if not systems:
            raise NothingToPlotError(f"no predictions of {workload or 'the workload'} to plot (no systems given)")
        self.workload = workload
        self.systems = list(systems)
        self.series = {k: list(v) for k, v in series.items()}
        self.labels = list(labels)  # best schedule per system
        self.title = title
        self.bars_: list[Any] = []

    @classmethod
    def from_predictions(cls, predictions: Iterable[Mapping[str, Any]], ax: Axes | None = None) -> WhatIfDisplay:
        preds = list(predictions)
        series = {
            "bound_time_s": [p["bound_time_s"] for p in preds],
            "best_time_s": [p["best"]["time_s"] for p in preds],
            "baseline_time_s": [p["baseline_time_s"] for p in preds],
        }
        labels = [f"{p['best']['schedule']}\n{p['best']['mechanism']}" for p in preds]
        workload = preds[0]["workload"] if preds else ""
        title = f"{workload}{_gpus_text(preds)}: bound, best schedule and PyTorch + NCCL baseline"
        display = cls(workload, [p["system"] for p in preds], series, labels, title=title)
        return display.plot(ax) if ax is not None else display

    def plot(self, ax: Axes | None = None) -> WhatIfDisplay:
        axes = self._axes(ax)
        width = 0.8 / len(_SERIES)
        self.bars_ = []
        for i, (key, label) in enumerate(_SERIES):
            xs = [j + (i - 1) * width for j in range(len(self.systems))]
            self.bars_.append(axes.bar(xs, self.series[key], width, label=label))
        times = finite(v for values in self.series.values() for v in values)
        top = max(times, default=1.0)
        log = bool(times) and top / min(times) > LOG_SPAN
        for j, (best, base) in enumerate(zip(self.series["best_time_s"], self.series["baseline_time_s"], strict=True)):
            high = max(self.series[k][j] for k, _ in _SERIES)
            speedup = f"{base / best:.2f}x" if best > 0 else "-"
            axes.annotate(
                f"{speedup}\n{self.labels[j]}",
                (j, high),
                xytext=(0, 3),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize=7,
            )
        axes.set_xticks(range(len(self.systems)), self.systems, rotation=20, ha="right")
        if log:
            axes.set_yscale("log")
            axes.set_ylim(min(times) / 2, top * 4)  # room for the three-line labels above the bars
        else:
            axes.set_ylim(0, top * 1.3)
        time_axis(axes, "y", times)
        axes.set_title(
            (self.title or f"{self.workload}: bound, best schedule and baseline")
            + "\nabove the bars: best schedule's speed-up over PyTorch + NCCL, schedule / mechanism",
            fontsize=9,
        )
        axes.grid(True, axis="y", alpha=0.3)
        legend_outside(axes)
        return self


class WhatIfSweepDisplay(Display):
    """Time against one swept workload parameter, one colour per system: bound dotted, best schedule solid,
    PyTorch + NCCL dashed (all three styles in the legend). The x axis is named by the parameter and has a tick
    at every swept value; numeric values spanning a factor of 8 or more go on a log axis, text values (a dtype,
    an op) are categories in the order given."""

    def __init__(
        self,
        workload: str,
        key: str,
        curves: Mapping[str, Mapping[str, Sequence[Any]]],
        *,
        gpus: int | None = None,
    ) -> None:
        if not curves:
            raise NothingToPlotError(f"no predictions of {workload or 'the workload'} to plot (no systems given)")
        self.workload, self.key, self.gpus = workload, key, gpus
        self.curves = {name: {k: list(v) for k, v in series.items()} for name, series in curves.items()}
        self.values: list[Any] = []
        for c in self.curves.values():
            self.values += [v for v in c["x"] if v not in self.values]
        self.numeric = all(_number(v) is not None for v in self.values)
        self.lines_: list[Line2D] = []

    @classmethod
    def from_predictions(
        cls, predictions: Iterable[Mapping[str, Any]], key: str, ax: Axes | None = None
    ) -> WhatIfSweepDisplay:
        preds = list(predictions)
        curves: dict[str, dict[str, list[Any]]] = {}
        workload = ""
        for p in preds:
            workload = p["workload"]
            c = curves.setdefault(p["system"], {"x": [], "bound_time_s": [], "best_time_s": [], "baseline_time_s": []})
            c["x"].append(p["params"][key])
            c["bound_time_s"].append(p["bound_time_s"])
            c["best_time_s"].append(p["best"]["time_s"])
            c["baseline_time_s"].append(p["baseline_time_s"])
        counts = {int(p["gpus"]) for p in preds if "gpus" in p}
        display = cls(workload, key, curves, gpus=counts.pop() if len(counts) == 1 else None)
        return display.plot(ax) if ax is not None else display

    def _x(self, values: Sequence[Any]) -> list[float]:
        if self.numeric:
            return [float(_number(v) or 0.0) for v in values]
        return [float(self.values.index(v)) for v in values]

    def plot(self, ax: Axes | None = None) -> WhatIfSweepDisplay:
        from matplotlib.lines import Line2D
        from matplotlib.ticker import NullLocator

        axes = self._axes(ax)
        self.lines_ = []
        handles = []
        for i, (system, c) in enumerate(self.curves.items()):
            color = f"C{i}"
            for key, style in _STYLES.items():
                (line,) = axes.plot(self._x(c["x"]), c[key], style, color=color, marker="o", ms=3)
                self.lines_.append(line)
            handles.append(Line2D([], [], color=color, lw=2, label=system))
        handles += [Line2D([], [], color="black", ls=_STYLES[key], lw=1.2, label=label) for key, label in _SERIES]
        ticks = self._x(self.values)
        positive = [t for t in ticks if t > 0]
        if self.numeric and len(positive) == len(ticks) and ticks and max(ticks) / min(ticks) >= 8:
            axes.set_xscale("log", base=2)
        axes.xaxis.set_minor_locator(NullLocator())
        axes.set_xticks(ticks, [_tick_text(v) for v in self.values])
        axes.set_yscale("log")
        time_axis(axes, "y", [v for c in self.curves.values() for k in _STYLES for v in c[k]])
        axes.set_xlabel(self.key)
        on = f" on {self.gpus} GPUs" if self.gpus else ""
        axes.set_title(f"{self.workload}{on}: time against {self.key}", fontsize=9)
        axes.grid(True, which="major", alpha=0.3)
        legend_outside(axes, list(handles))
        return self


def _number(value: Any) -> float | None:
    """``value`` as a finite float, or None for text such as ``bf16`` (booleans are categories too)."""
    if isinstance(value, bool):
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def _tick_text(value: Any) -> str:
    number = _number(value)
    if number is None:
        return str(value)
    return f"{number:,.0f}" if number == int(number) else f"{number:g}"
