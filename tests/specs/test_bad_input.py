"""Bad catalog input fails loudly: every SpecError names the file, the field and the value."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from rooflib.errors import GroupError, SpecError, SpecFileError, UnknownNameError
from rooflib.specs import Catalog, load_system
from rooflib.specs.catalog import builtin_data_dir

HARDWARE = builtin_data_dir("hardware")


def _builtin(kind_dir: str, name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((HARDWARE / kind_dir / f"{name}.yaml").read_text(encoding="utf-8"))
    return data


def _write(folder: Path, filename: str, data: dict[str, Any] | str) -> Path:
    path = folder / filename
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _device(**changes: Any) -> dict[str, Any]:
    """The built-in H100 renamed ``bad-gpu``, with ``changes`` applied (a None value deletes the key)."""
    data = _builtin("devices", "h100-sxm5")
    data["name"] = "bad-gpu"
    for key, value in changes.items():
        if value is None:
            data.pop(key)
        else:
            data[key] = value
    return data


def _spec_error(tmp_path: Path, kind: str, name: str) -> SpecError:
    with pytest.raises(SpecError) as info:
        Catalog.load([tmp_path]).get(kind, name)
    return info.value


def _names(error: SpecError, path: Path, field: str, value: str) -> None:
    message = str(error)
    assert str(path) in message, message
    assert str(path) in error.file
    assert f"field {field!r}" in message, message
    assert value in message, message


# --- devices ----------------------------------------------------------------------------------------------


def test_builtin_copy_is_valid(tmp_path: Path) -> None:
    # the fixtures below change exactly one thing in an otherwise valid file
    _write(tmp_path, "ok.yaml", _device())
    assert Catalog.load([tmp_path]).device("bad-gpu").hbm_bandwidth.value == pytest.approx(3.35e12)


def test_misspelt_key(tmp_path: Path) -> None:
    data = _device()
    data["hbm_bandwdth"] = data.pop("hbm_bandwidth")
    path = _write(tmp_path, "typo.yaml", data)
    error = _spec_error(tmp_path, "device", "bad-gpu")
    _names(error, path, "hbm_bandwdth", "3.35 TB/s")
    assert "unknown key" in str(error)
    # the field that is now missing is named too, without dumping the whole file as its value
    assert "field 'hbm_bandwidth' = None" in str(error)
    assert len(str(error)) < 1000


def test_negative_bandwidth(tmp_path: Path) -> None:
    path = _write(tmp_path, "neg.yaml", _device(hbm_bandwidth={"value": "-3.35 TB/s", "source": "h100-datasheet"}))
    error = _spec_error(tmp_path, "device", "bad-gpu")
    _names(error, path, "hbm_bandwidth.value", "'-3.35 TB/s'")
    assert "must be > 0" in str(error)


def test_zero_sm_count(tmp_path: Path) -> None:
    path = _write(tmp_path, "zero.yaml", _device(sms={"value": 0, "source": "h100-datasheet"}))
    _names(_spec_error(tmp_path, "device", "bad-gpu"), path, "sms.value", "0")


def test_efficiency_above_one(tmp_path: Path) -> None:
    path = _write(tmp_path, "eff.yaml", _device(hbm_efficiency={"value": "120%", "source": "measured: a typo"}))
    error = _spec_error(tmp_path, "device", "bad-gpu")
    _names(error, path, "hbm_efficiency.value", "'120%'")
    assert "(0, 1]" in str(error)


def test_fractional_count(tmp_path: Path) -> None:
    path = _write(tmp_path, "frac.yaml", _device(sms={"value": 132.5, "source": "h100-datasheet"}))
    error = _spec_error(tmp_path, "device", "bad-gpu")
    _names(error, path, "sms.value", "132.5")
    assert "whole number" in str(error)


def test_unknown_unit(tmp_path: Path) -> None:
    data = _builtin("interconnects", "nvlink4")
    data["name"] = "bad-link"
    data["per_link_bandwidth"] = {"value": "450 GB/z", "source": "h100-datasheet"}
    path = _write(tmp_path, "unit.yaml", data)
    error = _spec_error(tmp_path, "interconnect", "bad-link")
    _names(error, path, "per_link_bandwidth.value", "'450 GB/z'")
    assert "unknown unit 'GB/z'" in str(error)


def test_wrong_dimension(tmp_path: Path) -> None:
    path = _write(tmp_path, "dim.yaml", _device(hbm_size={"value": "80 GB/s", "source": "h100-datasheet"}))
    error = _spec_error(tmp_path, "device", "bad-gpu")
    _names(error, path, "hbm_size.value", "'80 GB/s'")
    assert "bytes" in str(error)


def test_figure_without_source(tmp_path: Path) -> None:
    path = _write(tmp_path, "nosrc.yaml", _device(sms={"value": 132}))
    error = _spec_error(tmp_path, "device", "bad-gpu")
    _names(error, path, "sms.source", "132")
    assert "required" in str(error).lower()


def test_bare_number_is_not_a_figure(tmp_path: Path) -> None:
    path = _write(tmp_path, "bare.yaml", _device(sms=132))
    error = _spec_error(tmp_path, "device", "bad-gpu")
    _names(error, path, "sms", "132")
    assert "every figure needs a source" in str(error)


def test_unknown_source_id(tmp_path: Path) -> None:
    path = _write(tmp_path, "src.yaml", _device(sms={"value": 132, "source": "h100-datasheat"}))
    error = _spec_error(tmp_path, "device", "bad-gpu")
    _names(error, path, "sms.source", "'h100-datasheat'")
    assert "sources.yaml" in str(error)


def test_free_text_source_needs_a_known_prefix(tmp_path: Path) -> None:
    path = _write(tmp_path, "free.yaml", _device(sms={"value": 132, "source": "guessed: looks about right"}))
    _names(_spec_error(tmp_path, "device", "bad-gpu"), path, "sms.source", "'guessed: looks about right'")


def test_copy_engine_cannot_use_sms(tmp_path: Path) -> None:
    data = _device()
    data["transfer"]["copy_engine"]["per_sm_bandwidth"] = {"value": "10 GB/s", "source": "measured: nonsense"}
    path = _write(tmp_path, "ce.yaml", data)
    error = _spec_error(tmp_path, "device", "bad-gpu")
    assert str(path) in str(error)
    assert "copy_engine.per_sm_bandwidth must be absent" in str(error)


def test_not_yaml(tmp_path: Path) -> None:
    path = _write(tmp_path, "broken.yaml", "kind: device\nname: [unclosed\n")
    with pytest.raises(SpecError) as info:
        Catalog.load([tmp_path])
    assert str(path) in str(info.value)
    assert "not valid YAML" in str(info.value)


def test_unknown_kind(tmp_path: Path) -> None:
    path = _write(tmp_path, "kind.yaml", {"kind": "gpu", "name": "x"})
    with pytest.raises(SpecError) as info:
        Catalog.load([tmp_path])
    _names(info.value, path, "kind", "'gpu'")


# --- systems ----------------------------------------------------------------------------------------------


def test_links_per_plane_length_mismatch(tmp_path: Path) -> None:
    data = _builtin("systems", "hgx-h100")
    data["name"] = "bad-sys"
    data["scale_up"]["links_per_plane"] = [5, 4, 4]
    path = _write(tmp_path, "planes.yaml", data)
    error = _spec_error(tmp_path, "system", "bad-sys")
    _names(error, path, "scale_up", "[5, 4, 4]")
    assert "links_per_plane has 3 entries but planes = 4" in str(error)


def test_nodes_beyond_one_domain_need_a_network(tmp_path: Path) -> None:
    data = _builtin("systems", "hgx-h100")
    data["name"] = "bad-sys"
    data["nodes"] = {"default": 1, "max": 4}
    path = _write(tmp_path, "nodes.yaml", data)
    error = _spec_error(tmp_path, "system", "bad-sys")
    assert str(path) in str(error)
    assert "no scale_out network" in str(error)


def test_default_nodes_above_max(tmp_path: Path) -> None:
    data = _builtin("systems", "dgx-h100-superpod")
    data["name"] = "bad-sys"
    data["nodes"] = {"default": 4096, "max": 2048}
    path = _write(tmp_path, "max.yaml", data)
    _names(_spec_error(tmp_path, "system", "bad-sys"), path, "nodes", "4096")


# --- extends and user catalogs ----------------------------------------------------------------------------


def test_extends_missing_item(tmp_path: Path) -> None:
    path = _write(tmp_path, "orphan.yaml", {"kind": "device", "name": "bad-gpu", "extends": "h100-sxm6"})
    error = _spec_error(tmp_path, "device", "bad-gpu")
    _names(error, path, "extends", "'h100-sxm6'")


def test_extends_itself(tmp_path: Path) -> None:
    path = _write(tmp_path, "self.yaml", {"kind": "device", "name": "loop", "extends": "loop"})
    _names(_spec_error(tmp_path, "device", "loop"), path, "extends", "'loop'")


def test_user_catalog_extends_builtin(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "my-h100.yaml",
        {
            "kind": "device",
            "name": "my-h100",
            "extends": "h100-sxm5",
            "display_name": "H100 with a calibrated memory rate",
            "hbm_bandwidth": {"value": "3.1 TB/s", "source": "measured: my STREAM copy"},
        },
    )
    catalog = Catalog.load([tmp_path])
    mine, base = catalog.device("my-h100"), catalog.device("h100-sxm5")
    assert mine.hbm_bandwidth.value == pytest.approx(3.1e12)
    assert mine.hbm_bandwidth.source == "measured: my STREAM copy"
    assert mine.display_name == "H100 with a calibrated memory rate"
    # everything else is inherited, and the built-in item is untouched
    assert int(mine.sms) == int(base.sms) == 132
    assert mine.tensor_peak("bf16") == base.tensor_peak("bf16")
    assert mine.transfer == base.transfer
    assert base.hbm_bandwidth.value == pytest.approx(3.35e12)
    assert "my-h100" in catalog.names("device")
    assert "my-h100" not in Catalog.load().names("device")


def test_user_override_of_a_nested_figure(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "tma.yaml",
        {
            "kind": "device",
            "name": "my-h100",
            "extends": "h100-sxm5",
            "transfer": {"tma": {"per_sm_bandwidth": {"value": "21 GB/s", "source": "calibrated: bench"}}},
        },
    )
    mine = Catalog.load([tmp_path]).device("my-h100")
    assert mine.transfer.tma is not None
    assert mine.transfer.tma.per_sm_bandwidth is not None
    assert mine.transfer.tma.per_sm_bandwidth.value == pytest.approx(21e9)
    assert mine.transfer.tma.peak_fraction.value == pytest.approx(0.78)  # sibling kept by the deep merge


def test_user_extends_with_a_bad_override(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "bad-ext.yaml",
        {
            "kind": "device",
            "name": "my-h100",
            "extends": "h100-sxm5",
            "hbm_bandwidth": {"value": "-1 TB/s", "source": "measured: x"},
        },
    )
    _names(_spec_error(tmp_path, "device", "my-h100"), path, "hbm_bandwidth.value", "'-1 TB/s'")


def test_catalog_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path, "env.yaml", _device())
    monkeypatch.setenv("ROOFLIB_CATALOG", str(tmp_path))
    assert "bad-gpu" in Catalog.load().names("device")


def test_missing_catalog_path(tmp_path: Path) -> None:
    with pytest.raises(SpecFileError, match="nowhere: catalog path does not exist"):
        Catalog.load([tmp_path / "nowhere"])


# --- names and groups -------------------------------------------------------------------------------------


def test_unknown_system_lists_valid_names() -> None:
    with pytest.raises(UnknownNameError) as info:
        load_system("hgx-h1000", catalog=Catalog.load())
    message = str(info.value)
    assert "'hgx-h1000'" in message
    for valid in ("hgx-a100", "hgx-h100", "hgx-b200", "gb200-nvl72", "dgx-h100-superpod"):
        assert valid in message
    assert isinstance(info.value, KeyError)
    assert info.value.valid == sorted(info.value.valid)


def test_unknown_device_lists_valid_names() -> None:
    with pytest.raises(UnknownNameError, match="h100-sxm5"):
        Catalog.load().device("h300")


def test_group_that_does_not_fit() -> None:
    system = load_system("hgx-h100", catalog=Catalog.load())
    assert system.group(8) == tuple(range(8))
    assert system.group([0, 3]) == (0, 3)
    with pytest.raises(GroupError) as info:
        system.group(9)
    assert "9" in str(info.value)
    assert "8 GPUs" in str(info.value)
    with pytest.raises(GroupError):
        system.group(0)
    with pytest.raises(GroupError, match=r"\[8\]"):
        system.group([0, 8])
    with pytest.raises(GroupError, match="twice"):
        system.group([1, 1])


def test_too_many_nodes() -> None:
    with pytest.raises(GroupError, match="1 to 1 nodes"):
        load_system("hgx-h100", nodes=2, catalog=Catalog.load())


# --- profiles ---------------------------------------------------------------------------------------------


def _profile(folder: Path, overrides: dict[str, Any], system: str = "hgx-h100") -> Path:
    return _write(
        folder,
        "profile.yaml",
        {
            "kind": "profile",
            "name": "test-profile",
            "system": system,
            "provenance": {"date": "2026-11-20", "command": "rooflib bench ceilings"},
            "overrides": overrides,
        },
    )


def test_profile_overrides_a_figure(tmp_path: Path) -> None:
    path = _profile(tmp_path, {"device.hbm_bandwidth": {"value": "3.0 TB/s", "source": "measured: STREAM copy"}})
    system = load_system("hgx-h100", profile=path, catalog=Catalog.load())
    assert system.device.hbm_bandwidth.value == pytest.approx(3.0e12)
    assert system.device.hbm_bandwidth.source == "measured: STREAM copy"
    assert system.profile is not None and system.profile.name == "test-profile"
    # without the profile the catalog figure is unchanged
    assert load_system("hgx-h100", catalog=Catalog.load()).device.hbm_bandwidth.value == pytest.approx(3.35e12)


def test_profile_overrides_a_value_and_an_interconnect(tmp_path: Path) -> None:
    path = _profile(
        tmp_path,
        {"device.hbm_bandwidth.value": "2.9 TB/s", "interconnect.nvlink4.per_link_bandwidth.value": "22 GB/s"},
    )
    system = load_system("hgx-h100", profile=path, catalog=Catalog.load())
    assert system.device.hbm_bandwidth.value == pytest.approx(2.9e12)
    assert system.nvlink_bandwidth == pytest.approx(18 * 22e9)


def test_profile_with_a_bad_path(tmp_path: Path) -> None:
    path = _profile(tmp_path, {"device.hbm_bandwdth.value": "3.0 TB/s"})
    with pytest.raises(SpecError) as info:
        load_system("hgx-h100", profile=path, catalog=Catalog.load())
    _names(info.value, path, "overrides.device.hbm_bandwdth.value", "'3.0 TB/s'")
    assert "hbm_bandwdth" in str(info.value)


def test_profile_with_a_misspelt_leaf(tmp_path: Path) -> None:
    path = _profile(tmp_path, {"device.hbm_bandwdth": {"value": "3.0 TB/s", "source": "measured: x"}})
    with pytest.raises(SpecError) as info:
        load_system("hgx-h100", profile=path, catalog=Catalog.load())
    assert str(path) in str(info.value)
    assert "'hbm_bandwdth'" in str(info.value)
    assert "unknown key" in str(info.value)


def test_profile_with_an_unknown_head(tmp_path: Path) -> None:
    path = _profile(tmp_path, {"gpu.hbm_bandwidth.value": "3.0 TB/s"})
    with pytest.raises(SpecError) as info:
        load_system("hgx-h100", profile=path, catalog=Catalog.load())
    _names(info.value, path, "overrides.gpu.hbm_bandwidth.value", "'3.0 TB/s'")
    assert "device" in str(info.value)


def test_profile_with_a_bad_value(tmp_path: Path) -> None:
    path = _profile(tmp_path, {"device.hbm_bandwidth.value": "-3.0 TB/s"})
    with pytest.raises(SpecError) as info:
        load_system("hgx-h100", profile=path, catalog=Catalog.load())
    _names(info.value, path, "hbm_bandwidth.value", "'-3.0 TB/s'")


def test_profile_for_another_system(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Another system's device figures do not carry: dropped, and one line on stderr says which."""
    path = _profile(tmp_path, {"device.hbm_bandwidth.value": "3.0 TB/s"}, system="hgx-a100")
    system = load_system("hgx-h100", profile=path, catalog=Catalog.load())
    assert system.device.hbm_bandwidth.value == load_system("hgx-h100").device.hbm_bandwidth.value
    err = capsys.readouterr().err
    assert "fitted on hgx-a100" in err and "dropped 1 overrides: device.hbm_bandwidth.value" in err
