"""Rows the models cannot take, found before any prediction so that the error names the row, not an array.

A p2p row run on more SMs than the system's GPU has, a GEMM row without a whole positive shape, a collective
row on fewer than one GPU: each would stop a model with a message about a whole array of inputs. Here the first
such row is refused naming the file, line, column and value; with ``force`` (measurements of another GPU
model, used on purpose) such rows are left out with a :class:`~rooflib.calibrate.checks.MeasurementWarning`.
Each family declares its own checks (``Family.checks`` in :mod:`rooflib.families`).
"""

from __future__ import annotations

import warnings

import pandas as pd

from rooflib.bench.records import MeasurementError, shown
from rooflib.calibrate.checks import MeasurementWarning
from rooflib.families.registry import row_checks
from rooflib.specs.resolve import System

__all__ = ["check_rows"]


def _problems(frame: pd.DataFrame, system: System) -> list[tuple[pd.Series, str, str]]:
    """(rows, column, why) for each kind of row the models cannot take: every family's own checks."""
    return row_checks(frame, system)


def check_rows(frame: pd.DataFrame, system: System, *, force: bool = False) -> pd.DataFrame:
    """``frame`` without the rows the models cannot take for ``system`` (only with ``force``; else an error)."""
    source = str(frame.attrs.get("source", "results"))
    drop = pd.Series(False, index=frame.index)
    for bad, col, why in _problems(frame, system):
        if not bad.any():
            continue
        pos = int(bad.to_numpy().nonzero()[0][0])
        first = frame.index[pos]
        line = int(frame["_line"].to_numpy()[pos]) if "_line" in frame else None
        if not force:
            raise MeasurementError(source, why, line=line, field=col, value=frame.at[first, col])
        warnings.warn(
            f"{source}: {int(bad.sum())} rows left out (first: line {line}, {col} = {shown(frame.at[first, col])}): "
            + why,
            MeasurementWarning,
            stacklevel=3,
        )
        drop |= bad
    if not drop.any():
        return frame
    kept = frame[~drop].copy()
    kept.attrs = dict(frame.attrs)
    return kept
