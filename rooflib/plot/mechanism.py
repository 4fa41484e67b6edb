"""Which transfer mechanism wins at each (message size, SM budget): a categorical map from best_mechanism().

Sizes run over powers of two (default 128 B .. 1 GiB), budgets from 1 SM to all SMs. Each cell is coloured by
the fastest mechanism (ParallelKittens, section 3: copy engine for large contiguous messages with no SMs, TMA
with few SMs, register ld/st at small sizes, multimem for in-switch reduction).

>>> from rooflib.plot import file_axes
>>> from rooflib.specs import load_system
>>> d = MechanismMapDisplay.from_system(load_system("hgx-h100"), ax=file_axes())
>>> d.best.shape == (d.sms.size, d.sizes.size)
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from rooflib.plot._base import Display, NothingToPlotError, byte_ticks, legend_outside
from rooflib.specs.resolve import System
from rooflib.transfer import MECHANISMS, Reduction, available_mechanisms, best_mechanism

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.collections import QuadMesh

__all__ = ["DEFAULT_MAP_SIZES", "MECHANISM_COLORS", "MechanismMapDisplay", "mechanism_color", "why_no_mechanism"]

DEFAULT_MAP_SIZES = np.exp2(np.arange(7, 31, dtype=np.float64))  # 128 B .. 1 GiB
MECHANISM_COLORS = {
    "copy_engine": "#4c72b0",
    "tma": "#55a868",
    "ldst": "#dd8452",
    "multimem": "#8172b3",
    "rdma_proxy": "#c44e52",
    "rdma_gpu": "#937860",
}
MECHANISM_LABELS = {
    "copy_engine": "copy engine",
    "tma": "TMA",
    "ldst": "register ld/st",
    "multimem": "multimem (NVLS)",
    "rdma_proxy": "RDMA (CPU proxy)",
    "rdma_gpu": "RDMA (GPU-initiated)",
}
_SPARE_COLORS = ("#da8bc3", "#8c8c8c", "#ccb974", "#64b5cd")
WHAT_REDUCTION = {"none": "move the data", "peer": "add into peer memory", "switch": "reduce in the switch"}


def mechanism_color(mech: str) -> str:
    """A fixed colour per mechanism (mechanisms added later get spare colours in a fixed order)."""
    if mech in MECHANISM_COLORS:
        return MECHANISM_COLORS[mech]
    extra = [m for m in MECHANISMS if m not in MECHANISM_COLORS]
    return _SPARE_COLORS[extra.index(mech) % len(_SPARE_COLORS)] if mech in extra else "0.5"


def why_no_mechanism(system: System, reduction: Reduction) -> str:
    """Why no mechanism of ``system`` can do ``reduction`` between two GPUs of one NVLink domain."""
    if reduction == "switch" and not system.switch.in_network_reduction:
        return f"{system.switch.display_name} has no in-network reduction (NVLS needs it); try reduction peer or none"
    if reduction == "switch":
        return f"{system.device.display_name} has no multimem mechanism; try reduction peer or none"
    if reduction == "peer":
        return f"{system.device.display_name} has no mechanism that adds into peer memory; try reduction none"
    return f"{system.device.display_name} has no transfer mechanism in the catalog"


def _edges(centres: npt.NDArray[np.float64], log: bool) -> npt.NDArray[np.float64]:
    """Cell edges around ``centres`` (geometric midpoints on a log axis)."""
    c = np.log2(centres) if log else centres
    if c.size == 1:
        mid = np.array([c[0] - 0.5, c[0] + 0.5])
    else:
        inner = (c[:-1] + c[1:]) / 2
        mid = np.concatenate([[c[0] - (inner[0] - c[0])], inner, [c[-1] + (c[-1] - inner[-1])]])
    return np.asarray(2.0**mid if log else mid, dtype=np.float64)


class MechanismMapDisplay(Display):
    """Best mechanism and its time on a (SM budget x size) grid.

    Attributes: ``sizes`` (bytes), ``sms`` (budgets), ``best`` (str array, shape ``(sms, sizes)``), ``time_s``,
    ``mechanisms`` (the categories, in :data:`rooflib.transfer.MECHANISMS` order), ``codes`` (int array indexing
    ``mechanisms``; -1 where none can run). After :meth:`plot`: ``mesh_`` (QuadMesh).
    """

    def __init__(
        self,
        system: str,
        sizes: npt.ArrayLike,
        sms: npt.ArrayLike,
        best: npt.ArrayLike,
        time_s: npt.ArrayLike,
        *,
        reduction: Reduction = "none",
    ) -> None:
        self.system = system
        self.reduction = reduction
        self.sizes = np.asarray(sizes, dtype=np.float64)
        self.sms = np.asarray(sms, dtype=np.int64)
        self.best = np.asarray(best, dtype=str)
        self.time_s = np.asarray(time_s, dtype=np.float64)
        self.mechanisms = [m for m in MECHANISMS if m in set(self.best.ravel().tolist())]
        index = {m: i for i, m in enumerate(self.mechanisms)}
        self.codes = np.vectorize(lambda m: index.get(m, -1), otypes=[np.int64])(self.best)

    @classmethod
    def from_system(
        cls,
        system: System,
        *,
        sizes: npt.ArrayLike | None = None,
        sms: npt.ArrayLike | None = None,
        reduction: Reduction = "none",
        ax: Axes | None = None,
    ) -> MechanismMapDisplay:
        """Evaluate :func:`rooflib.transfer.best_mechanism` on the grid (default 128 B..1 GiB x 1..all SMs)."""
        if not available_mechanisms(system, reduction):
            what = WHAT_REDUCTION[reduction]
            raise NothingToPlotError(
                f"{system.name}: no transfer mechanism can {what}: {why_no_mechanism(system, reduction)}"
            )
        size = DEFAULT_MAP_SIZES if sizes is None else np.asarray(sizes, dtype=np.float64)
        budget = np.arange(1, int(system.device.sms) + 1) if sms is None else np.asarray(sms, dtype=np.int64)
        best, t = best_mechanism(system, size[None, :], budget[:, None], reduction)
        return cls(system.name, size, budget, best, t, reduction=reduction).plot(ax=ax)

    def plot(self, ax: Axes | None = None) -> MechanismMapDisplay:
        from matplotlib.colors import BoundaryNorm, ListedColormap
        from matplotlib.patches import Patch

        if not self.mechanisms:
            raise NothingToPlotError(
                f"{self.system}: no mechanism can run at any point of the grid (SM budgets "
                f"{int(self.sms.min(initial=0))}..{int(self.sms.max(initial=0))}, reduction {self.reduction})"
            )
        axes = self._axes(ax)
        colors = [mechanism_color(m) for m in self.mechanisms]
        cmap = ListedColormap(colors).with_extremes(under="white")
        norm = BoundaryNorm(np.arange(len(colors) + 1) - 0.5, len(colors))
        x = _edges(self.sizes, log=True)
        y = _edges(self.sms.astype(np.float64), log=False)
        self.mesh_: QuadMesh = axes.pcolormesh(x, y, self.codes, cmap=cmap, norm=norm, shading="flat")
        axes.set_xscale("log", base=2)
        byte_ticks(axes, float(self.sizes[0]), float(self.sizes[-1]), every=3)
        axes.set_xlim(x[0], x[-1])
        axes.set_ylim(y[0], y[-1])
        axes.set_xlabel("message size (one peer transfer inside the NVLink domain)")
        axes.set_ylabel("SM budget for communication (SMs)")
        what = "" if self.reduction == "none" else f", reduction: {self.reduction}"
        axes.set_title(f"{self.system}: fastest transfer mechanism{what}", fontsize=9)
        handles = [Patch(facecolor=mechanism_color(m), label=MECHANISM_LABELS.get(m, m)) for m in self.mechanisms]
        if (self.codes < 0).any():
            handles.append(Patch(facecolor="white", edgecolor="0.6", label="none can run"))
        legend_outside(axes, list(handles), title="fastest", title_fontsize=7)
        return self
