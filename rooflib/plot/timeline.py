"""The timeline of one program iteration: a host lane and one lane per device resource (compute, communication).

Reads :meth:`rooflib.program.ProgramPrediction.as_dict`: each op's host issue (``host_start_s`` to
``host_end_s``) and device run (``start_s`` to ``end_s``), one iteration from an idle host and device.

>>> from rooflib.plot import file_axes
>>> d = {"program": "p", "system": "s", "gpus": 1, "ops": [
...     {"name": "mm", "kind": "gemm", "stream": "compute", "device_time_s": 1e-3, "host_time_s": 8e-6,
...      "host_start_s": 0.0, "host_end_s": 8e-6, "start_s": 1.2e-5, "end_s": 1.012e-3}]}
>>> TimelineDisplay.from_prediction(d, ax=file_axes()).lanes
['host', 'compute']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rooflib.plot._base import Display, NothingToPlotError, legend_outside, time_axis

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["TimelineDisplay"]

_COMM = ("collective", "send_recv")
_COLOURS = {
    "gemm": "tab:blue",
    "attention": "tab:purple",
    "elementwise": "tab:green",
    "norm": "tab:olive",
    "reduction": "tab:orange",
    "copy": "tab:brown",
    "index": "tab:cyan",
    "sort": "tab:pink",
    "collective": "tab:red",
    "send_recv": "tab:red",
    "unmodelled": "tab:gray",
}


class TimelineDisplay(Display):
    """Bars per op on lanes: ``host`` (issue cost), ``compute`` (ops on the SMs), ``comm`` (collectives)."""

    figsize = (9.0, 3.2)

    def __init__(self, title: str, ops: Sequence[Mapping[str, Any]]) -> None:
        drawn = [o for o in ops if o["end_s"] > o["start_s"] or o["host_time_s"] > 0]
        if not drawn:
            raise NothingToPlotError(f"{title}: no op takes host or device time: nothing to draw")
        self.title, self.ops = title, list(ops)
        self.lanes = ["host", "compute"] + (["comm"] if any(o["kind"] in _COMM for o in ops) else [])

    @classmethod
    def from_prediction(cls, prediction: Mapping[str, Any], *, ax: Axes | None = None) -> TimelineDisplay:
        title = f"{prediction['program']} on {prediction['gpus']} GPUs of {prediction['system']}: one iteration"
        return cls(title, prediction["ops"]).plot(ax)

    def plot(self, ax: Axes | None = None) -> TimelineDisplay:
        from matplotlib.patches import Patch

        axes = self._axes(ax)
        y = {lane: i for i, lane in enumerate(reversed(self.lanes))}
        kinds: dict[str, str] = {}
        host_end = 0.0
        for op in self.ops:
            colour = _COLOURS.get(op["kind"], "black")
            kinds.setdefault(op["kind"], colour)
            if op["host_end_s"] > op["host_start_s"]:
                span = (op["host_start_s"], op["host_end_s"] - op["host_start_s"])
                axes.broken_barh([span], (y["host"] - 0.35, 0.7), color=colour, alpha=0.6)
                host_end = max(host_end, op["host_end_s"])
            if op["end_s"] > op["start_s"]:
                lane = "comm" if op["kind"] in _COMM else "compute"
                width = op["end_s"] - op["start_s"]
                axes.broken_barh([(op["start_s"], width)], (y[lane] - 0.35, 0.7), color=colour, edgecolor="white")
        ends = [o["end_s"] for o in self.ops] + [host_end]
        axes.set_xlim(0.0, max(ends) * 1.02)
        axes.set_yticks(list(y.values()), list(y))
        time_axis(axes, "x", ends, "time from the first issue")
        axes.set_title(self.title, fontsize=9)
        legend_outside(axes, [Patch(color=c, label=k) for k, c in kinds.items()])
        return self
