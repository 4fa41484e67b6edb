"""What-if across systems: bound, best schedule and PyTorch + NCCL baseline of one workload per system."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rooflib.plot._base import Display

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["WhatIfDisplay", "WhatIfSweepDisplay"]

_SERIES = (
    ("bound_time_s", "bound (no kernel beats it)"),
    ("best_time_s", "best schedule"),
    ("baseline_time_s", "PyTorch + NCCL"),
)


class WhatIfDisplay(Display):
    """Grouped bars (seconds, log scale) per system; the speed-up of the best schedule over the baseline on top."""

    def __init__(
        self, workload: str, systems: Sequence[str], series: Mapping[str, Sequence[float]], labels: Sequence[str]
    ) -> None:
        self.workload = workload
        self.systems = list(systems)
        self.series = {k: list(v) for k, v in series.items()}
        self.labels = list(labels)  # best schedule per system
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
        display = cls(preds[0]["workload"] if preds else "", [p["system"] for p in preds], series, labels)
        return display.plot(ax) if ax is not None else display

    def plot(self, ax: Axes | None = None) -> WhatIfDisplay:
        axes = self._axes(ax)
        width = 0.8 / len(_SERIES)
        self.bars_ = []
        for i, (key, label) in enumerate(_SERIES):
            xs = [j + (i - 1) * width for j in range(len(self.systems))]
            self.bars_.append(axes.bar(xs, self.series[key], width, label=label))
        for j, (best, base) in enumerate(zip(self.series["best_time_s"], self.series["baseline_time_s"], strict=True)):
            axes.annotate(f"{base / best:.2f}x\n{self.labels[j]}", (j, base), ha="center", va="bottom", fontsize=7)
        axes.set_xticks(range(len(self.systems)), self.systems, rotation=20)
        axes.set_yscale("log")
        axes.set_ylabel("time (s)")
        axes.set_title(f"{self.workload}: bound, best schedule and baseline")
        axes.legend(fontsize=8)
        return self


class WhatIfSweepDisplay(Display):
    """Time against one swept workload parameter (log-log), one colour per system: bound dotted, best schedule
    solid, PyTorch + NCCL dashed."""

    def __init__(self, workload: str, key: str, curves: Mapping[str, Mapping[str, Sequence[float]]]) -> None:
        self.workload, self.key = workload, key
        self.curves = {name: {k: list(v) for k, v in series.items()} for name, series in curves.items()}
        self.lines_: list[Any] = []

    @classmethod
    def from_predictions(
        cls, predictions: Iterable[Mapping[str, Any]], key: str, ax: Axes | None = None
    ) -> WhatIfSweepDisplay:
        curves: dict[str, dict[str, list[float]]] = {}
        workload = ""
        for p in predictions:
            workload = p["workload"]
            c = curves.setdefault(p["system"], {"x": [], "bound_time_s": [], "best_time_s": [], "baseline_time_s": []})
            c["x"].append(float(p["params"][key]))
            c["bound_time_s"].append(p["bound_time_s"])
            c["best_time_s"].append(p["best"]["time_s"])
            c["baseline_time_s"].append(p["baseline_time_s"])
        display = cls(workload, key, curves)
        return display.plot(ax) if ax is not None else display

    def plot(self, ax: Axes | None = None) -> WhatIfSweepDisplay:
        axes = self._axes(ax)
        self.lines_ = []
        for i, (system, c) in enumerate(self.curves.items()):
            color = f"C{i}"
            for key, style in (("bound_time_s", ":"), ("best_time_s", "-"), ("baseline_time_s", "--")):
                label = system if key == "best_time_s" else None
                (line,) = axes.plot(c["x"], c[key], style, color=color, marker="o", ms=3, label=label)
                self.lines_.append(line)
        axes.set_xscale("log", base=2)
        axes.set_yscale("log")
        axes.set_xlabel(self.key)
        axes.set_ylabel("time (s)")
        axes.set_title(f"{self.workload}: bound (dotted), best schedule (solid), PyTorch + NCCL (dashed)", fontsize=9)
        axes.legend(fontsize=8)
        return self
