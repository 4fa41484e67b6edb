from __future__ import annotations

from pathlib import Path

import pytest

import rooflib
from rooflib.errors import SpecError

PROFILE = """kind: profile
name: lab-h100
system: hgx-h100
provenance: {date: "2026-11-29", command: "rooflib calibrate runs/ --system hgx-h100"}
overrides:
  device.hbm_bandwidth.value: 3.0 TB/s
  library.link_efficiency.nvlink: {value: 0.7, source: "measured: nccl ring all-reduce 1 GiB"}
"""


def test_profile_overrides_and_credits_itself(tmp_path: Path) -> None:
    path = tmp_path / "lab.yaml"
    path.write_text(PROFILE)
    base = rooflib.load_system("hgx-h100")
    tuned = rooflib.load_system("hgx-h100", profile=path)
    assert tuned.device.hbm_bandwidth.value == pytest.approx(3.0e12)
    assert tuned.device.hbm_bandwidth.source == "calibrated: profile lab-h100"
    assert tuned.library.link_efficiency["nvlink"].value == pytest.approx(0.7)
    assert tuned.profile is not None and tuned.profile.name == "lab-h100"
    slow = rooflib.predict_collective("all_reduce", tuned, nbytes=1 << 30, algorithm="ring").time_s[0]
    fast = rooflib.predict_collective("all_reduce", base, nbytes=1 << 30, algorithm="ring").time_s[0]
    assert slow == pytest.approx(fast * base.library.link_efficiency["nvlink"].value / 0.7, rel=0.02)


def test_profile_for_another_system_carries_its_portable_part(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "lab.yaml"
    path.write_text(PROFILE)
    other = rooflib.load_system("hgx-a100", profile=path)
    base = rooflib.load_system("hgx-a100")
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "portable part" in err[0] and "device.hbm_bandwidth.value" in err[0]
    assert other.device.hbm_bandwidth.value == base.device.hbm_bandwidth.value  # hardware: the datasheet's
    assert other.library.link_efficiency["nvlink"].value == pytest.approx(0.7)  # library share: carried


def test_profile_carried_to_another_generation_scales_its_device_latencies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Blackwell's latency_scale over Hopper's multiplies a Hopper profile's device latencies on a B200, and
    leaves its host costs and shares alone; on another Hopper system nothing is scaled."""
    path = tmp_path / "lab.yaml"
    path.write_text(
        PROFILE
        + "  library.algorithm_latency.ring: {value: 2 us, source: 'measured: x'}\n"
        + "  library.op_latency: {all_gather: {value: 1 us, source: 'measured: x'}}\n"
    )
    b200 = rooflib.load_system("hgx-b200", profile=path)
    k = b200.library.latency_factor
    assert k > 1.0
    assert b200.library.algorithm_latency["ring"].value == pytest.approx(2e-6 * k, rel=1e-3)
    assert b200.library.op_latency["all_gather"].value == pytest.approx(1e-6 * k, rel=1e-3)
    assert b200.library.link_efficiency["nvlink"].value == pytest.approx(0.7)
    assert "latency_scale ratio" in capsys.readouterr().err
    h200 = rooflib.load_system("hgx-h200", profile=path)
    assert h200.library.algorithm_latency["ring"].value == pytest.approx(2e-6)
    assert "latency_scale" not in capsys.readouterr().err


def test_profile_on_another_gpu_count_drops_the_machine_environment(capsys: pytest.CaptureFixture[str]) -> None:
    at_two = rooflib.load_system("hgx-h200", gpus=2, profile="h200-x2")
    assert capsys.readouterr().err == ""
    at_eight = rooflib.load_system("hgx-h200", gpus=8, profile="h200-x2")
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "interconnect.nvswitch-gen3.multicast" in err[0] and "library.launch_overhead" in err[0]
    assert not at_two.switch.multicast and at_eight.switch.multicast  # NVLS off was the 2-GPU VM's, not H200's
    assert at_eight.device.kernel_launch.value == at_two.device.kernel_launch.value  # the same GPU's figures stay
    assert "nvls" in at_eight.library.native_algorithms["all_reduce"]


def test_profile_with_a_bad_unit_names_profile_and_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(PROFILE.replace("3.0 TB/s", "3.0 TB/z"))
    with pytest.raises(SpecError) as err:
        rooflib.load_system("hgx-h100", profile=path)
    text = str(err.value)
    assert "bad.yaml" in text and "hbm_bandwidth.value" in text and "TB/z" in text


def test_without_multicast_removes_nvls() -> None:
    h100 = rooflib.load_system("hgx-h100")
    banned = rooflib.specs.without_multicast(h100)
    assert not banned.switch.multicast and not banned.switch.in_network_reduction
    assert "nvls" not in banned.library.native_algorithms["all_reduce"]
    r = rooflib.predict_collective("all_reduce", banned, nbytes=1 << 30)
    assert "nvls" in r.not_applicable and r.algorithm != ["nvls"]
    assert h100.switch.multicast  # the original is untouched
