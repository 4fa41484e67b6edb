"""Hierarchical roofline: attainable FLOP/s against operational intensity, one roof per memory or link level.

Each level ``l`` (L2, HBM, NVLink, InfiniBand) gives the roof ``min(P, B_l * I)`` with I the FLOP per byte moved
through that level (Williams et al., CACM 2009; the hierarchical form of Yang et al., 2020). The ridge point
``P / B_l`` is where the level's roof meets the compute peak P. A kernel is drawn at its intensity for every
level it uses, at the FLOP/s of its communication-aware bound (:func:`rooflib.roof`).

>>> from rooflib.plot import file_axes
>>> from rooflib.specs import load_system
>>> d = HierarchicalRooflineDisplay.from_system(load_system("hgx-h100"), ax=file_axes())
>>> round(d.ridge_points["hbm"])
295
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from rooflib.errors import RooflibError
from rooflib.plot._base import Display, NothingToPlotError, eng_axis, finite, legend_outside, number_axis
from rooflib.plot.kernels import KernelLike, KernelPoint, place_kernels
from rooflib.roof import Roofs, roofs
from rooflib.specs.devices import DTYPES, DType
from rooflib.specs.resolve import System
from rooflib.units import format_bandwidth, format_flops

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.lines import Line2D

__all__ = ["LEVEL_COLORS", "LEVEL_NAMES", "HierarchicalRooflineDisplay", "intensity_label", "roof_curve"]

LEVEL_NAMES = {"l2": "L2", "hbm": "HBM", "nvlink": "NVLink", "ib": "IB", "pcie": "PCIe"}
LEVEL_COLORS = {"l2": "tab:purple", "hbm": "tab:blue", "nvlink": "tab:green", "ib": "tab:orange", "pcie": "tab:red"}
LEVEL_MARKERS = {"hbm": "o", "nvlink": "s", "ib": "^", "l2": "D", "pcie": "v"}
FloatArray = npt.NDArray[np.float64]


def roof_curve(compute: float, bandwidth: float, intensity: FloatArray) -> FloatArray:
    """``min(compute, bandwidth * intensity)`` in FLOP/s."""
    return np.minimum(compute, bandwidth * intensity)


def intensity_label(intensity: float) -> str:
    """FLOP/B for labels: ``2198.4 -> '2,198 FLOP/B'``."""
    return f"{intensity:,.0f} FLOP/B" if intensity >= 10 else f"{intensity:.2g} FLOP/B"


def level_bandwidths(r: Roofs) -> dict[str, float]:
    """B/s of every level of ``r``, fastest first (L2, HBM, then link classes)."""
    return {"l2": r.l2, "hbm": r.hbm, **r.links}


class HierarchicalRooflineDisplay(Display):
    """Roofs of one system for one dtype, optional achievable roofs and kernels.

    Attributes (after construction): ``intensity`` (FLOP/B grid), ``curves`` (level -> FLOP/s on the grid),
    ``achievable_curves``, ``compute_peaks`` (dtype -> FLOP/s), ``ridge_points`` (level -> FLOP/B),
    ``kernels`` (:class:`KernelPoint`). After :meth:`plot`: ``ax_``, ``figure_``, ``roof_lines_``,
    ``achievable_lines_``, ``compute_lines_`` and ``kernel_lines_`` (name -> Line2D of its points).
    """

    def __init__(
        self,
        roofs: Roofs,
        *,
        achievable: Roofs | None = None,
        compute_peaks: Mapping[str, float] | None = None,
        kernels: Sequence[KernelPoint] = (),
        intensity: npt.ArrayLike | None = None,
    ) -> None:
        self.system = roofs.system
        self.dtype = roofs.dtype
        self.roofs = roofs
        self.achievable = achievable
        self.compute_peaks = dict(compute_peaks or {roofs.dtype: roofs.compute})
        self.kernels = list(kernels)
        self.ridge_points = {level: roofs.compute / bw for level, bw in level_bandwidths(roofs).items()}
        if intensity is None:
            xs = finite([*self.ridge_points.values(), *(v for k in self.kernels for v in k.intensity.values())])
            lo, hi = min(xs) / 30.0, max(xs) * 30.0
            intensity = np.logspace(np.log10(lo), np.log10(hi), 256)
        self.intensity: FloatArray = np.asarray(intensity, dtype=np.float64)
        self.curves = {lv: roof_curve(roofs.compute, bw, self.intensity) for lv, bw in level_bandwidths(roofs).items()}
        self.achievable_curves: dict[str, FloatArray] = {}
        if achievable is not None:
            bws = level_bandwidths(achievable)
            self.achievable_curves = {lv: roof_curve(achievable.compute, bw, self.intensity) for lv, bw in bws.items()}

    @classmethod
    def from_system(
        cls,
        system: System,
        *,
        dtype: DType = "bf16",
        achievable: bool = False,
        dtypes: Iterable[DType] | None = None,
        kernels: Iterable[KernelLike] = (),
        ax: Axes | None = None,
    ) -> HierarchicalRooflineDisplay:
        """Compute the roofs of ``system`` (``achievable=True`` adds dashed achievable roofs) and plot them.

        ``dtypes`` lists the compute peaks drawn as horizontal lines (default: every dtype the device has).
        """
        peak = roofs(system, dtype)
        peaks: dict[str, float] = {}
        for d in DTYPES if dtypes is None else dtypes:
            try:
                peaks[d] = roofs(system, d).compute
            except RooflibError:
                if dtypes is not None:
                    raise
        points = place_kernels(system, kernels, dtype=dtype)
        for k in points:
            if not any(np.isfinite(v) and v > 0 for v in k.intensity.values()):
                why = "no FLOPs" if all(v == 0 for v in k.intensity.values()) else "no bytes through any level"
                raise NothingToPlotError(f"kernel {k.name!r} has {why}: it has no intensity to place on a roofline")
        disp = cls(
            peak,
            achievable=roofs(system, dtype, achievable=True) if achievable else None,
            compute_peaks=peaks,
            kernels=points,
        )
        return disp.plot(ax=ax)

    def plot(self, ax: Axes | None = None) -> HierarchicalRooflineDisplay:
        from matplotlib.lines import Line2D

        axes = self._axes(ax)
        x = self.intensity
        self.roof_lines_: dict[str, Line2D] = {}
        self.achievable_lines_: dict[str, Line2D] = {}
        self.compute_lines_: dict[str, Line2D] = {}
        self.kernel_lines_: dict[str, Line2D] = {}
        bws = level_bandwidths(self.roofs)
        for level, curve in self.curves.items():
            ridge = intensity_label(self.ridge_points[level])
            label = f"{LEVEL_NAMES.get(level, level)} {format_bandwidth(bws[level])}, ridge {ridge}"
            (self.roof_lines_[level],) = axes.plot(x, curve, color=LEVEL_COLORS.get(level), lw=2, label=label)
        if self.achievable is not None:
            for level, curve in self.achievable_curves.items():
                name = LEVEL_NAMES.get(level, level)
                (self.achievable_lines_[level],) = axes.plot(
                    x, curve, color=LEVEL_COLORS.get(level), lw=1.2, ls="--", label=f"{name} achievable"
                )
        handles: list[Artist] = list(axes.get_legend_handles_labels()[0])
        handles += self._plot_compute_peaks(axes)
        for level, xr in self.ridge_points.items():
            axes.plot([xr], [self.roofs.compute], marker="o", ms=4, color=LEVEL_COLORS.get(level, "black"), ls="none")
        handles.append(Line2D([], [], ls="none", marker="o", ms=4, color="0.3", label="ridge point (roof meets peak)"))
        handles += self._plot_kernels(axes)
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.set_xlim(x[0], x[-1])
        low = min(float(c[0]) for c in self.curves.values())
        axes.set_ylim(low, max(self.compute_peaks.values()) * 2.5)
        number_axis(axes, "x")
        eng_axis(axes, "y", "FLOP/s")
        axes.set_xlabel("operational intensity (FLOP per byte through the level)")
        axes.set_ylabel("attainable FLOP/s per GPU")
        kind = ", dashed: achievable" if self.achievable is not None else ""
        axes.set_title(f"{self.system}: hierarchical roofline ({self.dtype}{kind})", fontsize=9)
        axes.grid(True, which="major", alpha=0.3)
        legend_outside(axes, handles)
        return self

    def _plot_compute_peaks(self, axes: Axes) -> list[Artist]:
        """Horizontal compute peaks: the roofline's dtype solid black (named in the legend), the others dotted
        grey, labelled at the right edge, where every roof has reached the compute peak and nothing is drawn
        (below the line when the peak above is too close for two labels)."""
        from matplotlib.lines import Line2D

        x = self.intensity
        same: dict[float, list[str]] = {}
        for dtype, peak in self.compute_peaks.items():
            same.setdefault(peak, []).append(dtype)
        previous = np.inf
        for peak in sorted(same, reverse=True):
            dtypes = same[peak]
            primary = self.dtype in dtypes
            color = "black" if primary else "0.55"
            line = axes.plot([x[0], x[-1]], [peak, peak], color=color, lw=1.0, ls="-" if primary else ":")[0]
            self.compute_lines_.update(dict.fromkeys(dtypes, line))
            if not primary:
                crowded = previous / peak < 1.6
                axes.annotate(
                    f"{'/'.join(dtypes)} {format_flops(peak)}",
                    (x[-1], peak),
                    xytext=(-3, -2 if crowded else 2),
                    textcoords="offset points",
                    ha="right",
                    va="top" if crowded else "bottom",
                    fontsize=7,
                    color=color,
                )
            previous = peak
        main = "/".join(same[self.roofs.compute]) if self.roofs.compute in same else self.dtype
        handles: list[Artist] = [
            Line2D([], [], color="black", lw=1.0, label=f"{main} compute peak {format_flops(self.roofs.compute)}")
        ]
        if len(same) > 1:
            handles.append(Line2D([], [], color="0.55", lw=1.0, ls=":", label="other dtypes' peaks (labelled)"))
        return handles

    def _plot_kernels(self, axes: Axes) -> list[Artist]:
        """Each kernel: one marker per level at its intensity there, joined by a thin line, at its bound."""
        from matplotlib.lines import Line2D

        cycle = ("tab:red", "tab:brown", "tab:pink", "tab:olive", "tab:cyan", "tab:gray")
        handles: list[Artist] = []
        used: list[str] = []
        for i, k in enumerate(self.kernels):
            color = cycle[i % len(cycle)]
            levels = [lv for lv, v in k.intensity.items() if np.isfinite(v) and v > 0]
            xs = [k.intensity[lv] for lv in levels]
            if not xs:
                continue
            (self.kernel_lines_[k.name],) = axes.plot(xs, [k.attainable] * len(xs), color=color, lw=0.8, ls="-")
            for lv, xv in zip(levels, xs, strict=True):
                axes.plot([xv], [k.attainable], marker=LEVEL_MARKERS.get(lv, "o"), color=color, ls="none")
                used += [] if lv in used else [lv]
            label = f"{k.name}: {k.limiter}-bound, {format_flops(k.attainable)}"
            handles.append(Line2D([], [], color=color, lw=0.8, marker="o", ms=4, label=label))
        for lv in used:
            label = f"kernel at its {LEVEL_NAMES.get(lv, lv)} intensity"
            handles.append(Line2D([], [], ls="none", marker=LEVEL_MARKERS.get(lv, "o"), color="0.3", label=label))
        return handles
