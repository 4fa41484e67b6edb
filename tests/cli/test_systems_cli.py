"""``rooflib systems`` and ``rooflib show``: both take --catalog (user systems) and --profile (calibrated figures)."""

from __future__ import annotations

from pathlib import Path

import pytest

import rooflib

from .conftest import invoke, invoke_json

SYSTEMS = rooflib.default_catalog().names("system")


@pytest.fixture
def user_catalog(tmp_path: Path) -> Path:
    """A folder with one user system that extends a built-in one."""
    folder = tmp_path / "catalog"
    folder.mkdir()
    (folder / "lab-box.yaml").write_text(
        "kind: system\nname: lab-box\nextends: hgx-h100\ndisplay_name: Our lab H100 box\n"
    )
    return folder


@pytest.mark.parametrize("command", ["systems", "show"])
def test_both_commands_take_profile_and_catalog(command: str) -> None:
    result = invoke(command, "--help")
    assert result.exit_code == 0
    assert "--profile" in result.stdout and "--catalog" in result.stdout


def test_systems_lists_user_systems_with_their_file(user_catalog: Path) -> None:
    rows = {r["name"]: r for r in invoke_json("systems", "--catalog", str(user_catalog))}
    assert set(SYSTEMS) < set(rows)
    mine = rows["lab-box"]
    assert mine["display_name"] == "Our lab H100 box" and mine["device"] == "h100-sxm5"
    assert mine["file"] is not None and mine["file"].endswith("lab-box.yaml")
    assert all(rows[name]["file"] is None for name in SYSTEMS)
    table = invoke("systems", "--catalog", str(user_catalog))
    assert table.exit_code == 0
    line = next(li for li in table.stdout.splitlines() if li.startswith("lab-box"))
    assert "Our lab H100 box" in line and "lab-box.yaml" in line
    assert "from" in table.stdout.splitlines()[0]


def test_systems_without_user_files_has_no_from_column() -> None:
    result = invoke("systems")
    assert result.exit_code == 0 and "from" not in result.stdout.splitlines()[0].split()


def test_systems_marks_the_system_a_profile_calibrates(profile_yaml: str) -> None:
    rows = {r["name"]: r for r in invoke_json("systems", "--profile", profile_yaml)}
    assert rows["hgx-h100"]["profile"] == "test"
    assert all(r["profile"] is None for name, r in rows.items() if name != "hgx-h100")
    table = invoke("systems", "--profile", profile_yaml).stdout.splitlines()
    assert "profile" in table[0].split()
    assert next(li for li in table if li.startswith("hgx-h100")).split()[-1] == "test"


def test_systems_unknown_profile_is_an_error() -> None:
    result = invoke("systems", "--profile", "nosuch")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: unknown profile 'nosuch'") and len(result.stderr.splitlines()) == 1


def test_show_profile_lists_calibrated_figures_with_sources(profile_yaml: str) -> None:
    result = invoke("show", "hgx-h100", "--profile", profile_yaml)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "profile: test" in out and "calibrated by profile test (1 figures)" in out
    line = next(li for li in out.splitlines() if li.startswith("library.link_efficiency.nvlink"))
    assert "0.5" in line and "measured: test" in line
    data = invoke_json("show", "hgx-h100", "--profile", profile_yaml)
    assert data["profile"] == "test"
    assert data["calibrated"] == [
        {
            "field": "library.link_efficiency.nvlink",
            "value": 0.5,
            "text": "0.5",
            "catalog_text": data["calibrated"][0]["catalog_text"],
            "source": "measured: test",
        }
    ]
    assert data["library"]["figures"]["link_efficiency.nvlink"]["source"] == "measured: test"


def test_show_shipped_profile_lists_many_calibrated_figures() -> None:
    data = invoke_json("show", "hgx-h200", "--profile", "h200-x2")
    fields = {c["field"] for c in data["calibrated"]}
    assert {"device.kernel_launch", "nvlink.latency"} <= fields
    assert all(c["source"] for c in data["calibrated"] if c["field"].startswith("device.transfer."))


def test_show_without_profile_has_no_calibrated_figures() -> None:
    assert invoke_json("show", "hgx-h100")["calibrated"] == []
    assert "calibrated by" not in invoke("show", "hgx-h100").stdout


def test_show_profile_for_another_system_carries_the_library_figures(profile_yaml: str) -> None:
    data = invoke_json("show", "hgx-a100", "--profile", profile_yaml)
    assert any("link_efficiency" in c["field"] for c in data["calibrated"])


def test_show_user_system(user_catalog: Path) -> None:
    data = invoke_json("show", "lab-box", "--catalog", str(user_catalog))
    assert data["name"] == "lab-box" and data["display_name"] == "Our lab H100 box"
    assert data["device"]["name"] == "h100-sxm5"
    result = invoke("show", "lab-box")
    assert result.exit_code == 2 and "unknown system 'lab-box'" in result.stderr


def test_show_cuts_long_cells() -> None:
    out = invoke("show", "hgx-h200", "--profile", "h200-x2").stdout
    # size curves, per-op tables and sources are cut in the table (four columns of at most 40-72 characters)
    assert max(len(li) for li in out.splitlines()) < 210
