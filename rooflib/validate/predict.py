"""The model's prediction for every measured row: same quantity (``time_s``), same conditions.

| family   | name                                   | model                                                        |
| -------- | -------------------------------------- | ------------------------------------------------------------ |
| p2p      | copy_engine, tma, ldst_push/ldst_pull  | ``transfer_time`` with the row's bytes and SMs               |
| p2p      | tma_reduce, red                        | ``transfer_time(..., reduce=True)`` (TMA add, ``red``)        |
| latency  | intra_sm_mbarrier, inter_sm_flag       | device ``sync_intra_sm`` / ``sync_inter_sm``                   |
| latency  | peer_flag between two GPUs             | one-way latency of the topology path                          |
| ceilings | hbm_read/write/copy, l2_read, wgmma_*  | bytes over achievable HBM / L2 rate; FLOPs over tensor peak    |
| gemm     | gemm_bf16, gemm_fp8                    | ``rooflib.compute.gemm`` (tile and wave quantisation) plus   |
|          |                                        | the device's ``kernel_launch`` (each product timed alone)     |
| nccl     | every op, stream and graph launches    | ``predict_collective(..., algorithm="library")``              |

Rows without a model (e.g. ``mma_sync`` loops, loopback latency) get NaN and are left out of the error tables.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import pandas as pd

from rooflib.calibrate.data import nccl_key
from rooflib.collectives import predict_collective
from rooflib.compute import gemm
from rooflib.specs.resolve import System
from rooflib.transfer import transfer_time

__all__ = ["BACK_TO_BACK_SOURCES", "MECHANISM_MODEL", "predict_frame"]

BACK_TO_BACK_SOURCES = ("nccl-tests", "aiconfigurator")
"""Sources of NCCL rows timed as back-to-back stream launches (nccl-tests' loop), predicted with ``launch="stream"``."""

MECHANISM_MODEL = {  # measured name -> (model mechanism, reduce, pull)
    "copy_engine": ("copy_engine", False, False),
    "tma": ("tma", False, False),
    "ldst_push": ("ldst", False, False),
    "ldst_pull": ("ldst", False, True),
    "tma_reduce": ("tma", True, False),
    "red": ("ldst", True, False),
}


def _p2p(system: System, rows: pd.DataFrame) -> pd.Series:
    out = pd.Series(np.nan, index=rows.index)
    peer = rows[rows["peer"].astype(bool)] if "peer" in rows else rows
    for (name, _), grp in peer.groupby(["name", "variant"]):
        model = MECHANISM_MODEL.get(str(name))
        if model is None or getattr(system.device.transfer, model[0]) is None:
            continue
        sms = grp["sms"].astype(float).to_numpy()
        sms = np.where(sms <= 0, int(system.device.sms), sms)  # the copy engine reports 0 SMs
        sizes = grp["bytes"].astype(float).to_numpy()
        out[grp.index] = transfer_time(system, model[0], sizes, sms, reduce=model[1], pull=model[2])
    return out


def _latency(system: System, rows: pd.DataFrame) -> pd.Series:
    from rooflib.topology import topology_of

    out = pd.Series(np.nan, index=rows.index)
    for idx, row in _records(rows):
        if row["name"] == "intra_sm_mbarrier":
            out[idx] = system.device.sync_intra_sm.value
        elif row["name"] == "inter_sm_flag":
            out[idx] = system.device.sync_inter_sm.value
        elif row["name"] == "peer_flag" and bool(row.get("peer", False)) and system.gpus > 1:
            out[idx] = topology_of(system).latency(0, 1)
    return out


def _ceilings(system: System, rows: pd.DataFrame) -> pd.Series:
    dev = system.device
    out = pd.Series(np.nan, index=rows.index)
    for idx, row in _records(rows):
        name = str(row["name"])
        if name.startswith("hbm_") and not math.isnan(float(row.get("bytes_moved", np.nan))):
            out[idx] = float(row["bytes_moved"]) / (dev.hbm_bandwidth.value * dev.hbm_efficiency.value)
        elif name == "l2_read" and not math.isnan(float(row.get("bytes_moved", np.nan))):
            out[idx] = float(row["bytes_moved"]) / dev.l2_bandwidth.value
        elif name.startswith("wgmma_") and not math.isnan(float(row.get("flops", np.nan))):
            peak = dev.tensor_peak("fp8" if name.endswith("fp8") else "bf16")
            if peak:
                out[idx] = float(row["flops"]) / peak
    return out


def _gemm(system: System, rows: pd.DataFrame) -> pd.Series:
    out = pd.Series(np.nan, index=rows.index)
    for idx, row in _records(rows):
        if row.get("name") == "torch_copy":
            out[idx] = float(row["bytes_moved"]) / (
                system.device.hbm_bandwidth.value * system.device.hbm_efficiency.value
            )
            continue
        dtype = str(row.get("dtype", "bf16"))
        if system.device.tensor_peak(dtype) is None:  # type: ignore[arg-type]
            continue
        cost = gemm(system.device, int(row["m"]), int(row["n"]), int(row["k"]), dtype)
        out[idx] = cost.with_overhead(system.device.kernel_launch.value).time_s  # one launch per timed product
    return out


def _nccl(system: System, rows: pd.DataFrame) -> pd.Series:
    out = pd.Series(np.nan, index=rows.index)
    for key, grp in rows.groupby(["name", "gpus", "variant"]):
        op, gpus, mode = nccl_key(key)
        if gpus > system.gpus or gpus < 2:
            continue
        # rooflib's own stream rows time one call between events (isolated); nccl-tests times back-to-back calls
        # (and so do aiconfigurator's tables, which it measured with nccl-tests)
        back_to_back = "source" in grp and grp["source"].isin(BACK_TO_BACK_SOURCES).all()
        launch: Literal["stream", "isolated", "graph"] = (
            "graph" if mode.startswith("graph") else "stream" if back_to_back else "isolated"
        )
        r = predict_collective(
            str(op),
            system,
            gpus=int(gpus),
            nbytes=grp["bytes"].astype(float).to_numpy(),
            algorithm="library",
            launch=launch,
        )
        out[grp.index] = r.time_s
    return out


def _records(rows: pd.DataFrame) -> list[tuple[Any, dict[str, Any]]]:
    records: list[dict[str, Any]] = [{str(k): v for k, v in r.items()} for r in rows.to_dict("records")]
    return list(zip(rows.index.tolist(), records, strict=True))


_FAMILIES = {"p2p": _p2p, "latency": _latency, "ceilings": _ceilings, "gemm": _gemm, "nccl": _nccl}


def predict_frame(system: System, frame: pd.DataFrame) -> pd.Series:
    """Predicted ``time_s`` for every row of a normalised measurement table (NaN where there is no model)."""
    out = pd.Series(np.nan, index=frame.index, dtype=float)
    for family, fn in _FAMILIES.items():
        rows = frame[frame["family"] == family]
        if not rows.empty:
            out[rows.index] = fn(system, rows)
    return out
