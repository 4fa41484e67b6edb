"""Where ``rooflib bench`` keeps its measurements, so that reruns and interruptions never lose or duplicate them.

A results folder ``DIR`` holds:

- ``DIR/raw/<family>.jsonl``: every record of the family's jobs, each tagged with its ``job`` key. The file is only
  ever replaced whole (:func:`rooflib.bench.records.write_jsonl`), never appended to, so no reader sees half a
  record and a job's records can be replaced.
- ``DIR/raw/.running/<job>.jsonl``: what a running job writes (a program's stdout, a worker's ``--out`` file).
- ``DIR/done.txt``: the keys of finished jobs, one per line; a rerun skips them.
- ``DIR/results.csv`` and ``DIR/meta.json``: made from ``raw/`` by :func:`collect`.

When a job ends, :func:`store_job` puts its records into the family file in place of every earlier record of the
same job: with ``complete: true`` when it finished, ``complete: false`` when it failed or was interrupted (what it
measured is kept; the key stays out of ``done.txt``, so the next run redoes the job and replaces them). A cut-off
last line (a process killed while writing) is dropped, never parsed. :func:`repair` does the same for what an
earlier run, killed outright, left behind.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rooflib.bench.records import read_jsonl, write_jsonl
from rooflib.errors import RooflibError

__all__ = [
    "KEPT",
    "JobOutput",
    "collect",
    "locked",
    "mark_done",
    "read_done",
    "read_job_output",
    "repair",
    "running_path",
    "store_job",
]

KEPT = ("point", "nccl", "gemm", "tp", "compute_rate")  # record types that become rows of results.csv
RUNNING = ".running"


def running_path(root: Path, key: str) -> Path:
    """Where the job ``key`` writes while it runs."""
    return root / "raw" / RUNNING / (re.sub(r"[^A-Za-z0-9._-]+", "__", key) + ".jsonl")


def read_done(root: Path) -> set[str]:
    """Keys of finished jobs (a last line without its newline was cut off while written: not counted)."""
    path = root / "done.txt"
    if not path.exists():
        return set()
    text = path.read_text(errors="replace")
    lines = text.split("\n")
    complete = lines if text.endswith("\n") else lines[:-1]
    return {line.strip() for line in complete if line.strip()}


def mark_done(root: Path, key: str) -> None:
    path = root / "done.txt"
    cut = path.exists() and path.stat().st_size > 0 and not path.read_bytes().endswith(b"\n")
    with path.open("a") as fh:
        fh.write(("\n" if cut else "") + key + "\n")
        fh.flush()
        os.fsync(fh.fileno())


@dataclass
class JobOutput:
    """Records a job wrote, lines that were not records (number, text) and a cut-off last line, if any."""

    records: list[dict[str, Any]] = field(default_factory=list)
    bad: list[tuple[int, str]] = field(default_factory=list)
    partial: str | None = None


def read_job_output(path: Path, *, program_stdout: bool) -> JobOutput:
    """Parse what a job wrote, never raising: a program's stdout may hold other text (lines not starting with
    ``{`` are skipped); a worker's file must be JSON throughout."""
    import json

    out = JobOutput()
    if not path.exists():
        return out
    text = path.read_bytes().decode("utf-8", errors="replace")
    lines = text.split("\n")
    cut_last = not text.endswith("\n")  # the last piece has no newline: possibly cut off
    if not cut_last:
        lines.pop()
    for number, line in enumerate(lines, start=1):
        if not line.strip() or (program_stdout and not line.startswith("{")):
            continue
        try:
            rec = json.loads(line, parse_constant=lambda _token: None)
        except ValueError:
            rec = None
        if isinstance(rec, dict):
            out.records.append(rec)
        elif cut_last and number == len(lines):
            out.partial = line
        else:
            out.bad.append((number, line))
    return out


def store_job(
    root: Path,
    family: str,
    key: str,
    records: Iterable[dict[str, Any]],
    stamp: dict[str, Any],
    *,
    complete: bool,
    replaces: Iterable[str] = (),
) -> int:
    """Replace the records of job ``key`` (and of the jobs ``replaces``) in ``raw/<family>.jsonl`` by
    ``records``; returns how many were stored.

    Each record gets ``family`` (unless it has one), ``job``, ``complete`` and, where it lacks them, the
    fields of ``stamp`` (GPU, driver, NCCL version, NVLS state)."""
    path = root / "raw" / f"{family}.jsonl"
    old = read_jsonl(path, drop_partial_tail=True).records if path.exists() else []
    gone = {key, *replaces}
    kept = [r for r in old if r.get("job") not in gone]
    new = []
    for rec in records:
        rec = dict(rec)
        rec.setdefault("family", family)
        for k, v in stamp.items():
            if rec.get(k) in (None, ""):
                rec[k] = v
        rec["job"] = key
        rec["complete"] = complete
        new.append(rec)
    write_jsonl(path, [*kept, *new])
    return len(new)


def repair(root: Path) -> list[str]:
    """Make ``root`` consistent after a run that was killed outright; returns a note per repair.

    A family file whose last line was cut off loses that line (its job never finished, so it runs again); a
    job's leftover ``.running`` file is stored as that job's incomplete records, then removed."""
    notes = []
    raw = root / "raw"
    for path in sorted(raw.glob("*.jsonl")):
        parsed = read_jsonl(path, drop_partial_tail=True)
        if parsed.dropped is not None:
            write_jsonl(path, parsed.records)
            notes.append(f"{path} line {parsed.dropped_line}: dropped a cut-off last line (an interrupted write)")
    running = raw / RUNNING
    for path in sorted(running.glob("*.jsonl")) if running.is_dir() else []:
        out = read_job_output(path, program_stdout=True)
        keys = {str(r.get("job")) for r in out.records if r.get("job")}
        key = keys.pop() if len(keys) == 1 else path.stem.replace("__", "/")
        family = key.split("/", 1)[0]
        n = store_job(root, family, key, out.records, {}, complete=False)
        path.unlink()
        notes.append(f"{path}: {n} records of the interrupted job {key} kept as incomplete; the job runs again")
    return notes


@contextmanager
def locked(root: Path) -> Iterator[None]:
    """One writer at a time per results folder (``rooflib bench``, ``rooflib import-nccl-tests``)."""
    import fcntl

    with (root / "raw" / ".lock").open("w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise RooflibError(
                f"{root} is in use by another rooflib command: wait for it or use another --out"
            ) from None
        yield


def collect(out: str | Path) -> Any:
    """Gather ``DIR/raw/*.jsonl`` into ``DIR/results.csv`` and ``DIR/meta.json``; returns the DataFrame.

    A line that is not a JSON record, the last one included, is an error naming the file and the line."""
    import json

    import pandas as pd

    root = Path(out)
    rows: list[dict[str, Any]] = []
    meta: list[dict[str, Any]] = []
    for path in sorted((root / "raw").glob("*.jsonl")):
        for rec in read_jsonl(path).records:
            kind = rec.get("record")
            if kind == "meta":
                meta.append(rec)
            elif kind in KEPT:
                rec.setdefault("family", path.stem)
                rows.append(rec)
    frame = pd.DataFrame.from_records(rows)
    tmp = root / ".results.csv.tmp"
    frame.to_csv(tmp, index=False)
    os.replace(tmp, root / "results.csv")
    (root / "meta.json").write_text(json.dumps(meta, indent=1, allow_nan=False))
    return frame
