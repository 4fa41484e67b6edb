"""The published one-domain sweeps: rows by nccl-tests' convention, the fit/held-out split, the catalog's fit."""

from __future__ import annotations

import numpy as np
import pytest

from rooflib.specs import load_system
from rooflib.validate.public_sweeps import AZURE_GB200_RING, LATENCY_FIT_MAX_BYTES, sweep_rows, sweep_table


def test_sweep_rows_convert_busbw_by_nccl_tests_convention() -> None:
    rows = sweep_rows(AZURE_GB200_RING)
    one_kib = rows[rows["bytes"] == 1024.0]["time_s"].iloc[0]
    assert one_kib == pytest.approx(1024 * 1.5 / 0.10e9)  # all-reduce on 4 ranks: busbw = algbw x 2 (n-1)/n
    assert len(sweep_rows(AZURE_GB200_RING, max_bytes=LATENCY_FIT_MAX_BYTES)) == 11  # 1 KiB .. 1 MiB


def test_the_sweep_is_blackwell_and_its_small_sizes_fit_the_catalog_scale() -> None:
    """The catalog's Blackwell latency_scale was fitted on these sizes: they sit within 10 %, and the held-out
    large sizes within 25 % (they test the shares carried from Hopper)."""
    assert load_system(AZURE_GB200_RING.system).library.latency_factor > 1.0
    t = sweep_table(AZURE_GB200_RING)
    fit, held = t[t["role"] == "fit"], t[t["role"] == "held-out"]
    assert len(fit) == 11 and len(held) == 13
    assert np.median(np.abs(fit["error_pct"])) < 10.0
    assert np.median(np.abs(held["error_pct"])) < 25.0
