"""The generalisation report's pieces: size bands, GEMM shape classes, grouped errors, predictions, plots, and the
report tool end to end on generated aiconfigurator-like tables (no aiconfigurator data needed)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
import pytest

from rooflib.collectives import predict_collective
from rooflib.compute.gemm import gemm_times
from rooflib.plot import NothingToPlotError
from rooflib.plot.errors import ErrorBySizeDisplay, MedianErrorBarsDisplay
from rooflib.specs import load_system
from rooflib.validate.generalization import (
    GEMM_CLASSES,
    SIZE_BANDS,
    gemm_class,
    predict_gemm_rows,
    predict_nccl_rows,
    size_band,
    summarise,
)

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_size_bands_at_their_edges() -> None:
    kib, mib = 1024, 1 << 20
    got = size_band([64 * kib - 1, 64 * kib, 16 * mib, 16 * mib + 1])
    assert list(got) == [SIZE_BANDS[0], SIZE_BANDS[1], SIZE_BANDS[1], SIZE_BANDS[2]]


def test_gemm_classes_first_match_wins() -> None:
    m = [64, 65, 129, 128, 4353, 1024, 1024, 512]
    n = [8192, 8192, 8192, 128, 8192, 1024, 1024, 512]
    k = [65536, 1024, 65536, 2048, 1024, 4096, 1024, 512]
    skinny, j1, splitk, large, other = GEMM_CLASSES
    # m <= 64 beats split-K; m = 128j + 1 beats split-K; 128 x 128 x 2048 is split-K-like (k = 16 max(m, n))
    assert list(gemm_class(m, n, k)) == [skinny, other, j1, splitk, j1, large, large, other]


def test_summarise_median_p90_and_bias() -> None:
    frame = pd.DataFrame(
        {
            "g": ["a"] * 10 + ["b"],
            "time_s": [1.0] * 11,
            "pred": [*(1 + np.arange(10) / 100), np.nan],  # errors 0 .. 9 %; b has no prediction
        }
    )
    s = summarise(frame, ["g"])
    assert list(s["g"]) == ["a"] and int(s["n"].iloc[0]) == 10
    assert s["median_abs_pct"].iloc[0] == pytest.approx(4.5)
    assert s["p90_abs_pct"].iloc[0] == pytest.approx(8.1)
    assert s["bias_pct"].iloc[0] == pytest.approx(4.5)
    assert summarise(frame[frame["g"] == "b"], ["g"]).empty


def test_nccl_predictions_are_library_stream_launches() -> None:
    h200 = load_system("hgx-h200")
    rows = pd.DataFrame(
        {"op": ["all_reduce"] * 3 + ["all_to_all"], "gpus": [2, 2, 8, 16], "bytes": [512, 1 << 20, 1 << 30, 4096]}
    )
    got = predict_nccl_rows(h200, rows)
    two = predict_collective("all_reduce", h200, gpus=2, nbytes=[512.0, 1 << 20], algorithm="library", launch="stream")
    assert np.allclose(got.iloc[:2], two.time_s)
    eight = predict_collective(
        "all_reduce", h200, gpus=8, nbytes=[float(1 << 30)], algorithm="library", launch="stream"
    )
    assert got.iloc[2] == pytest.approx(float(np.asarray(eight.time_s)[0]))
    assert np.isnan(got.iloc[3])  # 16 GPUs: more than the 8-GPU board has


def test_gemm_predictions_skip_dtypes_the_gpu_lacks() -> None:
    a100 = load_system("hgx-a100")
    rows = pd.DataFrame({"m": [1, 4096], "n": [4096, 4096], "k": [4096, 4096], "dtype": ["bf16", "fp8"]})
    got = predict_gemm_rows(a100, rows)
    assert got.iloc[0] == pytest.approx(float(gemm_times(a100.device, [1], 4096, 4096, "bf16")[0]))
    assert np.isnan(got.iloc[1])


def test_error_displays_draw_and_refuse_nothing(tmp_path: Path) -> None:
    d = ErrorBySizeDisplay({"H200 x2": ([512, 4096, 1 << 20], [10.0, -5.0, 2.0])}, {"H200 x2": "H200"}, title="t")
    assert d.savefig(tmp_path / "a.png").stat().st_size > 0
    assert d.ax_ is not None and len(d.ax_.get_lines()) == 2  # the series and the zero line
    bars = MedianErrorBarsDisplay({"H200 bf16": {"large": 8.0}, "B200 bf16": {"large": 6.0, "other": 40.0}})
    assert bars.savefig(tmp_path / "b.png").stat().st_size > 0
    assert bars.ax_ is not None and len(bars.ax_.patches) == 3
    with pytest.raises(NothingToPlotError):
        ErrorBySizeDisplay({}).plot()
    with pytest.raises(NothingToPlotError):
        MedianErrorBarsDisplay({}).plot()


def test_report_tool_end_to_end_on_generated_tables(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    fx = _load("rooflib_test_aic_fixture_v", ROOT / "tests" / "bench" / "aic_fixture.py")
    tool = _load("rooflib_generalization_report", ROOT / "tools" / "generalization_report.py")
    data = tmp_path / "data"
    for name, device, gpus in (
        ("a100_sxm", "NVIDIA A100-SXM4-80GB", (2, 4, 8)),
        ("h100_sxm", "NVIDIA H100 80GB HBM3", (2, 4, 8)),
        ("h200_sxm", "NVIDIA H200", (2, 4, 8)),
        ("b200_sxm", "NVIDIA B200", (2, 4, 8)),
        ("gb200", "NVIDIA GB200", (2, 4)),
    ):
        fx.make_system(data, name, device, gpus=gpus)
    out = tmp_path / "docs"
    assert tool.main(["--data", str(data), "--out", str(out), "--starts", "1"]) == 0
    text = (out / "generalization.md").read_text()
    assert "| B200 | `hgx-b200` | test set: never fitted |" in text
    assert "| GB200 | `gb200-nvl72` | test set: never fitted |" in text
    assert "**excluded** from every fit" in text and "H200 1 tables, 30 rows" in text
    assert "## The shipped `h200-x2` profile on the H200 tables" in text
    assert "| A100 | bf16 |" in text and "| A100 | fp8 |" not in text  # no fp8 on an A100
    assert "| B200 | fp4 |" in text and "| H200 | fp4 |" not in text
    for name in ("nccl_bands.png", "gemm_classes.png", "nccl_error_all_reduce.png", "nccl_summary.csv"):
        assert (out / "generalization" / name).stat().st_size > 0
    summary = pd.read_csv(out / "generalization" / "nccl_summary.csv")
    assert set(summary["system"]) == {"A100", "H100", "H200", "B200", "GB200"}
    assert set(summary[summary["system"] == "GB200"]["gpus"]) == {2, 4}
    assert summary["median_abs_pct"].notna().all()
    assert "| A100 2, 4 -> 8 | 1 |" in text  # every start of every scenario listed
    assert "median over 1 start(s)" in text and "from 1 start (" in text


def test_report_tool_refuses_an_out_that_is_not_a_folder_before_fitting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tool = _load("rooflib_generalization_report", ROOT / "tools" / "generalization_report.py")
    data = tmp_path / "data"
    data.mkdir()
    out = tmp_path / "report.md"
    out.write_text("not a folder")
    assert tool.main(["--data", str(data), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --out ") and "report.md" in err and err.count("\n") == 1
