"""The distribution of available speed-up by category (ParallelKernelBench problems on one or more systems)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rooflib.plot._base import Display, NothingToPlotError, legend_outside

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["SpeedupByCategoryDisplay"]


@dataclass
class SpeedupByCategoryDisplay(Display):
    """Speed-ups (baseline over bound, or over the best plan) per category, one box per (category, system).

    ``values[system][category]`` lists the speed-ups of that category's problems on that system.
    """

    values: Mapping[str, Mapping[str, Sequence[float]]]
    label: str = "speed-up available (baseline / bound)"
    figsize: tuple[float, float] = (9.0, 4.5)
    categories: list[str] = field(default_factory=list)

    @classmethod
    def from_rows(
        cls, rows: Sequence[Mapping[str, Any]], key: str = "speedup_available", **kw: Any
    ) -> SpeedupByCategoryDisplay:
        """From ``rooflib.trace.pkb_table`` rows (each with ``system``, ``gpus``, ``category`` and ``key``)."""
        values: dict[str, dict[str, list[float]]] = {}
        for r in rows:
            v = r.get(key)
            if r.get("error") or v is None:
                continue
            values.setdefault(f"{r['system']} x{r['gpus']}", {}).setdefault(str(r["category"]), []).append(float(v))
        return cls(values, **kw)

    def plot(self, ax: Axes | None = None) -> SpeedupByCategoryDisplay:
        axes = self._axes(ax)
        systems = list(self.values)
        cats = self.categories or sorted({c for s in self.values.values() for c in s})
        if not systems or not cats:
            raise NothingToPlotError("no speed-ups to plot")
        width = 0.8 / len(systems)
        colors = [f"C{i}" for i in range(len(systems))]
        for j, system in enumerate(systems):
            data = [list(self.values[system].get(c, [])) or [float("nan")] for c in cats]
            pos = [i + (j - (len(systems) - 1) / 2) * width for i in range(len(cats))]
            box = axes.boxplot(data, positions=pos, widths=width * 0.9, patch_artist=True, showfliers=True)
            for patch in box["boxes"]:
                patch.set_facecolor(colors[j])
                patch.set_alpha(0.6)
            axes.plot([], [], color=colors[j], linewidth=6, alpha=0.6, label=system)
        axes.set_xticks(range(len(cats)), cats, rotation=30, ha="right")
        axes.set_yscale("log")
        axes.set_ylabel(self.label)
        axes.axhline(1.0, color="0.5", linewidth=0.8)
        legend_outside(axes)
        return self
