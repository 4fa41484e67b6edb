"""Bad input gives one clear message and exit code 2; user catalogs and profiles reach every command."""

from __future__ import annotations

from pathlib import Path

import pytest

import rooflib

from .conftest import invoke, invoke_json

SYSTEMS = rooflib.default_catalog().names("system")


def _fails(*args: str) -> str:
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    return result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("collective", "all_reduce", "--system", "nosuch"),
        ("transfer", "--system", "nosuch"),
        ("roofline", "--system", "nosuch"),
        ("show", "nosuch"),
        ("plot", "mechanism-map", "--system", "nosuch", "--out", "x.png"),
    ],
)
def test_unknown_system_lists_valid_systems(args: tuple[str, ...]) -> None:
    err = _fails(*args)
    assert err.startswith("error: unknown system 'nosuch'")
    assert all(name in err for name in SYSTEMS)
    assert len(err.strip().splitlines()) == 1


def test_unknown_op_lists_valid_ops() -> None:
    err = _fails("collective", "allreduce", "--system", "hgx-h100")
    assert "unknown collective 'allreduce'" in err
    assert all(op in err for op in rooflib.OPS)


def test_unknown_algorithm_lists_valid_algorithms() -> None:
    err = _fails("collective", "all_reduce", "--system", "hgx-h100", "--algorithm", "bogus")
    assert "unknown algorithm 'bogus'" in err
    assert all(alg in err for alg in (*rooflib.ALGORITHMS, "auto"))


def test_algorithm_that_cannot_run_says_why() -> None:
    err = _fails("collective", "all_reduce", "--system", "hgx-a100", "--algorithm", "nvls")
    assert "nvls" in err and "multicast" in err


def test_too_many_gpus_is_a_clear_error() -> None:
    err = _fails("collective", "all_reduce", "--gpus", "9", "--system", "hgx-h100")
    assert "hgx-h100" in err and "9 GPUs" in err and "8 GPUs" in err


@pytest.mark.parametrize("size", ["12 parsecs", "1GiB:1KiB", "-5", "1.5"])
def test_bad_size_names_the_value(size: str) -> None:
    result = invoke("collective", "all_reduce", "--system", "hgx-h100", "--bytes", size)
    assert result.exit_code == 2
    assert "--bytes" in result.stderr and repr(size) in result.stderr


@pytest.mark.parametrize("kernel", ["gemm:1e12:4e8", "gemm:lots:4e8:2e8", "gemm:1e12:4e8:2 parsecs"])
def test_bad_kernel_is_a_usage_error(kernel: str) -> None:
    result = invoke("roofline", "--system", "hgx-h100", "--kernel", kernel)
    assert result.exit_code == 2 and "--kernel" in result.stderr


def test_ib_bytes_on_a_system_without_ib() -> None:
    err = _fails("roofline", "--system", "hgx-h100", "--kernel", "k:1e12:1e9:1e8:1e8")
    assert "ib" in err and "nvlink" in err


def test_unavailable_mechanism() -> None:
    err = _fails("transfer", "--system", "hgx-a100", "--mechanism", "multimem")
    assert "multimem" in err


def test_plot_collective_needs_one_system_option(tmp_path: Path) -> None:
    result = invoke("plot", "collective", "--out", str(tmp_path / "x.png"))
    assert result.exit_code == 2 and "--systems" in result.stderr


def _user_catalog(folder: Path, body: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "my-h100.yaml").write_text(
        "kind: system\nname: my-h100\nextends: hgx-h100\ndisplay_name: My lab H100 box\n" + body
    )
    return folder


def test_user_catalog_adds_a_system(tmp_path: Path) -> None:
    cat = str(_user_catalog(tmp_path / "cat"))
    names = [s["name"] for s in invoke_json("systems", "--catalog", cat)]
    assert "my-h100" in names and "hgx-h100" in names
    mine = invoke_json("collective", "all_reduce", "-s", "my-h100", "-b", "1GiB", "--catalog", cat)
    base = invoke_json("collective", "all_reduce", "-s", "hgx-h100", "-b", "1GiB")
    assert mine["system"] == "my-h100" and mine["time_s"] == pytest.approx(base["time_s"])
    assert "my-h100" not in [s["name"] for s in invoke_json("systems")]


def test_bad_user_catalog_is_a_spec_error(tmp_path: Path) -> None:
    cat = _user_catalog(tmp_path / "bad", "gpus_per_nod: 8\n")
    err = _fails("show", "my-h100", "--catalog", str(cat))
    assert "my-h100.yaml" in err and "gpus_per_nod" in err and "misspelt" in err
    assert len(err.strip().splitlines()) >= 2  # the file line, then one line per problem


def test_missing_catalog_path_is_a_usage_error(tmp_path: Path) -> None:
    result = invoke("systems", "--catalog", str(tmp_path / "nope"))
    assert result.exit_code == 2 and "does not exist" in result.stderr


def test_profile_file_slows_nvlink_collectives(profile_yaml: str) -> None:
    args = ("collective", "all_reduce", "-s", "hgx-h100", "--gpus", "8", "-b", "1GiB")
    base = invoke_json(*args)
    slow = invoke_json(*args, "--profile", profile_yaml)
    assert slow["time_s"] > base["time_s"]
    ring = invoke_json(*args, "-a", "ring", "--profile", profile_yaml)
    assert ring["time_s"] > invoke_json(*args, "-a", "ring")["time_s"]
    shown = invoke_json("show", "hgx-h100", "--profile", profile_yaml)
    assert shown["profile"] == "test"
    assert shown["library"]["figures"]["link_efficiency.nvlink"]["value"] == 0.5


def test_profile_for_another_system_carries_only_its_portable_part(profile_yaml: str) -> None:
    result = invoke("collective", "all_reduce", "-s", "hgx-b200", "--profile", profile_yaml)
    assert result.exit_code == 0, result.output
    assert "portable part" in result.stderr and "hgx-b200" in result.stderr


def test_unknown_profile_name() -> None:
    err = _fails("transfer", "-s", "hgx-h100", "--profile", "no-such-profile")
    assert "unknown profile 'no-such-profile'" in err


def test_unwritable_output_is_a_short_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file.txt"
    blocker.write_text("not a folder")
    result = invoke("plot", "mechanism-map", "--system", "hgx-h100", "--out", str(blocker / "map.png"))
    assert result.exit_code == 1
    assert result.stderr.startswith("error:") and "Traceback" not in result.output
