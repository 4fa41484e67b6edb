"""Tensor-parallel ops measured with torch (``family == "tp"``) against ``predict_workload``.

For each (workload, M, N, K) the table puts side by side: the measured sequential run (torch.matmul + NCCL)
and the predicted baseline, the measured fused op (PyTorch symmetric-memory async TP) and the predicted best
schedule, the measured copy-engine pipeline (``ce_pipeline``: cuBLAS pieces with peer copies on a side stream)
and the predicted inter-SM copy-engine schedule, and the bound, which must stay below every measured time.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rooflib.errors import RooflibError
from rooflib.specs.resolve import System
from rooflib.workloads import predict_workload

__all__ = ["tp_table"]


def _key(key: Any) -> tuple[str, int, int, int, int]:
    return str(key[0]), int(key[1]), int(key[2]), int(key[3]), int(float(key[4]))


def tp_table(frame: pd.DataFrame, system: System) -> pd.DataFrame:
    """One row per measured (workload, m, n, k, gpus) with measured and predicted times (s) and errors (%)."""
    if "workload" not in frame:
        return pd.DataFrame()
    rows = frame[(frame["family"] == "tp") & frame["verified"] & frame["workload"].notna()]
    records = []
    for key, grp in rows.groupby(["workload", "m", "n", "k", "gpus"]):
        workload, m, n, k, gpus = _key(key)
        measured = {str(impl): float(t) for impl, t in grp.groupby("impl")["time_s"].median().items()}
        try:
            pred = predict_workload(workload, system, gpus=gpus, params={"m": m, "n": n, "k": k})
        except RooflibError as exc:  # name the measured row, not the model's inputs
            line = f" line {int(grp['_line'].min())}" if "_line" in grp else ""
            where = f"{frame.attrs.get('source', 'results')}{line}"
            raise RooflibError(f"{where}: tp row {workload} m={m} n={n} k={k} on {gpus} GPUs: {exc}") from None
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
        rec["baseline_err_pct"] = (pred.baseline_time_s / seq - 1) * 100 if seq else np.nan
        ce = [c.time_s for c in pred.schedules if c.schedule == "inter_sm" and c.mechanism == "copy_engine"]
        ce_pred = min(ce) if ce else np.nan
        rec["ce_pred_s"] = ce_pred
        pipe = measured.get("ce_pipeline")
        rec["ce_err_pct"] = (ce_pred / pipe - 1) * 100 if pipe and ce else np.nan
        whole = [t for impl, t in measured.items() if impl in ("sequential", "fused", "ce_pipeline")]  # not parts
        rec["bound_below_all"] = all(pred.bound_time_s <= t for t in whole)
        records.append(rec)
    return pd.DataFrame.from_records(records)
