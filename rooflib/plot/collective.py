"""Collective bus bandwidth against message size, per algorithm or per system, with the raw link peak as a roof.

busbw follows nccl-tests (``doc/PERFORMANCE.md``): ``algbw = S / t``, ``busbw = algbw * factor(op, n)``; see
:mod:`rooflib.conventions`. The dashed roof is the raw per-direction link bandwidth that bounds busbw:
NVLink inside one domain, the node's NICs across domains (see :func:`peak_link_bandwidth`). NVLS reduces inside
the NVSwitch, so each GPU sends and receives S once instead of 2(n-1)/n S: its all-reduce busbw can exceed the
link peak, and the legend says so. A curve drawn over an earlier one is named in the legend ("overlaps ...").

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
from rooflib.plot._base import Display, byte_ticks, eng_axis, finite, legend_outside, note_handle
from rooflib.plot.roofline import LEVEL_NAMES
from rooflib.specs.resolve import System
from rooflib.topology import topology_of
from rooflib.units import format_bandwidth

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.lines import Line2D

__all__ = ["DEFAULT_SIZES", "CollectiveBandwidthDisplay", "group_text", "is_nvls", "nvls_note", "peak_link_bandwidth"]

FloatArray = npt.NDArray[np.float64]
DEFAULT_SIZES: FloatArray = np.exp2(np.arange(10, 31, dtype=np.float64))  # 1 KiB .. 1 GiB
MARKERS = ("o", "s", "^", "v", "D", "<", ">", "P", "X", "h")
REDUCING_OPS = ("all_reduce", "reduce_scatter", "reduce")
OVERLAP = 0.005  # curves closer than this share of the axis height at every size look like one: the legend says so
PEAK_WHAT = {"nvlink": "per GPU", "ib": "(all NICs of one NVLink domain)"}


def peak_link_bandwidth(system: System, gpus: int | Iterable[int] | None = None) -> tuple[str, float]:
    """``(link class, B/s)``: the raw per-direction peak that bounds the group's busbw.

    Inside one NVLink domain it is the GPU's NVLink bandwidth. Across domains, NCCL runs one channel per
    rail-optimised NIC, and the GPUs of a domain share its NICs over NVLink, so busbw is bounded by the total NIC
    bandwidth of one NVLink domain (8 NICs of a DGX H100 node; 72 of an NVL72 rack), not by one GPU's share of a
    NIC; NVLink bounds it where that is lower (then the link class is ``"nvlink"``).
    """
    members = system.group(gpus)
    egress = topology_of(system).egress(members[0])
    domains = {g // system.domain_gpus for g in members}
    if len(domains) > 1 and "ib" in egress and egress["ib"] * system.domain_gpus < egress["nvlink"]:
        return "ib", egress["ib"] * system.domain_gpus
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
        disp = cls.compute(system, op, gpus, algorithms=algorithms, sizes=sizes, launch=launch)
        return disp.plot(ax=ax)

    @classmethod
    def compute(
        cls,
        system: System,
        op: str,
        gpus: int | Iterable[int] | None = None,
        *,
        algorithms: Iterable[str] | None = None,
        sizes: npt.ArrayLike | None = None,
        launch: Launch = "stream",
    ) -> CollectiveBandwidthDisplay:
        """The data of :meth:`from_system`, not yet plotted."""
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
        n = len(system.group(gpus))
        if not times:
            raise _no_algorithm(the_op, n, system, reasons)
        link, peak = peak_link_bandwidth(system, gpus)
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
            title=f"{system.name}: {the_op} on {group_text(system, gpus)}",
        )

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
        from matplotlib.lines import Line2D

        axes = self._axes(ax)
        self.lines_: dict[str, Line2D] = {}
        self.peak_lines_: dict[str, Line2D] = {}
        x = self.sizes
        note = nvls_note(self.op)
        starred = False
        tops = finite([*self.peaks.values(), *(float(np.nanmax(b)) for b in self.busbw.values() if b.size)])
        top = max(tops, default=1.0) * 1.08
        for i, (label, bw) in enumerate(self.busbw.items()):
            nvls = self._nvls_mask(label)
            text = self._curve_label(label, bool(nvls.size and nvls.all()), note, top)
            (line,) = axes.plot(x, bw, marker=MARKERS[i % len(MARKERS)], ms=4, mfc="none", lw=1.5, label=text)
            self.lines_[label] = line
            if nvls.any() and not nvls.all():  # the fastest algorithm switches to NVLS at some sizes
                axes.plot(x[nvls], bw[nvls], ls="none", marker="*", ms=8, color=line.get_color(), zorder=3)
                starred = True
        shared: dict[tuple[str, float], list[str]] = {}
        for label, peak in self.peaks.items():
            shared.setdefault((self.peak_links.get(label, "link"), peak), []).append(label)
        own_colors = len(shared) > 1
        for (link, peak), labels in shared.items():  # several curves may share one roof
            color = self.lines_[labels[0]].get_color() if own_colors and labels[0] in self.lines_ else "black"
            name = f"{LEVEL_NAMES[link]} link" if link in LEVEL_NAMES else "link"
            text = f"{name} peak {format_bandwidth(peak)} {PEAK_WHAT.get(link, '')}"
            text = text.rstrip() + (": " + ", ".join(labels) if own_colors else "")
            (line,) = axes.plot([x[0], x[-1]], [peak, peak], ls="--", lw=1.0, color=color, label=text)
            self.peak_lines_.update(dict.fromkeys(labels, line))
        handles, _ = axes.get_legend_handles_labels()
        if starred:
            handles.append(Line2D([], [], ls="none", marker="*", ms=8, color="0.35", label=f"NVLS chosen ({note})"))
        if self.not_applicable:
            handles.append(note_handle())
            handles[-1].set_label(f"not applicable here: {', '.join(self.not_applicable)}")
        axes.set_xscale("log", base=2)
        byte_ticks(axes, float(x[0]), float(x[-1]))
        eng_axis(axes, "y", "B/s")
        axes.set_ylim(0, top)
        axes.set_xlabel("message size S (nccl-tests)")
        axes.set_ylabel("bus bandwidth (nccl-tests busbw)")
        axes.set_title(self.title or self.op, fontsize=9)
        axes.grid(True, alpha=0.3)
        legend_outside(axes, handles)
        return self

    def _nvls_mask(self, label: str) -> npt.NDArray[np.bool_]:
        chosen = self.chosen.get(label, [])
        if len(chosen) != self.sizes.size:
            return np.zeros(0, dtype=bool)
        return np.array([is_nvls(a) for a in chosen], dtype=bool)

    def _curve_label(self, label: str, all_nvls: bool, note: str, top: float) -> str:
        """The legend text of one curve: GPU count when they differ, the NVLS note, and the earlier curve it
        hides (within :data:`OVERLAP` of the axis height ``top`` at every size)."""
        text = label
        gpus = self.gpus.get(label)
        if gpus and len(set(self.gpus.values())) > 1 and f"{gpus} GPUs" not in label:
            text += f" ({gpus} GPUs)"
        if all_nvls:
            text += f" ({note})" if is_nvls(label) else f" (NVLS, {note})"
        bw = self.busbw[label]
        for other, obw in self.busbw.items():
            if other == label:
                break
            if obw.shape == bw.shape and np.allclose(obw, bw, rtol=0.0, atol=OVERLAP * top, equal_nan=True):
                return f"{text} (overlaps {other})"
        return text


def is_nvls(algorithm: str) -> bool:
    """NVLS algorithms (``nvls``, ``nvls_tree``, ...): they reduce inside the NVSwitch."""
    return algorithm.startswith("nvls")


def nvls_note(op: str) -> str:
    """Legend note on NVLS curves: in-switch reduction can lift busbw above the link for reducing collectives."""
    return "in-switch reduction: busbw can exceed the link" if op in REDUCING_OPS else "NVSwitch multicast"


def group_text(system: System, gpus: int | Iterable[int] | None = None) -> str:
    """Where a group lies: ``"8 GPUs, one NVLink domain"``, ``"64 GPUs, 8 NVLink domains of 8 over InfiniBand NDR"``."""
    members = system.group(gpus)
    domains = len({g // system.domain_gpus for g in members})
    n = len(members)
    if domains == 1:
        return f"{n} GPUs, one NVLink domain"
    fabric = f" over {system.nic.display_name}" if system.nic is not None else ""
    return f"{n} GPUs, {domains} NVLink domains of {system.domain_gpus}{fabric}"


def _no_algorithm(op: str, n: int, system: System, reasons: Mapping[str, str]) -> GroupError:
    """One line naming every algorithm that cannot run, grouped by reason."""
    by_reason: dict[str, list[str]] = {}
    for alg, text in reasons.items():
        cut = text.find(f"{alg}: ")
        by_reason.setdefault(text[cut + len(alg) + 2 :] if cut >= 0 else text, []).append(alg)
    detail = "; ".join(f"{', '.join(algs)}: {why}" for why, algs in by_reason.items())
    return GroupError(f"no algorithm can run {op} on {n} GPUs of {system.name}: {detail}")
