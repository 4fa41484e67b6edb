from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import rooflib
from rooflib.errors import GroupError
from rooflib.specs import System
from rooflib.topology import Topology


def test_hgx_h100_peer_bandwidth_is_all_18_links(h100: System) -> None:
    topo = Topology(h100)
    assert topo.bottleneck(0, 7) == pytest.approx(18 * 25e9)
    assert topo.egress(3) == {"nvlink": pytest.approx(450e9)}
    # bytes split over the four NVSwitch chips in proportion to 5/4/4/5 links
    shares = sorted(share for a, _, share in topo.route(0, 1) if a == "gpu0")
    assert shares == pytest.approx([4 / 18, 4 / 18, 5 / 18, 5 / 18])


def test_bisection_of_one_switch_domain(h100: System) -> None:
    assert Topology(h100).bisection_bandwidth() == pytest.approx(4 * 450e9)


def test_superpod_cross_node_goes_through_nics(superpod: System) -> None:
    topo = Topology(superpod)
    # same rail (local index 0 on node 0 and node 1): NIC -> leaf -> NIC
    assert topo.bottleneck(0, 8) == pytest.approx(50e9)
    classes = {topo.graph.edges[a, b]["cls"] for a, b, _ in topo.route(0, 8)}
    assert classes == {"pcie", "ib"}
    # different rail: one NVLink hop to the GPU on the destination's rail first (PXN)
    route = topo.route(0, 9)
    assert ("gpu0", "domain0/nvswitch0") in {(a, b) for a, b, _ in route}
    assert any(a == "gpu1" and b == "nic1" for a, b, _ in route)
    # across scalable units the rail spine is used
    assert any(b == "rail0/spine" for a, b, _ in topo.route(0, 32 * 8))
    assert topo.latency(0, 32 * 8) > topo.latency(0, 8) > topo.latency(0, 1)


def test_superpod_bisection_is_nic_limited(superpod: System) -> None:
    topo = Topology(superpod)
    half = superpod.gpus // 2
    assert topo.bisection_bandwidth() == pytest.approx(half * 50e9)


def test_oversubscribed_fabric_halves_bisection(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "pod.yaml").write_text(
        "kind: system\nname: tapered-pod\nextends: dgx-h100-superpod\n"
        "scale_out: {oversubscription: 2.0}\n"
    )
    cat = rooflib.Catalog.load([tmp_path])
    pod = rooflib.load_system("tapered-pod", nodes=64, catalog=cat)
    topo = Topology(pod)
    assert topo.bisection_bandwidth() == pytest.approx(pod.gpus // 2 * 25e9)


def test_scale_up_domains(superpod: System) -> None:
    domains = Topology(superpod).scale_up_domains()
    assert len(domains) == 64 and list(domains[1]) == list(range(8, 16))
    nvl = rooflib.load_system("gb200-nvl72")
    assert [len(d) for d in Topology(nvl).scale_up_domains()] == [72]


def test_nvl576_second_tier_is_crossed_between_racks() -> None:
    topo = Topology(rooflib.load_system("nvl576"))
    inside = {a for a, _, _ in topo.route(0, 71)} | {b for _, b, _ in topo.route(0, 71)}
    across = {b for _, b, _ in topo.route(0, 72)}
    assert not any("spine" in n for n in inside)
    assert any("spine" in n for n in across)


def test_graph_has_every_link_and_kinds(h100: System) -> None:
    g = Topology(h100).graph
    assert g.number_of_edges() == 2 * 8 * 4
    assert {d["kind"] for _, d in g.nodes(data=True)} == {"gpu", "nvswitch"}
    assert all(d["bandwidth"] > 0 for *_, d in g.edges(data=True))


@given(st.integers(0, 511), st.integers(0, 511))
def test_routes_are_paths_in_the_graph(src: int, dst: int) -> None:
    topo = _SUPERPOD_TOPO
    if src == dst:
        assert topo.route(src, dst) == []
        return
    edges = [(a, b) for a, b, _ in topo.route(src, dst)]
    sub = nx.DiGraph(edges)
    assert all(topo.graph.has_edge(a, b) for a, b in edges)
    assert nx.has_path(sub, f"gpu{src}", f"gpu{dst}")
    # every byte that leaves the source arrives: shares out of src and into dst each sum to 1
    route = topo.route(src, dst)
    assert sum(s for a, _, s in route if a == f"gpu{src}") >= 1 - 1e-12
    assert sum(s for _, b, s in route if b == f"gpu{dst}") == pytest.approx(1.0)


_SUPERPOD_TOPO = Topology(rooflib.load_system("dgx-h100-superpod", nodes=64))


def test_loads_are_linear_and_vectorised(h100: System) -> None:
    topo = Topology(h100)
    one = topo.loads([0], [1], [1.0])
    many = topo.loads(np.zeros(5, dtype=int), np.ones(5, dtype=int), np.full(5, 2.0))
    np.testing.assert_allclose(many, 10 * one)


def test_sixteen_thousand_gpus_need_no_graph() -> None:
    pod = rooflib.load_system("dgx-h100-superpod", gpus=16384)
    assert pod.gpus == 16384
    topo = Topology(pod)
    assert topo.bottleneck(0, 16383) == pytest.approx(50e9)
    assert "graph" not in topo.__dict__  # queries above never built the networkx graph


def test_bad_gpu_indices(h100: System) -> None:
    topo = Topology(h100)
    with pytest.raises(GroupError, match="GPU 8 is outside"):
        topo.bottleneck(0, 8)
    with pytest.raises(GroupError, match="outside system"):
        topo.loads([0], [99], [1.0])


def test_nvl72_racks_over_infiniband() -> None:
    pod = rooflib.load_system("gb200-nvl72-superpod")  # 8 racks of 72 GPUs
    topo = Topology(pod)
    assert pod.gpus == 576 and [len(d) for d in topo.scale_up_domains()] == [72] * 8
    assert topo.bottleneck(0, 71) == pytest.approx(900e9)  # inside a rack: NVLink 5
    assert topo.bottleneck(0, 72) == pytest.approx(50e9)  # across racks: one 400 Gb/s NIC
    edges = [(a, b) for a, b, _ in topo.route(1, 72)]  # rail 1 to rail 0: NVLink to the rail-0 GPU first
    assert ("gpu1", "domain0/nvswitch0") in edges and ("gpu0", "nic0") in edges
    r = rooflib.predict_collective("all_reduce", pod, nbytes=1 << 30, algorithm="library")
    # channels span the whole rack: more NICs than one 4-GPU tray's carry the rack's traffic
    assert float(r.busbw[0]) > 4 * 50e9
    with pytest.raises(GroupError, match="takes 1 to 1152 nodes"):
        rooflib.load_system("gb200-nvl72-superpod", nodes=1153)
