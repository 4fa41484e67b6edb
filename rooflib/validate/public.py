"""Published multi-node all-reduce measurements (nccl-tests busbw) against the model's ``library`` prediction.

Each row is a figure somebody measured and published (the ``source`` ids are in ``hardware/sources.yaml``);
``role`` says whether the catalog was fitted on it (``fit``: the three NVL72 rack sizes behind
``nccl-blackwell.nvls_size_efficiency``) or not (``held-out``). The conditions are as published: NCCL picks its
algorithm (NVLS and NVLSTree where the fabric has them), out-of-place times.

>>> t = public_table()
>>> {"system", "gpus", "bytes", "measured_busbw", "predicted_busbw", "error_pct", "role"} <= set(t.columns)
True
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from rooflib.collectives import predict_collective
from rooflib.specs import System, load_system

__all__ = ["PUBLIC_ALL_REDUCE", "PublicFigure", "public_table"]

GiB = 2**30


@dataclass(frozen=True)
class PublicFigure:
    system: str
    gpus: int
    nbytes: int
    busbw: float  # B/s, measured
    source: str
    conditions: str
    role: str = "held-out"


def _rows(
    system: str, gpus: int, source: str, conditions: str, points: list[tuple[float, float]], fit: tuple[float, ...] = ()
) -> list[PublicFigure]:
    return [
        PublicFigure(system, gpus, int(gib * GiB), gbps * 1e9, source, conditions, "fit" if gib in fit else "held-out")
        for gib, gbps in points
    ]


PUBLIC_ALL_REDUCE: tuple[PublicFigure, ...] = (
    *_rows(
        "gb200-nvl72",
        72,
        "coreweave-nccl-tests",
        "one GB200 NVL72 rack, NCCL 2.26.2",
        [(0.5, 586.0), (1, 681.0), (2, 758.0), (4, 839.16), (8, 834.57)],
        fit=(0.5, 2, 8),
    ),
    *_rows(
        "gb200-nvl72-superpod",
        144,
        "coreweave-nccl-tests",
        "two GB200 NVL72 racks over InfiniBand, NCCL 2.26.2",
        [(0.5, 494.0), (1, 596.0), (2, 680.0), (4, 743.0), (8, 793.0), (16, 810.41)],
    ),
    *_rows(
        "gb200-nvl72-superpod",
        1440,
        "coreweave-nccl-tests",
        "twenty GB200 NVL72 racks over InfiniBand, NCCL 2.26.2",
        [(0.5, 151.0), (1, 219.0), (2, 287.0), (4, 346.0), (8, 381.0), (16, 405.74)],
    ),
    *_rows(
        "dgx-h100-superpod",
        64,
        "coreweave-nccl-tests",
        "8 HGX H100 nodes, 8 NDR NICs each (a SHARP job manifest; NCCL version not given)",
        [(0.5, 356.0), (2, 380.7), (8, 386.56)],
    ),
    *_rows(
        "dgx-h100-superpod",
        32,
        "nccl-tests-309",
        "4 HGX H100 nodes, 8 NDR NICs each, NCCL defaults, peak over sizes up to 16 GiB",
        [(16, 365.84)],
    ),
)


def public_table(rows: tuple[PublicFigure, ...] = PUBLIC_ALL_REDUCE) -> pd.DataFrame:
    """Measured and predicted all-reduce busbw (B/s) for every published row, with the error in percent."""
    records = []
    systems: dict[tuple[str, int], System] = {}
    for row in rows:
        key = (row.system, row.gpus)
        if key not in systems:
            systems[key] = load_system(row.system, gpus=row.gpus)
        system = systems[key]
        r = predict_collective("all_reduce", system, nbytes=row.nbytes, algorithm="library")
        pred = float(r.busbw[0])
        records.append(
            {
                "system": row.system,
                "gpus": row.gpus,
                "bytes": row.nbytes,
                "measured_busbw": row.busbw,
                "predicted_busbw": pred,
                "algorithm": r.algorithm[0],
                "error_pct": (pred / row.busbw - 1.0) * 100.0,
                "role": row.role,
                "source": row.source,
                "conditions": row.conditions,
            }
        )
    return pd.DataFrame.from_records(records)
