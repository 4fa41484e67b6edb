"""Validation refuses what it cannot compare, naming the file and row instead of dumping arrays."""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflib.calibrate.checks import MeasurementWarning
from rooflib.errors import RooflibError
from rooflib.validate import validate

RUNS = Path(__file__).resolve().parents[2] / "docs" / "validation" / "h200" / "runs"
HEAD = "record,family,name,direction,peer,bytes,sms,time_s,verified"


def _folder(tmp: Path, *rows: str, header: str = HEAD) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "results.csv").write_text("\n".join([header, *rows]) + "\n")
    return tmp


def test_another_gpu_model_is_refused_then_forced_without_array_dumps() -> None:
    with pytest.raises(RooflibError, match=r"measured on NVIDIA H200 \(model H200\), but system 'hgx-a100'"):
        validate(RUNS / "x2", "hgx-a100")
    with pytest.warns(MeasurementWarning) as caught:
        v = validate(RUNS / "x2", "hgx-a100", force=True)
    texts = [str(w.message) for w in caught]
    assert any("--force: used anyway" in t for t in texts)
    left = next(t for t in texts if "rows left out" in t)
    assert "results.csv: 129 rows left out (first: line 452, sms = 132): more SMs than NVIDIA A100" in left
    assert not any("array(" in t for t in texts) and not v.errors.empty


def test_rows_a_model_cannot_take_are_named(tmp_path: Path) -> None:
    ok = "point,p2p,tma,one_way,True,1048576,132,1e-05,True"
    with pytest.raises(RooflibError) as info:
        validate(_folder(tmp_path / "a", ok, "point,p2p,tma,one_way,True,1048576,200,1e-05,True"), "hgx-h200")
    assert str(info.value) == (
        f"{tmp_path / 'a' / 'results.csv'} line 3: column 'sms' = 200: more SMs than NVIDIA H200 SXM 141GB has (132)"
    )
    gemm = "record,family,name,dtype,m,n,k,flops,time_s,verified"
    folder = _folder(tmp_path / "b", "gemm,gemm,gemm_bf16,bf16,0,4096,4096,0,1e-3,True", header=gemm)
    with pytest.raises(RooflibError, match=r"line 2: column 'm' = 0: a GEMM dimension must be a whole number >= 1"):
        validate(folder, "hgx-h200")


def test_a_tp_row_the_model_refuses_is_named(tmp_path: Path) -> None:
    head = "record,family,name,workload,impl,m,n,k,gpus,time_s,verified"
    folder = _folder(tmp_path, "tp,tp,gemm_rs/sequential,gemm_rs,sequential,4096,8192,1000,3,1e-3,True", header=head)
    with pytest.raises(RooflibError, match=r"results.csv line 2: tp row gemm_rs m=4096 n=8192 k=1000 on 3 GPUs: "):
        validate(folder, "hgx-h200")


def test_nothing_verified_and_bad_output_paths(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "a", "point,p2p,tma,one_way,True,1048576,132,1e-05,False")
    with pytest.raises(RooflibError, match=r"results.csv: no verified measurements \(1 rows, all failed\)"):
        validate(folder, "hgx-h200")
    good = _folder(tmp_path / "b", "point,p2p,tma,one_way,True,1048576,132,1e-05,True")
    (tmp_path / "file").write_text("x")
    with pytest.raises(RooflibError, match="is a file: the report goes to a folder"):
        validate(good, "hgx-h200", out=tmp_path / "file")
    with pytest.raises(RooflibError, match="cannot write the report"):
        validate(good, "hgx-h200", out=tmp_path / "file" / "report", plots=False)
    with pytest.raises(RooflibError, match="is a folder, not a profile file"):
        validate(good, "hgx-h200", profile=str(tmp_path))
