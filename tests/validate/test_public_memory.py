"""aiconfigurator's fp8 quantisation tables read as memory records, and the carried curves' errors against them."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("pyarrow")

from rooflib.bench.aiconfigurator_import import _data_root
from rooflib.bench.aiconfigurator_tables import read_quantize_table
from rooflib.bench.records import MeasurementError
from rooflib.specs import default_catalog
from rooflib.validate.public_memory import band_summary, quantize_frame

DATA = Path(os.environ.get("ROOFLIB_AIC_DATA") or _data_root() or "no-aiconfigurator-data")
"""aiconfigurator's ``systems/data``: ``ROOFLIB_AIC_DATA``, else the installed package's."""


def _table(tmp_path: Path, rows: list[dict[str, object]]) -> Path:
    path = tmp_path / "quantize" / "trtllm" / "1.3.0rc20" / "scale_matrix_perf.parquet"
    path.parent.mkdir(parents=True)
    pd.DataFrame(rows).to_parquet(path)
    return path


def _row(m: int, k: int, ms: float, dtype: str = "fp8") -> dict[str, object]:
    return {
        "device": "NVIDIA H100 80GB HBM3",
        "version": "1.3.0rc20",
        "m": m,
        "k": k,
        "quant_dtype": dtype,
        "latency": ms,
    }


def test_rows_become_memory_records_in_si(tmp_path: Path) -> None:
    path = _table(tmp_path, [_row(128, 4096, 0.002), _row(128, 4096, 0.0021), _row(8, 8, 0.001, "int8")])
    table = read_quantize_table(path)
    assert table.kind == "memory" and table.devices == ["NVIDIA H100 80GB HBM3"]
    assert [r["bytes"] for r in table.records] == [3 * 128 * 4096] * 2  # bf16 read, fp8 written
    assert [r["time_s"] for r in table.records] == pytest.approx([2e-6, 2.1e-6])  # latency is in ms
    assert [r["repeat"] for r in table.records] == [0, 1] and table.skipped == {"quant_dtype int8": 1}


def test_a_bad_latency_names_the_file_row_and_column(tmp_path: Path) -> None:
    path = _table(tmp_path, [_row(128, 4096, 0.002), _row(128, 4096, -1.0)])
    with pytest.raises(MeasurementError) as info:
        read_quantize_table(path)
    text = str(info.value)
    assert str(path) in text and "row 1" in text and "latency" in text and "= -1" in text


def test_errors_per_band() -> None:
    h100 = default_catalog().device("h100-sxm5")
    rows = [{"bytes": 3 * 1024, "time_s": 1.3e-6}, {"bytes": 3 * 2**30, "time_s": 3 * 2**30 / 3.0e12}]
    frame = quantize_frame(h100, rows)
    assert frame.loc[0, "datasheet_s"] < 1e-8 < frame.loc[0, "predicted_s"]  # the datasheet rule: no launch cost
    assert frame.loc[1, "predicted_s"] == pytest.approx(frame.loc[1, "from_hbm_s"])  # past the L2: from HBM
    summary = band_summary(frame, "predicted")
    assert set(summary) == {"under 1 MB", "30 MB and up", "all"} and summary["all"][2] == 2
    assert summary["under 1 MB"][1] == pytest.approx(100 * frame.loc[0, "predicted_error"])


@pytest.mark.skipif(not (DATA / "h100_sxm").is_dir(), reason="aiconfigurator's data folder is not on this machine")
def test_the_h100_table_is_predicted_about_as_well_as_the_h200_it_was_carried_from() -> None:
    cat = default_catalog()
    found = {}
    for folder, device in (("h200_sxm", "h200-sxm"), ("h100_sxm", "h100-sxm5")):
        path = sorted((DATA / folder / "quantize" / "trtllm").glob("*/scale_matrix_perf.parquet"))[-1]
        frame = quantize_frame(cat.device(device), read_quantize_table(path).records)
        found[folder] = band_summary(frame, "predicted")["all"][0], band_summary(frame, "datasheet")["all"][0]
    assert found["h100_sxm"][0] < 15.0 and found["h100_sxm"][0] < found["h200_sxm"][0] + 3.0
    assert found["h100_sxm"][1] > 4 * found["h100_sxm"][0]  # the datasheet rule alone: launch-bound kernels free
