"""``ceilings``: what one GPU reaches (``kernels/ceilings.cu``): HBM read, write and copy, L2 read, wgmma issue
rates (bf16, fp8), operand streaming.

Prediction: bytes moved over the achievable HBM rate (``hbm_bandwidth`` x ``hbm_efficiency``) or the L2 rate;
FLOPs over the tensor peak of the dtype; other tests (``mma_sync`` loops, ``tma_stream``) have no model. Fit:
:func:`rooflib.calibrate.device.fit_device`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from rooflib.families._rows import records
from rooflib.families.base import Absent, Family, Job, Ref, Schema

if TYPE_CHECKING:
    import pandas as pd

    from rooflib.specs.resolve import System

__all__ = ["FAMILY"]


def plan(family: str, gpus: int, quick: bool) -> list[Job]:
    return [Job(family, "ceilings/all", "kernel", "ceilings", ())]


def predict(system: System, rows: pd.DataFrame) -> pd.Series:
    import pandas as pd

    dev = system.device
    out = pd.Series(np.nan, index=rows.index)
    for idx, row in records(rows):
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


FAMILY = Family(
    names=("ceilings",),
    doc=__doc__ or "",
    run="all",
    plan=plan,
    schema=Schema(required=("name", "variant", "gpus", "time_s"), optional=("bytes_moved", "flops", "blocks")),
    predict=predict,
    checks=Absent("rows without bytes or FLOPs simply have no model"),
    reference=Absent("no third-party model"),
    tables=Absent("every row has its own prediction"),
    section=Absent("the error table says it all"),
    fit=(Ref("rooflib.calibrate.device", "fit_device"),),
    display=Absent("one figure per test would show one or two points: the error table shows them"),
)
