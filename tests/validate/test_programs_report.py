"""The single-GPU programs measured on the H200 against trace + predict_program (needs torch)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

import rooflib

RUN = Path(__file__).resolve().parents[2] / "docs" / "validation" / "h200" / "runs" / "x1-compute"


def test_programs_predicted_against_the_h200_measurements() -> None:
    pytest.importorskip("torch")
    from rooflib.validate.programs import programs_table

    records = [json.loads(line) for line in (RUN / "raw" / "programs.jsonl").read_text().splitlines() if line]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        table = programs_table(records, rooflib.load_system("hgx-h200", gpus=1))
    assert set(table["program"]) == {"mlp_block", "attention_block", "gemv_chain", "elementwise_chain", "router",
                                     "cross_entropy"}  # fmt: skip
    assert set(table["mode"]) == {"eager", "graph"} and len(table) == 36
    assert table["bound_below"].all()  # no measured run beats the bound
    big = table[table["measured_s"] >= 5e-4]
    assert big["error_pct"].abs().median() < 15.0  # device-bound programs (the small ones are host-bound)
