"""``p2p``: one peer message by each transfer mechanism (``kernels/p2p.cu``), over sizes and SM counts.

Plan: per mechanism a size sweep on all SMs and (but the copy engine) an SM sweep at a quarter of the top size;
with two GPUs, both directions at once. Prediction: ``transfer_time`` with the row's bytes and SMs
(``tma_reduce`` and ``red``: ``reduce=True``; ``ldst_pull``: ``pull=True``); rows on one GPU (``peer`` false,
loopback) have no model. Fit: :func:`rooflib.calibrate.transfer.fit_transfers`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from rooflib.families._rows import curves
from rooflib.families.base import Absent, Family, Figure, Job, Ref, Schema

if TYPE_CHECKING:
    import pandas as pd

    from rooflib.specs.resolve import System

__all__ = ["FAMILY", "MECHANISM_MODEL"]

MECHANISM_MODEL = {  # measured name -> (model mechanism, reduce, pull)
    "copy_engine": ("copy_engine", False, False),
    "tma": ("tma", False, False),
    "ldst_push": ("ldst", False, False),
    "ldst_pull": ("ldst", False, True),
    "tma_reduce": ("tma", True, False),
    "red": ("ldst", True, False),
}


def sizes(lo: int, hi: int) -> str:
    """``"lo,2lo,...,hi"``: powers of two times ``lo`` up to ``hi``."""
    out, s = [], lo
    while s <= hi:
        out.append(str(s))
        s *= 2
    return ",".join(out)


def plan(family: str, gpus: int, quick: bool) -> list[Job]:
    top = (64 << 20) if quick else (1 << 30)
    sweep = sizes(128, top)
    sm_list = "1,2,4,8" if quick else "1,2,3,4,6,8,12,16,20,24,32,48,66,96,132"
    it = ("--iters", "5", "--warmup", "2") if quick else ("--iters", "15", "--warmup", "3")
    jobs: list[Job] = []
    for mech in MECHANISM_MODEL:
        jobs.append(
            Job(
                family,
                f"p2p/{mech}/size",
                "kernel",
                "p2p",
                ("--mechanism", mech, "--bytes", sweep, "--sms", "all", *it),
            )
        )
        if mech != "copy_engine":
            jobs.append(
                Job(
                    family,
                    f"p2p/{mech}/sms",
                    "kernel",
                    "p2p",
                    ("--mechanism", mech, "--bytes", str(top // 4), "--sms", sm_list, *it),
                )
            )
    if gpus >= 2:
        both = ("--mechanism", "copy_engine,tma,ldst_push", "--bytes", f"{1 << 20},{top}", "--sms", "all")
        jobs.append(Job(family, "p2p/bidirectional", "kernel", "p2p", (*both, "--direction", "bidirectional", *it)))
    return jobs


def predict(system: System, rows: pd.DataFrame) -> pd.Series:
    import pandas as pd

    from rooflib.transfer import transfer_time

    out = pd.Series(np.nan, index=rows.index)
    peer = rows[rows["peer"].astype(bool)] if "peer" in rows else rows
    for (name, _), grp in peer.groupby(["name", "variant"]):
        model = MECHANISM_MODEL.get(str(name))
        if model is None or getattr(system.device.transfer, model[0]) is None:
            continue
        sms = grp["sms"].astype(float).to_numpy()
        sms = np.where(sms <= 0, int(system.device.sms), sms)  # the copy engine reports 0 SMs
        size = grp["bytes"].astype(float).to_numpy()
        out[grp.index] = transfer_time(system, model[0], size, sms, reduce=model[1], pull=model[2])
    return out


def checks(frame: pd.DataFrame, system: System) -> list[tuple[pd.Series, str, str]]:
    import pandas as pd

    dev = system.device
    sms = pd.to_numeric(frame["sms"], errors="coerce")
    rows = (frame["family"] == "p2p") & frame["name"].isin(list(MECHANISM_MODEL))
    return [(rows & (sms > int(dev.sms)), "sms", f"more SMs than {dev.display_name} has ({int(dev.sms)})")]


FAMILY = Family(
    names=("p2p",),
    doc=__doc__ or "",
    run="all",
    plan=plan,
    schema=Schema(
        required=("name", "variant", "bytes", "sms", "gpus", "time_s", "peer"),
        optional=("bytes_per_s", "src", "dst"),
    ),
    predict=predict,
    checks=checks,
    reference=Absent("no third-party model of single peer transfers"),
    tables=Absent("every row has its own prediction"),
    section=Absent("the error table and the figures say it all"),
    fit=(Ref("rooflib.calibrate.transfer", "fit_transfers"),),
    display=(
        Figure("p2p_sizes.png", curves("p2p", "bytes", "one_way", "GB/s"), rank=10),
        Figure("p2p_sms.png", curves("p2p", "sms", "one_way", "GB/s"), rank=20),
    ),
)
