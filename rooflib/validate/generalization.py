"""Pieces of the generalisation report: measured tables of other systems against the model, grouped.

The report (``tools/generalization_report.py``, ``docs/validation/generalization.md``) compares rooflib's
predictions with NVIDIA aiconfigurator's tables (:mod:`rooflib.bench.aiconfigurator_tables`):

- NCCL rows: ``predict_collective(op, system, gpus=n, nbytes=..., algorithm="library", launch="stream",
  dtype=...)`` (the rows' element type: NVLS does not reduce 8-bit types)
  (nccl-tests times back-to-back stream launches), grouped by system, op, GPU count and size band
  (:func:`size_band`);
- GEMM rows: :func:`rooflib.compute.gemm.gemm_times` (device time at burst clocks, ``duty="burst"``: the tables
  time a few replays of each GEMM inside a CUDA graph, so no launch cost is added either; fp8 and nvfp4 rows
  with ``quantize_activations``: the tables time TRT-LLM's activation quantisation with the GEMM), grouped by
  dtype and shape class (:func:`gemm_class`).

Fit-on-X / predict-Y matrices (:data:`SCENARIOS`, :func:`fit_and_predict`): the portable library figures are
fitted on some systems' and GPU counts' rows (:func:`rooflib.calibrate.library_tables.fit_library_starts`: from
:data:`STARTS` starts, the lowest-cost fit predicts; the others give the answer's sensitivity to the start) and
put onto the predicted system's datasheet hardware (:func:`~rooflib.calibrate.library_tables.apply_library`).

Errors are signed ``predicted / measured - 1`` (negative: the model is too fast); summaries give the median and
the 90th percentile of ``|error|`` and the median signed error (the bias), in percent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rooflib.calibrate.library_tables import (
    STARTS,
    TableFit,
    apply_library,
    fit_library_starts,
    nccl_tuning_held,
)
from rooflib.collectives import predict_collective
from rooflib.compute.gemm import gemm_times
from rooflib.specs.resolve import System, load_system

__all__ = [
    "GEMM_CLASSES",
    "SCENARIOS",
    "SIZE_BANDS",
    "STARTS",
    "Scenario",
    "ScenarioFit",
    "fit_and_predict",
    "gemm_class",
    "predict_gemm_rows",
    "predict_nccl_rows",
    "scenario_fits",
    "size_band",
    "summarise",
]

KIB, MIB = 1024, 1 << 20
SIZE_BANDS = ("< 64 KiB", "64 KiB - 16 MiB", "> 16 MiB")
"""Message-size bands: latency-bound, the protocol transition, bandwidth-bound (upper bounds exclusive)."""
GEMM_CLASSES = (
    "skinny (m <= 64)",
    "m = 128j + 1",
    "split-K-like (k >= 8 max(m, n))",
    "large (m, n, k >= 1024)",
    "other",
)
"""GEMM shape classes, checked in this order (a shape belongs to the first that fits)."""


def size_band(nbytes: Any) -> np.ndarray:
    """The :data:`SIZE_BANDS` label of each size in bytes (``< 64 KiB``, ``64 KiB - 16 MiB``, ``> 16 MiB``).

    >>> list(size_band([1024, 1 << 20, 1 << 30]))
    ['< 64 KiB', '64 KiB - 16 MiB', '> 16 MiB']
    """
    b = np.asarray(nbytes, dtype=float)
    return np.where(b < 64 * KIB, SIZE_BANDS[0], np.where(b <= 16 * MIB, SIZE_BANDS[1], SIZE_BANDS[2]))


def gemm_class(m: Any, n: Any, k: Any) -> np.ndarray:
    """The :data:`GEMM_CLASSES` label of each shape ``[m, k] @ [k, n]``.

    Skinny: ``m <= 64`` (decode-like, weight streaming); ``m = 128j + 1`` (one row past a 128-row tile: the
    worst tile quantisation); split-K-like: ``k >= 8 max(m, n)`` (few output tiles, a long reduction);
    large: every dimension ``>= 1024``; other: the rest.

    >>> list(gemm_class([16, 4097, 256, 8192, 512], [4096, 4096, 256, 8192, 512], [4096, 4096, 16384, 8192, 512]))
    ['skinny (m <= 64)', 'm = 128j + 1', 'split-K-like (k >= 8 max(m, n))', 'large (m, n, k >= 1024)', 'other']
    """
    mm, nn, kk = (np.asarray(x, dtype=np.int64) for x in (m, n, k))
    conditions = [
        mm <= 64,
        (mm % 128 == 1) & (mm > 128),
        kk >= 8 * np.maximum(mm, nn),
        (mm >= 1024) & (nn >= 1024) & (kk >= 1024),
    ]
    return np.select(conditions, list(GEMM_CLASSES[:4]), default=GEMM_CLASSES[4])


def predict_nccl_rows(system: System, rows: pd.DataFrame) -> pd.Series:
    """Predicted ``time_s`` of NCCL rows (``op``, ``gpus``, ``bytes``) timed as nccl-tests does (back-to-back
    stream launches), with the library's own algorithm choice; NaN for GPU counts the system does not have."""
    out = pd.Series(np.nan, index=rows.index, dtype=float)
    dtypes = rows["dtype"].fillna("") if "dtype" in rows else pd.Series("", index=rows.index)
    for (op, gpus, dtype), grp in rows.groupby([rows["op"], rows["gpus"], dtypes]):
        n = int(str(gpus))
        if n < 2 or n > system.gpus:
            continue
        r = predict_collective(
            str(op),
            system,
            gpus=n,
            nbytes=grp["bytes"].astype(float).to_numpy(),
            algorithm="library",
            launch="stream",
            dtype=str(dtype) or None,  # 8-bit reductions cannot use NVLS (NCCL runs a ring or tree)
        )
        out[grp.index] = np.asarray(r.time_s, dtype=float)
    return out


def predict_gemm_rows(system: System, rows: pd.DataFrame) -> pd.Series:
    """Predicted device ``time_s`` of GEMM rows (``m``, ``n``, ``k``, ``dtype``); NaN where the device lacks the
    dtype (fp8 on an A100, fp4 before Blackwell)."""
    out = pd.Series(np.nan, index=rows.index, dtype=float)
    dev = system.device
    for dtype, grp in rows.groupby("dtype"):
        if dev.tensor_peak(str(dtype)) is None:  # type: ignore[arg-type]
            continue
        m, n, k = (grp[c].astype(np.int64).to_numpy() for c in ("m", "n", "k"))
        out[grp.index] = gemm_times(dev, m, n, k, str(dtype), quantize_activations=True, duty="burst")
    return out


def summarise(
    frame: pd.DataFrame, keys: Sequence[str], *, predicted: str = "pred", measured: str = "time_s"
) -> pd.DataFrame:
    """Per group of ``keys``: ``n``, ``median_abs_pct``, ``p90_abs_pct`` and ``bias_pct`` (median signed error).

    Rows without a prediction are left out; groups are in ``keys`` order (categorical columns keep theirs)."""
    ok = frame[frame[predicted].notna() & frame[measured].notna()].copy()
    ok["_err"] = (ok[predicted].astype(float) / ok[measured].astype(float) - 1.0) * 100.0
    ok["_abs"] = ok["_err"].abs()
    cols = ["n", "median_abs_pct", "p90_abs_pct", "bias_pct"]
    if ok.empty:
        return pd.DataFrame(columns=[*keys, *cols])
    g = ok.groupby(list(keys), sort=True, observed=True)
    out = pd.DataFrame(
        {
            "n": g["_abs"].size(),
            "median_abs_pct": g["_abs"].median(),
            "p90_abs_pct": g["_abs"].quantile(0.9),
            "bias_pct": g["_err"].median(),
        }
    )
    return out.reset_index()


Selection = tuple[tuple[str, tuple[int, ...] | None], ...]
"""(system label, GPU counts or None for all) pairs."""


@dataclass(frozen=True)
class Scenario:
    """Fit the portable library figures on ``fit`` rows, predict ``predict`` rows (system labels, GPU counts)."""

    name: str
    kind: str  # leave-one-system-out | leave-GPU-count-out | generation
    fit: Selection
    predict: Selection


_HOPPER: Selection = (("H100", None), ("H200", None))
SCENARIOS: tuple[Scenario, ...] = (
    Scenario("A100 + H100 -> H200", "leave-one-system-out", (("A100", None), ("H100", None)), (("H200", None),)),
    Scenario("A100 + H200 -> H100", "leave-one-system-out", (("A100", None), ("H200", None)), (("H100", None),)),
    Scenario("H100 + H200 -> A100", "leave-one-system-out", _HOPPER, (("A100", None),)),
    Scenario(
        "A100 + H100 + H200 -> B200, GB200",
        "leave-one-system-out",
        (("A100", None), *_HOPPER),
        (("B200", None), ("GB200", None)),
    ),
    Scenario("A100 2, 4 -> 8", "leave-GPU-count-out", (("A100", (2, 4)),), (("A100", (8,)),)),
    Scenario("H100 2, 4 -> 8", "leave-GPU-count-out", (("H100", (2, 4)),), (("H100", (8,)),)),
    Scenario("H200 2, 4 -> 8", "leave-GPU-count-out", (("H200", (2, 4)),), (("H200", (8,)),)),
    Scenario(
        "H100 + H200 2, 4 -> 8",
        "leave-GPU-count-out",
        (("H100", (2, 4)), ("H200", (2, 4))),
        (("H100", (8,)), ("H200", (8,))),
    ),
    Scenario("H100 -> H200", "generation", (("H100", None),), (("H200", None),)),
    Scenario("H100 -> B200", "generation", (("H100", None),), (("B200", None),)),
    Scenario("H100 -> GB200", "generation", (("H100", None),), (("GB200", None),)),
)
"""The report's fit-on-X / predict-Y matrix. B200 and GB200 are only ever predicted."""


def _select(nccl: pd.DataFrame, sel: Selection) -> pd.DataFrame:
    mask = pd.Series(False, index=nccl.index)
    for label, gpus in sel:
        m = nccl["system"] == label
        if gpus is not None:
            m &= nccl["gpus"].isin(gpus)
        mask |= m
    return nccl[mask]


@dataclass(frozen=True)
class ScenarioFit:
    """One fit-on-X / predict-Y scenario: the predictions of its lowest-cost fit, that fit's own median |error|
    (percent) and, per start of the fit (lowest cost first), its cost, its own median and the median |error| of
    each predicted system (``starts``: columns ``cost``, ``own``, then one per system label)."""

    pred: pd.Series
    own_median_pct: float
    starts: pd.DataFrame


def scenario_fits(
    nccl: pd.DataFrame, scenario: Scenario, catalogs: Mapping[str, str], source: str = "fit", *, starts: int = STARTS
) -> list[TableFit]:
    """The library figures fitted on ``scenario.fit``'s rows of ``nccl`` from ``starts`` starts, lowest cost
    first (:func:`rooflib.calibrate.library_tables.fit_library_starts`)."""
    if {label for label, _ in scenario.fit} & {"B200", "GB200"}:
        raise ValueError("B200 and GB200 are the held-out test set: never fitted")
    datasets = []
    for fit_label, gpus in scenario.fit:
        rows = _select(nccl, ((fit_label, gpus),))
        datasets.append((load_system(catalogs[fit_label], gpus=int(rows["gpus"].max())), rows))
    return fit_library_starts(datasets, source, held=nccl_tuning_held(), starts=starts)


def fit_and_predict(
    nccl: pd.DataFrame,
    scenario: Scenario,
    catalogs: Mapping[str, str],
    source: str = "fit",
    *,
    starts: int = STARTS,
    fits: Sequence[TableFit] | None = None,
) -> ScenarioFit:
    """Predicted ``time_s`` of ``scenario.predict``'s rows of ``nccl`` (``system`` labels, ``op``, ``gpus``,
    ``bytes``, ``time_s``) with library figures fitted on ``scenario.fit``'s rows from ``starts`` starts (or the
    given ``fits`` of those rows, lowest cost first: scenarios that fit the same rows share them): the
    lowest-cost fit's predictions, and what every start's fit predicts. ``catalogs`` maps a system label to its
    catalog system."""
    if {label for label, _ in scenario.fit} & {"B200", "GB200"}:
        raise ValueError("B200 and GB200 are the held-out test set: never fitted")
    if fits is None:
        fits = scenario_fits(nccl, scenario, catalogs, source, starts=starts)
    target = _select(nccl, scenario.predict)
    systems = {
        str(label): load_system(catalogs[str(label)], gpus=int(grp["gpus"].max()))
        for label, grp in target.groupby("system")
    }
    table, outs = [], []
    for fitted in fits:
        out = pd.Series(np.nan, index=target.index, dtype=float)
        for label, grp in target.groupby("system"):
            out[grp.index] = predict_nccl_rows(apply_library(systems[str(label)], fitted.overrides), grp)
        err = (out / target["time_s"] - 1.0).abs() * 100.0
        row = {"cost": fitted.cost, "own": fitted.median_abs_pct}
        row.update({str(label): float(e.median()) for label, e in err.groupby(target["system"])})
        table.append(row)
        outs.append(out)
    return ScenarioFit(outs[0], fits[0].median_abs_pct, pd.DataFrame(table))
