"""Reading ``results.csv`` strictly: a problem is refused with the file, the line, the column and the value.

Checked before anything is fitted or predicted:

- the table is whole: every row has the header's number of cells and the file ends with a newline (the runner
  always writes one; a file without it was cut off);
- no column name appears twice, and a ``family`` (or ``program``) column exists;
- numeric columns hold numbers (empty cells allowed): finite, sizes and counts >= 0, times > 0;
- ``verified`` holds True/False (or 1/0, empty);
- no row is an exact copy of another (a duplicated measurement);
- every measurement row (all but ``compute_rate``) has a time: ``time_s``, ``time_s_median`` or
  ``one_way_ns_median``.

Line numbers are the file's (the header is line 1). :func:`read_results` returns the table with an integer
``_line`` column holding each row's line.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import numpy as np
import pandas as pd

from rooflib.bench.records import MeasurementError

__all__ = ["NUMERIC", "TIME_COLUMNS", "read_results"]

TIME_COLUMNS = ("time_s", "time_s_median", "one_way_ns_median")
_COUNTS = ("bytes", "sms", "gpus", "m", "n", "k", "flops", "bytes_moved", "iters", "comm_sms", "tiles", "tile_bytes")
_RATES = ("bytes_per_s", "flops_per_s", "bytes_per_s_per_sm", "algbw_bytes_per_s", "busbw_bytes_per_s")
_OTHER = ("ce_chunk", "input_blocks", "reuse", "trip_s", "tile_overhead_s", "intercept_s", "flops_per_tile")
_MORE = ("blocks", "depth", "in_flight_bytes", "time_s_fastest_gpu")
NUMERIC = (*TIME_COLUMNS, *_COUNTS, *_RATES, *_OTHER, *_MORE)
"""Columns that calibration or validation reads as numbers."""
_POSITIVE = (*TIME_COLUMNS, "time_s_fastest_gpu")
_SIGNED = ("trip_s", "tile_overhead_s", "intercept_s")  # fitted by the overlap program: finite is all
_TRUE = {"true", "1", "1.0", "yes"}
_FALSE = {"false", "0", "0.0", "no"}


def _rows(path: Path, text: str) -> tuple[list[str], list[int]]:
    """The header and the line where each data row starts; refuses rows of the wrong width and a cut end."""
    whole = text.endswith(("\n", "\r"))
    total = text.count("\n") + (0 if whole else 1)
    reader = csv.reader(io.StringIO(text, newline=""))
    header: list[str] | None = None
    starts: list[int] = []
    end = 0
    for row in reader:
        start, end = end + 1, reader.line_num
        if not row:
            continue
        if header is None:
            header = row
            continue
        if len(row) != len(header):
            cut = (
                " (the last row, and the file ends without a newline: it was cut off)"
                if end >= total and not whole
                else ""
            )
            raise MeasurementError(path, f"{len(row)} cells where the header has {len(header)}{cut}", line=start)
        starts.append(start)
    if header is None:
        raise MeasurementError(path, "no measurements in it (empty file)")
    if not whole:
        raise MeasurementError(
            path,
            "the file does not end with a newline, so its last row may be cut off (rooflib writes whole files; "
            "rerun `rooflib bench` on the folder, or add the newline if the row is complete)",
            line=starts[-1] if starts else 1,
        )
    return header, starts


def _number_checks(path: Path, frame: pd.DataFrame, lines: list[int]) -> None:
    for col in [c for c in NUMERIC if c in frame]:
        raw = frame[col]
        values = pd.to_numeric(raw, errors="coerce")
        if col in _POSITIVE:
            out_of_range = values <= 0
        elif col in _SIGNED:
            out_of_range = pd.Series(False, index=values.index)
        else:
            out_of_range = values < 0
        checks = (
            (raw.notna() & values.isna(), "not a number"),
            (values.notna() & ~np.isfinite(values), "must be finite"),
            (out_of_range, "a time must be > 0" if col in _POSITIVE else "must be >= 0"),
        )
        for bad, why in checks:
            if bad.any():
                pos = int(bad.to_numpy().nonzero()[0][0])
                raise MeasurementError(path, why, line=lines[pos], field=col, value=raw.iloc[pos])
        frame[col] = values


def _verified(path: Path, frame: pd.DataFrame, lines: list[int]) -> None:
    if "verified" not in frame:
        return
    out = []
    for pos, v in enumerate(frame["verified"].tolist()):
        text = str(v).strip().lower()
        if v is None or (isinstance(v, float) and math.isnan(v)) or text == "":
            out.append(True)  # not recorded: the program checks every point it writes
        elif isinstance(v, bool) or text in _TRUE | _FALSE:
            out.append(bool(v) if isinstance(v, bool) else text in _TRUE)
        else:
            raise MeasurementError(path, "expected True or False", line=lines[pos], field="verified", value=v)
    frame["verified"] = out


def _duplicates(path: Path, frame: pd.DataFrame, lines: list[int]) -> None:
    dup = frame.duplicated(keep=False)
    if dup.any():
        pos = dup.to_numpy().nonzero()[0]
        first = frame.iloc[pos[0]]
        twin = next(p for p in pos[1:] if frame.iloc[p].equals(first))
        raise MeasurementError(
            path,
            f"lines {lines[pos[0]]} and {lines[twin]} are the same measurement (every column equal): remove the "
            f"duplicate ({int(dup.sum())} duplicated rows in all)",
        )


def _times(path: Path, frame: pd.DataFrame, lines: list[int]) -> None:
    present = [c for c in TIME_COLUMNS if c in frame]
    if not present:
        shown = ", ".join(list(frame.columns)[:12]) + (" ..." if len(frame.columns) > 12 else "")
        raise MeasurementError(path, f"no time column ({', '.join(TIME_COLUMNS)}); its columns are {shown} (renamed?)")
    has = frame[present].notna().any(axis=1)
    if "record" in frame:
        has |= frame["record"].astype(str) == "compute_rate"  # the overlap program's fit: no time of its own
    if not has.all():
        pos = int((~has).to_numpy().nonzero()[0][0])
        fam = frame["family"].iloc[pos] if "family" in frame else frame["program"].iloc[pos]
        raise MeasurementError(
            path,
            f"this {fam} row has no time: {', '.join(present)} empty"
            + (f" and {', '.join(c for c in TIME_COLUMNS if c not in present)} absent" if len(present) < 3 else "")
            + " (renamed or cut columns?)",
            line=lines[pos],
        )


def read_results(path: str | Path) -> pd.DataFrame:
    """``path`` (a results.csv) as a DataFrame with a ``_line`` column; raises :class:`MeasurementError`."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise MeasurementError(p, f"cannot be read: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MeasurementError(p, f"not a text file (byte {exc.start} is not UTF-8)") from None
    if not text.strip():
        raise MeasurementError(p, "no measurements in it (empty file)")
    header, starts = _rows(p, text)
    twice = sorted({c for c in header if header.count(c) > 1})
    if twice:
        raise MeasurementError(p, f"column {twice[0]!r} appears {header.count(twice[0])} times in the header", line=1)
    if "family" not in header and "program" not in header:
        raise MeasurementError(p, "no 'family' (or 'program') column: is this a `rooflib bench` results table?", line=1)
    frame = pd.read_csv(io.StringIO(text), low_memory=False, keep_default_na=True)
    if frame.empty:
        raise MeasurementError(p, "no measurements in it (only a header)")
    lines = starts if len(starts) == len(frame) else [i + 2 for i in range(len(frame))]
    _number_checks(p, frame, lines)
    _verified(p, frame, lines)
    _duplicates(p, frame, lines)
    _times(p, frame, lines)
    frame["_line"] = lines
    return frame
