"""aiconfigurator's tables become a results folder that calibrate and validate read, with provenance, once.

The tables are generated here (``aic_fixture.py``), in aiconfigurator's layout and columns."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

pytest.importorskip("pyarrow")

from rooflib.bench.aiconfigurator_import import find_system, import_aiconfigurator
from rooflib.bench.records import MeasurementError
from rooflib.calibrate.data import load_results
from rooflib.cli import main
from rooflib.collectives import predict_collective
from rooflib.errors import RooflibError
from rooflib.specs import load_system
from rooflib.validate import validate

_spec = importlib.util.spec_from_file_location("rooflib_test_aic_fixture", Path(__file__).with_name("aic_fixture.py"))
assert _spec is not None and _spec.loader is not None
fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fx)


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def system(tmp_path: Path) -> Path:
    return fx.make_system(tmp_path / "data")


def test_rows_are_converted_to_si_and_rooflib_names(system: Path, tmp_path: Path) -> None:
    out = tmp_path / "res"
    done = import_aiconfigurator(system, out)
    frame = pd.read_csv(out / "results.csv")
    nccl = frame[frame["family"] == "nccl"]
    new = nccl[nccl["nccl"] == "2.29.2"]
    assert set(new["op"]) == {"all_gather", "all_reduce", "reduce_scatter", "all_to_all"}
    # message_size counts elements: half rows of 256 elements and int8 rows of 512 are both 512 bytes
    small = new[(new["op"] == "all_reduce") & (new["gpus"] == 2) & (new["bytes"] == 512)]
    assert sorted(small["dtype"]) == ["half", "int8"] and sorted(small["count"]) == [256, 512]
    row = small.iloc[0]
    assert row["time_s"] == pytest.approx(6e-6 + 3e-6 + 512 / 300e9)  # the latency column is in ms
    assert row["busbw_bytes_per_s"] == pytest.approx(2 * (2 - 1) / 2 * 512 / row["time_s"])
    assert set(nccl["mode"]) == {"stream"} and set(nccl["source"]) == {"aiconfigurator"}
    old = nccl[nccl["nccl"] == "2.23"]  # no version column: the folder's name; no device column: the system's GPU
    assert len(old) == 3 * 3 * 2 * 6 and set(old["gpu"]) == {"NVIDIA H200"}
    gemm = frame[frame["family"] == "gemm"]
    assert set(gemm["dtype"]) == {"bf16", "fp8", "fp4"} and set(gemm["mode"]) == {"graph"}
    one = gemm[(gemm["dtype"] == "bf16") & (gemm["m"] == 1024) & (gemm["n"] == 8192)].iloc[0]
    assert one["flops"] == 2 * 1024 * 8192 * 8192 and one["time_s"] == pytest.approx(3e-6 + one["flops"] / 6e14)
    fw = frame[frame["family"] == "framework_allreduce"]
    assert set(fw["mode"]) == {"vllm:vllm_graph", "vllm:vllm_eager"} and fw["excluded_from_fit"].all()
    assert done.points == len(frame) and done.replaced == 0 and done.nvls == "on"
    assert done.catalog_system == "hgx-h200"
    (gemm_table,) = [t for t in done.tables if t.kind == "gemm"]
    assert gemm_table.skipped == {"gemm_dtype fp8_block": 15}


def test_meta_records_carry_provenance(system: Path, tmp_path: Path) -> None:
    out = tmp_path / "res"
    import_aiconfigurator(system, out)
    meta = json.loads((out / "meta.json").read_text())
    by_table = {m["table"]: m for m in meta}
    assert set(by_table) == {
        "comm/nccl/2.29.2/nccl_perf.parquet",
        "comm/nccl/2.23/nccl_perf.parquet",
        "comm/vllm/0.24.0/custom_allreduce_perf.parquet",
        "gemm/trtllm/1.3.0rc20/gemm_perf.parquet",
    }
    new = by_table["comm/nccl/2.29.2/nccl_perf.parquet"]
    assert new["source"] == "aiconfigurator" and new["system"] == "h200_sxm" and new["nccl"] == "2.29.2"
    assert new["gpu"] == "NVIDIA H200" and new["nvls"] == "on" and "assumed" in new["nvls_evidence"]
    assert "back-to-back" in new["timing"] and len(new["sha256"]) == 64
    assert new["collection_meta"]["runtime"] == {"framework": "nccl", "version": "2.29.2"}
    assert (
        new["aiconfigurator"] is None and "not inside an aiconfigurator_core package" in new["aiconfigurator_evidence"]
    )
    assert by_table["comm/nccl/2.23/nccl_perf.parquet"]["collection_meta"] is None
    fw = by_table["comm/vllm/0.24.0/custom_allreduce_perf.parquet"]
    assert fw["excluded_from_fit"] is True and "not NCCL" in fw["fit_note"]
    gemm = by_table["gemm/trtllm/1.3.0rc20/gemm_perf.parquet"]
    assert gemm["framework"] == "trtllm" and "CUDA graph" in gemm["timing"] and "nvls" not in gemm


def test_reimport_replaces_never_duplicates_even_from_another_place(system: Path, tmp_path: Path) -> None:
    out = tmp_path / "res"
    first = import_aiconfigurator(system, out)
    rows = len(pd.read_csv(out / "results.csv"))
    again = import_aiconfigurator(system, out)
    assert again.replaced == len(first.tables) and len(pd.read_csv(out / "results.csv")) == rows
    moved = shutil.copytree(system, tmp_path / "elsewhere" / system.name)
    import_aiconfigurator(moved, out)
    assert len(pd.read_csv(out / "results.csv")) == rows
    jobs = {r["job"] for r in _records(out / "raw" / "nccl.jsonl")}
    assert jobs == {"import/aiconfigurator/h200_sxm/comm/nccl/2.29.2/nccl_perf.parquet",
                    "import/aiconfigurator/h200_sxm/comm/nccl/2.23/nccl_perf.parquet"}  # fmt: skip


def test_a_copied_table_is_kept_and_noted(system: Path, tmp_path: Path) -> None:
    src = system / "comm/vllm/0.24.0/custom_allreduce_perf.parquet"
    (system / "comm/sglang/0.5.6").mkdir(parents=True)
    shutil.copy(src, system / "comm/sglang/0.5.6/custom_allreduce_perf.parquet")
    out = tmp_path / "res"
    import_aiconfigurator(system, out, tables=["framework"])
    meta = json.loads((out / "meta.json").read_text())
    assert len(meta) == 2 and meta[1]["same_content_as"] == "comm/vllm/0.24.0/custom_allreduce_perf.parquet"
    assert len(pd.read_csv(out / "results.csv")) == 2 * 3 * 5 * 2


def test_filters_pick_gpus_ops_tables_and_versions(system: Path, tmp_path: Path) -> None:
    out = tmp_path / "res"
    import_aiconfigurator(system, out, gpus=[2, 4], ops=["all_reduce"], tables=["nccl"], nccl_versions=["2.29.2"])
    frame = pd.read_csv(out / "results.csv")
    assert set(frame["family"]) == {"nccl"} and set(frame["op"]) == {"all_reduce"}
    assert set(frame["gpus"]) == {2, 4} and set(frame["nccl"]) == {"2.29.2"}
    with pytest.raises(RooflibError, match=r"--nccl 9\.9: no comm/nccl/<version> of that name .*2\.23, 2\.29\.2"):
        import_aiconfigurator(system, out, nccl_versions=["9.9"])


def test_validate_predicts_back_to_back_stream_launches(system: Path, tmp_path: Path) -> None:
    out = tmp_path / "res"
    import_aiconfigurator(system, out, tables=["nccl", "framework"], nccl_versions=["2.29.2"])
    v = validate(out, "hgx-h200", plots=False)
    rows = v.rows[(v.rows["family"] == "nccl") & (v.rows["op"] == "all_reduce") & (v.rows["gpus"] == 8)]
    h200 = load_system("hgx-h200", gpus=8)
    want = [
        predict_collective(
            "all_reduce", h200, gpus=8, nbytes=float(b), algorithm="library", launch="stream", dtype=str(d)
        ).time_s[0]
        for b, d in zip(rows["bytes"], rows["dtype"], strict=True)
    ]
    assert np.allclose(rows["pred_datasheet"].to_numpy(), want)
    big = rows[rows["bytes"].astype(float) == rows["bytes"].astype(float).max()]
    by = dict(zip(big["dtype"], big["pred_datasheet"], strict=True))
    assert by["int8"] > by["half"]  # an 8-bit all-reduce cannot use NVLS: a ring, slower
    assert set(v.errors["family"]) == {"nccl"}  # the framework tables are not compared with NCCL's model
    assert v.rows[v.rows["family"] == "framework_allreduce"]["pred_datasheet"].isna().all()


def test_calibrate_fits_nccl_rows_only(system: Path, tmp_path: Path) -> None:
    from rooflib.calibrate import calibrate

    out = tmp_path / "res"
    import_aiconfigurator(system, out, tables=["nccl", "framework"], nccl_versions=["2.29.2"], gpus=[2])
    profile = calibrate(out, "hgx-h200", tmp_path / "p.yaml")
    (fit,) = [q for q in profile["fit"]["quality"] if q["family"] == "nccl"]
    nccl = load_results(out)
    assert fit["n"] == int((nccl["family"] == "nccl").sum()) < len(nccl)  # framework rows left out


def test_a100_has_no_nvls_and_nvls_can_be_given(tmp_path: Path) -> None:
    a100 = fx.make_system(tmp_path / "data", "a100_sxm", "NVIDIA A100-SXM4-80GB")
    assert import_aiconfigurator(a100, tmp_path / "a", tables=["nccl"]).nvls == "off"
    h200 = fx.make_system(tmp_path / "data", "h200_sxm", "NVIDIA H200")
    assert import_aiconfigurator(h200, tmp_path / "b", tables=["nccl"], nvls="off").nvls == "off"


def test_system_name_found_in_the_installed_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "site" / "aiconfigurator_core"
    fx.make_system(pkg / "systems" / "data", "b200_sxm", "NVIDIA B200")
    (pkg / "__init__.py").write_text("raise ImportError('the lookup must not import the package')\n")
    (tmp_path / "site" / "aiconfigurator_core-0.12.0.dist-info").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "aiconfigurator_core", raising=False)
    assert find_system("b200_sxm") == pkg / "systems" / "data" / "b200_sxm"
    done = import_aiconfigurator("b200_sxm", tmp_path / "res", tables=["nccl"])
    meta = json.loads((tmp_path / "res" / "meta.json").read_text())
    assert done.catalog_system == "hgx-b200" and {m["aiconfigurator"] for m in meta} == {"0.12.0"}
    result = CliRunner().invoke(main, ["import-aiconfigurator", "nosuch", "--out", str(tmp_path / "x")])
    assert result.exit_code == 2
    assert "unknown aiconfigurator system 'nosuch'" in result.output and "b200_sxm" in result.output


def _cli(*args: str) -> Any:
    return CliRunner().invoke(main, ["import-aiconfigurator", *args])


def test_cli_reports_and_reruns(system: Path, tmp_path: Path) -> None:
    out = tmp_path / "res"
    first = _cli(str(system), "--out", str(out), "--gpus", "2,4")
    assert first.exit_code == 0, first.output
    assert "gemm rows (1.3.0rc20); skipped 15 gemm_dtype fp8_block" in first.output
    assert "next: rooflib validate" in first.output and "--system hgx-h200" in first.output
    again = _cli(str(system), "--out", str(out), "--gpus", "2,4")
    assert again.exit_code == 0 and "replacing 4 earlier import(s)" in again.output


@pytest.mark.parametrize(
    ("make", "args", "message"),
    [
        (None, ["/no/such/folder"], "/no/such/folder: no such folder"),
        ("empty", [], "not an aiconfigurator system data folder (no comm/ or gemm/ in it"),
        ("corrupt", [], "nccl_perf.parquet: not a readable parquet table"),
        ("latency", [], "nccl_perf.parquet: column 'latency' = -1: row 0: must be a finite number > 0"),
        ("column", [], "nccl_perf.parquet: no column 'num_gpus'"),
        ("op", [], "nccl_perf.parquet: column 'op_name' = 'broadcast': row 0: not a collective rooflib reads"),
        (None, ["--gpus", "2,x"], "Invalid value for --gpus: expected GPU counts such as 2,4, got '2,x'"),
        (None, ["--tables", "nccl,bogus"], "--tables bogus: not one of nccl, gemm, framework"),
        (None, ["--op", "bogus"], "unknown collective 'bogus'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    system: Path, tmp_path: Path, make: str | None, args: list[str], message: str
) -> None:
    table = system / "comm/nccl/2.29.2/nccl_perf.parquet"
    rows = fx.nccl_rows("NVIDIA H200", "2.29.2")
    if make == "empty":
        shutil.rmtree(system / "comm")
        shutil.rmtree(system / "gemm")
    elif make == "corrupt":
        table.write_bytes(b"PAR1 this is not parquet")
    elif make == "latency":
        fx.write_table(table, [{**rows[0], "latency": -1.0}, *rows[1:]])
    elif make == "column":
        fx.write_table(table, [{k: v for k, v in r.items() if k != "num_gpus"} for r in rows])
    elif make == "op":
        fx.write_table(table, [{**rows[0], "op_name": "broadcast"}, *rows[1:]])
    path = args[0] if args and args[0].startswith("/") else str(system)
    rest = args[1:] if args and args[0].startswith("/") else args
    result = _cli(path, "--out", str(tmp_path / "res"), *rest)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], result.output


def test_measurement_error_names_file_row_column_and_value(system: Path) -> None:
    from rooflib.bench.aiconfigurator_tables import read_gemm_table

    table = system / "gemm/trtllm/1.3.0rc20/gemm_perf.parquet"
    rows = fx.gemm_rows("NVIDIA H200")
    fx.write_table(table, [*rows[:3], {**rows[3], "m": 1.5}, *rows[4:]])
    with pytest.raises(MeasurementError) as err:
        read_gemm_table(table)
    assert (err.value.file, err.value.field, err.value.value) == (str(table), "m", 1.5)
    assert "row 3: must be a whole number > 0" in str(err.value)
