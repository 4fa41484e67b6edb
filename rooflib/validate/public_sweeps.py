"""Published nccl-tests size sweeps inside one NVLink domain: the small messages the multi-node figures lack.

A sweep is one published ``*_perf`` run, every size from 1 KiB up, as busbw. Its small messages (up to
:data:`LATENCY_FIT_MAX_BYTES`) are where the library's latency figures set the time: the catalog's Blackwell
``latency_scale`` is fitted on them (``tools/fit_library_defaults.py``, ``rooflib.calibrate.library_tables.
fit_latency_scale``); its larger sizes are held out. NVIDIA aiconfigurator's B200 and GB200 tables stay out of
every fit: they are the test of the Blackwell figures.

>>> rows = sweep_rows(AZURE_GB200_RING)
>>> sorted(rows.columns), int(rows["gpus"].iloc[0])
(['bytes', 'gpus', 'op', 'time_s'], 4)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from rooflib.collectives import predict_collective
from rooflib.conventions import bus_factor
from rooflib.specs import System, load_system

__all__ = ["AZURE_GB200_RING", "LATENCY_FIT_MAX_BYTES", "PublicSweep", "sweep_rows", "sweep_table"]

LATENCY_FIT_MAX_BYTES = float(1 << 20)
"""Sizes up to this (bytes) are the latency fit's; larger ones are held out."""


@dataclass(frozen=True)
class PublicSweep:
    """One published nccl-tests sweep: ``points`` are (size S in bytes, busbw in B/s) as published."""

    system: str
    gpus: int
    op: str
    algorithm: str  # what the run forced (NCCL_ALGO), as rooflib names it; "library" when NCCL chose
    source: str
    conditions: str
    points: tuple[tuple[float, float], ...]


def _gbps(pairs: list[tuple[int, float]]) -> tuple[tuple[float, float], ...]:
    return tuple((float(2**k), gbps * 1e9) for k, gbps in pairs)


AZURE_GB200_RING = PublicSweep(
    system="gb200-nvl72",
    gpus=4,
    op="all_reduce",
    algorithm="ring",
    source="azure-nd-gb200-v6",
    conditions="Azure ND GB200 v6: 4 GB200 in one host (one NVL72 tray), NCCL 2.25.1, CUDA 12.8; "
    "NCCL_ALGO=Ring all_reduce_perf -b 8 -e 8G -f 2 -g 4 -n 40 (one thread, stream launches), in-place busbw",
    # the table labels sizes 1K, 2K, ..., 65K, 132K, ..., 8G: nccl-tests' powers of two from 2**10 to 2**33
    points=_gbps(
        [
            (10, 0.10),
            (11, 0.19),
            (12, 0.38),
            (13, 0.76),
            (14, 1.46),
            (15, 2.88),
            (16, 5.71),
            (17, 11.29),
            (18, 22.41),
            (19, 44.07),
            (20, 80.48),
            (21, 110.43),
            (22, 146.27),
            (23, 253.46),
            (24, 331.09),
            (25, 422.62),
            (26, 550.73),
            (27, 574.19),
            (28, 593.53),
            (29, 618.74),
            (30, 646.87),
            (31, 666.63),
            (32, 673.06),
            (33, 679.61),
        ]
    ),
)


def sweep_rows(sweep: PublicSweep, *, max_bytes: float | None = None) -> pd.DataFrame:
    """The sweep as NCCL rows (``op``, ``gpus``, ``bytes``, ``time_s``), times from busbw by nccl-tests'
    convention (``t = S * bus_factor / busbw``); only sizes up to ``max_bytes`` when given."""
    factor = bus_factor(sweep.op, sweep.gpus)  # type: ignore[arg-type]
    rows = [
        {"op": sweep.op, "gpus": sweep.gpus, "bytes": s, "time_s": s * factor / bw}
        for s, bw in sweep.points
        if max_bytes is None or s <= max_bytes
    ]
    return pd.DataFrame.from_records(rows)


def sweep_table(sweep: PublicSweep, system: System | None = None) -> pd.DataFrame:
    """Measured against predicted (stream launches, the sweep's algorithm) at every size, with the error in
    percent and the role (``fit``: the latency fit's sizes; ``held-out``)."""
    system = system or load_system(sweep.system, gpus=sweep.gpus)
    rows = sweep_rows(sweep)
    sizes = rows["bytes"].to_numpy(dtype=np.float64)
    r = predict_collective(sweep.op, system, gpus=sweep.gpus, nbytes=sizes, algorithm=sweep.algorithm, launch="stream")
    out = rows.assign(
        predicted_s=r.time_s,
        error_pct=(r.time_s / rows["time_s"].to_numpy() - 1.0) * 100.0,
        role=np.where(sizes <= LATENCY_FIT_MAX_BYTES, "fit", "held-out"),
    )
    return out
