"""``latency``: synchronisation and flag latencies (``kernels/latency.cu``): mbarrier inside an SM, a flag between
SMs, a flag between two GPUs (one way).

Prediction: the device's ``sync_intra_sm`` / ``sync_inter_sm``, and the topology path's one-way latency for
``peer_flag`` between two GPUs; loopback rows have no model. Fit: :func:`rooflib.calibrate.device.fit_device`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from rooflib.families._rows import records
from rooflib.families.base import Absent, Family, Job, Ref, Schema

if TYPE_CHECKING:
    import pandas as pd

    from rooflib.specs.resolve import System

__all__ = ["FAMILY"]


def plan(family: str, gpus: int, quick: bool) -> list[Job]:
    return [Job(family, "latency/all", "kernel", "latency", ("--iters", "2000" if quick else "20000"))]


def predict(system: System, rows: pd.DataFrame) -> pd.Series:
    import pandas as pd

    from rooflib.topology import topology_of

    out = pd.Series(np.nan, index=rows.index)
    for idx, row in records(rows):
        if row["name"] == "intra_sm_mbarrier":
            out[idx] = system.device.sync_intra_sm.value
        elif row["name"] == "inter_sm_flag":
            out[idx] = system.device.sync_inter_sm.value
        elif row["name"] == "peer_flag" and bool(row.get("peer", False)) and system.gpus > 1:
            out[idx] = topology_of(system).latency(0, 1)
    return out


FAMILY = Family(
    names=("latency",),
    doc=__doc__ or "",
    run="all",
    plan=plan,
    schema=Schema(required=("name", "variant", "gpus", "time_s", "peer", "one_way_ns_median"), optional=("src", "dst")),
    predict=predict,
    checks=Absent("every latency row can be predicted (or has no model)"),
    reference=Absent("no third-party model"),
    tables=Absent("every row has its own prediction"),
    section=Absent("the error table says it all"),
    fit=(Ref("rooflib.calibrate.device", "fit_device"),),
    display=Absent("a handful of scalars: the error table shows them"),
)
