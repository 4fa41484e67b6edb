from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import rooflib
from rooflib.collectives import ALGORITHMS_FOR, OPS, bus_factor, predict_collective
from rooflib.conventions import MULTICAST_ALGORITHMS
from rooflib.errors import GroupError, UnitError, UnknownNameError
from rooflib.specs import System

SIZES = 2.0 ** np.arange(7, 31)


def test_bus_factors_follow_nccl_tests() -> None:
    assert bus_factor("all_reduce", 8) == pytest.approx(1.75)
    assert bus_factor("all_gather", 8) == pytest.approx(0.875)
    assert bus_factor("all_to_all", 4) == pytest.approx(0.75)
    assert bus_factor("broadcast", 8) == 1.0
    assert bus_factor("send_recv", 2) == 1.0


@pytest.mark.parametrize("op", OPS)
def test_every_op_and_algorithm_is_finite_on_hgx_h100(h100: System, op: str) -> None:
    r = predict_collective(op, h100, nbytes=SIZES)
    assert set(r.candidates) | set(r.not_applicable) == set(ALGORITHMS_FOR[op])  # type: ignore[index]
    for times in r.candidates.values():
        assert np.isfinite(times).all() and (times > 0).all()
    assert np.isfinite(r.busbw).all()


def test_auto_is_the_minimum_of_its_candidates(h100: System) -> None:
    r = predict_collective("all_reduce", h100, nbytes=SIZES)
    np.testing.assert_allclose(r.time_s, np.min(np.vstack(list(r.candidates.values())), axis=0))
    # small messages are latency-bound, large ones go to the switch reduction
    assert r.algorithm[0] != "nvls" and r.algorithm[-1] == "nvls"


def test_small_messages_are_latency_bound(h100: System) -> None:
    r = predict_collective("all_reduce", h100, nbytes=[1024, 4096], algorithm="ring")
    assert r.time_s[1] == pytest.approx(r.time_s[0], rel=0.1)
    assert h100.library.host_call is not None and r.time_s[0] > h100.library.host_call.value
    graph = predict_collective("all_reduce", h100, nbytes=[1024], algorithm="ring", launch="graph")
    isolated = predict_collective("all_reduce", h100, nbytes=[1024], algorithm="ring", launch="isolated")
    assert graph.time_s[0] <= r.time_s[0] * (1 + 1e-12) < isolated.time_s[0]  # back to back hides the issue


def test_named_algorithm_is_used_or_refused_with_reason(h100: System, a100: System) -> None:
    assert predict_collective("all_reduce", h100, nbytes=1e6, algorithm="ring").algorithm == ["ring"]
    with pytest.raises(GroupError, match="no multicast"):
        predict_collective("all_reduce", a100, nbytes=1e6, algorithm="nvls")
    with pytest.raises(GroupError, match="power-of-two"):
        predict_collective("all_reduce", h100, gpus=6, nbytes=1e6, algorithm="recursive")
    with pytest.raises(UnknownNameError, match=r"valid algorithms: .*ring"):
        predict_collective("all_reduce", h100, nbytes=1e6, algorithm="rign")
    with pytest.raises(UnknownNameError, match=r"valid collectives: .*all_reduce"):
        predict_collective("allreduce_fast", h100, nbytes=1e6)


def test_group_that_does_not_fit(h100: System) -> None:
    with pytest.raises(GroupError, match="--gpus 9 does not fit system 'hgx-h100', which has 8 GPUs"):
        predict_collective("all_reduce", h100, gpus=9, nbytes=1e6)
    with pytest.raises(GroupError, match="names a GPU twice"):
        predict_collective("all_reduce", h100, gpus=[0, 1, 1], nbytes=1e6)
    with pytest.raises(UnitError, match="nbytes must be finite and >= 0"):
        predict_collective("all_reduce", h100, nbytes=-1)


def test_bad_arguments_are_refused(h100: System) -> None:
    with pytest.raises(
        UnknownNameError, match="unknown launch 'bogus'; valid launches: device, graph, isolated, stream"
    ):
        predict_collective("all_reduce", h100, nbytes=1, launch="bogus")  # type: ignore[arg-type]
    with pytest.raises(UnitError, match=r"1-D array of sizes, got an array of shape \(1, 2\)"):
        predict_collective("all_reduce", h100, nbytes=[[1, 2]])
    with pytest.raises(UnitError, match="sizes in bytes, got 'abc'"):
        predict_collective("all_reduce", h100, nbytes="abc")


def test_explicit_group_placement_changes_the_bottleneck(superpod: System) -> None:
    in_node = predict_collective("all_reduce", superpod, gpus=[0, 1], nbytes=1 << 30, algorithm="ring")
    across = predict_collective("all_reduce", superpod, gpus=[0, 8], nbytes=1 << 30, algorithm="ring")
    assert in_node.busbw[0] > 5 * across.busbw[0]
    assert max(across.class_loads(0), key=lambda c: across.class_loads(0)[c] / 50e9) in ("ib", "pcie")


def test_multi_node_ring_is_limited_by_the_network(superpod: System) -> None:
    r = predict_collective("all_reduce", superpod, gpus=16, nbytes=1 << 30, algorithm="ring")
    busiest = r.link_loads(0, top=1)[0]
    assert busiest.cls in ("ib", "pcie")
    # one ring per rail: every NIC of both nodes carries traffic
    nics = {ll.source for ll in r.link_loads(0, top=None) if ll.source.startswith("nic")}
    assert len(nics) == 16
    assert r.busbw[0] < 8 * 50e9 * 0.92 + 1


def test_hierarchical_needs_several_domains(h100: System, superpod: System) -> None:
    assert "hierarchical" in predict_collective("all_reduce", h100, nbytes=1e6).not_applicable
    r = predict_collective("all_reduce", superpod, gpus=64, nbytes=1 << 30, algorithm="hierarchical")
    assert np.isfinite(r.time_s).all()


def test_link_utilisation_never_exceeds_one(superpod: System) -> None:
    for op in ("all_reduce", "all_to_all", "all_gather"):
        r = predict_collective(op, superpod, gpus=32, nbytes=[1 << 20, 1 << 30])
        for i in range(2):
            assert all(0 < ll.utilization <= 1 + 1e-9 for ll in r.link_loads(i, top=None))


def test_all_to_all_on_a_whole_rail_optimised_cluster() -> None:
    pod = rooflib.load_system("dgx-h100-superpod", gpus=1024)
    r = predict_collective("all_to_all", pod, nbytes=1 << 30)
    # per-GPU egress is (n-1)/n S, mostly across the NIC: busbw can not beat the NIC
    assert r.busbw[0] <= 50e9 * (1 + 1e-9)


def test_sixteen_thousand_gpu_all_reduce_is_predictable() -> None:
    pod = rooflib.load_system("dgx-h100-superpod", gpus=16384)
    r = predict_collective("all_reduce", pod, nbytes=[1 << 20, 1 << 30])
    assert np.isfinite(r.time_s).all()
    assert r.busbw[1] < 8 * 50e9


@given(
    op=st.sampled_from(OPS),
    n=st.integers(2, 8),
    sizes=st.lists(st.floats(0, 2**34, allow_nan=False), min_size=2, max_size=6),
)
def test_properties_on_one_domain(op: str, n: int, sizes: list[float]) -> None:
    r = predict_collective(op, _H100, gpus=n, nbytes=sorted(sizes))
    assert np.isfinite(r.time_s).all() and np.isfinite(r.busbw).all() and (r.time_s > 0).all()
    assert (np.diff(r.time_s) >= -1e-15).all()  # time never falls as bytes grow
    for alg, times in r.candidates.items():
        assert (r.time_s <= times + 1e-15).all()  # auto never slower than a candidate
        assert (np.diff(times) >= -1e-15).all()
        if alg != "nvls":  # only the switch's reduction can beat the links
            _, busbw = rooflib.collectives.bandwidths(r.op, n, r.nbytes, times)
            assert (busbw <= _H100.nvlink_bandwidth * (1 + 1e-9)).all()


_H100 = rooflib.load_system("hgx-h100")


@given(n=st.integers(2, 96), size=st.floats(1, 2**33, allow_nan=False))
def test_properties_across_nodes(n: int, size: float) -> None:
    r = predict_collective("all_reduce", _POD, gpus=n, nbytes=[size, 2 * size])
    assert np.isfinite(r.time_s).all() and r.time_s[1] >= r.time_s[0]
    link_bound = [alg not in MULTICAST_ALGORITHMS for alg in r.algorithm]  # in-switch reduction beats the links
    assert (r.busbw[link_bound] <= _POD.nvlink_bandwidth * (1 + 1e-9)).all()


_POD = rooflib.load_system("dgx-h100-superpod", nodes=12)


def test_library_mode_keeps_to_what_nccl_runs(h100: System, a100: System) -> None:
    r = predict_collective("all_reduce", h100, nbytes=[1e3, 1e9], algorithm="library")
    assert set(r.candidates) == {"ring", "tree", "nvls"}
    assert set(predict_collective("all_reduce", a100, nbytes=1e9, algorithm="library").candidates) == {"ring", "tree"}
    assert set(predict_collective("all_to_all", h100, nbytes=1e9, algorithm="library").candidates) == {"direct"}
    # what a kernel writer can reach is never slower than the library
    best = predict_collective("all_reduce", h100, nbytes=[1e3, 1e9])
    assert (best.time_s <= r.time_s).all()


def test_eight_bit_reductions_cannot_use_nvls() -> None:
    # aiconfigurator's 8 x H100 nccl-tests table: all-reduce 512 MiB half 445 GB/s busbw (NVLS), int8 351 (ring)
    h100 = rooflib.load_system("hgx-h100")
    half = predict_collective("all_reduce", h100, nbytes=1 << 29, algorithm="library", dtype="half")
    int8 = predict_collective("all_reduce", h100, nbytes=1 << 29, algorithm="library", dtype="int8")
    assert half.algorithm == ["nvls"] and int8.algorithm != ["nvls"]
    assert "16-bit" in int8.not_applicable["nvls"]
    assert int8.time_s[0] > half.time_s[0]
    gather = predict_collective("all_gather", h100, nbytes=1 << 29, algorithm="auto", dtype="int8")
    assert "nvls" not in gather.not_applicable  # no reduction: the element type does not matter
    with pytest.raises(rooflib.RooflibError, match="dtype"):
        predict_collective("all_reduce", h100, nbytes=1 << 20, dtype="int3")
