"""Measurement records as JSON Lines: strict reading (file and line in every error), safe writing.

Every raw file is one JSON object per line. :func:`read_jsonl` refuses a line that is not one, naming the
file and the line; only a *partial last line* (no newline after it, as a process killed while writing leaves
it) may be dropped instead, when the caller says so (the runner repairing its own files). :func:`dump_record`
writes strict JSON (``NaN`` and infinities become ``null``), and :func:`write_jsonl` replaces a file
atomically, so a reader never sees half of it.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rooflib.errors import RooflibError

__all__ = ["JsonlFile", "MeasurementError", "clean", "dump_record", "read_jsonl", "shown", "write_jsonl"]


class MeasurementError(RooflibError, ValueError):
    """A measurement file that cannot be used: ``file``, ``line`` (1-based, or None), ``field``, ``value``."""

    def __init__(
        self, file: str | Path, message: str, *, line: int | None = None, field: str | None = None, value: Any = None
    ) -> None:
        self.file, self.line, self.field, self.value = str(file), line, field, value
        parts = [self.file + (f" line {line}" if line is not None else "")]
        if field is not None:
            parts.append(f"column {field!r} = {_short(value)}")
        super().__init__(": ".join([*parts, message]))


def _short(value: Any, limit: int = 60) -> str:
    """``repr`` of a cell, short: numpy scalars as Python numbers, whole floats without ``.0``."""
    if hasattr(value, "item") and callable(value.item):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def shown(value: Any) -> str:
    """A cell's value for a message (see :class:`MeasurementError`)."""
    return _short(value)


@dataclass
class JsonlFile:
    """The records of one file, each with its line number; ``dropped`` is the partial last line, if any."""

    path: Path
    records: list[dict[str, Any]] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    dropped: str | None = None
    dropped_line: int | None = None


def _reject_constant(token: str) -> float:
    raise ValueError(f"{token} is not a number JSON allows")


def read_jsonl(path: str | Path, *, drop_partial_tail: bool = False) -> JsonlFile:
    """The records of ``path``; blank lines are skipped, ``NaN``/``Infinity`` tokens read as None.

    A line that is not a JSON object raises :class:`MeasurementError` naming the file and line; the last line
    too, unless it lacks its newline and ``drop_partial_tail`` is true (then it is returned as ``dropped``).
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise MeasurementError(p, f"cannot be read: {exc.strerror or exc}") from None
    text = raw.decode("utf-8", errors="replace")
    out = JsonlFile(p)
    pieces = text.split("\n")
    complete = text.endswith("\n")
    last = len(pieces) - (1 if complete else 0)
    for number, line in enumerate(pieces[:last], start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line, parse_constant=lambda _token: None)
        except ValueError as exc:
            rec, why = None, str(exc)
        else:
            why = "not a JSON object"
        if isinstance(rec, dict):
            out.records.append(rec)
            out.lines.append(number)
            continue
        if number == last and not complete:
            if drop_partial_tail:
                out.dropped, out.dropped_line = line, number
                break
            raise MeasurementError(
                p,
                f"the last line is cut off ({why}): the run that wrote it was interrupted; rerun the same "
                "`rooflib bench` command to repair the file and redo that job",
                line=number,
            )
        raise MeasurementError(p, f"not a JSON record ({why}): {_short(line)}", line=number)
    return out


def clean(value: Any) -> Any:
    """``value`` with non-finite floats replaced by None, recursively (so JSON stays strict)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    return value


def dump_record(rec: dict[str, Any]) -> str:
    """One strict JSON line (no NaN or infinity), without the newline."""
    return json.dumps(clean(rec), allow_nan=False)


def write_jsonl(path: str | Path, records: Iterable[dict[str, Any]]) -> None:
    """Replace ``path`` with ``records`` atomically (a temporary file in the same folder, then a rename)."""
    p = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=p.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            for rec in records:
                fh.write(dump_record(rec) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
