"""An imported nccl-tests log makes a folder that calibrate and validate read, with its provenance, once."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from rooflib.bench.nccl_import import import_nccl_tests
from rooflib.bench.records import MeasurementError
from rooflib.calibrate import calibrate
from rooflib.validate import validate

DATA = Path(__file__).resolve().parent / "data"


def _strict(path: Path) -> list[dict[str, Any]]:
    def refuse(token: str) -> None:
        raise AssertionError(f"{path} holds {token}: not JSON")

    return [json.loads(line, parse_constant=refuse) for line in path.read_text().splitlines()]


def test_import_then_calibrate_and_validate(tmp_path: Path) -> None:
    log = tmp_path / "ar.log"
    shutil.copy(DATA / "all_reduce_h100.log", log)
    out = tmp_path / "res"
    done = import_nccl_tests(log, out)
    assert done.points == 12 and done.replaced == 0
    records = _strict(out / "raw" / "nccl.jsonl")
    (meta,) = [r for r in records if r["record"] == "meta"]
    assert meta["source_file"] == str(log.resolve()) and len(meta["sha256"]) == 64
    assert (meta["gpu"], meta["gpus"], meta["nccl"], meta["nvls"]) == ("NVIDIA H100 80GB HBM3", 8, "2.27.4", "on")
    assert "mean time per op over 20 iterations" in meta["timing"]
    points = [r for r in records if r["record"] == "nccl"]
    assert all(r["gpu"] == "NVIDIA H100 80GB HBM3" and r["nvls"] == "on" and r["nccl"] == "2.27.4" for r in points)
    profile = calibrate(out, "hgx-h100", tmp_path / "h100.yaml")
    assert "library.rank_efficiency.all_reduce" in profile["overrides"]  # one GPU count: the curve's point at 8
    assert profile["provenance"]["gpu"] == "NVIDIA H100 80GB HBM3" and profile["provenance"]["nccl"] == "2.27.4"
    measured = profile["fit"]["measurements"]
    assert measured["source_files"] == [str(log.resolve())] and measured["gpus"] == 8 and measured["nvls"] == "on"
    assert "NVLS on" in profile["provenance"]["notes"] and "nccl-tests" in profile["gpus"]["source"]
    assert yaml.safe_load((tmp_path / "h100.yaml").read_text())["fit"]["measurements"]["nvls"] == "on"
    v = validate(out, "hgx-h100", profile=tmp_path / "h100.yaml")
    assert {"stream", "stream-in-place"} <= set(v.errors["variant"]) and set(v.models) == {"datasheet", "calibrated"}


def test_importing_again_replaces_never_duplicates(tmp_path: Path) -> None:
    log = tmp_path / "ar.log"
    shutil.copy(DATA / "all_reduce_h100.log", log)
    out = tmp_path / "res"
    import_nccl_tests(log, out)
    again = import_nccl_tests(log, out)  # the same log
    assert again.replaced == 1
    log.write_text(log.read_text().replace("28.40", "28.50"))  # the same file, edited
    edited = import_nccl_tests(log, out)
    assert edited.replaced == 1
    records = _strict(out / "raw" / "nccl.jsonl")
    assert len([r for r in records if r["record"] == "nccl"]) == 12 and len({r["job"] for r in records}) == 1
    import_nccl_tests(DATA / "reduce_scatter_graph.log", out)  # another log adds to the folder
    assert len([r for r in _strict(out / "raw" / "nccl.jsonl") if r["record"] == "nccl"]) == 20


def test_nothing_imported_is_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_text("")
    with pytest.raises(MeasurementError, match=r"empty.log: nothing to import"):
        import_nccl_tests(empty, tmp_path / "res")
    assert not (tmp_path / "res").exists()  # nothing written
    with pytest.raises(MeasurementError, match="is a folder"):
        import_nccl_tests(tmp_path, tmp_path / "res")


def test_a_tuning_table_in_the_log_feeds_nccls_own_model(tmp_path: Path) -> None:
    tuning = (
        "h:1:1 [0] NCCL INFO Latency/AlgBw |    Ring/    LL |    Ring/ LL128 |    Ring/Simple |\n"
        "h:1:1 [0] NCCL INFO     AllReduce |     5.1/  12.0 |    12.0/  90.0 |    16.8/ 230.0 |\n"
    )
    log = tmp_path / "ar.log"
    log.write_text(tuning + (DATA / "all_reduce_h100.log").read_text())
    out = tmp_path / "res"
    import_nccl_tests(log, out)
    assert len(list((out / "raw").glob("nccl_tuning_import_*.log"))) == 1
    assert "nccl" in validate(out, "hgx-h100").models


def test_an_unknown_nvls_state_is_said_and_a_given_one_recorded(tmp_path: Path) -> None:
    from rooflib.calibrate.checks import MeasurementWarning

    log = DATA / "reduce_scatter_graph.log"  # says nothing about NVLS
    import_nccl_tests(log, tmp_path / "a")
    with pytest.warns(MeasurementWarning, match="NVLS state unknown for the NCCL measurements"):
        profile = calibrate(tmp_path / "a", "hgx-h200", tmp_path / "a.yaml")
    assert profile["fit"]["measurements"]["nvls"] == "unknown"
    import_nccl_tests(log, tmp_path / "b", nvls="off")
    profile = calibrate(tmp_path / "b", "hgx-h200", tmp_path / "b.yaml")  # no warning: filterwarnings = error
    assert (
        profile["fit"]["measurements"]["nvls"] == "off"
        and "--nvls off" in profile["fit"]["measurements"]["nvls_evidence"]
    )
    v = validate(tmp_path / "b", "hgx-h200", profile=tmp_path / "b.yaml")
    assert {"graph", "graph-in-place"} <= set(v.errors["variant"])
