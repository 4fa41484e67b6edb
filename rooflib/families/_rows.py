"""Helpers shared by the family modules: rows as records, the report's curve and scatter figures."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from rooflib.validate.report import Validation

__all__ = ["curves", "records", "rows_of"]


def records(rows: pd.DataFrame) -> list[tuple[Any, dict[str, Any]]]:
    """``(index, row as a dict with str keys)`` for each row."""
    recs: list[dict[str, Any]] = [{str(k): v for k, v in r.items()} for r in rows.to_dict("records")]
    return list(zip(rows.index.tolist(), recs, strict=True))


def rows_of(v: Validation, family: str) -> pd.DataFrame:
    return v.rows[v.rows["family"] == family]


def curves(family: str, x: str, variant: str | None, ylabel: str) -> Callable[[Validation, Path], str | None]:
    """A report figure: bandwidth of ``family``'s rows against ``x`` (bytes or sms), one panel per name."""

    def draw(v: Validation, path: Path) -> str | None:
        from rooflib.plot.validation import MeasuredCurvesDisplay

        shown = MeasuredCurvesDisplay.from_rows(rows_of(v, family), v.models, x=x, ylabel=ylabel, variant=variant)
        if not shown.curves:
            return None
        return shown.savefig(path).name

    return draw
