"""The portable library figures: bus efficiency against rank count, the multi-system table fit and its use."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rooflib.calibrate.library_tables import apply_library, fit_library_tables, nccl_tuning_held
from rooflib.collectives import predict_collective
from rooflib.errors import SpecError
from rooflib.specs import load_system
from rooflib.specs.systems import RankCurve
from rooflib.validate.generalization import SCENARIOS, Scenario, fit_and_predict, predict_nccl_rows

SIZES = np.asarray([2.0**k for k in range(10, 30, 2)])


def test_rank_curve_interpolates_log_log_and_clamps() -> None:
    curve = RankCurve(points=[[2, 0.5], [8, 1.0]], source="assumption: test")
    assert curve(2) == pytest.approx(0.5) and curve(8) == pytest.approx(1.0)
    assert curve(4) == pytest.approx(np.sqrt(0.5))  # halfway in log(ranks): the geometric mean
    assert curve(64) == pytest.approx(1.0) and curve(1) == pytest.approx(0.5)


def test_rank_curve_rejects_one_rank_and_unsorted_points() -> None:
    with pytest.raises(ValueError, match="ranks >= 2"):
        RankCurve(points=[[1, 0.5]], source="assumption: test")
    with pytest.raises(ValueError, match="strictly increasing"):
        RankCurve(points=[[4, 0.5], [2, 0.6]], source="assumption: test")


def test_catalog_bus_efficiency_is_lower_at_two_ranks() -> None:
    """NCCL reaches a smaller share of the link at 2 ranks (aiconfigurator H100: all-gather 258 GB/s busbw at 2
    GPUs, 335 at 8, 512 MiB); the fitted Hopper curve says so and the large-message busbw follows."""
    h100 = load_system("hgx-h100")
    assert h100.library.rank_factor("all_gather", 2) < h100.library.rank_factor("all_gather", 8) == 1.0
    two = predict_collective("all_gather", h100, gpus=2, nbytes=512 << 20, algorithm="ring").busbw[0]
    eight = predict_collective("all_gather", h100, gpus=8, nbytes=512 << 20, algorithm="ring").busbw[0]
    assert two / eight < 0.85  # measured 258 / 335 = 0.77


def _synthetic(system_name: str, gpus: tuple[int, ...]) -> pd.DataFrame:
    system = load_system(system_name)
    rows = []
    for op in ("all_reduce", "all_gather"):
        for n in gpus:
            t = predict_collective(op, system, gpus=n, nbytes=SIZES, algorithm="library", launch="stream").time_s
            rows += [{"op": op, "gpus": n, "bytes": s, "time_s": v} for s, v in zip(SIZES, t, strict=True)]
    return pd.DataFrame(rows)


def test_table_fit_reproduces_rows_the_model_itself_made() -> None:
    rows = _synthetic("hgx-h100", (2, 4, 8))
    fit = fit_library_tables([(load_system("hgx-h100"), rows)], "measured: synthetic", max_nfev=60)
    assert fit.n == len(rows) and fit.median_abs_pct < 3.0
    assert all(v["source"] == "measured: synthetic" for k, v in fit.overrides.items() if "source" in v)
    tuned = apply_library(load_system("hgx-h100"), fit.overrides)
    pred = predict_nccl_rows(tuned, rows)
    assert np.median(np.abs(pred / rows["time_s"] - 1)) < 0.05


def test_a_held_figure_stays_at_nccls_value_and_says_so() -> None:
    held = nccl_tuning_held()
    value, source = held["algorithm_latency.nvls"]
    assert source == "nccl-tuning" and value == pytest.approx(8e-6)  # NCCL's baseLat for NVLS
    rows = _synthetic("hgx-h100", (4, 8))
    fit = fit_library_tables([(load_system("hgx-h100"), rows)], "measured: synthetic", max_nfev=30, held=held)
    nvls = fit.overrides["library.algorithm_latency.nvls"]
    assert nvls["source"] == "nccl-tuning" and "held" in nvls["note"]
    assert float(nvls["value"].removesuffix(" us")) * 1e-6 == pytest.approx(value, rel=1e-6)
    with pytest.raises(ValueError, match="not a figure a fit can hold"):
        fit_library_tables([(load_system("hgx-h100"), rows)], "x", max_nfev=1, held={"host_call": (1e-6, "x")})


def test_apply_library_validates_the_figures() -> None:
    with pytest.raises(SpecError, match="link_efficiency"):
        apply_library(load_system("hgx-h100"), {"library.link_efficiency.nvlink": {"value": 1.5, "source": "x"}})


def test_blackwell_is_never_fitted() -> None:
    assert not any(label in ("B200", "GB200") for sc in SCENARIOS for label, _ in sc.fit)
    bad = Scenario("B200 -> H100", "generation", (("B200", None),), (("H100", None),))
    with pytest.raises(ValueError, match="held-out"):
        fit_and_predict(pd.DataFrame(columns=["system", "op", "gpus", "bytes", "time_s"]), bad, {})
