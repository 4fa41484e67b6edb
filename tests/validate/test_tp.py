"""Tensor-parallel comparisons at the duty each measurement ran at (``rooflib.validate.tp``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rooflib.calibrate.data import load_results
from rooflib.compute.duty import WARM_S, duty_after
from rooflib.errors import RooflibError
from rooflib.specs.resolve import load_system
from rooflib.validate.tp import busy_times, tp_table

RUNS = Path(__file__).resolve().parents[2] / "docs" / "validation" / "h200" / "runs"


def _rec(impl: str, time_s: float, m: int = 4096, k: int = 1024) -> dict[str, object]:
    return {"record": "tp", "family": "tp", "workload": "gemm_rs", "impl": impl, "m": m, "n": 8192, "k": k,
            "time_s": time_s, "warmup": 3, "iters": 10}  # fmt: skip


def test_duty_after_the_warm_time() -> None:
    assert duty_after(0.0) == "burst" and duty_after(WARM_S * 0.99) == "burst"
    assert duty_after(WARM_S) == "sustained" and duty_after(3.0) == "sustained"
    with pytest.raises(RooflibError, match="busy time"):
        duty_after(-1.0)
    with pytest.raises(RooflibError, match="busy time"):
        duty_after(float("nan"))


def test_busy_time_restarts_with_each_process(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    lines = [
        {"record": "meta", "family": "tp"},
        _rec("ce_pipeline", 0.004),  # 3 warm-ups + 5 of 10 iterations: 32 ms in
        _rec("comm_only", 0.002),  # no GEMM: adds nothing
        _rec("sequential", 0.004),  # after 52 ms of the first: 52 + 32 = 84 ms
        _rec("fused", 0.004, k=4096),  # 104 + 32 = 136 ms: warm
        {"record": "meta", "family": "tp"},  # a new process starts from idle
        _rec("sequential", 0.004, k=4096),
    ]
    (raw / "tp.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines) + '{"record": "tp", "cut')
    busy = busy_times(tmp_path)
    got = {(impl, k): round(v, 6) for (_, impl, _, _, k, _), v in busy.items()}
    assert got == {
        ("ce_pipeline", 1024): 0.032,
        ("comm_only", 1024): 0.052,
        ("sequential", 1024): 0.084,
        ("fused", 4096): 0.136,
        ("sequential", 4096): 0.032,
    }
    (tmp_path / "imported").mkdir()
    assert busy_times(tmp_path / "imported") == {}  # no raw records: no busy times


def test_one_process_per_shape_is_a_burst_and_a_long_job_is_not(tmp_path: Path) -> None:
    """x2-ce timed each shape in its own process (the pipeline first): bursts; x2-overlap timed 36 shapes in one
    process: all but its first few comparisons sustained. The duty moves the large shapes' predictions."""
    system = load_system("hgx-h200", gpus=2, profile="h200-x2")
    ce = tp_table(_verified(RUNS / "x2-ce"), system)
    assert (ce["ce_duty"] == "burst").all() and (ce["baseline_duty"] == "burst").sum() >= 16
    long = tp_table(_verified(RUNS / "x2-overlap"), system)
    assert (long["baseline_duty"] == "sustained").sum() >= 29
    # without its raw records a row is taken as sustained: the same shapes then predict slower
    bare = tmp_path / "x2-ce"
    bare.mkdir()
    shutil.copy(RUNS / "x2-ce" / "results.csv", bare / "results.csv")
    plain = tp_table(_verified(bare), system)
    assert (plain["ce_duty"] == "sustained").all()
    big = ce["ce_pipeline_s"] > 1e-3
    assert (plain["ce_pred_s"][big] > ce["ce_pred_s"][big] * 1.05).all()


def _verified(folder: Path):  # type: ignore[no-untyped-def]
    frame = load_results(folder)
    out = frame[frame["verified"]].copy()
    out.attrs = dict(frame.attrs)
    return out
