"""Measurements as one long-form table, whatever wrote them (the shipped programs, the torch workers, nccl-tests).

Columns every row has after :func:`load_results`: ``family`` (p2p, latency, ceilings, gemm, nccl), ``name``
(mechanism, test, op or GEMM dtype), ``variant`` (direction, NCCL launch mode), ``gpus``, ``bytes``, ``sms``,
``time_s`` (median), ``verified``. The original columns stay.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rooflib.calibrate.reading import read_results
from rooflib.errors import RooflibError

__all__ = ["Fit", "load_meta", "load_results", "nccl_key", "quality", "results_csv", "robust_fit"]


def _first_of(f: pd.DataFrame, columns: tuple[str, ...], default: object) -> pd.Series:
    """Row-wise first non-null value among ``columns`` (those present), else ``default``."""
    out = pd.Series([None] * len(f), index=f.index, dtype=object)
    for col in columns:
        if col in f:
            out = out.where(out.notna(), f[col])
    return out.where(out.notna(), default)


def _normalise(frame: pd.DataFrame) -> pd.DataFrame:
    f = frame.copy()
    f["family"] = _first_of(f, ("family", "program"), "unknown")
    f["name"] = _first_of(f, ("mechanism", "test", "op", "name"), "")
    f["variant"] = _first_of(f, ("direction", "mode"), "")
    seconds = f["one_way_ns_median"] * 1e-9 if "one_way_ns_median" in f else None  # latency programs report ns
    if seconds is not None:
        f["_latency_s"] = seconds
    f["time_s"] = pd.to_numeric(_first_of(f, ("time_s", "time_s_median", "_latency_s"), float("nan")))
    peer_gpus = f["peer"].map({True: 2, False: 1, "True": 2, "False": 1}) if "peer" in f else None
    if peer_gpus is not None:
        f["_peer_gpus"] = peer_gpus
    f["gpus"] = pd.to_numeric(_first_of(f, ("gpus", "_peer_gpus"), 1))
    for col in ("bytes", "sms"):
        f[col] = pd.to_numeric(f[col]) if col in f else float("nan")
    f["verified"] = f["verified"].astype(bool) if "verified" in f else True  # read_results made it boolean
    return f.drop(columns=[c for c in ("_latency_s", "_peer_gpus") if c in f])


def results_csv(path: str | Path) -> Path:
    """The results table of ``path`` (a folder or a CSV file); a folder with only ``raw/`` is collected first."""
    root = Path(path)
    if root.is_dir():
        csv = root / "results.csv"
        if not csv.exists():
            if not (root / "raw").is_dir():
                raise RooflibError(f"{root}: no results.csv and no raw/ folder; run `rooflib bench all --out {root}`")
            from rooflib.bench.store import collect

            collect(root)
        return csv
    if not root.exists():
        raise RooflibError(f"{root}: no such results file or folder")
    return root


def load_results(path: str | Path) -> pd.DataFrame:
    """Load ``DIR/results.csv`` (or gather ``DIR/raw/*.jsonl`` first) into the normalised long-form table.

    The table is read strictly (:func:`rooflib.calibrate.reading.read_results`: a cut-off file, a text in a
    numeric column, a duplicated row or a row without a time is refused, naming the file and line); each row keeps
    its line in ``_line`` and the table its file in ``attrs["source"]``."""
    csv = results_csv(path)
    frame = _normalise(read_results(csv))
    frame.attrs["source"] = str(csv)
    return frame


def load_meta(path: str | Path) -> list[dict[str, Any]]:
    """The ``meta`` records of a results folder (``meta.json``; for a CSV path, the one beside it)."""
    root = Path(path)
    meta = (root if root.is_dir() else root.parent) / "meta.json"
    if not meta.exists():
        return []
    try:
        data = json.loads(meta.read_text(errors="replace"))
    except ValueError as exc:
        raise RooflibError(f"{meta}: not JSON ({exc})") from None
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise RooflibError(f"{meta}: expected a list of records")
    return data


def nccl_key(key: Any) -> tuple[str, int, str]:
    """``(op, gpus, mode)`` from a pandas group key over ``["name", "gpus", "variant"]``."""
    return str(key[0]), int(float(key[1])), str(key[2])


class Fit:
    """Overrides (dotted profile paths -> values) plus a quality table from one fitting step."""

    def __init__(self) -> None:
        self.overrides: dict[str, Any] = {}
        self.quality: list[dict[str, Any]] = []

    def set(self, path: str, value: Any, source: str, unit: str = "") -> None:
        text = f"{value:.6g} {unit}".strip() if isinstance(value, float) and unit else value
        self.overrides[path] = {"value": text, "source": source}

    def merge(self, other: Fit) -> None:
        self.overrides.update(other.overrides)
        self.quality.extend(other.quality)


def quality(predicted: Any, measured: Any) -> dict[str, float]:
    """Median and max absolute percentage error of ``predicted`` against ``measured``."""
    import numpy as np

    p, m = np.asarray(predicted, dtype=float), np.asarray(measured, dtype=float)
    err = np.abs(p / m - 1.0) * 100.0
    return {"n": int(err.size), "median_abs_pct": float(np.median(err)), "max_abs_pct": float(np.max(err))}


def robust_fit(
    residuals: Callable[[np.ndarray], np.ndarray],
    x0: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    scale: np.ndarray,
    max_nfev: int,
) -> Any:
    """scipy ``least_squares`` as the table and collective fits run it: bounded, soft-L1 loss with a 5 % knee
    (residuals are logs of predicted over measured), at most ``max_nfev`` evaluations; the result object."""
    from scipy.optimize import least_squares

    return least_squares(
        residuals, x0, bounds=(lower, upper), x_scale=scale, loss="soft_l1", f_scale=0.05, max_nfev=max_nfev
    )
