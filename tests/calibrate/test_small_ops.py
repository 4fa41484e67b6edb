"""The top-k curve: fitted on half of the small-op grid, held out on the rest, shipped for the H200."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import rooflib
from rooflib.calibrate.small_ops import fit_topk, split_half, topk_bytes
from rooflib.compute.memory import memory_time

RAW = Path(__file__).parents[2] / "docs" / "validation" / "h200" / "runs" / "x1-host-programs" / "raw"


def test_topk_curve_holds_out() -> None:
    pts = [json.loads(line) for line in (RAW / "ops.jsonl").read_text().splitlines()]
    fitted, held = split_half(pts)
    assert len(fitted) == len(held) == 20 and all(p["verified"] for p in fitted + held)
    dev = rooflib.load_system("hgx-h200", gpus=1).device
    shipped = dev.compute.memory_ops.curves("topk")[None]  # type: ignore[union-attr]
    curve = fit_topk(fitted, dev.hbm_bandwidth.value, "test")
    assert [tuple(p) for p in curve["points"]] == [(int(x), y) for x, y in shipped.points]
    errs = [abs(float(memory_time(dev, "topk", topk_bytes(p))[()]) / p["time_s"] - 1) for p in held]
    assert np.median(errs) < 0.10 and max(errs) < 0.30
