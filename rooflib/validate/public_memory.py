"""Memory-bound kernels on GPUs rooflib never measured: the catalog's carried curves against aiconfigurator's
fp8 quantisation tables.

The H200's memory-op curves were measured on rooflib's own lent H200 (PyTorch's kernels); the A100, H100, B200
and GB200 carry them at their own HBM rate (:mod:`rooflib.specs.port`). aiconfigurator's
``quantize/trtllm/<version>/scale_matrix_perf.parquet`` times one streaming kernel (TensorRT-LLM's static fp8
quantisation: 2 bytes read, 1 written per element) from a few elements to 5 GB on H100, H200, B200 and GB200,
in a CUDA graph that quantises the same tensor again and again. Predicted here as rooflib costs a vectorised cast
to a narrower type (the ``cast_down`` curve: PyTorch's fp32-to-bf16 kernel) over those bytes with its operands in
L2 where they fit (``l2_resident``), as that loop leaves them; also from HBM (no residency) and with the
datasheet rule alone (the model before the curves were carried: ``hbm_efficiency`` of the HBM rate, no launch
cost). Nothing is fitted on these tables.

>>> import numpy as np
>>> from rooflib.specs import default_catalog
>>> rows = [{"bytes": 3 * 4096 * 4096, "time_s": 10e-6}]
>>> f = quantize_frame(default_catalog().device("h100-sxm5"), rows)
>>> sorted(c for c in f.columns if c.endswith("_s"))
['datasheet_s', 'from_hbm_s', 'measured_s', 'predicted_s']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from rooflib.compute.memory import memory_time
from rooflib.specs import DeviceSpec

__all__ = ["BANDS", "OP", "SYSTEMS", "band_summary", "quantize_frame"]

OP = "cast_down"
"""The rooflib curve that stands for the quantisation kernel: a vectorised elementwise cast to a narrower type."""

SYSTEMS = {  # aiconfigurator folder: (catalog device, the curves' role there)
    "h200_sxm": ("h200-sxm", "measured here (the curves' own device, another kernel)"),
    "h100_sxm": ("h100-sxm5", "carried from the H200, never fitted"),
    "b200_sxm": ("b200", "carried from the H200, never fitted"),
    "gb200": ("gb200", "carried from the H200, never fitted"),
}

BANDS = ((0.0, 1e6, "under 1 MB"), (1e6, 3e7, "1 to 30 MB"), (3e7, float("inf"), "30 MB and up"))
"""Bytes moved: launch-bound, in L2 on every GPU here, from HBM."""


def quantize_frame(device: DeviceSpec, records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per table record: ``bytes``, ``measured_s``, ``predicted_s`` (the device's curves, L2-resident where
    the bytes fit), ``from_hbm_s`` (no residency) and ``datasheet_s`` (``hbm_efficiency`` only), and the errors
    of each against the measured time (``*_error``, predicted / measured - 1)."""
    rows = list(records)
    nbytes = np.array([float(r["bytes"]) for r in rows])
    measured = np.array([float(r["time_s"]) for r in rows])
    fits = nbytes <= device.l2_size.value
    bare = device.model_copy(update={"compute": None})
    hot = memory_time(device, OP, nbytes, l2_resident=True)
    cold = memory_time(device, OP, nbytes)
    frame = pd.DataFrame(
        {
            "bytes": nbytes,
            "measured_s": measured,
            "predicted_s": np.where(fits, hot, cold),
            "from_hbm_s": cold,
            "datasheet_s": memory_time(bare, OP, nbytes),
        }
    )
    for col in ("predicted", "from_hbm", "datasheet"):
        frame[f"{col}_error"] = frame[f"{col}_s"] / frame["measured_s"] - 1.0
    return frame


def band_summary(frame: pd.DataFrame, column: str) -> dict[str, tuple[float, float, int]]:
    """Per byte band (and ``all``): median |error| and median signed error of ``column`` (in %), and the count."""
    out: dict[str, tuple[float, float, int]] = {}
    err = frame[f"{column}_error"].to_numpy() * 100.0
    b = frame["bytes"].to_numpy()
    for lo, hi, name in (*BANDS, (0.0, float("inf"), "all")):
        part = err[(b >= lo) & (b < hi)]
        if part.size:
            out[name] = (float(np.median(np.abs(part))), float(np.median(part)), int(part.size))
    return out
