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

from rooflib.plot._base import Display, byte_ticks
from rooflib.specs.resolve import System
from rooflib.transfer import MECHANISMS, Reduction, best_mechanism

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.collections import QuadMesh

__all__ = ["DEFAULT_MAP_SIZES", "MECHANISM_COLORS", "MechanismMapDisplay"]

DEFAULT_MAP_SIZES = np.exp2(np.arange(7, 31, dtype=np.float64))  # 128 B .. 1 GiB
MECHANISM_COLORS = {"copy_engine": "#4c72b0", "tma": "#55a868", "ldst": "#dd8452", "multimem": "#8172b3"}
MECHANISM_LABELS = {"copy_engine": "copy engine", "tma": "TMA", "ldst": "register ld/st", "multimem": "multimem"}


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
        size = DEFAULT_MAP_SIZES if sizes is None else np.asarray(sizes, dtype=np.float64)
        budget = np.arange(1, int(system.device.sms) + 1) if sms is None else np.asarray(sms, dtype=np.int64)
        best, t = best_mechanism(system, size[None, :], budget[:, None], reduction)
        return cls(system.name, size, budget, best, t, reduction=reduction).plot(ax=ax)

    def plot(self, ax: Axes | None = None) -> MechanismMapDisplay:
        from matplotlib.colors import BoundaryNorm, ListedColormap
        from matplotlib.patches import Patch

        axes = self._axes(ax)
        colors = [MECHANISM_COLORS[m] for m in self.mechanisms] or ["white"]
        cmap = ListedColormap(colors).with_extremes(under="white")
        norm = BoundaryNorm(np.arange(len(colors) + 1) - 0.5, len(colors))
        x = _edges(self.sizes, log=True)
        y = _edges(self.sms.astype(np.float64), log=False)
        self.mesh_: QuadMesh = axes.pcolormesh(x, y, self.codes, cmap=cmap, norm=norm, shading="flat")
        axes.set_xscale("log", base=2)
        byte_ticks(axes, float(self.sizes[0]), float(self.sizes[-1]), every=3)
        axes.set_xlim(x[0], x[-1])
        axes.set_ylim(y[0], y[-1])
        axes.set_xlabel("message size")
        axes.set_ylabel("SM budget for communication")
        what = "" if self.reduction == "none" else f", reduction: {self.reduction}"
        axes.set_title(f"{self.system}: fastest transfer mechanism{what}", fontsize=9)
        handles = [Patch(facecolor=MECHANISM_COLORS[m], label=MECHANISM_LABELS[m]) for m in self.mechanisms]
        axes.legend(handles=handles, fontsize=7, loc="upper left", framealpha=0.9)
        return self
