"""Flatten a spec model into rows of (field, SI value, readable text, source) for ``rooflib show``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from pydantic import BaseModel

from rooflib.specs.figures import (
    Bandwidth,
    Bytes,
    Count,
    Duration,
    Figure,
    FlopRate,
    Fraction,
    Frequency,
    SizeCurve,
)
from rooflib.units import format_bandwidth, format_bytes, format_flops, format_time

__all__ = ["FigureRow", "calibrated_rows", "figure_rows", "figures_json", "format_figure"]

_SKIP = {"kind", "name", "display_name", "description", "sources", "source", "note"}


class FigureRow(NamedTuple):
    field: str
    value: Any  # SI number, text, or [[bytes, efficiency], ...] for a size curve
    text: str
    source: str | None


def format_figure(fig: Figure) -> str:
    """A figure as text with its unit (``450 GB/s``, ``80 GiB``, ``1.5 us``, ``0.82``)."""
    v = fig.value
    if isinstance(fig, Bytes):
        return format_bytes(v)
    if isinstance(fig, Bandwidth):
        return format_bandwidth(v)
    if isinstance(fig, FlopRate):
        return format_flops(v)
    if isinstance(fig, Duration):
        return format_time(v) if v else "0 s"
    if isinstance(fig, Frequency):
        return f"{v / 1e9:.3g} GHz"
    if isinstance(fig, Count):
        return str(int(v))
    if isinstance(fig, Fraction):
        return f"{v:.3g}"
    return f"{v:.4g}"


def figure_rows(model: BaseModel, prefix: str = "") -> list[FigureRow]:
    """Every figure, size curve and plain setting of ``model``, depth first, with dotted field names."""
    rows: list[FigureRow] = []
    for name in type(model).model_fields:
        value = getattr(model, name)
        if value is None or name in _SKIP:
            continue
        where = f"{prefix}.{name}" if prefix else name
        if isinstance(value, dict):
            for key, item in value.items():
                rows.extend(_value_rows(f"{where}.{key}", str(key), item))
        else:
            rows.extend(_value_rows(where, name, value))
    return rows


def _value_rows(where: str, name: str, value: object) -> list[FigureRow]:
    if isinstance(value, Figure):
        return [FigureRow(where, value.value, format_figure(value), value.source)]
    if isinstance(value, SizeCurve):
        text = ", ".join(f"{format_bytes(s)}: {e:.2f}" for s, e in value.points)
        return [FigureRow(where, [list(p) for p in value.points], text, value.source)]
    if isinstance(value, BaseModel):
        return figure_rows(value, where)
    if isinstance(value, int | float) and not isinstance(value, bool) and name.endswith("bytes"):
        return [FigureRow(where, value, format_bytes(value), None)]
    if isinstance(value, tuple):
        return [FigureRow(where, list(value), ", ".join(map(str, value)), None)]
    return [FigureRow(where, value, str(value), None)]


def figures_json(model: BaseModel) -> dict[str, dict[str, Any]]:
    """``{field: {value, text, source}}`` for JSON output."""
    return {r.field: {"value": r.value, "text": r.text, "source": r.source} for r in figure_rows(model)}


def calibrated_rows(
    catalog: Mapping[str, BaseModel], calibrated: Mapping[str, BaseModel]
) -> list[tuple[str, FigureRow, FigureRow]]:
    """``(role.field, catalog row, calibrated row)`` for every figure a profile changed (value or source).

    ``catalog`` and ``calibrated`` map a role (device, nvlink, library, ...) to the same item resolved without
    and with the profile; a field the catalog lacks is compared against an empty row.
    """
    out = []
    for role, model in calibrated.items():
        before = {r.field: r for r in figure_rows(catalog[role])} if role in catalog else {}
        for row in figure_rows(model):
            old = before.get(row.field, FigureRow(row.field, None, "-", None))
            if old.value != row.value or old.source != row.source:
                out.append((f"{role}.{row.field}", old, row))
    return out
