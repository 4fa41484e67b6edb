"""Validation on the committed H200 measurements (docs/validation/h200/runs/x2)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from rooflib.validate import validate

RUNS = Path(__file__).resolve().parents[2] / "docs" / "validation" / "h200" / "runs"


@pytest.fixture(scope="module")
def report():  # type: ignore[no-untyped-def]
    return validate(RUNS / "x2", "hgx-h200", profile="h200-x2")


def test_every_family_gets_errors(report) -> None:  # type: ignore[no-untyped-def]
    fams = set(report.errors["family"])
    assert {"p2p", "nccl", "latency", "ceilings", "gemm"} <= fams
    assert set(report.models) == {"datasheet", "calibrated", "nccl"}


def test_calibration_beats_the_datasheet(report) -> None:  # type: ignore[no-untyped-def]
    e = report.errors
    overall = e[(e["name"] == "(all)") & (e["variant"] == "")].set_index(["family", "model"])["median_abs_pct"]
    for fam in ("p2p", "nccl", "gemm"):
        assert overall[(fam, "calibrated")] < overall[(fam, "datasheet")]


def test_report_files(tmp_path: Path) -> None:
    validate(RUNS / "x1-quick", "hgx-h200", profile="h200-x2", out=tmp_path, plots=True)
    text = (tmp_path / "REPORT.md").read_text()
    assert "| family | name | variant |" in text and (tmp_path / "errors.csv").exists()
    assert (tmp_path / "p2p_sizes.png").stat().st_size > 1000


def test_overlap_and_tp_sections(tmp_path: Path) -> None:
    v = validate(RUNS / "x2-overlap", "hgx-h200", profile="h200-x2", out=tmp_path, plots=True)
    text = (tmp_path / "REPORT.md").read_text()
    assert "## Overlap schedules" in text and "## Tensor-parallel ops" in text
    assert (tmp_path / "overlap.png").stat().st_size > 1000 and (tmp_path / "tp.png").stat().st_size > 1000
    tp = v.tables["tp"]
    assert len(tp) == 36 and bool(tp["bound_below_all"].all())
    choices = pd.read_csv(tmp_path / "overlap_choices.csv")
    assert {"regret_pct", "choice_ok_tie"} <= set(choices.columns) and len(choices) == 48


def test_copy_engine_pipeline_against_its_schedule(tmp_path: Path) -> None:
    v = validate(RUNS / "x2-ce", "hgx-h200", profile="h200-x2", out=tmp_path, plots=False)
    tp = v.tables["tp"]
    ce = tp.dropna(subset=["ce_pipeline_s"])
    assert len(ce) == 18 and bool(tp["bound_below_all"].all())
    # GPU-bound shapes (over 1 ms measured): the inter-SM copy-engine prediction within a few per cent
    big = ce[ce["ce_pipeline_s"] > 1e-3]
    assert len(big) >= 4 and float(big["ce_err_pct"].abs().median()) < 5.0
    assert "Copy-engine pipeline" in (tmp_path / "REPORT.md").read_text()
