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
    assert slow == pytest.approx(fast * 0.82 / 0.7, rel=0.02)


def test_profile_for_another_system_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "lab.yaml"
    path.write_text(PROFILE)
    with pytest.raises(SpecError, match=r"(?s)lab.yaml.*field 'system' = 'hgx-h100'.*another system"):
        rooflib.load_system("hgx-a100", profile=path)


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
