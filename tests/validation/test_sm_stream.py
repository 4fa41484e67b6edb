"""The HBM rate of a few SMs: the H200's ``hbm_per_sm`` and ``hbm_sm_sharpness`` are what tools/sm_stream_report.py
fits on docs/validation/h200/runs/x1-sm-stream, and they predict the held-out second pass."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import rooflib
from rooflib.compute.memory import sm_stream_share

ROOT = Path(__file__).resolve().parents[2]


def _tool():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("sm_stream_report", ROOT / "tools" / "sm_stream_report.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_catalog_figures_are_the_fit_and_the_report_is_current() -> None:
    pytest.importorskip("scipy")
    tool = _tool()
    text, r, p = tool.report()
    dev = rooflib.load_system("hgx-h200").device
    assert dev.hbm_per_sm is not None and dev.hbm_sm_sharpness is not None
    assert dev.hbm_per_sm.value == pytest.approx(r, rel=1e-3) and dev.hbm_sm_sharpness.value == pytest.approx(
        p, abs=0.01
    )
    assert tool.OUT.read_text() == text, "run: python tools/sm_stream_report.py"


def test_the_share_follows_the_held_out_pass() -> None:
    tool = _tool()
    second = tool.envelope(tool.RUN / "sm_stream_2.jsonl")
    dev = rooflib.load_system("hgx-h200").device
    k = sorted(second)
    measured = np.array([second[i] / second[132] for i in k])
    predicted = np.array([sm_stream_share(dev, i) for i in k])
    assert np.median(np.abs(predicted / measured - 1)) < 0.06  # 3.9 %, with the catalog R (4.32 TB/s), not the run one
    assert all(np.diff(predicted) > 0) and predicted[-1] == pytest.approx(1.0)
    bare = dataclass_without_figures(dev)
    assert sm_stream_share(bare, 66) == pytest.approx(0.5)  # no figures: the rate shrinks with the SMs


def dataclass_without_figures(dev):  # type: ignore[no-untyped-def]
    return dev.model_copy(update={"hbm_per_sm": None, "hbm_sm_sharpness": None})


def test_the_h200_figures_carry_to_the_h100_run() -> None:
    tool = _tool()
    if not (tool.H100_RUN / "sm_stream.jsonl").exists():
        pytest.skip("no H100 sweep committed")
    passes = [tool.envelope(tool.H100_RUN / n) for n in ("sm_stream.jsonl", "sm_stream_2.jsonl")]
    dev = rooflib.load_system("hgx-h100").device
    k = sorted(set(passes[0]) & set(passes[1]))
    best = {i: max(p[i] for p in passes) for i in k}
    measured = np.array([best[i] / best[132] for i in k])
    predicted = np.array([sm_stream_share(dev, i) for i in k])
    assert np.median(np.abs(predicted / measured - 1)) < 0.08  # 4.1 % with the run's own all-SM rate
