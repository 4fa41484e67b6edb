"""A results table that cannot be trusted is refused, naming the file, the line, the column and the value."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rooflib.bench.records import MeasurementError
from rooflib.calibrate import calibrate, load_meta, load_results
from rooflib.errors import RooflibError

RUNS = Path(__file__).resolve().parents[2] / "docs" / "validation" / "h200" / "runs"
HEADER = "record,family,name,bytes,sms,time_s,verified"
ROWS = ["point,p2p,tma,1024,132,1e-05,True", "point,p2p,tma,2048,132,2e-05,True", "point,p2p,tma,4096,132,3e-05,True"]


def _csv(tmp: Path, text: str) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "results.csv").write_text(text)
    return tmp


def _fails(tmp: Path, text: str) -> MeasurementError:
    with pytest.raises(MeasurementError) as info:
        load_results(_csv(tmp, text))
    assert isinstance(info.value, RooflibError) and "\n" not in str(info.value)
    assert "array(" not in str(info.value)
    return info.value


def test_a_committed_run_reads_with_line_numbers() -> None:
    frame = load_results(RUNS / "x2")
    assert frame["_line"].iloc[0] == 2 and frame["_line"].is_monotonic_increasing
    assert frame.attrs["source"].endswith("x2/results.csv")


def test_renamed_time_columns_name_what_is_missing(tmp_path: Path) -> None:
    err = _fails(tmp_path, "record,family,name,bytes,t_median\npoint,p2p,tma,1024,1e-5\n")
    assert str(err).startswith(f"{tmp_path / 'results.csv'}: no time column (time_s, time_s_median, one_way_ns_median)")
    err = _fails(tmp_path / "b", "record,family,name,time_s,one_way_ns\npoint,latency,x,,67\npoint,p2p,tma,1e-5,\n")
    assert "line 2: this latency row has no time: time_s empty and time_s_median, one_way_ns_median absent" in str(err)


def test_renamed_columns_in_a_real_run(tmp_path: Path) -> None:
    text = (RUNS / "x2" / "results.csv").read_text().replace("time_s_median", "t_median", 1)
    err = _fails(tmp_path, text)
    assert "line 2: this ceilings row has no time" in str(err) and "time_s_median" in str(err)


@pytest.mark.parametrize("cut", [1, 20, 40])
def test_a_cut_off_file_is_refused(tmp_path: Path, cut: int) -> None:
    text = (RUNS / "x2" / "results.csv").read_text()[:-cut]
    err = _fails(tmp_path, text)
    assert err.line == 652 and ("cut off" in str(err))


def test_rows_of_the_wrong_width(tmp_path: Path) -> None:
    err = _fails(tmp_path, "\n".join([HEADER, ROWS[0], "point,p2p,tma,2048", ROWS[2]]) + "\n")
    assert str(err).endswith("line 3: 4 cells where the header has 7")


@pytest.mark.parametrize(
    ("row", "column", "value", "why"),
    [
        ("point,p2p,tma,lots,132,1e-05,True", "bytes", "'lots'", "not a number"),
        ("point,p2p,tma,1024,132,-1e-05,True", "time_s", "-1e-05", "a time must be > 0"),
        ("point,p2p,tma,1024,132,0,True", "time_s", "0", "a time must be > 0"),
        ("point,p2p,tma,1024,132,inf,True", "time_s", "inf", "must be finite"),
        ("point,p2p,tma,-1024,132,1e-05,True", "bytes", "-1024", "must be >= 0"),
        ("point,p2p,tma,1024,132,1e-05,maybe", "verified", "'maybe'", "expected True or False"),
    ],
)
def test_bad_cells_name_line_column_and_value(tmp_path: Path, row: str, column: str, value: str, why: str) -> None:
    err = _fails(tmp_path, "\n".join([HEADER, ROWS[0], row, ROWS[1]]) + "\n")
    assert str(err) == f"{tmp_path / 'results.csv'} line 3: column {column!r} = {value}: {why}"


def test_duplicated_rows_are_refused(tmp_path: Path) -> None:
    err = _fails(tmp_path, "\n".join([HEADER, *ROWS, ROWS[1]]) + "\n")
    assert "lines 3 and 5 are the same measurement" in str(err)


def test_other_broken_tables(tmp_path: Path) -> None:
    assert "no measurements in it (empty file)" in str(_fails(tmp_path / "a", ""))
    assert "only a header" in str(_fails(tmp_path / "b", HEADER + "\n"))
    assert "column 'time_s' appears 2 times" in str(_fails(tmp_path / "c", HEADER + ",time_s\n" + ROWS[0] + ",1\n"))
    assert "no 'family' (or 'program') column" in str(_fails(tmp_path / "d", "a,b\n1,2\n"))
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "results.csv").write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(MeasurementError, match="not a text file"):
        load_results(tmp_path / "e")
    with pytest.raises(RooflibError, match="no such results file or folder"):
        load_results(tmp_path / "nope")


def test_verified_reads_true_and_false(tmp_path: Path) -> None:
    rows = ["point,p2p,tma,1024,132,1e-05,False", "point,p2p,tma,2048,132,2e-05,", "point,p2p,tma,4096,132,3e-05,1"]
    frame = load_results(_csv(tmp_path, "\n".join([HEADER, *rows]) + "\n"))
    assert frame["verified"].tolist() == [False, True, True]


def test_a_csv_path_finds_its_meta(tmp_path: Path) -> None:
    shutil.copy(RUNS / "x1-quick" / "results.csv", tmp_path / "results.csv")
    shutil.copy(RUNS / "x1-quick" / "meta.json", tmp_path / "meta.json")
    assert load_meta(tmp_path / "results.csv") == load_meta(tmp_path)
    profile = calibrate(tmp_path / "results.csv", "hgx-h200", tmp_path / "p.yaml")
    assert profile["provenance"]["gpu"] == "NVIDIA H200"
    (tmp_path / "meta.json").write_text("{not json")
    with pytest.raises(RooflibError, match=r"meta.json: not JSON"):
        load_meta(tmp_path)
