"""Measurements of one GPU model are not calibrated as another without --force; NVLS state as NCCL reads it."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import rooflib
from rooflib.calibrate import calibrate
from rooflib.calibrate.checks import MeasurementWarning, check_gpu, gpu_model, measured_gpus, nvls_state
from rooflib.errors import RooflibError

RUNS = Path(__file__).resolve().parents[2] / "docs" / "validation" / "h200" / "runs"


@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("NVIDIA H200", "H200"),
        ("NVIDIA H200 SXM 141GB", "H200"),
        ("h200-sxm", "H200"),
        ("NVIDIA H100 80GB HBM3", "H100"),
        ("NVIDIA H100 SXM5 80GB", "H100"),
        ("NVIDIA A100-SXM4-80GB", "A100"),
        ("a100-sxm4-80gb", "A100"),
        ("NVIDIA B200 SXM 180GB (HGX B200)", "B200"),
        ("NVIDIA GB200 (one Blackwell GPU of the superchip, NVL72)", "GB200"),
        ("GPU 0: NVIDIA H200 (UUID: GPU-5a1b2c3d-a1b2-c3d4-e5f6-0123456789ab)", "H200"),
        ("Tesla V100-SXM2-16GB", "V100"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA RTX 6000 Ada Generation", None),
    ],
)
def test_gpu_names_reduce_to_their_model(name: str, model: str | None) -> None:
    assert gpu_model(name) == model


def test_every_catalog_device_has_a_model() -> None:
    cat = rooflib.default_catalog()
    for name in cat.names("system"):
        dev = rooflib.load_system(name).device
        assert gpu_model(dev.name) == gpu_model(dev.display_name) is not None, name


def test_h200_measurements_as_an_h100_are_refused(tmp_path: Path) -> None:
    with pytest.raises(RooflibError) as info:
        calibrate(RUNS / "x1-quick", "hgx-h100", tmp_path / "p.yaml")
    text = str(info.value)
    assert (
        "measured on NVIDIA H200 (model H200)" in text and "'hgx-h100' has NVIDIA H100 SXM5 80GB (model H100)" in text
    )
    assert "--force" in text and not (tmp_path / "p.yaml").exists()
    with pytest.warns(MeasurementWarning, match="measured on NVIDIA H200.*--force: used anyway"):
        profile = calibrate(RUNS / "x1-quick", "hgx-h100", tmp_path / "p.yaml", force=True)
    assert "H200" in profile["fit"]["measurements"]["gpu_mismatch_forced"]
    assert "forced:" in profile["provenance"]["notes"]
    calibrate(RUNS / "x1-quick", "hgx-h200", tmp_path / "ok.yaml")  # the right system passes silently


def test_names_come_from_records_and_meta() -> None:
    frame = pd.DataFrame({"gpu": ["NVIDIA H100 80GB HBM3", None, "NVIDIA H200 / NVIDIA H100 80GB HBM3"]})
    meta = [
        {"gpus": [{"name": "NVIDIA A100-SXM4-80GB"}]},
        {"nvidia_smi": ["NVIDIA B200, 580.1, 1980 MHz"]},
        {"gpus": 8},
    ]
    assert measured_gpus(frame, meta) == [
        "NVIDIA A100-SXM4-80GB",
        "NVIDIA B200",
        "NVIDIA H100 80GB HBM3",
        "NVIDIA H200",
    ]
    h100 = rooflib.load_system("hgx-h100")
    assert check_gpu(pd.DataFrame({"gpu": ["NVIDIA H100 80GB HBM3"]}), [], h100, "x") is None
    assert check_gpu(pd.DataFrame({"x": [1]}), [], h100, "x") is None  # no names: nothing to compare


@pytest.mark.parametrize(
    ("meta", "state"),
    [
        ([{"env": {"NCCL_NVLS_ENABLE": "0"}}], "off"),
        ([{"env": {"NCCL_NVLS_ENABLE": "false"}}], "off"),  # NCCL reads no digits as 0
        ([{"env": {"NCCL_NVLS_ENABLE": "00"}}], "off"),  # was "on": the text is not "0"
        ([{"env": {"NCCL_NVLS_ENABLE": "2"}}], "on"),
        ([{"nvls": "on"}, {"env": {}}], "on"),
        ([{"nvls": "unknown"}], "unknown"),
        ([], "unknown"),
    ],
)
def test_nvls_state(meta: list[dict[str, object]], state: str) -> None:
    assert nvls_state(meta) == state


def test_nvls_on_and_off_together_is_an_error() -> None:
    with pytest.raises(RooflibError, match="NVLS on and with NVLS off"):
        nvls_state([{"nvls": "on"}, {"env": {"NCCL_NVLS_ENABLE": "0"}}], "runs/x")


def test_forced_calibration_as_a_gpu_without_the_measured_features(tmp_path: Path) -> None:
    """H200 runs as an A100 (no TMA, no fp8): the fit skips what the A100 lacks instead of failing inside."""
    import shutil

    (tmp_path / "run" / "raw").mkdir(parents=True)
    for family in ("p2p", "gemm"):  # not the NCCL sweep: its fit takes seconds
        shutil.copy(RUNS / "x2" / "raw" / f"{family}.jsonl", tmp_path / "run" / "raw")
    with pytest.warns(MeasurementWarning):
        profile = calibrate(tmp_path / "run", "hgx-a100", tmp_path / "a100.yaml", force=True)
    assert not any(".tma." in key for key in profile["overrides"])
    assert "fp8" not in profile["overrides"].get("device.dtype_efficiency", {})
