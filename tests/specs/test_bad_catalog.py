"""Hostile catalog and profile files through the Python API: every one a SpecError (or UnknownNameError) naming
the file, the field and the value; never a RecursionError, a UnicodeDecodeError or minutes of YAML expansion."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from rooflib.conventions import ALGORITHMS
from rooflib.errors import SpecError, SpecFileError, UnknownNameError
from rooflib.specs import Catalog
from rooflib.specs.catalog import builtin_data_dir
from rooflib.specs.yaml_files import MAX_NODES, load_yaml

HARDWARE = builtin_data_dir("hardware")


def _write(folder: Path, filename: str, data: dict[str, Any] | str | bytes) -> Path:
    path = folder / filename
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _builtin(kind_dir: str, name: str, new_name: str, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((HARDWARE / kind_dir / f"{name}.yaml").read_text(encoding="utf-8"))
    data["name"] = new_name
    for dotted, value in changes.items():
        node = data
        *parents, leaf = dotted.split("__")
        for part in parents:
            node = node[part]
        node[leaf] = value
    return data


def _error(tmp_path: Path, kind: str, name: str) -> SpecError:
    with pytest.raises(SpecError) as info:
        Catalog.load([tmp_path]).get(kind, name)
    return info.value


# --- extends ----------------------------------------------------------------------------------------------


def test_two_item_cycle(tmp_path: Path) -> None:
    a = _write(tmp_path, "a.yaml", "kind: system\nname: a\nextends: b\n")
    b = _write(tmp_path, "b.yaml", "kind: system\nname: b\nextends: a\n")
    cat = Catalog.load([tmp_path])
    with pytest.raises(SpecError, match=r"circular extends chain: a \(.*a\.yaml\) -> b \(.*b\.yaml\) -> a") as info:
        cat.system("a")
    assert info.value.file == str(a) and info.value.problems == [
        ("extends", "b", f"circular extends chain: a ({a}) -> b ({b}) -> a")
    ]


def test_cycle_reached_through_a_chain(tmp_path: Path) -> None:
    _write(tmp_path, "top.yaml", "kind: device\nname: top\nextends: b\n")
    _write(tmp_path, "b.yaml", "kind: device\nname: b\nextends: c\n")
    c = _write(tmp_path, "c.yaml", "kind: device\nname: c\nextends: b\n")
    error = _error(tmp_path, "device", "top")
    assert "circular extends chain: b (" in str(error) and f"-> c ({c}) -> b" in str(error)


def test_extends_must_be_a_name(tmp_path: Path) -> None:
    path = _write(tmp_path, "x.yaml", "kind: system\nname: x\nextends: [hgx-h100]\n")
    error = _error(tmp_path, "system", "x")
    assert error.file == str(path)
    assert error.problems == [("extends", ["hgx-h100"], "must be the name of a system")]


def test_extends_an_item_of_another_kind(tmp_path: Path) -> None:
    _write(tmp_path, "x.yaml", "kind: device\nname: x\nextends: hgx-h100\n")
    with pytest.raises(SpecError, match="no device of that name \\('hgx-h100' is a system"):
        Catalog.load([tmp_path]).device("x")


def test_extends_a_missing_item_lists_the_valid_ones(tmp_path: Path) -> None:
    _write(tmp_path, "x.yaml", "kind: device\nname: x\nextends: h100-sxm6\n")
    with pytest.raises(SpecError, match=r"no device of that name; devices: .*h100-sxm5"):
        Catalog.load([tmp_path]).device("x")


def test_two_files_of_one_folder_with_the_same_name(tmp_path: Path) -> None:
    first = _write(tmp_path, "a.yaml", "kind: system\nname: mine\nextends: hgx-h100\n")
    _write(tmp_path, "b.yaml", "kind: system\nname: mine\nextends: hgx-b200\n")
    with pytest.raises(SpecError, match=re.escape(f"a system of that name is also in {first}")):
        Catalog.load([tmp_path])


def test_a_later_folder_may_still_replace_an_item(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    _write(tmp_path / "one", "a.yaml", "kind: system\nname: mine\nextends: hgx-h100\n")
    _write(tmp_path / "two", "a.yaml", "kind: system\nname: mine\nextends: hgx-b200\n")
    assert Catalog.load([tmp_path / "one", tmp_path / "two"]).system("mine").device == "b200"


# --- files that are not YAML mappings ---------------------------------------------------------------------


def test_alias_bomb_is_refused_in_well_under_a_second(tmp_path: Path) -> None:
    lines = ["kind: system", "name: bomb", "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    path = _write(tmp_path, "bomb.yaml", "\n".join(lines) + "\n")
    start = time.perf_counter()
    with pytest.raises(SpecFileError, match=f"expands to more than {MAX_NODES:,} YAML nodes") as info:
        Catalog.load([tmp_path])
    assert time.perf_counter() - start < 1.0
    assert info.value.file == str(path) and str(info.value).startswith(f"{path}: ")


def test_many_uses_of_one_small_alias_are_fine(tmp_path: Path) -> None:
    _write(tmp_path, "ok.yaml", "kind: sources\nbase: &s {title: t, url: u}\nsources: {a: *s, b: *s, c: *s}\n")
    assert Catalog.load([tmp_path]).sources["b"] == {"title": "t", "url": "u"}


def test_recursive_alias(tmp_path: Path) -> None:
    path = _write(tmp_path, "loop.yaml", "kind: system\nname: x\nfoo: &a [*a]\n")
    with pytest.raises(SpecFileError, match="a YAML alias refers to itself \\(line 3\\)") as info:
        Catalog.load([tmp_path])
    assert info.value.file == str(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\xff\xfe\x00k\x00i\x00n\x00d", "is not UTF-8 text (byte 0xff at offset 0); is it a YAML file?"),
        ("kind: device\nname: gr\xe4t\n".encode("latin-1"), "is not UTF-8 text (byte 0xe4 at offset 21)"),
        (b"", "is empty; a catalog file holds one mapping with 'kind' and 'name'"),
        (b"# only a comment\n", "is empty"),
        (b"kind: device\nname: [x\n", "not valid YAML at line 3, column 1: did not find expected ',' or ']'"),
        (b"---\nkind: device\nname: a\n---\nkind: device\nname: b\n", "not valid YAML at line 4"),
        (b"kind: device\nname: a\nname: b\n", "key 'name' is given twice (line 3)"),
    ],
)
def test_unusable_file_is_one_line(tmp_path: Path, content: bytes, message: str) -> None:
    path = _write(tmp_path, "x.yaml", content)
    with pytest.raises(SpecFileError) as info:
        Catalog.load([tmp_path])
    assert str(info.value) == f"{path}: {message}" or str(info.value).startswith(f"{path}: {message}")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("content", "field", "value", "message"),
    [
        ("- a\n- b\n", "<file>", ["a", "b"], "must be a mapping with 'kind' and 'name', not a list"),
        ("just text\n", "<file>", "just text", "must be a mapping with 'kind' and 'name', not a str"),
        ("kind: gpu\nname: x\n", "kind", "gpu", "must be one of device, interconnect, system, library, profile"),
        ("kind: device\n", "name", None, "every item needs a non-empty string 'name'"),
        ("kind: device\nname: ''\n", "name", "", "every item needs a non-empty string 'name'"),
        ("kind: device\nname: 5\n", "name", 5, "every item needs a non-empty string 'name'"),
        ("kind: sources\nsources: [a]\n", "sources", ["a"], "must map source ids to {title, url}"),
        ("kind: sources\nsources: {a: 1}\n", "sources.a", 1, "must be a mapping {title, url}"),
    ],
)
def test_wrong_shape_names_field_and_value(
    tmp_path: Path, content: str, field: str, value: object, message: str
) -> None:
    path = _write(tmp_path, "x.yaml", content)
    with pytest.raises(SpecError) as info:
        Catalog.load([tmp_path])
    assert info.value.file == str(path)
    assert len(info.value.problems) == 1
    got_field, got_value, got_message = info.value.problems[0]
    assert (got_field, got_value) == (field, value) and got_message.startswith(message)


def test_missing_catalog_path_is_a_spec_error(tmp_path: Path) -> None:
    with pytest.raises(SpecFileError, match="nowhere: catalog path does not exist"):
        Catalog.load([tmp_path / "nowhere"])


def test_load_yaml_of_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SpecFileError, match=r"gone\.yaml: no such file"):
        load_yaml(tmp_path / "gone.yaml")


# --- values that cannot be right ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"hbm_bandwidth": {"value": "450 GB", "source": "h100-datasheet"}}, "hbm_bandwidth.value", "is a size in"),
        ({"boost_clock": {"value": "1.98 GB", "source": "h100-datasheet"}}, "boost_clock.value", "not a frequency"),
        ({"kernel_launch": {"value": "4 GB/s", "source": "h100-datasheet"}}, "kernel_launch.value", "not a time"),
        ({"hbm_bandwidth": {"value": "3.35 TB", "source": "h100-datasheet"}}, "hbm_bandwidth.value", "bandwidth"),
        ({"hbm_bandwidth": {"value": "3.35", "source": "h100-datasheet"}}, "hbm_bandwidth.value", "has no unit"),
        ({"sms": {"value": 1e300, "source": "h100-datasheet"}}, "sms.value", "at most 2**63 - 1"),
        ({"gemm_tile__m": True}, "gemm_tile.m", "valid integer"),
        ({"gemm_tile__m": "128"}, "gemm_tile.m", "valid integer"),
        ({"gemm_tile__m": 100_000}, "gemm_tile.m", "less than or equal to 65536"),
        ({"nvlink__links": {"value": 10**30, "source": "h100-datasheet"}}, "nvlink.links.value", "at most 2**63"),
        ({"dtype_efficiency": {"bf61": {"value": 0.7, "source": "measured: x"}}}, "dtype_efficiency.bf61", "bf61"),
    ],
)
def test_device_value_that_cannot_be_right(tmp_path: Path, changes: dict[str, Any], field: str, message: str) -> None:
    path = _write(tmp_path, "dev.yaml", _builtin("devices", "h100-sxm5", "bad-gpu", **changes))
    error = _error(tmp_path, "device", "bad-gpu")
    assert error.file == str(path)
    fields = {f: m for f, _, m in error.problems}
    assert field in fields, error
    assert message in fields[field], error


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"gpus_per_node": True}, "gpus_per_node", "valid integer"),
        ({"gpus_per_node": 8.0}, "gpus_per_node", "valid integer"),
        ({"scale_up__links_per_plane": [True, 4, 4, 5]}, "scale_up.links_per_plane[0]", "valid integer"),
        ({"scale_out__oversubscription": float("inf")}, "scale_out.oversubscription", "finite number"),
        ({"scale_out__oversubscription": True}, "scale_out.oversubscription", "valid number"),
    ],
)
def test_system_value_that_cannot_be_right(tmp_path: Path, changes: dict[str, Any], field: str, message: str) -> None:
    _write(tmp_path, "sys.yaml", _builtin("systems", "dgx-h100-superpod", "bad-sys", **changes))
    error = _error(tmp_path, "system", "bad-sys")
    fields = {f: m for f, _, m in error.problems}
    assert field in fields, error
    assert message in fields[field], error


def test_a_check_over_the_whole_item_does_not_print_the_item(tmp_path: Path) -> None:
    _write(tmp_path, "sys.yaml", _builtin("systems", "hgx-h100", "bad-sys", nodes={"default": 1, "max": 3}))
    error = _error(tmp_path, "system", "bad-sys")
    assert error.problems[0][:2] == ("<item>", None)
    assert "no scale_out network" in error.problems[0][2] and len(str(error)) < 400


def test_library_with_misspelt_names(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "lib.yaml",
        "kind: library\nname: mine\nextends: nccl-hopper\n"
        "algorithm_latency:\n  rng: {value: 1 us, source: 'measured: x'}\n"
        "op_efficiency:\n  allreduce: {value: 0.9, source: 'measured: x'}\n"
        "native_algorithms:\n  all_reduce: [ring, nvsl]\n",
    )
    error = _error(tmp_path, "library", "mine")
    problems = {f: (v, m) for f, v, m in error.problems}
    assert problems["algorithm_latency.rng"][0] == "rng"
    assert problems["algorithm_latency.rng"][1].startswith("unknown algorithm 'rng'; valid: ring, tree")
    assert problems["op_efficiency.allreduce"][1].startswith("unknown collective 'allreduce'; valid: all_reduce")
    value, message = problems["native_algorithms.all_reduce[1]"]
    assert value == "nvsl" and message == f"unknown algorithm 'nvsl'; valid: {', '.join(ALGORITHMS)}"


# --- profiles -----------------------------------------------------------------------------------------------


def test_profile_path_that_does_not_exist(tmp_path: Path) -> None:
    missing = tmp_path / "nothere.yaml"
    with pytest.raises(SpecFileError, match="no such profile file \\(catalog profiles by name: h200-x2\\)") as info:
        Catalog.load().profile(missing)
    assert info.value.file == str(missing)


def test_profile_name_that_is_not_in_the_catalog() -> None:
    with pytest.raises(UnknownNameError, match="unknown profile 'nothere'; valid profiles: h200-x2"):
        Catalog.load().profile("nothere")


def test_profile_that_is_a_folder(tmp_path: Path) -> None:
    with pytest.raises(SpecFileError, match="is a folder, not a profile file"):
        Catalog.load().profile(tmp_path)


def test_profile_file_of_another_kind_is_not_added(tmp_path: Path) -> None:
    path = _write(tmp_path, "sys.yaml", "kind: system\nname: sneaky\nextends: hgx-h100\n")
    cat = Catalog.load()
    with pytest.raises(SpecError, match="a profile file needs kind: profile"):
        cat.profile(path)
    assert "sneaky" not in cat.names("system")


def test_missing_path_in_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROOFLIB_CATALOG", str(tmp_path / "gone"))
    with pytest.raises(SpecFileError, match=r"gone: catalog path does not exist"):
        Catalog.load()
