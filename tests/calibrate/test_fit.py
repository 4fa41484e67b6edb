"""Calibration recovers known parameters from synthetic measurements made with the model itself."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import rooflib
from rooflib.calibrate import calibrate, load_results
from rooflib.calibrate.transfer import fit_transfers
from rooflib.errors import RooflibError

GIB = float(1 << 30)


def _p2p_rows(system: rooflib.System) -> list[dict[str, object]]:
    from rooflib.transfer import transfer_time

    rows: list[dict[str, object]] = []
    sizes = 2.0 ** np.arange(7, 31)
    for measured, model in (("copy_engine", "copy_engine"), ("tma", "tma"), ("ldst_push", "ldst")):
        sms_all = 0 if model == "copy_engine" else 132
        for s in sizes:
            t = float(transfer_time(system, model, s, None if sms_all else 132))
            rows.append(
                {
                    "record": "point",
                    "program": "p2p",
                    "mechanism": measured,
                    "direction": "one_way",
                    "peer": True,
                    "bytes": s,
                    "sms": sms_all,
                    "time_s_median": t,
                    "verified": True,
                }
            )
        if model != "copy_engine":
            for k in (1, 2, 4, 8, 16, 32, 64):
                t = float(transfer_time(system, model, GIB / 4, k))
                rows.append(
                    {
                        "record": "point",
                        "program": "p2p",
                        "mechanism": measured,
                        "direction": "one_way",
                        "peer": True,
                        "bytes": GIB / 4,
                        "sms": k,
                        "time_s_median": t,
                        "verified": True,
                    }
                )
    return rows


def _write(tmp: Path, rows: list[dict[str, object]], family: str) -> Path:
    (tmp / "raw").mkdir(parents=True, exist_ok=True)
    with (tmp / "raw" / f"{family}.jsonl").open("a") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
    return tmp


def test_transfer_fit_recovers_the_generating_parameters(tmp_path: Path) -> None:
    h200 = rooflib.load_system("hgx-h200", gpus=2)
    frame = load_results(_write(tmp_path, _p2p_rows(h200), "p2p"))
    fit = fit_transfers(frame, h200, "measured: synthetic")
    spec = h200.device.transfer
    got = fit.overrides
    assert float(got["device.transfer.tma.peak_fraction"]["value"]) == pytest.approx(
        spec.tma.peak_fraction.value, rel=0.01
    )
    assert float(got["device.transfer.ldst.peak_fraction"]["value"]) == pytest.approx(
        spec.ldst.peak_fraction.value, rel=0.01
    )
    per_sm = float(str(got["device.transfer.ldst.per_sm_bandwidth"]["value"]).split()[0]) * 1e9
    assert per_sm == pytest.approx(spec.ldst.per_sm_bandwidth.value, rel=0.02)
    fixed = float(str(got["device.transfer.copy_engine.fixed_cost"]["value"]).split()[0]) * 1e-6
    assert fixed == pytest.approx(spec.copy_engine.fixed_cost.value, rel=0.02)


def test_calibrate_writes_a_profile_the_catalog_accepts(tmp_path: Path) -> None:
    h200 = rooflib.load_system("hgx-h200", gpus=2)
    _write(tmp_path, _p2p_rows(h200), "p2p")
    out = tmp_path / "lab.yaml"
    profile = calibrate(tmp_path, "hgx-h200", out, command="pytest")
    assert profile["name"] == "lab" and profile["system"] == "hgx-h200"
    tuned = rooflib.load_system("hgx-h200", profile=out)
    assert tuned.device.transfer.tma.peak_fraction.source.startswith("measured:")


def test_nothing_to_fit_is_an_error(tmp_path: Path) -> None:
    _write(tmp_path, [{"record": "point", "program": "other", "test": "x", "time_s": 1e-6, "verified": True}], "other")
    with pytest.raises(RooflibError, match="nothing to calibrate"):
        calibrate(tmp_path, "hgx-h200", tmp_path / "p.yaml")
    _write(tmp_path / "b", [{"record": "point", "program": "other", "test": "x", "verified": True}], "other")
    with pytest.raises(RooflibError, match=r"results.csv: no time column \(time_s, time_s_median"):
        calibrate(tmp_path / "b", "hgx-h200", tmp_path / "p.yaml")


def test_missing_results_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(RooflibError, match="rooflib bench all"):
        load_results(tmp_path)


def test_profile_output_paths(tmp_path: Path) -> None:
    h200 = rooflib.load_system("hgx-h200", gpus=2)
    _write(tmp_path, _p2p_rows(h200), "p2p")
    with pytest.raises(RooflibError, match=r"--out .* is a folder: give the profile's file name"):
        calibrate(tmp_path, "hgx-h200", tmp_path)
    deep = tmp_path / "new" / "parents" / "lab.yaml"
    calibrate(tmp_path, "hgx-h200", deep)  # missing parents are made
    assert deep.exists() and rooflib.load_system("hgx-h200", profile=deep).device.name == "h200-sxm"
    calibrate(tmp_path, "hgx-h200", deep)  # a profile may be overwritten
    results = tmp_path / "results.csv"
    before = results.read_text()
    with pytest.raises(RooflibError, match="exists and is not a profile"):
        calibrate(tmp_path, "hgx-h200", results)  # never overwrite the measurements
    assert results.read_text() == before
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(RooflibError, match="cannot write the profile"):
        calibrate(tmp_path, "hgx-h200", blocker / "p.yaml")
    assert sorted(p.name for p in (tmp_path / "new" / "parents").iterdir()) == ["lab.yaml"]  # no temporary files


def test_a_profile_that_does_not_validate_is_not_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rooflib.calibrate import profile as profile_module
    from rooflib.calibrate.data import Fit

    h200 = rooflib.load_system("hgx-h200", gpus=2)
    _write(tmp_path, _p2p_rows(h200), "p2p")

    def bogus(frame: object, system: object, source: str) -> Fit:
        fit = Fit()
        fit.overrides["device.no_such_figure"] = {"value": 1.0, "source": source}
        return fit

    monkeypatch.setattr(profile_module, "fit_device", bogus)
    out = tmp_path / "bad.yaml"
    with pytest.raises(RooflibError, match=r"bad.yaml: 1 problem"):
        calibrate(tmp_path, "hgx-h200", out)
    assert not out.exists() and not list(tmp_path.glob(".bad*"))
