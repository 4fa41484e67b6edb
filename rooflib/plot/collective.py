"""Collective bus bandwidth against message size, per algorithm or per system, with the raw link peak as a roof.

busbw follows nccl-tests (``doc/PERFORMANCE.md``): ``algbw = S / t``, ``busbw = algbw * factor(op, n)``; see
:mod:`rooflib.conventions`. The dashed roof is the raw per-direction link bandwidth that bounds busbw:
NVLink inside one domain, the node's NICs across domains (see :func:`peak_link_bandwidth`).

>>> from rooflib.plot import file_axes
>>> from rooflib.specs import load_system
>>> d = CollectiveBandwidthDisplay.from_system(load_system("hgx-h100"), "all_reduce", 8, ax=file_axes())
>>> d.peaks["nvls"] / 1e9
450.0
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from rooflib.collectives import ALGORITHMS_FOR, CollectiveResult, bandwidths, predict_collective
from rooflib.collectives.model import Launch
from rooflib.conventions import check_algorithm, check_op
from rooflib.errors import GroupError
from rooflib.plot._base import Display, byte_ticks, eng_axis
from rooflib.plot.roofline import LEVEL_NAMES
from rooflib.specs.resolve import System
from rooflib.topology import topology_of
from rooflib.units import format_bandwidth

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.lines import Line2D

__all__ = ["DEFAULT_SIZES", "CollectiveBandwidthDisplay", "peak_link_bandwidth"]

FloatArray = npt.NDArray[np.float64]
DEFAULT_SIZES: FloatArray = np.exp2(np.arange(10, 31, dtype=np.float64))  # 1 KiB .. 1 GiB


def peak_link_bandwidth(system: System, gpus: int | Iterable[int] | None = None) -> tuple[str, float]:
    """``(link class, B/s)``: the raw per-direction peak that bounds the group's busbw.

    Inside one NVLink domain it is the GPU's NVLink bandwidth. Across domains, NCCL runs one ring channel per
    rail-optimised NIC, so busbw is bounded by the node's total NIC bandwidth (capped by NVLink), not by one
    GPU's share of a NIC.
    """
    members = system.group(gpus)
    egress = topology_of(system).egress(members[0])
    domains = {g // system.domain_gpus for g in members}
    if len(domains) > 1 and "ib" in egress:
        return "ib", min(egress["nvlink"], egress["ib"] * system.gpus_per_node)
    return "nvlink", egress["nvlink"]


class CollectiveBandwidthDisplay(Display):
    """busbw curves sharing one size axis.

    Attributes: ``op``, ``sizes`` (bytes), ``busbw`` (label -> B/s per size), ``time_s`` (label -> s),
    ``chosen`` (label -> algorithm picked at each size), ``peaks`` (label -> raw link B/s), ``peak_links``
    (label -> link class), ``gpus`` (label -> group size), ``not_applicable`` (label -> reason).
    After :meth:`plot`: ``lines_`` and ``peak_lines_`` (label -> Line2D).
    """

    def __init__(
        self,
        op: str,
        sizes: npt.ArrayLike,
        busbw: Mapping[str, npt.ArrayLike],
        *,
        time_s: Mapping[str, npt.ArrayLike] | None = None,
        chosen: Mapping[str, Sequence[str]] | None = None,
        peaks: Mapping[str, float] | None = None,
        peak_links: Mapping[str, str] | None = None,
        gpus: Mapping[str, int] | None = None,
        not_applicable: Mapping[str, str] | None = None,
        title: str = "",
    ) -> None:
        self.op = check_op(op)
        self.sizes: FloatArray = np.asarray(sizes, dtype=np.float64)
        self.busbw = {k: np.asarray(v, dtype=np.float64) for k, v in busbw.items()}
        self.time_s = {k: np.asarray(v, dtype=np.float64) for k, v in (time_s or {}).items()}
        self.chosen = {k: list(v) for k, v in (chosen or {}).items()}
        self.peaks = dict(peaks or {})
        self.peak_links = dict(peak_links or {})
        self.gpus = dict(gpus or {})
        self.not_applicable = dict(not_applicable or {})
        self.title = title

    @classmethod
    def from_prediction(
        cls, result: CollectiveResult, *, peak: tuple[str, float] | None = None, ax: Axes | None = None
    ) -> CollectiveBandwidthDisplay:
        """Every candidate algorithm of ``result`` plus the fastest ("auto"); ``peak`` = (link class, B/s)."""
        curves, times = {}, {}
        for alg, t in result.candidates.items():
            times[alg] = t
            curves[alg] = bandwidths(result.op, result.gpus, result.nbytes, t)[1]
        times["auto"], curves["auto"] = result.time_s, result.busbw
        labels = list(curves)
        return cls(
            result.op,
            result.nbytes,
            curves,
            time_s=times,
            chosen={"auto": result.algorithm},
            peaks=dict.fromkeys(labels, peak[1]) if peak else None,
            peak_links=dict.fromkeys(labels, peak[0]) if peak else None,
            gpus=dict.fromkeys(labels, result.gpus),
            not_applicable=result.not_applicable,
            title=f"{result.system}: {result.op} on {result.gpus} GPUs",
        ).plot(ax=ax)

    @classmethod
    def from_system(
        cls,
        system: System,
        op: str,
        gpus: int | Iterable[int] | None = None,
        *,
        algorithms: Iterable[str] | None = None,
        sizes: npt.ArrayLike | None = None,
        launch: Launch = "stream",
        ax: Axes | None = None,
    ) -> CollectiveBandwidthDisplay:
        """One curve per algorithm (default: every algorithm that can run ``op`` on the group)."""
        the_op = check_op(op)
        grid = DEFAULT_SIZES if sizes is None else np.asarray(sizes, dtype=np.float64)
        names = list(ALGORITHMS_FOR[the_op]) if algorithms is None else [check_algorithm(a) for a in algorithms]
        try:
            auto: CollectiveResult | None = predict_collective(the_op, system, nbytes=grid, gpus=gpus, launch=launch)
        except GroupError:
            auto = None
        times: dict[str, FloatArray] = {}
        reasons: dict[str, str] = {}
        for alg in names:
            if auto is not None and alg in auto.candidates:
                times[alg] = auto.candidates[alg]
            elif auto is not None and alg in auto.not_applicable:
                reasons[alg] = auto.not_applicable[alg]
            else:
                try:
                    times[alg] = predict_collective(
                        the_op, system, nbytes=grid, gpus=gpus, algorithm=alg, launch=launch
                    ).time_s
                except GroupError as exc:
                    reasons[alg] = str(exc)
        if not times:
            raise GroupError(f"no algorithm in {names} can run {the_op} on {system.name}: {reasons}")
        link, peak = peak_link_bandwidth(system, gpus)
        n = len(system.group(gpus))
        return cls(
            the_op,
            grid,
            {k: bandwidths(the_op, n, grid, t)[1] for k, t in times.items()},
            time_s=times,
            chosen={k: [k] * grid.size for k in times},
            peaks=dict.fromkeys(times, peak),
            peak_links=dict.fromkeys(times, link),
            gpus=dict.fromkeys(times, n),
            not_applicable=reasons,
            title=f"{system.name}: {the_op} on {n} GPUs",
        ).plot(ax=ax)

    @classmethod
    def from_systems(
        cls,
        systems: Sequence[System],
        op: str,
        gpus: int | None = None,
        *,
        algorithm: str = "auto",
        sizes: npt.ArrayLike | None = None,
        launch: Launch = "stream",
        ax: Axes | None = None,
    ) -> CollectiveBandwidthDisplay:
        """One curve per system (``gpus``: the first n GPUs of each, default all), each with its own peak."""
        the_op = check_op(op)
        grid = DEFAULT_SIZES if sizes is None else np.asarray(sizes, dtype=np.float64)
        data: dict[str, CollectiveResult] = {}
        peaks: dict[str, tuple[str, float]] = {}
        for system in systems:
            label = system.name if system.name not in data else f"{system.name} ({system.gpus} GPUs)"
            data[label] = predict_collective(the_op, system, nbytes=grid, gpus=gpus, algorithm=algorithm, launch=launch)
            peaks[label] = peak_link_bandwidth(system, gpus)
        return cls(
            the_op,
            grid,
            {k: r.busbw for k, r in data.items()},
            time_s={k: r.time_s for k, r in data.items()},
            chosen={k: r.algorithm for k, r in data.items()},
            peaks={k: v[1] for k, v in peaks.items()},
            peak_links={k: v[0] for k, v in peaks.items()},
            gpus={k: r.gpus for k, r in data.items()},
            title=f"{the_op}, algorithm {algorithm}" + (f", {gpus} GPUs" if gpus else ""),
        ).plot(ax=ax)

    def plot(self, ax: Axes | None = None) -> CollectiveBandwidthDisplay:
        axes = self._axes(ax)
        self.lines_: dict[str, Line2D] = {}
        self.peak_lines_: dict[str, Line2D] = {}
        x = self.sizes
        multi_gpus = len(set(self.gpus.values())) > 1
        for label, bw in self.busbw.items():
            gpus = self.gpus.get(label)
            suffix = f" ({gpus} GPUs)" if gpus and multi_gpus else ""
            (self.lines_[label],) = axes.plot(x, bw, marker=".", lw=1.5, label=f"{label}{suffix}")
        drawn: dict[tuple[str, float], Line2D] = {}
        own_colors = len(set(self.peaks.values())) > 1
        for label, peak in self.peaks.items():
            key = (self.peak_links.get(label, "link"), peak)
            if key not in drawn:  # several curves may share one roof
                color = self.lines_[label].get_color() if own_colors and label in self.lines_ else "black"
                name = LEVEL_NAMES.get(key[0], key[0])
                (drawn[key],) = axes.plot(
                    [x[0], x[-1]],
                    [peak, peak],
                    ls="--",
                    lw=1.0,
                    color=color,
                    label=f"{name} peak {format_bandwidth(peak)}",
                )
            self.peak_lines_[label] = drawn[key]
        axes.set_xscale("log", base=2)
        byte_ticks(axes, float(x[0]), float(x[-1]))
        eng_axis(axes, "y", "B/s")
        axes.set_ylim(bottom=0)
        axes.set_xlabel("message size (nccl-tests S)")
        axes.set_ylabel("bus bandwidth")
        axes.set_title(self.title or self.op, fontsize=9)
        axes.grid(True, alpha=0.3)
        axes.legend(fontsize=7, loc="upper left")
        return self
