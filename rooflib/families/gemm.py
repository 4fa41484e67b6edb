"""``gemm``: cuBLAS GEMMs through torch (``rooflib.bench.gemm_worker``), bf16 and fp8, each product timed alone,
and a torch copy for the HBM rate; aiconfigurator's GEMM tables join this family when imported.

Prediction: :func:`rooflib.compute.gemm` (tile and wave quantisation) at burst clocks (a row's ``duty``, where it
has one, else ``"burst"``: every writer times a few repeats from idle) plus one ``kernel_launch`` per timed
product; ``torch_copy``: bytes moved over the achievable HBM rate; dtypes the device has no tensor peak for have
no model. Fit: :func:`rooflib.calibrate.device.fit_device`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from rooflib.families._rows import records, rows_of
from rooflib.families.base import Absent, Family, Figure, Job, Ref, Schema

if TYPE_CHECKING:
    from pathlib import Path

    import pandas as pd

    from rooflib.specs.resolve import System
    from rooflib.validate.report import Validation

__all__ = ["FAMILY"]


def plan(family: str, gpus: int, quick: bool) -> list[Job]:
    return [Job(family, "gemm/all", "module", "rooflib.bench.gemm_worker", ("--iters", "5" if quick else "10"))]


def predict(system: System, rows: pd.DataFrame) -> pd.Series:
    import pandas as pd

    from rooflib.compute import gemm

    out = pd.Series(np.nan, index=rows.index)
    for idx, row in records(rows):
        if row.get("name") == "torch_copy":
            out[idx] = float(row["bytes_moved"]) / (
                system.device.hbm_bandwidth.value * system.device.hbm_efficiency.value
            )
            continue
        dtype = str(row.get("dtype", "bf16"))
        if system.device.tensor_peak(dtype) is None:  # type: ignore[arg-type]
            continue
        # aiconfigurator's tables time TRT-LLM's fp8 / nvfp4 activation quantisation with the GEMM, in a CUDA graph
        imported = row.get("source") == "aiconfigurator"
        # every writer of these rows (the tables, gemm_worker, gemm_graph_worker) times a few repeats from idle:
        # burst clocks, unless the row says otherwise
        duty = str(row.get("duty") or "burst")
        m, n, k = int(row["m"]), int(row["n"]), int(row["k"])
        cost = gemm(system.device, m, n, k, dtype, quantize_activations=imported, duty=duty)  # type: ignore[arg-type]
        graphed = row.get("mode") == "graph"
        out[idx] = cost.time_s if graphed else cost.with_overhead(system.device.kernel_launch.value).time_s
    return out


def checks(frame: pd.DataFrame, system: System) -> list[tuple[pd.Series, str, str]]:
    import pandas as pd

    if not {"m", "n", "k"} <= set(frame.columns):
        return []
    out = []
    rows = (frame["family"] == "gemm") & (frame["name"] != "torch_copy")
    for col in ("m", "n", "k"):
        v = pd.to_numeric(frame[col], errors="coerce")
        whole = v.notna() & (v >= 1) & (np.floor(v) == v)
        out.append((rows & ~whole, col, "a GEMM dimension must be a whole number >= 1"))
    return out


def draw(v: Validation, path: Path) -> str | None:
    from rooflib.plot.validation import MeasuredScatterDisplay

    rows = rows_of(v, "gemm")
    if rows.empty:
        return None
    return MeasuredScatterDisplay.from_rows(rows, v.models).savefig(path).name


FAMILY = Family(
    names=("gemm",),
    doc=__doc__ or "",
    run="all",
    plan=plan,
    schema=Schema(
        required=("name", "variant", "gpus", "time_s"),
        optional=("dtype", "m", "n", "k", "flops", "bytes_moved", "source"),
    ),
    predict=predict,
    checks=checks,
    reference=Absent("no third-party model of single GEMMs"),
    tables=Absent("every row has its own prediction"),
    section=Absent("the error table and the figure say it all"),
    fit=(Ref("rooflib.calibrate.device", "fit_device"),),
    display=(Figure("gemm.png", draw, rank=50),),
)
