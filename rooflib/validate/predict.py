"""The model's prediction for every measured row: same quantity (``time_s``), same conditions.

Each family's module under :mod:`rooflib.families` predicts its own rows; :func:`predict_frame` hands every
family's rows to it through :mod:`rooflib.families.registry`:

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

Rows without a model (e.g. ``mma_sync`` loops, loopback latency, families without a row-wise prediction) get NaN
and are left out of the error tables.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rooflib.families.p2p import MECHANISM_MODEL
from rooflib.families.registry import back_to_back_sources, with_part
from rooflib.specs.resolve import System

__all__ = ["BACK_TO_BACK_SOURCES", "MECHANISM_MODEL", "predict_frame"]

BACK_TO_BACK_SOURCES = back_to_back_sources()
"""Sources of NCCL rows timed as back-to-back stream launches (nccl-tests' loop), predicted with ``launch="stream"``
(the importers that say ``back_to_back``)."""


def predict_frame(system: System, frame: pd.DataFrame) -> pd.Series:
    """Predicted ``time_s`` for every row of a normalised measurement table (NaN where there is no model)."""
    out = pd.Series(np.nan, index=frame.index, dtype=float)
    for fam in with_part("predict"):
        rows = frame[frame["family"].isin(fam.names)]
        if not rows.empty:
            out[rows.index] = fam.predict(system, rows)  # type: ignore[operator]
    return out
