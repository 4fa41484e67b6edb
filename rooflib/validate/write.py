"""Writing a validation: ``errors.csv``, ``predictions.csv``, plots and a ``REPORT.md`` that links them.

The figures and the sections after the error table are the families' own (``display`` and ``section`` in
:mod:`rooflib.families`), drawn with the Display objects of :mod:`rooflib.plot.validation`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from rooflib.families.registry import figures, with_part

if TYPE_CHECKING:
    from rooflib.validate.report import Validation

__all__ = ["write_report"]


def _markdown_table(frame: pd.DataFrame) -> str:
    cols = list(frame.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in frame.itertuples(index=False):
        cells = [
            f"{c:.1f}" if isinstance(c, float) and not math.isnan(c) else ("-" if isinstance(c, float) else str(c))
            for c in row
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _sections(v: Validation, out: Path, plots: bool) -> list[str]:
    """Every comparison table as ``<name>.csv``, then each family's section (overlap schedules, tensor-parallel
    ops), in registry order."""
    for name, table in v.tables.items():
        table.to_csv(out / f"{name}.csv", index=False)
    return [line for fam in with_part("section") for line in fam.section(v, out, plots)]  # type: ignore[operator]


def write_report(
    v: Validation, out: Path, *, system: str, results: Path, profile: str | Path | None, plots: bool = True
) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    v.errors.to_csv(out / "errors.csv", index=False)
    keep = [
        c
        for c in ("family", "name", "variant", "gpus", "bytes", "sms", "time_s", *[f"pred_{m}" for m in v.models])
        if c in v.rows
    ]
    v.rows[keep].to_csv(out / "predictions.csv", index=False)
    drawn: list[str] = []
    if plots:
        for figure in figures():
            made = figure.draw(v, out / figure.file)
            if made:
                drawn.append(made)
    table = "(no rows with a model)"
    if not v.errors.empty:
        wide = v.errors.pivot_table(
            index=["family", "name", "variant"], columns="model", values=["median_abs_pct", "max_abs_pct_above_1MiB"]
        )
        wide.columns = [f"{col[0]} ({col[1]})" for col in wide.columns.tolist()]
        table = _markdown_table(wide.reset_index())
    text = [
        f"# Validation: {system}",
        "",
        f"Measurements: `{results}`. Models: {', '.join(v.models)}"
        + (f" (profile `{profile}`)" if profile else "")
        + ". Errors are absolute percentages of the measured time; 'above 1 MiB' keeps sizes over 1 MiB.",
        "",
        table,
        "",
        *[f"![{f}]({f})" for f in drawn],
        "",
    ]
    text += _sections(v, out, plots)
    (out / "REPORT.md").write_text("\n".join(text))
    return out / "REPORT.md"
