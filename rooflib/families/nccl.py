"""``nccl``: every collective through torch.distributed + NCCL (``rooflib.bench.nccl_worker``, one torchrun job per
op), stream and CUDA-graph launches, 1 KiB to 1 GiB, with NCCL's tuning table in the job's log; nccl-tests logs
and aiconfigurator's tables join this family when imported.

Prediction: ``predict_collective(op, system, gpus, bytes, algorithm="library")`` with the row's launch: ``graph``
for graph rows, ``stream`` for rows timed as back-to-back calls (the importers whose ``back_to_back`` is set),
``isolated`` for rooflib's own stream rows (one call between events). Reference model: NCCL's own, read from the
``NCCL_DEBUG_SUBSYS=TUNING`` logs (``raw/nccl_tuning_*.log``). Fit: :func:`rooflib.calibrate.collectives.
fit_collectives`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from rooflib.families._rows import curves
from rooflib.families.base import Absent, Family, Figure, Job, Ref, Schema

if TYPE_CHECKING:
    import pandas as pd

    from rooflib.specs.resolve import System

__all__ = ["FAMILY", "NCCL_OPS"]

NCCL_OPS = (
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "all_to_all",
    "broadcast",
    "reduce",
    "send_recv",
    "gather",
    "scatter",
)


def plan(family: str, gpus: int, quick: bool) -> list[Job]:
    if gpus < 2:
        return []
    hi = "64M" if quick else "1G"
    return [
        Job(
            family,
            f"nccl/{op}",
            "torchrun",
            "rooflib.bench.nccl_worker",
            ("--ops", op, "--min-bytes", "1K", "--max-bytes", hi, "--iters", "8" if quick else "20"),
            log=f"nccl_tuning_{op}.log",
            env={"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "TUNING"},
        )
        for op in NCCL_OPS
    ]


def predict(system: System, rows: pd.DataFrame) -> pd.Series:
    import pandas as pd

    from rooflib.calibrate.data import nccl_key
    from rooflib.collectives import predict_collective
    from rooflib.families.registry import back_to_back_sources

    back_to_back_from = back_to_back_sources()
    out = pd.Series(np.nan, index=rows.index)
    dtypes = rows["dtype"].fillna("") if "dtype" in rows else pd.Series("", index=rows.index)
    for (*key, dtype), grp in rows.groupby([rows["name"], rows["gpus"], rows["variant"], dtypes]):
        op, gpus, mode = nccl_key(tuple(key))
        if gpus > system.gpus or gpus < 2:
            continue
        # rooflib's own stream rows time one call between events (isolated); nccl-tests times back-to-back calls
        # (and so do aiconfigurator's tables, which it measured with nccl-tests)
        back_to_back = "source" in grp and grp["source"].isin(back_to_back_from).all()
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
            dtype=str(dtype) or None,  # imported tables name it: 8-bit reductions cannot use NVLS
        )
        out[grp.index] = r.time_s
    return out


def checks(frame: pd.DataFrame, system: System) -> list[tuple[pd.Series, str, str]]:
    import pandas as pd

    gpus = pd.to_numeric(frame["gpus"], errors="coerce")
    rows = frame["family"] == "nccl"
    return [(rows & ~((gpus >= 1) & (np.floor(gpus) == gpus)), "gpus", "must be a whole number >= 1")]


def nccl_model(results: Path, frame: pd.DataFrame) -> pd.Series:
    """NCCL's own prediction of each ``nccl`` row, from the tuning tables in ``results/raw/nccl_tuning_*.log``
    (NaN for other rows, or without logs)."""
    import pandas as pd

    from rooflib.bench.nccl_text import nccl_model_time, parse_tuning

    logs = sorted((results / "raw").glob("nccl_tuning_*.log")) if (results / "raw").is_dir() else []
    entries = parse_tuning("\n".join(p.read_text(errors="replace") for p in logs))
    values = np.full(len(frame), np.nan)
    if entries:
        for i, (family, name, size) in enumerate(zip(frame["family"], frame["name"], frame["bytes"], strict=True)):
            if family == "nccl":
                t, _ = nccl_model_time(entries, str(name), float(size))
                values[i] = t if np.isfinite(t) else np.nan
    return pd.Series(values, index=frame.index)


FAMILY = Family(
    names=("nccl",),
    doc=__doc__ or "",
    run="all",
    plan=plan,
    schema=Schema(
        required=("name", "variant", "gpus", "bytes", "time_s"),
        optional=("source", "busbw_bytes_per_s", "algbw_bytes_per_s", "dtype"),
    ),
    predict=predict,
    checks=checks,
    reference=("nccl", nccl_model),
    tables=Absent("every row has its own prediction"),
    section=Absent("the error table and the figures say it all"),
    fit=(Ref("rooflib.calibrate.collectives", "fit_collectives"),),
    display=(
        Figure("nccl_stream.png", curves("nccl", "bytes", "stream", "algbw GB/s"), rank=30),
        Figure("nccl_graph.png", curves("nccl", "bytes", "graph", "algbw GB/s"), rank=40),
    ),
)
