"""Communication-aware roofline: kernels as points against FLOP per network byte (ParallelKittens, section 2).

For link class c with per-GPU bandwidth B_c (one direction) and compute peak P, the network roof is
``min(P, B_c * I_c)`` with ``I_c = flops / net_bytes[c]``. A kernel is drawn at the intensity of its busiest link
class (largest ``net_bytes[c] / B_c``) and at the FLOP/s of its bound ``flops / max(compute, memory, comm)``, so a
point under the roof is held down by HBM or by another link class.

>>> from rooflib.plot import file_axes
>>> from rooflib.specs import load_system
>>> d = CommRooflineDisplay.from_system(load_system("hgx-h100"), [("k", 1e12, 1e9, {"nvlink": 1e9})], ax=file_axes())
>>> d.points[0].intensity
1000.0
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import numpy.typing as npt

from rooflib.plot._base import Display, NothingToPlotError, eng_axis, finite, legend_outside, note_handle, number_axis
from rooflib.plot.kernels import KernelLike, as_kernels, example_kernels
from rooflib.plot.roofline import LEVEL_COLORS, LEVEL_NAMES, intensity_label, roof_curve
from rooflib.roof import Roofs, roofline, roofs
from rooflib.specs.devices import DType
from rooflib.specs.resolve import System
from rooflib.units import format_bandwidth, format_flops

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.lines import Line2D

__all__ = ["CommPoint", "CommRooflineDisplay"]

FloatArray = npt.NDArray[np.float64]
POINT_MARKERS = ("o", "s", "D", "^", "v", "P", "X", "h", "<", ">")


class CommPoint(NamedTuple):
    """A kernel on the communication roofline: its busiest link class, FLOP per byte on it, FLOP/s at its bound."""

    name: str
    link: str
    intensity: float
    attainable: float
    limiter: str
    bound_s: float


class CommRooflineDisplay(Display):
    """Network and compute roofs of one system with kernels as labelled points.

    Attributes: ``roofs``, ``intensity`` (FLOP per network byte), ``network_curves`` (link class -> FLOP/s),
    ``compute_roof`` (FLOP/s), ``points`` (:class:`CommPoint`), ``skipped`` (kernels with no network bytes).
    After :meth:`plot`: ``roof_lines_`` (link class -> Line2D), ``compute_line_``, ``point_lines_`` (kernel name ->
    Line2D of its marker; each kernel has its own marker shape, coloured by its link class, named in the legend).
    """

    def __init__(
        self,
        roofs: Roofs,
        points: Sequence[CommPoint],
        *,
        skipped: Sequence[str] = (),
        intensity: npt.ArrayLike | None = None,
    ) -> None:
        self.system = roofs.system
        self.dtype = roofs.dtype
        self.roofs = roofs
        self.points = list(points)
        self.skipped = list(skipped)
        self.compute_roof = roofs.compute
        if intensity is None:
            xs = finite([*(roofs.compute / bw for bw in roofs.links.values()), *(p.intensity for p in self.points)])
            intensity = np.logspace(np.log10(min(xs) / 30.0), np.log10(max(xs) * 30.0), 256)
        self.intensity: FloatArray = np.asarray(intensity, dtype=np.float64)
        self.network_curves = {c: roof_curve(roofs.compute, bw, self.intensity) for c, bw in roofs.links.items()}

    @classmethod
    def from_system(
        cls,
        system: System,
        kernels: Iterable[KernelLike] | None = None,
        *,
        dtype: DType = "bf16",
        achievable: bool = False,
        ax: Axes | None = None,
    ) -> CommRooflineDisplay:
        """Place ``kernels`` (default: :func:`rooflib.plot.example_kernels`) on the roofline of ``system``."""
        r = roofs(system, dtype, achievable=achievable)
        points: list[CommPoint] = []
        skipped: list[str] = []
        for k in as_kernels(example_kernels(system) if kernels is None else kernels):
            line = roofline(
                system, flops=k.flops, hbm_bytes=k.hbm_bytes, net_bytes=k.net_bytes, dtype=dtype, achievable=achievable
            )
            used = {c: t for c, t in line.comm_s.items() if k.net_bytes.get(c, 0.0) > 0}
            if not used:
                skipped.append(k.name)
                continue
            link = max(used, key=lambda c: used[c])
            points.append(
                CommPoint(k.name, link, line.intensity_net[link], line.attainable_flops, line.limiter, line.bound_s)
            )
        return cls(r, points, skipped=skipped).plot(ax=ax)

    def plot(self, ax: Axes | None = None) -> CommRooflineDisplay:
        from matplotlib.lines import Line2D

        if not self.points:
            skipped = f" ({', '.join(self.skipped)} moved none)" if self.skipped else ""
            raise NothingToPlotError(
                f"{self.system}: no kernel with network bytes to place on the communication roofline{skipped}; "
                "the hierarchical roofline shows kernels without them"
            )
        axes = self._axes(ax)
        x = self.intensity
        self.roof_lines_: dict[str, Line2D] = {}
        for link, curve in self.network_curves.items():
            ridge = self.compute_roof / self.roofs.links[link]
            bw = format_bandwidth(self.roofs.links[link])
            label = f"{LEVEL_NAMES.get(link, link)} {bw} per GPU, ridge {intensity_label(ridge)}"
            (self.roof_lines_[link],) = axes.plot(x, curve, color=LEVEL_COLORS.get(link), lw=2, label=label)
            axes.plot([ridge], [self.compute_roof], marker="o", ms=4, color=LEVEL_COLORS.get(link), ls="none")
        (self.compute_line_,) = axes.plot(
            [x[0], x[-1]],
            [self.compute_roof] * 2,
            color="black",
            lw=1.2,
            label=f"{self.dtype} compute peak {format_flops(self.compute_roof)}",
        )
        handles: list[Artist] = list(axes.get_legend_handles_labels()[0])
        handles.append(Line2D([], [], ls="none", marker="o", ms=4, color="0.3", label="ridge point (roof meets peak)"))
        ys = [p.attainable for p in self.points]
        colors = [LEVEL_COLORS.get(p.link, "black") for p in self.points]
        self.point_lines_: dict[str, Line2D] = {}
        for i, p in enumerate(self.points):
            where = LEVEL_NAMES.get(p.link, p.link)
            (self.point_lines_[p.name],) = axes.plot(
                [p.intensity],
                [p.attainable],
                ls="none",
                marker=POINT_MARKERS[i % len(POINT_MARKERS)],
                ms=7,
                color=colors[i],
                mec="black",
                mew=0.6,
                zorder=4,
                label=f"{p.name}: on {where}, {p.limiter}-bound, {format_flops(p.attainable)}",
            )
            handles.append(self.point_lines_[p.name])
        if self.skipped:
            handles.append(note_handle())
            handles[-1].set_label(f"not drawn (no network bytes): {', '.join(self.skipped)}")
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.set_xlim(x[0], x[-1])
        low = min([float(c[0]) for c in self.network_curves.values()] + [min(ys, default=self.compute_roof)])
        axes.set_ylim(low / 1.5, self.compute_roof * 2.5)
        number_axis(axes, "x")
        eng_axis(axes, "y", "FLOP/s")
        axes.set_xlabel("FLOP per network byte (on the kernel's busiest link class)")
        axes.set_ylabel("attainable FLOP/s per GPU (at the bound)")
        axes.set_title(f"{self.system}: communication-aware roofline ({self.dtype})", fontsize=9)
        axes.grid(True, which="major", alpha=0.3)
        legend_outside(axes, handles)
        return self
