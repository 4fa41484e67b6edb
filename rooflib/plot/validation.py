"""The figures of ``rooflib validate``'s report: measured against predicted, one panel per name or job.

Display objects (:mod:`rooflib.plot`): each holds numbers computed elsewhere (measured rows and the models'
predictions of them), ``plot(ax=None)`` draws one panel per entry on a new figure (or on the given axes, one per
panel) and returns itself, ``savefig(path)`` writes the file. ``from_*`` classmethods pick the data out of a
validation's tables; no model runs here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rooflib.plot._base import Display, NothingToPlotError

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

__all__ = [
    "MeasuredCurvesDisplay",
    "MeasuredScatterDisplay",
    "OverlapScheduleDisplay",
    "PanelsDisplay",
    "TensorParallelDisplay",
]

MODEL_STYLE = {"datasheet": ":", "calibrated": "-", "nccl": "--"}
"""Line style of each validation model."""


class PanelsDisplay(Display):
    """A figure of up to three panels a row (5 x 3.6 inches each), saved at 110 dpi as drawn."""

    def panels(self) -> int:  # pragma: no cover - overridden
        raise NotImplementedError

    def _panel_axes(self, ax: Axes | Sequence[Axes] | None) -> list[Axes]:
        n = self.panels()
        if n == 0:
            raise NothingToPlotError(f"{type(self).__name__}: nothing measured to draw")
        if ax is None:
            from matplotlib.figure import Figure

            cols = min(3, n)
            rows = math.ceil(n / cols)
            fig = Figure(figsize=(5 * cols, 3.6 * rows), layout="constrained")
            axes = [fig.add_subplot(rows, cols, i + 1) for i in range(n)]
        else:
            axes = [ax] if not isinstance(ax, Sequence) else list(ax)
            if len(axes) != n:
                raise ValueError(f"{type(self).__name__} draws {n} panels, got {len(axes)} axes")
        self.ax_ = axes[0]
        self.figure_ = axes[0].get_figure(root=True)
        return axes

    def savefig(self, path: str | Path, *, dpi: int = 110, **kwargs: Any) -> Path:
        """Write the figure (plotting it first when not yet plotted)."""
        if self.figure_ is None:
            self.plot()
        assert self.figure_ is not None
        out = Path(path)
        self.figure_.savefig(out, dpi=dpi, **kwargs)
        return out


def _log_axes(ax: Any, title: str, xlabel: str, ylabel: str, xbase: int = 10) -> None:
    ax.set_xscale("log", base=xbase)
    ax.set_yscale("log")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)


@dataclass
class MeasuredCurvesDisplay(PanelsDisplay):
    """Bandwidth against bytes or SMs, one panel per measured name: measured points, one line per model.

    ``curves[name] = (xs, measured GB/s, {model: predicted GB/s})``; models whose predictions are all NaN are
    left out by :meth:`from_rows`."""

    curves: Mapping[str, tuple[Any, Any, Mapping[str, Any]]]
    xlabel: str = "bytes"
    ylabel: str = "GB/s"

    def panels(self) -> int:
        return len(self.curves)

    @classmethod
    def from_rows(
        cls, rows: pd.DataFrame, models: Sequence[str], *, x: str, ylabel: str, variant: str | None = None
    ) -> MeasuredCurvesDisplay:
        """From one family's rows with ``time_s``, ``bytes``, ``name`` and ``pred_<model>`` columns (``x`` =
        ``"bytes"`` or ``"sms"``: per name, the largest size of the SM sweep)."""
        if variant is not None:
            rows = rows[rows["variant"] == variant]
        rows = rows[rows[x].notna() & (rows[x].astype(float) > 0)]
        curves: dict[str, tuple[Any, Any, dict[str, Any]]] = {}
        for name in sorted(rows["name"].dropna().unique()):
            grp = rows[rows["name"] == name].sort_values(x)
            if x == "sms":  # one size per SM sweep: the largest
                grp = grp[grp["bytes"] == grp["bytes"].max()]
            xs = grp[x].astype(float).to_numpy()
            size = grp["bytes"].astype(float).to_numpy()
            measured = size / grp["time_s"].astype(float).to_numpy() / 1e9
            predicted: dict[str, Any] = {}
            for model in models:
                pred = grp[f"pred_{model}"].astype(float).to_numpy()
                if np.isfinite(pred).any():
                    predicted[model] = size / pred / 1e9
            curves[str(name)] = (xs, measured, predicted)
        return cls(curves, xlabel="bytes" if x == "bytes" else "SMs", ylabel=ylabel)

    def plot(self, ax: Axes | Sequence[Axes] | None = None) -> MeasuredCurvesDisplay:
        axes = self._panel_axes(ax)
        for axis, (name, (xs, measured, predicted)) in zip(axes, self.curves.items(), strict=True):
            axis.plot(xs, measured, "ko", ms=3, label="measured")
            for model, values in predicted.items():
                axis.plot(xs, values, MODEL_STYLE.get(model, "-"), label=model)
            axis.set_title(name)
            axis.set_xscale("log", base=2)
            axis.set_xlabel(self.xlabel)
            axis.set_ylabel(self.ylabel)
            axis.grid(True, alpha=0.3)
        axes[0].legend(fontsize=8)
        return self


@dataclass
class MeasuredScatterDisplay(PanelsDisplay):
    """Predicted against measured rate (TFLOP/s for GEMMs), one marker series per model, and the diagonal."""

    measured: Any
    predicted: Mapping[str, Any]
    xlabel: str = "measured TFLOP/s"
    ylabel: str = "predicted TFLOP/s"

    def panels(self) -> int:
        return 1 if len(self.measured) else 0

    @classmethod
    def from_rows(cls, rows: pd.DataFrame, models: Sequence[str]) -> MeasuredScatterDisplay:
        """From GEMM rows with ``flops``, ``time_s`` and ``pred_<model>`` columns."""
        measured = rows["flops"].astype(float) / rows["time_s"].astype(float) / 1e12
        predicted = {}
        for model in models:
            pred = rows["flops"].astype(float) / rows[f"pred_{model}"].astype(float) / 1e12
            if pred.notna().any():
                predicted[model] = pred
        return cls(measured, predicted)

    def plot(self, ax: Axes | Sequence[Axes] | None = None) -> MeasuredScatterDisplay:
        (axis,) = self._panel_axes(ax)
        for model, pred in self.predicted.items():
            axis.plot(self.measured, pred, "o", ms=4, label=model)
        lim = [0, float(max(self.measured.max(), 1.0)) * 1.1]
        axis.plot(lim, lim, "k-", lw=0.8)
        axis.set_xlabel(self.xlabel)
        axis.set_ylabel(self.ylabel)
        axis.legend(fontsize=8)
        return self


@dataclass
class OverlapScheduleDisplay(PanelsDisplay):
    """Overlap schedules per job: measured and predicted time against compute per byte, per schedule (inter-SM:
    the best measured S at each setting). ``table``: :func:`rooflib.validate.overlap.overlap_table`'s rows."""

    table: pd.DataFrame
    schedules: tuple[tuple[str, str], ...] = (("sequential", "C0"), ("intra_sm", "C1"), ("inter_sm", "C2"))

    def panels(self) -> int:
        return int(self.table["job"].nunique()) if not self.table.empty else 0

    def plot(self, ax: Axes | Sequence[Axes] | None = None) -> OverlapScheduleDisplay:
        over = self.table
        jobs = sorted(over["job"].unique())
        axes = self._panel_axes(ax)
        for axis, job in zip(axes, jobs, strict=True):
            g = over[over["job"] == job]
            for schedule, style in self.schedules:
                s = g[g["schedule"] == schedule]
                if schedule == "inter_sm":  # the best S at each compute-per-byte
                    s = s.loc[s.groupby("iters")["measured_s"].idxmin()]
                s = s.sort_values("iters")
                axis.plot(s["iters"], s["measured_s"] * 1e6, "o", color=style, ms=3, label=f"{schedule} measured")
                axis.plot(s["iters"], s["predicted_s"] * 1e6, "-", color=style, label=f"{schedule} predicted")
            _log_axes(axis, str(job), "mma trips per tile (compute per byte)", "time (us)", xbase=2)
        axes[0].legend(fontsize=7)
        return self


@dataclass
class TensorParallelDisplay(PanelsDisplay):
    """Per workload: measured sequential and fused times against the predicted baseline, best schedule and bound
    (``table``: :func:`rooflib.validate.tp.tp_table`'s rows)."""

    table: pd.DataFrame
    labels: dict[str, str] = field(
        default_factory=lambda: {
            "baseline": "PyTorch + NCCL: measured vs baseline",
            "fused": "PyTorch fused op: measured vs best",
            "ce": "copy-engine pipeline: measured vs inter-SM copy engine",
            "bound": "PyTorch + NCCL: measured vs bound",
        }
    )

    def panels(self) -> int:
        return int(self.table["workload"].nunique()) if not self.table.empty else 0

    def plot(self, ax: Axes | Sequence[Axes] | None = None) -> TensorParallelDisplay:
        tp = self.table
        work = sorted(tp["workload"].unique())
        axes = self._panel_axes(ax)
        for axis, name in zip(axes, work, strict=True):
            g = tp[tp["workload"] == name]
            seq = g["sequential_s"] * 1e3
            axis.plot(g["baseline_pred_s"] * 1e3, seq, "o", color="C0", ms=4, label=self.labels["baseline"])
            fused = g["fused_s"].dropna()
            if not fused.empty:
                axis.plot(g["best_pred_s"] * 1e3, g["fused_s"] * 1e3, "s", color="C1", ms=4, label=self.labels["fused"])
            if "ce_pipeline_s" in g and g["ce_pipeline_s"].notna().any():
                axis.plot(
                    g["ce_pred_s"] * 1e3, g["ce_pipeline_s"] * 1e3, "D", color="C3", ms=4, label=self.labels["ce"]
                )
            axis.plot(g["bound_s"] * 1e3, seq, "^", color="C2", ms=4, label=self.labels["bound"])
            lo = float(min(g["bound_s"].min(), g["best_pred_s"].min()) * 1e3)
            hi = float(max(g["sequential_s"].max(), fused.max() if not fused.empty else 0.0) * 1e3)
            axis.plot([lo, hi], [lo, hi], "k:", lw=1, label="measured = predicted")
            _log_axes(axis, str(name), "predicted (ms)", "measured (ms)")
            axis.minorticks_off()
        axes[0].legend(fontsize=6)
        return self
