"""The lent H100's committed runs (docs/validation/h100/runs) against the catalog's hgx-h100, never fitted on them:
the GEMM and compute sections of tools/h100_report.py, and the held-out errors the port of the H200's models
reaches there."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "docs" / "validation" / "h100" / "runs"


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rooflib_h100_report", ROOT / "tools" / "h100_report.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["rooflib_h100_report"] = module
    spec.loader.exec_module(module)
    return module


def _cells(lines: list[str], label: str) -> list[str]:
    row = next(line for line in lines if line.startswith(f"| {label} |"))
    return [c.strip() for c in row.strip("|").split("|")]


def test_every_committed_h100_record_was_verified() -> None:
    files = sorted(RUNS.glob("*/**/*.jsonl"))
    assert len(files) >= 10
    for path in files:
        recs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        timed = [r for r in recs if r.get("record") in ("gemm", "point") and "verified" in r]
        if "pkb" in path.parent.name:  # PKB's own check compares with the CPU: low precision may differ
            continue
        assert timed, path
        assert all(r["verified"] for r in timed), path


def test_compute_section_predicts_the_h100_grids_as_the_h200_predicts_its_own() -> None:
    lines = _tool().compute_section()
    # cells: points, median |error| %, median error % (catalog H100; then the H200's models as they are)
    memory = _cells(lines, "memory ops (all)")
    attention = _cells(lines, "attention (all)")
    n, median, _ = (float(x) for x in memory[1].split(","))
    assert n >= 400 and median < 6.0  # the carried curves; the datasheet rule before the port was 62 % off
    n, median, _ = (float(x) for x in attention[1].split(","))
    assert n >= 80 and median < 6.0  # the H200's attention model, carried as it is
    h200_memory = float(memory[2].split(",")[1])
    assert h200_memory > median  # at the H200's own HBM rate the memory ops are too fast


def test_gemm_section_without_the_table() -> None:
    lines = _tool().gemm_section(None)
    bf16 = _cells(lines, "bf16")
    assert bf16[2] == "-"  # no table given: no table column
    median = float(bf16[3].split("/")[0])
    assert 0.0 < median < 10.0
    assert any("eager over graph time" in line for line in lines)


def test_a_wrong_pkb_root_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "nowhere"
    assert _tool().main(["--pkb", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --pkb {bad}") and err.count("\n") == 1


def test_the_h200_curves_carried_from_the_h100_are_what_the_tool_makes() -> None:
    """tools/port_curves.py on runs/x1-gaps and -2 (short rows, the row scatter; measured on H100s only) gives
    the curves the H200's file holds with that provenance, and none the H200 measured itself."""
    spec = importlib.util.spec_from_file_location("rooflib_port_curves", ROOT / "tools" / "port_curves.py")
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    from rooflib.specs import default_catalog

    cat = default_catalog()
    h200 = cat.device("h200-sxm")
    hbm = h200.compute.memory_ops.hbm  # type: ignore[union-attr]
    carried = {k for k, c in hbm.items() if "measured on h100-sxm5" in c.source}
    assert {"scatter_add_rows", "sum@16", "layernorm@512", "softmax@64"} <= carried
    models = h200.compute
    assert models is not None and models.memory_ops is not None
    ops = models.memory_ops.model_copy(update={"hbm": {k: c for k, c in hbm.items() if k not in carried}})
    bare = h200.model_copy(update={"compute": models.model_copy(update={"memory_ops": ops})})
    again = tool.ported_curves([RUNS / "x1-gaps", RUNS / "x1-gaps-2"], cat.device("h100-sxm5"), bare)
    assert carried == set(again)
    for key in carried:
        flat = [x for p in again[key]["points"] for x in p]
        assert [x for p in hbm[key].points for x in p] == pytest.approx(flat, rel=1e-3), key
