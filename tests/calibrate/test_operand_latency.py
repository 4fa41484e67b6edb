from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from rooflib.calibrate.data import load_results
from rooflib.calibrate.device import operand_latency

RUN = Path(__file__).resolve().parents[2] / "docs" / "validation" / "h200" / "runs" / "x1-stream"


def _rows(source: str, blocks: int, stage: int, depth: int, per_sm: float) -> dict[str, object]:
    return {"name": "tma_stream", "source": source, "blocks": blocks, "stage_bytes": stage, "depth": depth,
            "in_flight_bytes": stage * depth, "bytes_per_s_per_sm": per_sm}


def test_littles_law_on_rows_below_the_bandwidth() -> None:
    rows = pd.DataFrame([
        _rows("l2", 132, 16384, 1, 16384 / 0.5e-6),  # latency-bound: 0.5 us
        _rows("l2", 132, 32768, 1, 32768 / 0.7e-6),  # 0.7 us
        _rows("l2", 132, 32768, 4, 60e9),  # bandwidth-bound: not a latency
        _rows("l2", 1, 16384, 1, 16384 / 0.2e-6),  # one SM alone: unloaded, not used
        _rows("hbm", 132, 16384, 1, 16384 / 2e-6),  # HBM: not the operand path of a GEMM's L2-resident tiles
    ])
    assert operand_latency(rows) == pytest.approx(0.6e-6)
    assert operand_latency(rows[rows["source"] == "hbm"]) is None


def test_the_committed_h200_run_gives_the_catalog_figure() -> None:
    import rooflib

    frame = load_results(RUN)
    rows = frame[(frame["family"] == "ceilings") & frame["verified"]]
    assert len(rows[rows["name"] == "tma_stream"]) == 56
    measured = operand_latency(rows)
    assert measured == pytest.approx(rooflib.load_system("hgx-h200").device.operand_latency.value, rel=1e-3)  # type: ignore[union-attr]


def test_copy_engine_piece_cost_from_the_overlap_runs() -> None:
    import rooflib
    from rooflib.calibrate.transfer import ce_piece_cost

    runs = RUN.parent
    costs = [ce_piece_cost(load_results(runs / r)) for r in ("x2-overlap-deep", "x2-overlap-deep/repeat", "x2-gather")]
    assert all(c is not None and 8e-6 < c < 15e-6 for c in costs)  # ~11-13 us per flagged piece
    catalog = rooflib.load_system("hgx-h200").device.transfer.copy_engine.piece_cost
    assert catalog is not None and costs[0] == pytest.approx(catalog.value, rel=0.01)
    assert ce_piece_cost(load_results(RUN)) is None  # no overlap rows
