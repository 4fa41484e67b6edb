"""Every command's help, and the JSON schemas of systems, show, collective, transfer and roofline."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import click
import pytest

import rooflib
from rooflib.cli import main

from .conftest import invoke, invoke_json


def _command_paths(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [prefix]
    for name, cmd in sorted(group.commands.items()):
        if isinstance(cmd, click.Group):
            paths += _command_paths(cmd, (*prefix, name))
        else:
            paths.append((*prefix, name))
    return paths


COMMANDS = _command_paths(main)


def _finite_numbers(obj: Any) -> None:
    if isinstance(obj, dict):
        for value in obj.values():
            _finite_numbers(value)
    elif isinstance(obj, list):
        for value in obj:
            _finite_numbers(value)
    elif isinstance(obj, float):
        assert math.isfinite(obj)


def test_every_command_is_listed() -> None:
    names = {" ".join(p) for p in COMMANDS}
    assert {"systems", "show", "collective", "transfer", "roofline", "report", "plot", "plot roofline",
            "plot comm-roofline", "plot collective", "plot mechanism-map"} <= names  # fmt: skip


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "rooflib")
def test_help(path: tuple[str, ...]) -> None:
    result = invoke(*path, "--help")
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output


def test_version() -> None:
    result = invoke("--version")
    assert result.exit_code == 0 and rooflib.__version__ in result.output


def test_systems_json_lists_the_catalog() -> None:
    data = invoke_json("systems")
    assert [s["name"] for s in data] == rooflib.default_catalog().names("system")
    for item in data:
        assert {"name", "display_name", "gpus", "gpus_per_node", "device", "projection"} <= set(item)
        assert item["gpus"] % item["gpus_per_node"] == 0
    assert all(isinstance(s["projection"], bool) for s in data)


def test_systems_table() -> None:
    result = invoke("systems")
    assert result.exit_code == 0
    assert "hgx-h100" in result.stdout and "name" in result.stdout.splitlines()[0]


def test_show_json_and_table() -> None:
    data = invoke_json("show", "dgx-h100-superpod")
    assert data["name"] == "dgx-h100-superpod"
    assert data["device"]["figures"]["hbm_bandwidth"]["value"] == pytest.approx(3.35e12)
    assert data["device"]["figures"]["hbm_bandwidth"]["source"]
    assert set(data["links"]) == {"nvlink", "nvswitch", "infiniband", "pcie"}
    topo = data["topology"]
    assert topo["gpus"] == 256 and topo["domains"] == 32
    assert set(topo["egress_bytes_per_s"]) == {"nvlink", "pcie", "ib"}
    assert topo["bisection_bytes_per_s"] > 0
    table = invoke("show", "hgx-h100").stdout
    assert "3.35 TB/s" in table and "h100-datasheet" in table and "bisection bandwidth" in table


COLLECTIVE_KEYS = {
    "op", "system", "gpus", "bytes", "algorithm", "time_s", "algbw_bytes_per_s", "busbw_bytes_per_s", "candidates",
    "protocol", "link_loads", "not_applicable", "ties", "library",
}  # fmt: skip


@pytest.mark.parametrize(("size", "expected"), [("1GiB", 1073741824), ("64MB", 64000000), ("4096", 4096)])
def test_collective_json_schema(size: str, expected: int) -> None:
    data = invoke_json("collective", "all_reduce", "--system", "hgx-h100", "--gpus", "8", "--bytes", size)
    assert set(data) == COLLECTIVE_KEYS
    assert data["bytes"] == expected and data["gpus"] == 8 and data["op"] == "all_reduce"
    assert data["system"] == "hgx-h100"
    _finite_numbers(data)
    times = [c["time_s"] for c in data["candidates"]]
    assert times == sorted(times) and data["candidates"][0]["algorithm"] == data["algorithm"]
    assert data["library"]["time_s"] >= data["time_s"]  # what NCCL runs is never faster than auto
    assert data["library"]["algorithm"] in ("ring", "tree", "nvls")
    assert data["time_s"] == pytest.approx(times[0])
    assert data["algbw_bytes_per_s"] == pytest.approx(expected / data["time_s"])
    assert data["busbw_bytes_per_s"] == pytest.approx(data["algbw_bytes_per_s"] * 2 * 7 / 8)
    for load in data["link_loads"]:
        assert set(load) == {"from", "to", "cls", "bytes", "utilization"}
    assert all(isinstance(v, str) for v in data["not_applicable"].values())


def test_collective_matches_library() -> None:
    system = rooflib.load_system("hgx-h100")
    r = rooflib.predict_collective("all_gather", system, nbytes=2**24, gpus=4)
    data = invoke_json("collective", "all-gather", "-s", "hgx-h100", "-n", "4", "-b", "16MiB")
    assert data["op"] == "all_gather" and data["algorithm"] == r.algorithm[0]
    assert data["time_s"] == pytest.approx(float(r.time_s[0]))


def test_collective_range_and_list() -> None:
    data = invoke_json("collective", "all_reduce", "-s", "hgx-h100", "--bytes", "1KiB:1MiB")
    assert [d["bytes"] for d in data] == [2**k for k in range(10, 21)]
    assert all(set(d) == COLLECTIVE_KEYS for d in data)
    data = invoke_json("collective", "all_reduce", "-s", "hgx-h100", "--bytes", "4KiB,1GiB")
    assert [d["bytes"] for d in data] == [4096, 2**30]
    table = invoke("collective", "all_reduce", "-s", "hgx-h100", "--bytes", "1KiB:1MiB").stdout
    assert sum(1 for line in table.splitlines() if "KiB" in line or "MiB" in line) == 11
    assert "library: what NCCL itself runs" in table


def test_collective_named_algorithm_and_graph_launch() -> None:
    ring = invoke_json("collective", "all_reduce", "-s", "hgx-h100", "-b", "1MiB", "--algorithm", "ring")
    assert ring["algorithm"] == "ring" and [c["algorithm"] for c in ring["candidates"]] == ["ring"]
    graph = invoke_json("collective", "all_reduce", "-s", "hgx-h100", "-b", "1MiB", "-a", "ring", "--launch", "graph")
    one = invoke_json("collective", "all_reduce", "-s", "hgx-h100", "-b", "1MiB", "-a", "ring", "--launch", "isolated")
    assert graph["time_s"] <= ring["time_s"] * (1 + 1e-12) < one["time_s"]


def test_collective_sizes_a_cluster_from_gpus() -> None:
    data = invoke_json("collective", "all_reduce", "-s", "dgx-h100-superpod", "--gpus", "512", "-b", "1GiB")
    assert data["gpus"] == 512
    assert any(load["cls"] == "ib" for load in data["link_loads"])


def test_collective_table() -> None:
    result = invoke("collective", "all_reduce", "-s", "hgx-h100", "-b", "1GiB")
    assert result.exit_code == 0
    assert "busbw" in result.stdout and "candidate" in result.stdout and "busiest links" in result.stdout


def test_transfer_json_schema() -> None:
    data = invoke_json("transfer", "--system", "hgx-h100", "--bytes", "1MiB", "--sms", "8")
    assert set(data) == {"bytes", "sms", "best", "mechanisms", "unavailable", "link_bytes_per_s", "ties"}
    assert data["bytes"] == 2**20 and data["sms"] == 8
    _finite_numbers(data)
    for m in data["mechanisms"]:
        assert set(m) == {"mechanism", "time_s", "bandwidth_bytes_per_s", "sms"}
        assert m["sms"] <= 8
    assert data["best"] == data["mechanisms"][0]["mechanism"]
    expected = rooflib.predict_transfer(rooflib.load_system("hgx-h100"), 2**20, sms=8)
    assert data["best"] == expected.best


def test_transfer_options() -> None:
    one = invoke_json("transfer", "-s", "hgx-h100", "-b", "1GiB", "--mechanism", "tma")
    assert [m["mechanism"] for m in one["mechanisms"]] == ["tma"]
    switch = invoke_json("transfer", "-s", "hgx-h100", "-b", "1MiB", "--reduction", "switch")
    assert switch["best"] == "multimem" and "copy_engine" in switch["unavailable"]
    remote = invoke_json("transfer", "-s", "dgx-h100-superpod", "-b", "1MiB", "--src", "0", "--dst", "8")
    assert remote["link_bytes_per_s"] < invoke_json("transfer", "-s", "dgx-h100-superpod")["link_bytes_per_s"]
    assert "best" in invoke("transfer", "-s", "hgx-b200").stdout


def test_roofline_json_schema(tmp_path: Path) -> None:
    out = tmp_path / "roofline.png"
    data = invoke_json("roofline", "--system", "dgx-h100-superpod", "--kernel", "gemm:1.1e12:4e8:2e8",
                       "--kernel", "ar:2T:1GiB:1e9:1e8", "--out", str(out))  # fmt: skip
    assert set(data) == {"system", "dtype", "achievable", "compute_flops_per_s", "hbm_bytes_per_s", "l2_bytes_per_s",
                         "links_bytes_per_s", "ridge_points", "kernels"}  # fmt: skip
    _finite_numbers(data)
    assert data["dtype"] == "bf16" and set(data["links_bytes_per_s"]) == {"nvlink", "ib"}
    assert set(data["ridge_points"]) == {"l2", "hbm", "nvlink", "ib"}
    gemm, ar = data["kernels"]
    for k in (gemm, ar):
        assert {"bound_s", "sum_s", "serial_s", "limiter", "intensity_hbm", "intensity_net"} <= set(k)
        assert k["bound_s"] <= k["serial_s"] <= k["sum_s"]
    assert gemm["intensity_hbm"] == pytest.approx(1.1e12 / 4e8) and gemm["limiter"] == "compute"
    assert ar["net_bytes"] == {"nvlink": 1e9, "ib": 1e8} and ar["flops"] == 2e12 and ar["hbm_bytes"] == 2**30
    assert out.stat().st_size > 1000


def test_roofline_table_and_options() -> None:
    result = invoke("roofline", "-s", "hgx-h100", "--dtype", "fp8", "--achievable", "-k", "g:1e12:1e9:1e8")
    assert result.exit_code == 0
    assert "ridge" in result.stdout and "g" in result.stdout
    peak = invoke_json("roofline", "-s", "hgx-h100")["compute_flops_per_s"]
    assert invoke_json("roofline", "-s", "hgx-h100", "--achievable")["compute_flops_per_s"] < peak
