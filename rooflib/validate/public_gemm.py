"""Published GEMM throughput on Blackwell, outside NVIDIA aiconfigurator's held-out tables.

Each row is one GEMM somebody timed and published: Azure's cuBLASLt fp8 and nvfp4 runs on a GB200
(:data:`AZURE_GB200_GEMM`) and PyTorch's bf16 ``nn.Linear`` on a B200 in a pytorch/ao pull request
(:data:`AO_B200_GEMM`). The large ones (m, n and k at least :data:`EFFICIENCY_FIT_MIN_DIM`: the tensor rate sets
their time) fit the catalog's Blackwell ``dtype_efficiency``: Azure's the fp8 and nvfp4 shares, pytorch/ao's the bf16
share (``tools/fit_gemm_defaults.py``, :func:`fit_efficiency`); every other row is held out. aiconfigurator's B200
and GB200 GEMM tables stay out of every fit: they test these figures (docs/validation/public/gemm.md says how the
bf16 rows came to be fitted).

>>> t = gemm_table(AZURE_GB200_GEMM)
>>> {"dtype", "m", "n", "k", "measured_s", "predicted_s", "error_pct", "role"} <= set(t.columns)
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rooflib.compute.gemm import gemm_times
from rooflib.specs import DeviceSpec, default_catalog

__all__ = [
    "AO_B200_GEMM",
    "AZURE_GB200_GEMM",
    "EFFICIENCY_FIT_MIN_DIM",
    "PUBLIC_GEMM",
    "PublicGemm",
    "fit_efficiency",
    "gemm_table",
]

EFFICIENCY_FIT_MIN_DIM = 4096
"""GEMMs with m, n and k all at least this are compute-bound enough to fit an efficiency; the others are held out
(fixed costs, waves or the memory side decide them)."""


@dataclass(frozen=True)
class PublicGemm:
    device: str
    dtype: str  # rooflib's name: fp8, fp4 (nvfp4), bf16
    m: int
    n: int
    k: int
    tflops: float  # as published, 2 m n k / time
    source: str
    conditions: str

    @property
    def flop(self) -> float:
        return 2.0 * self.m * self.n * self.k

    @property
    def large(self) -> bool:
        """Compute-bound enough to fit an efficiency on (:data:`EFFICIENCY_FIT_MIN_DIM`)."""
        return min(self.m, self.n, self.k) >= EFFICIENCY_FIT_MIN_DIM

    @property
    def time_s(self) -> float:
        return self.flop / (self.tflops * 1e12)


_AZURE = (
    "Azure ND GB200 v6 (GB200 185 GB, CUDA 12.8, driver 570.133.20): cuBLASLt GEMM, random initialisation, "
    "10,000 warm-up iterations, TFLOP/s as published"
)


def _azure(dtype: str, rows: list[tuple[int, int, int, float]]) -> tuple[PublicGemm, ...]:
    return tuple(PublicGemm("gb200", dtype, m, n, k, tf, "azure-nd-gb200-v6", _AZURE) for m, n, k, tf in rows)


AZURE_GB200_GEMM: tuple[PublicGemm, ...] = (
    *_azure(
        "fp8",
        [
            (1024, 1024, 1024, 489.2),
            (2048, 2048, 2048, 2243.6),
            (4096, 4096, 4096, 2834.6),
            (8192, 8192, 8192, 2876.6),
            (16384, 16384, 16384, 2906.9),
            (32768, 32768, 32768, 2825.6),
            (1024, 2145, 1024, 1022.2),
            (6144, 12288, 12288, 2895.6),
            (802816, 192, 768, 1459.5),
        ],
    ),
    *_azure(
        "fp4",
        [
            (1024, 1024, 1024, 287.2),
            (2048, 2048, 2048, 1677.7),
            (4096, 4096, 4096, 5177.3),
            (8192, 8192, 8192, 7535.6),
            (16384, 16384, 16384, 7627.6),
            (32768, 32768, 32768, 7487.2),
            (1024, 2145, 1024, 549.0),
            (802816, 192, 768, 2216.7),
        ],
    ),
)


_AO = (
    "pytorch/ao PR 2427 (2025-06-23): NVIDIA B200, benchmarks/float8/bench_matmul.py, the bf16 reference "
    "(nn.Linear without bias on an m x k input, cuBLAS through PyTorch), GPU kernel time, as published; clocks, "
    "power limit and versions not given"
)

AO_B200_GEMM: tuple[PublicGemm, ...] = tuple(
    PublicGemm("b200", "bf16", n, n, n, 2.0 * n**3 / seconds / 1e12, "pytorch-ao-2427", _AO)
    for n, seconds in (
        (1024, 5.08e-6),
        (1536, 7.87e-6),
        (2048, 15.2e-6),
        (3072, 38.4e-6),
        (4096, 97.4e-6),
        (6144, 319e-6),
        (8192, 774e-6),
    )
)
"""B200 bf16 GEMMs, m = n = k, from their published kernel times (seconds, three significant figures); the large
ones fit Blackwell's bf16 share."""

PUBLIC_GEMM: tuple[PublicGemm, ...] = (*AZURE_GB200_GEMM, *AO_B200_GEMM)
"""Every published Blackwell GEMM row."""


def _times(device: DeviceSpec, rows: Sequence[PublicGemm]) -> np.ndarray:
    out = np.empty(len(rows))
    for i, r in enumerate(rows):  # a bare cuBLASLt GEMM: no activation quantisation
        out[i] = float(gemm_times(device, np.array([r.m]), np.array([r.n]), np.array([r.k]), r.dtype)[0])
    return out


def gemm_table(rows: Sequence[PublicGemm], device: DeviceSpec | None = None) -> pd.DataFrame:
    """Measured against predicted device time of every row (the row's device from the catalog unless given),
    with the error in percent and the role (``fit``: large, the efficiency fit's; ``held-out``)."""
    records = []
    for dev_name in dict.fromkeys(r.device for r in rows):
        part = [r for r in rows if r.device == dev_name]
        spec = device or default_catalog().device(dev_name)
        predicted = _times(spec, part)
        for r, p in zip(part, predicted, strict=True):
            records.append(
                {
                    "device": r.device,
                    "dtype": r.dtype,
                    "m": r.m,
                    "n": r.n,
                    "k": r.k,
                    "measured_s": r.time_s,
                    "predicted_s": p,
                    "error_pct": (p / r.time_s - 1.0) * 100.0,
                    "role": "fit" if r.large else "held-out",
                    "source": r.source,
                }
            )
    return pd.DataFrame.from_records(records)


def fit_efficiency(device: DeviceSpec, rows: Sequence[PublicGemm], dtype: str) -> float:
    """The ``dtype_efficiency`` of ``dtype`` (share of the datasheet peak) that makes ``device`` best predict the
    large ``rows`` of that dtype (squared log error, bounded 0.2-1)."""
    from scipy.optimize import minimize_scalar

    from rooflib.specs.figures import Fraction

    part = [r for r in rows if r.dtype == dtype and r.large]
    if not part:
        raise ValueError(f"no large {dtype} rows to fit")
    measured = np.array([r.time_s for r in part])

    def loss(eff: float) -> float:
        effs = dict(device.dtype_efficiency) | {dtype: Fraction(value=eff, source="fit")}
        spec = device.model_copy(update={"dtype_efficiency": effs})
        e = np.log(_times(spec, part) / measured)
        return float(np.mean(e * e))

    res = minimize_scalar(loss, bounds=(0.2, 1.0), method="bounded", options={"xatol": 1e-4})
    return float(res.x)
