"""``rooflib import-nccl-tests``: put an nccl-tests log into a results folder that calibrate and validate read.

The records go to ``DIR/raw/nccl.jsonl`` as the job ``import/nccl-tests/<sha>`` (the log's SHA-256): importing
the same log again, or a log from the same path whose content changed, replaces the earlier import instead of
adding to it. Each run of the log also gets a ``meta`` record with its provenance: the file, its hash, the
GPU model and count (with processes and hosts), NCCL and nccl-tests versions, NVLS state and the evidence for
it, and how nccl-tests timed (:attr:`~rooflib.bench.nccl_tests.NcclTestsRun.timing`). Out-of-place rows become
the ``stream`` (or ``graph``, with ``-G``) variant that calibration fits; in-place rows ``stream-in-place``.
When the log holds NCCL's tuning table (``NCCL_DEBUG_SUBSYS=TUNING``), a copy goes to
``raw/nccl_tuning_import_<sha>.log`` so that validation compares NCCL's own model too.
"""

from __future__ import annotations

import datetime
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rooflib.bench.multicast import NvlsState
from rooflib.bench.nccl_tests import NcclTestsRun, read_nccl_tests
from rooflib.bench.nccl_text import parse_tuning
from rooflib.bench.records import MeasurementError, read_jsonl
from rooflib.bench.store import collect, locked, store_job
from rooflib.errors import RooflibError

__all__ = ["Imported", "import_nccl_tests"]


@dataclass(frozen=True)
class Imported:
    """What an import wrote: the runs found, the number of records, and earlier imports it replaced."""

    runs: list[NcclTestsRun]
    points: int
    replaced: int
    folder: Path


def _earlier(raw: Path, source: str, sha: str) -> set[str]:
    """Jobs of earlier imports of the same file (same path or same content)."""
    path = raw / "nccl.jsonl"
    if not path.exists():
        return set()
    return {
        str(r["job"])
        for r in read_jsonl(path, drop_partial_tail=True).records
        if r.get("record") == "meta"
        and r.get("source") == "nccl-tests"
        and r.get("job")
        and (r.get("source_file") == source or r.get("sha256") == sha)
    }


def _meta(run: NcclTestsRun, source: str, sha: str, date: str) -> dict[str, Any]:
    return {
        "record": "meta",
        "family": "nccl",
        "source": "nccl-tests",
        "source_file": source,
        "sha256": sha,
        "first_line": run.first_line,
        "op": run.op,
        "op_evidence": run.op_evidence,
        "gpus": run.gpus,
        "gpus_evidence": run.gpus_evidence,
        "processes": run.processes,
        "hosts": run.hosts,
        "gpu": run.gpu_model,
        "nccl": run.nccl,
        "nccl_tests": run.nccl_tests,
        "nvls": run.nvls,
        "nvls_evidence": run.nvls_evidence,
        "timing": run.timing,
        "settings": run.settings,
        "date": date,
        "date_note": "modification time of the log file",
        "command": f"rooflib import-nccl-tests {source}",
    }


def import_nccl_tests(
    path: str | Path,
    out: str | Path,
    *,
    op: str | None = None,
    gpus: int | None = None,
    nvls: NvlsState | None = None,
) -> Imported:
    """Read the nccl-tests log ``path`` and store it in the results folder ``out`` (then ``results.csv``)."""
    p = Path(path)
    if p.is_dir():
        raise MeasurementError(p, "is a folder: give the nccl-tests log file")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise MeasurementError(p, f"cannot be read: {exc.strerror or exc}") from None
    text = data.decode("utf-8", errors="replace")
    runs = read_nccl_tests(text, source=str(p), op=op, gpus=gpus, nvls=nvls)
    sha = hashlib.sha256(data).hexdigest()
    source = str(p.resolve())
    date = datetime.datetime.fromtimestamp(p.stat().st_mtime, datetime.timezone.utc).isoformat(timespec="seconds")
    root = Path(out)
    try:
        (root / "raw").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RooflibError(f"cannot make the results folder {root}: {exc.strerror or exc}") from None
    records: list[dict[str, Any]] = []
    for run in runs:
        records.append(_meta(run, source, sha, date))
        stamp = {"gpu": run.gpu_model, "nccl": run.nccl, "nvls": run.nvls, "source_file": source}
        records += [{**rec, **{k: v for k, v in stamp.items() if rec.get(k) is None}} for rec in run.records]
    key = f"import/nccl-tests/{sha[:16]}"
    with locked(root):
        earlier = _earlier(root / "raw", source, sha)
        points = store_job(root, "nccl", key, records, {}, complete=True, replaces=earlier) - len(runs)
        if parse_tuning(text):
            (root / "raw" / f"nccl_tuning_import_{sha[:16]}.log").write_text(text)
        collect(root)
    return Imported(runs, points, len(earlier), root)
