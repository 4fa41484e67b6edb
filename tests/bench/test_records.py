"""JSON Lines are read strictly (file and line in every error) and written as strict JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rooflib.bench.records import MeasurementError, dump_record, read_jsonl, write_jsonl
from rooflib.errors import RooflibError


def test_a_corrupt_middle_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "p2p.jsonl"
    path.write_text('{"a": 1}\n\n{"a": 2,\n{"a": 3}\n')
    with pytest.raises(MeasurementError, match=r"p2p.jsonl line 3: not a JSON record") as info:
        read_jsonl(path, drop_partial_tail=True)  # only a last line may be dropped
    assert isinstance(info.value, RooflibError) and info.value.line == 3


def test_a_cut_off_last_line_is_named_or_dropped(tmp_path: Path) -> None:
    path = tmp_path / "nccl.jsonl"
    path.write_text('{"a": 1}\n{"a": 2, "b"')
    with pytest.raises(MeasurementError, match=r"nccl.jsonl line 2: the last line is cut off .* rerun the same"):
        read_jsonl(path)
    got = read_jsonl(path, drop_partial_tail=True)
    assert got.records == [{"a": 1}] and got.dropped == '{"a": 2, "b"' and got.dropped_line == 2
    path.write_text('{"a": 1}\n{"a": 2}')  # complete, only the newline missing: kept
    assert len(read_jsonl(path).records) == 2


def test_non_objects_and_nan(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text("[1, 2]\n")
    with pytest.raises(MeasurementError, match="line 1: not a JSON record \\(not a JSON object\\)"):
        read_jsonl(path)
    path.write_text('{"t": NaN, "u": Infinity}\n')
    assert read_jsonl(path).records == [{"t": None, "u": None}]


def test_writing_is_strict_json_and_atomic(tmp_path: Path) -> None:
    assert dump_record({"t": float("nan"), "u": [float("inf"), 1.0]}) == '{"t": null, "u": [null, 1.0]}'
    path = tmp_path / "out.jsonl"
    path.write_text("old\n")
    write_jsonl(path, [{"a": float("-inf")}, {"b": 2}])
    assert [json.loads(line) for line in path.read_text().splitlines()] == [{"a": None}, {"b": 2}]
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]  # no temporary file left
