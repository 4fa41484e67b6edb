"""Mechanisms follow the path: NVLink mechanisms inside an NVLink domain, GPUDirect RDMA between domains."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import rooflib
from rooflib.cli import main
from rooflib.errors import GroupError
from rooflib.transfer import NETWORK_MECHANISMS, available_mechanisms, transfer_time


@pytest.fixture(scope="module")
def pod() -> rooflib.System:
    return rooflib.load_system("dgx-h100-superpod", gpus=16)


def test_across_domains_only_rdma(pod: rooflib.System) -> None:
    r = rooflib.predict_transfer(pod, 1 << 20, src=0, dst=8)
    assert r.best in NETWORK_MECHANISMS and {o.mechanism for o in r.options} == set(NETWORK_MECHANISMS)
    for mech in ("copy_engine", "tma", "ldst", "multimem"):
        assert "different NVLink domains" in r.unavailable[mech]
    assert r.link_bytes_per_s == pytest.approx(50e9)  # one 400 Gb/s NIC
    assert all(o.bandwidth_bytes_per_s < 50e9 for o in r.options)  # never above the NIC


def test_inside_a_domain_no_rdma(pod: rooflib.System) -> None:
    r = rooflib.predict_transfer(pod, 1 << 20, src=0, dst=1)
    assert r.best not in NETWORK_MECHANISMS
    assert all("share an NVLink domain" in r.unavailable[m] for m in NETWORK_MECHANISMS)
    single = rooflib.predict_transfer(rooflib.load_system("hgx-h100"), 1 << 20)
    assert all("no scale-out network" in single.unavailable[m] for m in NETWORK_MECHANISMS)
    assert available_mechanisms(rooflib.load_system("hgx-h100"), network=True) == []


def test_transfer_time_refuses_the_wrong_path(pod: rooflib.System) -> None:
    with pytest.raises(GroupError, match="different NVLink domains"):
        transfer_time(pod, "tma", 1e6, 8, src=0, dst=8)
    with pytest.raises(GroupError, match="share an NVLink domain"):
        transfer_time(pod, "rdma_gpu", 1e6, 1, src=0, dst=1)
    with pytest.raises(GroupError, match="link bandwidth must be finite and > 0"):
        transfer_time(pod, "tma", 1e6, 8, src=0, dst=1, link=-1.0)


def test_cli_transfer_across_nodes_picks_rdma() -> None:
    out = CliRunner().invoke(main, ["transfer", "--system", "dgx-h100-superpod", "--src", "0", "--dst", "8", "--json"])
    assert out.exit_code == 0, out.output
    import json

    rec = json.loads(out.output)
    assert rec["best"] in NETWORK_MECHANISMS and "tma" in rec["unavailable"]
