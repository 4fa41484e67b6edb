"""The portable library figures: bus efficiency against rank count, the multi-system table fit and its use."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from rooflib.calibrate.library_tables import apply_library, fit_library_starts, fit_library_tables, nccl_tuning_held
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


def test_a_fit_from_several_starts_keeps_the_lowest_cost_and_the_first_start_is_the_default() -> None:
    rows = _synthetic("hgx-h100", (2, 8))
    rows["time_s"] *= np.exp(np.random.default_rng(3).normal(0.0, 0.05, len(rows)))  # noisy: minima differ
    datasets = [(load_system("hgx-h100"), rows)]
    fits = fit_library_starts(datasets, "measured: synthetic", max_nfev=20, starts=3)
    costs = [f.cost for f in fits]
    assert len(fits) == 3 and costs == sorted(costs) and all(np.isfinite(costs))
    one = fit_library_tables(datasets, "measured: synthetic", max_nfev=20)
    assert one.cost in costs  # the default start is one of the three
    assert fit_library_tables(datasets, "measured: synthetic", max_nfev=20, starts=3).cost == costs[0]
    assert len({round(c, 9) for c in costs}) > 1  # the jittered starts are other starts
    with pytest.raises(ValueError, match="starts: 0"):
        fit_library_starts(datasets, "x", starts=0)


def test_apply_library_validates_the_figures() -> None:
    with pytest.raises(SpecError, match="link_efficiency"):
        apply_library(load_system("hgx-h100"), {"library.link_efficiency.nvlink": {"value": 1.5, "source": "x"}})


def test_blackwell_is_never_fitted() -> None:
    assert not any(label in ("B200", "GB200") for sc in SCENARIOS for label, _ in sc.fit)
    bad = Scenario("B200 -> H100", "generation", (("B200", None),), (("H100", None),))
    with pytest.raises(ValueError, match="held-out"):
        fit_and_predict(pd.DataFrame(columns=["system", "op", "gpus", "bytes", "time_s"]), bad, {})


def test_a_scenario_predicts_with_its_lowest_cost_fit_and_lists_every_start() -> None:
    fit_rows = _synthetic("hgx-h100", (2, 4)).assign(system="H100")
    target = _synthetic("hgx-h200", (8,)).assign(system="H200")
    nccl = pd.concat([fit_rows, target], ignore_index=True)
    sc = Scenario("H100 2, 4 -> H200 8", "generation", (("H100", (2, 4)),), (("H200", (8,)),))
    result = fit_and_predict(nccl, sc, {"H100": "hgx-h100", "H200": "hgx-h200"}, starts=2)
    assert list(result.starts.columns) == ["cost", "own", "H200"] and len(result.starts) == 2
    assert result.starts["cost"].is_monotonic_increasing
    assert result.pred.index.equals(nccl.index[nccl["system"] == "H200"])
    err = (result.pred / nccl.loc[result.pred.index, "time_s"] - 1).abs().median() * 100
    assert err == pytest.approx(result.starts["H200"].iloc[0])  # the first (lowest-cost) start predicts
    assert result.own_median_pct == pytest.approx(result.starts["own"].iloc[0])


def _with_scale(system_name: str, gpus: int, scale: float):  # type: ignore[no-untyped-def]
    import dataclasses

    from rooflib.specs.figures import Ratio

    system = load_system(system_name, gpus=gpus)
    lib = system.library.model_copy(update={"latency_scale": Ratio(value=scale, source="assumption: test")})
    return dataclasses.replace(system, library=lib)


def test_apply_library_multiplies_device_latencies_by_the_targets_scale() -> None:
    ov = {
        "library.graph_launch_overhead": {"value": "2 us", "source": "x"},
        "library.algorithm_latency.ring": {"value": "1 us", "source": "x"},
        "library.protocols.ll.hop_latency.nvlink": {"value": "0.5 us", "source": "x"},
        "library.host_call": {"value": "3 us", "source": "x"},
        "library.link_efficiency.nvlink": {"value": 0.9, "source": "x"},
    }
    lib = apply_library(_with_scale("hgx-b200", 8, 1.5), ov).library
    assert lib.graph_launch_overhead.value == pytest.approx(3e-6)
    assert lib.algorithm_latency["ring"].value == pytest.approx(1.5e-6)
    assert lib.protocols["ll"].hop_latency["nvlink"].value == pytest.approx(0.75e-6)
    assert lib.host_call is not None and lib.host_call.value == pytest.approx(3e-6)  # the host: not scaled
    assert lib.link_efficiency["nvlink"].value == pytest.approx(0.9)  # a share: not scaled
    same = apply_library(load_system("hgx-h100"), ov).library  # Hopper: the unit, scale 1
    assert same.algorithm_latency["ring"].value == pytest.approx(1e-6)


def test_latency_scale_fit_recovers_the_scale_that_made_the_rows() -> None:
    """Rows made by a Blackwell system whose latencies are Hopper's times 1.7: the fit finds 1.7."""
    from rooflib.calibrate.library_tables import fit_latency_scale

    hopper = load_system("hgx-h100").library
    ov = {
        "library.graph_launch_overhead": {"value": f"{hopper.graph_launch_overhead.value * 1e6} us", "source": "x"},
        "library.algorithm_latency.ring": {"value": f"{hopper.algorithm_latency['ring'].value * 1e6} us", "source": "x"},
    }
    for p in ("ll", "ll128", "simple"):
        v = hopper.protocols[p].hop_latency["nvlink"].value
        ov[f"library.protocols.{p}.hop_latency.nvlink"] = {"value": f"{v * 1e6} us", "source": "x"}
    made = apply_library(_with_scale("gb200-nvl72", 4, 1.7), ov)
    sizes = np.asarray([2.0**k for k in range(10, 21)])
    t = predict_collective("all_reduce", made, gpus=4, nbytes=sizes, algorithm="ring", launch="stream").time_s
    rows = pd.DataFrame({"op": "all_reduce", "gpus": 4, "bytes": sizes, "time_s": t})
    k = fit_latency_scale(load_system("gb200-nvl72", gpus=4), ov, rows, algorithm="ring")
    assert k == pytest.approx(1.7, rel=1e-3)


def test_a_table_fit_works_in_hoppers_unit() -> None:
    """Rows of a system with latency_scale 2 fit to the same latencies as the rows it made at scale 1, halved."""
    rows = _synthetic("hgx-h100", (2, 8))
    plain = fit_library_tables([(load_system("hgx-h100"), rows)], "measured: synthetic", max_nfev=60)
    doubled = fit_library_tables([(_with_scale("hgx-h100", 8, 2.0), rows)], "measured: synthetic", max_nfev=60)
    a = float(plain.overrides["library.algorithm_latency.ring"]["value"].removesuffix(" us"))
    b = float(doubled.overrides["library.algorithm_latency.ring"]["value"].removesuffix(" us"))
    h = float(plain.overrides["library.graph_launch_overhead"]["value"].removesuffix(" us"))
    g = float(doubled.overrides["library.graph_launch_overhead"]["value"].removesuffix(" us"))
    assert (a + h) / 2 == pytest.approx(b + g, rel=0.1)


def _tool() -> Any:
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "tools" / "fit_library_defaults.py"
    spec = importlib.util.spec_from_file_location("fit_library_defaults", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_refit_rounds_stop_when_no_figure_moves_by_a_percent() -> None:
    moved = _tool().moved
    a = {"library.x": {"value": "4.0 us", "source": "measured: a"}, "library.c": {"points": [[1, 0.5], [2, 0.8]]}}
    b = {"library.x": {"value": "4.02 us", "source": "measured: b"}, "library.c": {"points": [[1, 0.5], [2, 0.8]]}}
    assert moved(a, b) == pytest.approx(0.02 / 4.02)
    assert moved(a, a) == 0.0
    assert moved(a, {**b, "library.c": {"points": [[1, 0.5]]}}) == float("inf")  # another shape: not settled
