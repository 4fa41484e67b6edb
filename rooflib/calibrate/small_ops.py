"""Device-time curves of the small row ops programs are made of, from ``programs_worker --ops`` (``record: op``).

``topk`` (``torch.topk`` along rows, fp32): its time grows with the elements searched and hardly with the row
length or ``k`` (one block per row; 2 M elements take 91-115 us on an H200 for rows of 64 to 1024), so one curve of
achieved HBM share against input bytes, ``compute.memory_ops.hbm.topk``, as the compute family's curves
(:mod:`rooflib.compute.memory`). Fitted on every other point in order of bytes (``fit_half``); the rest is held
out.

>>> pts = [{"record": "op", "op": "topk", "rows": 512, "cols": 64, "k": 2, "time_s": 1e-5, "verified": True}]
>>> split_half(pts)[0][0]["rows"]
512
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

__all__ = ["fit_topk", "split_half", "topk_bytes"]


def topk_bytes(rec: Mapping[str, Any]) -> float:
    """Input bytes of a top-k point (fp32 rows x cols)."""
    return float(rec["rows"]) * float(rec["cols"]) * 4.0


def split_half(points: Iterable[Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """(fitted, held out): every other verified top-k point in order of input bytes, then row length and k."""
    pts = sorted(
        (p for p in points if p.get("record") == "op" and p.get("op") == "topk" and p.get("verified")),
        key=lambda p: (topk_bytes(p), p["cols"], p["k"]),
    )
    return pts[0::2], pts[1::2]


def fit_topk(points: Iterable[Mapping[str, Any]], hbm_bandwidth: float, source: str) -> dict[str, Any]:
    """The ``topk`` curve (points ``[bytes, share of hbm_bandwidth]``, median per size) of ``points``."""
    by: dict[float, list[float]] = {}
    for p in points:
        b = topk_bytes(p)
        by.setdefault(b, []).append(b / (float(p["time_s"]) * hbm_bandwidth))
    xs = sorted(by)
    return {"points": [[int(x), float(f"{np.median(by[x]):.4g}")] for x in xs], "source": source}
