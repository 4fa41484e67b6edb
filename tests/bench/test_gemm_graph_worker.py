"""The graph-timed GEMM worker: its shape grid and how a rerun resumes (no GPU needed)."""

from __future__ import annotations

import json
from pathlib import Path

from rooflib.bench.gemm_graph_worker import SHAPES, _done, _torn


def test_grid_has_the_tables_shape_classes() -> None:
    ms = {m for m, _, _ in SHAPES}
    assert {1, 8, 16}.issubset(ms) and 129 in ms and 8192 in ms  # decode, one row past a tile, large
    assert any(k >= 16 * n for _, n, k in SHAPES)  # a split-K-like shape
    assert len(set(SHAPES)) == len(SHAPES)


def test_rerun_skips_what_the_file_holds_and_redoes_a_torn_line(tmp_path: Path) -> None:
    out = tmp_path / "gemm-graph.jsonl"
    assert _done(str(out)) == set()
    rows = [
        {"record": "meta", "gpu": "x"},
        {"record": "gemm", "dtype": "bf16", "m": 8, "n": 4096, "k": 4096, "time_s": 1e-5},
        {"record": "skip", "dtype": "fp8", "m": 1, "n": 4096, "k": 4096, "error": "refused"},
    ]
    out.write_text("\n".join(json.dumps(r) for r in rows) + '\n{"record": "gemm", "dtype": "bf16", "m": 16')
    assert _done(str(out)) == {("bf16", 8, 4096, 4096, "graph"), ("fp8", 1, 4096, 4096, "graph")}
    assert _torn(str(out))  # the worker ends the cut line before it appends
    out.write_text(json.dumps(rows[0]) + "\n")
    assert not _torn(str(out)) and not _torn(str(tmp_path / "absent.jsonl"))


def test_a_rerun_keys_each_mode_apart(tmp_path: Path) -> None:
    out = tmp_path / "gemm-modes.jsonl"
    rows = [
        {"record": "gemm", "dtype": "bf16", "mode": "graph", "m": 8, "n": 4096, "k": 4096, "time_s": 1e-5},
        {"record": "gemm", "dtype": "bf16", "mode": "eager", "m": 8, "n": 4096, "k": 4096, "time_s": 1.1e-5},
        {"record": "skip", "dtype": "fp8", "mode": "eager", "m": 1, "n": 4096, "k": 4096, "error": "refused"},
    ]
    out.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert _done(str(out)) == {
        ("bf16", 8, 4096, 4096, "graph"),
        ("bf16", 8, 4096, 4096, "eager"),
        ("fp8", 1, 4096, 4096, "eager"),
    }


def test_a_misspelt_mode_is_a_one_line_error() -> None:
    import pytest

    from rooflib.bench.gemm_graph_worker import main

    with pytest.raises(SystemExit) as exc:
        main(["--out", "x.jsonl", "--modes", "graf"])
    assert exc.value.code == 2


def test_shape_sets_and_explicit_shapes_parse() -> None:
    import pytest

    from rooflib.bench.gemm_graph_worker import TINY_K, main, parse_shapes

    assert parse_shapes("grid") == SHAPES and parse_shapes("tinyk") == TINY_K
    assert all(k <= 1024 < m for m, _, k in TINY_K)  # the output, not the main loop, is the large part
    assert parse_shapes("8192x8192x64,128X256x512") == ((8192, 8192, 64), (128, 256, 512))
    for bad in ("8192x8192", "8192x0x64", "tiny"):
        with pytest.raises(ValueError, match="MxNxK"):
            parse_shapes(bad)
    with pytest.raises(SystemExit) as exc:
        main(["--out", "x.jsonl", "--shapes", "8192x8192"])
    assert exc.value.code == 2
