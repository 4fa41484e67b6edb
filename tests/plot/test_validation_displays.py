"""The Display objects of ``rooflib validate``'s report (rooflib/plot/validation.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rooflib.plot import NothingToPlotError, file_axes
from rooflib.plot.validation import MeasuredCurvesDisplay, MeasuredScatterDisplay


def _rows() -> pd.DataFrame:
    sizes = [1024.0, 2048.0, 4096.0]
    return pd.DataFrame(
        {
            "name": ["tma"] * 3 + ["ldst_push"] * 3,
            "variant": ["one_way"] * 6,
            "bytes": sizes * 2,
            "sms": [4.0] * 6,
            "time_s": [1e-6, 2e-6, 4e-6] * 2,
            "pred_datasheet": [1e-6, 2e-6, 4e-6, np.nan, np.nan, np.nan],
            "pred_calibrated": [np.nan] * 6,
        }
    )


def test_curves_one_panel_per_name_and_only_models_with_predictions(tmp_path: Path) -> None:
    shown = MeasuredCurvesDisplay.from_rows(_rows(), ("datasheet", "calibrated"), x="bytes", ylabel="GB/s")
    assert list(shown.curves) == ["ldst_push", "tma"]  # sorted names
    _, measured, predicted = shown.curves["tma"]
    assert list(predicted) == ["datasheet"] and np.allclose(measured, 1024e-9 / 1e-6)
    assert shown.curves["ldst_push"][2] == {}
    assert shown.plot() is shown and shown.figure_ is not None
    assert len(shown.figure_.axes) == 2
    assert shown.savefig(tmp_path / "c.png").stat().st_size > 0


def test_panels_on_given_axes_and_nothing_to_plot() -> None:
    shown = MeasuredCurvesDisplay.from_rows(_rows(), ("datasheet",), x="sms", ylabel="GB/s")
    with pytest.raises(ValueError, match="draws 2 panels, got 1 axes"):
        shown.plot(file_axes())
    axes = [file_axes(), file_axes()]
    assert shown.plot(axes).ax_ is axes[0]
    with pytest.raises(NothingToPlotError):
        MeasuredCurvesDisplay({}).plot()
    empty = pd.DataFrame({"flops": [], "time_s": [], "pred_datasheet": []})
    with pytest.raises(NothingToPlotError):
        MeasuredScatterDisplay.from_rows(empty, ("datasheet",)).plot()


def test_scatter_rates() -> None:
    rows = pd.DataFrame({"flops": [2e12, 4e12], "time_s": [1.0, 1.0], "pred_datasheet": [2.0, 2.0]})
    shown = MeasuredScatterDisplay.from_rows(rows, ("datasheet",))
    assert list(shown.measured) == [2.0, 4.0] and list(shown.predicted["datasheet"]) == [1.0, 2.0]
    assert shown.plot(file_axes()).ax_ is not None
