"""Tensor-parallel ops measured with torch (``family == "tp"``) against ``predict_workload``.

For each (workload, M, N, K) the table puts side by side: the measured sequential run (torch.matmul + NCCL)
and the predicted baseline, the measured fused op (PyTorch symmetric-memory async TP) and the predicted best
schedule, the measured copy-engine pipeline (``ce_pipeline``: cuBLAS pieces with peer copies on a side stream)
and the predicted inter-SM copy-engine schedule, and the bound, which must stay below every measured time.

Each comparison is predicted at the duty its measurement ran at (:func:`rooflib.compute.duty.duty_after`): the
worker's records, in the order one process wrote them (``raw/tp.jsonl`` beside the results; a ``meta`` record
opens each process), give how long the process had kept the GPU busy by the middle of each timing, warm-up
included (the ``comm_only`` part runs no GEMM and is not counted). A timing within the first
:data:`~rooflib.compute.duty.WARM_S` is a burst; later ones, and rows with no raw records, are sustained.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rooflib.compute.duty import Duty, at_burst, duty_after
from rooflib.errors import RooflibError
from rooflib.specs.resolve import System
from rooflib.workloads import predict_workload

__all__ = ["tp_table"]


def _key(key: Any) -> tuple[str, int, int, int, int]:
    return str(key[0]), int(key[1]), int(key[2]), int(key[3]), int(float(key[4]))


_Record = tuple[str, str, int, int, int, float]


def busy_times(results: str | Path) -> dict[_Record, float]:
    """Per tp record of the raw files beside ``results`` (workload, impl, m, n, k, time_s): the seconds its
    process had kept the GPU busy by the middle of its timing (empty without raw files)."""
    raw = Path(results)
    raw = (raw if raw.is_dir() else raw.parent) / "raw"
    out: dict[_Record, float] = {}
    for path in sorted(raw.glob("tp*.jsonl")) if raw.is_dir() else []:
        clock = 0.0
        for line in path.read_text(errors="replace").splitlines():
            try:
                r = json.loads(line)
            except ValueError:
                continue  # a cut-off last line: the results reader names it
            if not isinstance(r, dict) or r.get("record") == "meta":
                clock = 0.0
                continue
            if r.get("record") != "tp" or not isinstance(r.get("time_s"), float):
                continue
            warm, iters = int(r.get("warmup", 0) or 0), int(r.get("iters", 1) or 1)
            busy = 0.0 if r.get("impl") == "comm_only" else float(r["time_s"])
            key = (str(r.get("workload")), str(r.get("impl")), int(r["m"]), int(r["n"]), int(r["k"]), r["time_s"])
            out[key] = clock + (warm + iters / 2) * busy
            clock += (warm + iters) * busy
    return out


def _duty(grp: pd.DataFrame, impl: str, busy: dict[_Record, float]) -> Duty:
    """The duty of ``impl``'s timings of one shape: sustained if any ran after the GPU had warmed."""
    sel = grp[grp["impl"] == impl]
    keys = zip(sel["workload"], sel["m"], sel["n"], sel["k"], sel["time_s"], strict=True)
    times = [busy.get((str(w), impl, int(m), int(n), int(k), float(s))) for w, m, n, k, s in keys]
    known = [b for b in times if b is not None]
    return duty_after(max(known)) if known and len(known) == len(times) else "sustained"


def tp_table(frame: pd.DataFrame, system: System) -> pd.DataFrame:
    """One row per measured (workload, m, n, k, gpus) with measured and predicted times (s) and errors (%), each
    comparison at its measurement's duty (``baseline_duty``, ``ce_duty``)."""
    if "workload" not in frame:
        return pd.DataFrame()
    rows = frame[(frame["family"] == "tp") & frame["verified"] & frame["workload"].notna()]
    busy = busy_times(frame.attrs["source"]) if "source" in frame.attrs else {}
    systems = {"sustained": system, "burst": dataclasses.replace(system, device=at_burst(system.device))}
    records = []
    for key, grp in rows.groupby(["workload", "m", "n", "k", "gpus"]):
        workload, m, n, k, gpus = _key(key)
        measured = {str(impl): float(t) for impl, t in grp.groupby("impl")["time_s"].median().items()}
        duties = {impl: _duty(grp, impl, busy) for impl in ("sequential", "ce_pipeline")}
        preds = {}
        for duty in sorted(set(duties.values())):
            try:
                preds[duty] = predict_workload(workload, systems[duty], gpus=gpus, params={"m": m, "n": n, "k": k})
            except RooflibError as exc:  # name the measured row, not the model's inputs
                line = f" line {int(grp['_line'].min())}" if "_line" in grp else ""
                where = f"{frame.attrs.get('source', 'results')}{line}"
                raise RooflibError(f"{where}: tp row {workload} m={m} n={n} k={k} on {gpus} GPUs: {exc}") from None
        pred = preds[duties["sequential"]]
        rec: dict[str, object] = {
            "workload": workload,
            "m": m,
            "n": n,
            "k": k,
            "gpus": gpus,
            "bound_s": pred.bound_time_s,
            "baseline_pred_s": pred.baseline_time_s,
            "best_pred_s": pred.best.time_s,
            "best_schedule": f"{pred.best.schedule}/{pred.best.mechanism}/{pred.best.comm_sms}",
        }
        for impl, t in measured.items():
            rec[f"{impl}_s"] = t
        seq = measured.get("sequential")
        rec["baseline_duty"], rec["ce_duty"] = duties["sequential"], duties["ce_pipeline"]
        rec["baseline_err_pct"] = (pred.baseline_time_s / seq - 1) * 100 if seq else np.nan
        at_ce = preds[duties["ce_pipeline"]]
        ce = [c.time_s for c in at_ce.schedules if c.schedule == "inter_sm" and c.mechanism == "copy_engine"]
        ce_pred = min(ce) if ce else np.nan
        rec["ce_pred_s"] = ce_pred
        pipe = measured.get("ce_pipeline")
        rec["ce_err_pct"] = (ce_pred / pipe - 1) * 100 if pipe and ce else np.nan
        whole = [t for impl, t in measured.items() if impl in ("sequential", "fused", "ce_pipeline")]  # not parts
        rec["bound_below_all"] = all(p.bound_time_s <= t for p in preds.values() for t in whole)
        records.append(rec)
    return pd.DataFrame.from_records(records)
