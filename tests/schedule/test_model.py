from __future__ import annotations

from functools import partial

import pytest
from hypothesis import given
from hypothesis import strategies as st

import rooflib
from rooflib.compute import gemm
from rooflib.schedule import AUTO, LIBRARY, Comm, Stage, direct_egress, predict_stage


def test_direct_egress_per_op() -> None:
    assert direct_egress("reduce_scatter", 8.0, 8) == pytest.approx(7.0)
    assert direct_egress("all_reduce", 8.0, 8) == pytest.approx(14.0)
    assert direct_egress("all_reduce", 8.0, 8, switch=True) == pytest.approx(9.0)
    assert direct_egress("send_recv", 8.0, 2) == 8.0
    assert direct_egress("all_gather", 8.0, 1) == 0.0


def _gemm_rs(system: rooflib.System, m: int, n: int, k: int) -> Stage:
    return Stage(
        "s",
        partial(lambda sms, d=system.device: gemm(d, m, n, k, sms=sms)),
        Comm("reduce_scatter", 2.0 * m * n, "peer"),
        tiles=(m // 128) * (n // 256),
        tile_bytes=65536,
    )


def test_schedules_and_capabilities(h100: rooflib.System) -> None:
    p = predict_stage(h100, tuple(range(8)), _gemm_rs(h100, 8192, 8192, 2048))
    kinds = {(c.schedule, c.mechanism) for c in p.choices}
    assert ("intra_sm", "copy_engine") not in kinds  # the copy engine has no SMs to specialise
    assert ("inter_sm", "copy_engine") in kinds and ("sequential", "copy_engine") in kinds
    inter = [c for c in p.choices if c.schedule == "inter_sm" and c.mechanism != "copy_engine"]
    assert all(1 <= c.comm_sms < 132 for c in inter)
    assert p.best.time_s <= min(c.time_s for c in p.choices)
    assert p.bound_s <= p.best.time_s and p.bound_s <= p.baseline_s


def test_switch_reduction_only_by_multimem(h100: rooflib.System) -> None:
    stage = Stage(
        "ar",
        partial(lambda sms, d=h100.device: gemm(d, 4096, 4096, 4096, sms=sms)),
        Comm("all_reduce", 2.0 * 4096**2, "switch"),
        tiles=512,
    )
    p = predict_stage(h100, tuple(range(8)), stage)
    fused = {c.mechanism for c in p.choices if c.mechanism not in (LIBRARY, AUTO)}
    assert fused == {"multimem"}


def test_library_call_is_the_baseline_and_a_choice(h100: rooflib.System) -> None:
    p = predict_stage(h100, tuple(range(8)), _gemm_rs(h100, 4096, 4096, 1024))
    library = [c for c in p.choices if c.mechanism == LIBRARY]
    auto = [c for c in p.choices if c.mechanism == AUTO]
    assert len(library) == 1 and library[0].time_s == pytest.approx(p.baseline_s)
    assert library[0].algorithm in h100.library.native_algorithms["reduce_scatter"]
    assert len(auto) == 1 and auto[0].time_s <= library[0].time_s and auto[0].algorithm
    assert p.best.time_s <= p.baseline_s


def test_more_comm_sms_when_communication_dominates(h100: rooflib.System) -> None:
    light = predict_stage(h100, tuple(range(8)), _gemm_rs(h100, 8192, 8192, 256))
    heavy = predict_stage(h100, tuple(range(8)), _gemm_rs(h100, 8192, 8192, 65536))

    def s(p):  # type: ignore[no-untyped-def]
        return min(
            (c for c in p.choices if c.schedule == "inter_sm" and c.mechanism == "ldst"), key=lambda c: c.time_s
        ).comm_sms

    assert s(light) >= s(heavy)


@given(
    m=st.sampled_from([1024, 4096, 16384]),
    n=st.sampled_from([1024, 8192]),
    k=st.sampled_from([256, 2048, 16384]),
    g=st.sampled_from([2, 4, 8]),
)
def test_bound_never_above_any_schedule(m: int, n: int, k: int, g: int) -> None:
    system = _H100
    p = predict_stage(system, tuple(range(g)), _gemm_rs(system, m, n, k))
    assert all(p.bound_s <= c.time_s * (1 + 1e-12) for c in p.choices)
    assert p.bound_s <= p.baseline_s


_H100 = rooflib.load_system("hgx-h100")


def _flow_stage(before: bool, send_s: float, tile_s: float = 1e-6, tiles: int = 1000, reuse: float = 1.0) -> Stage:
    """A stage whose compute runs ``tiles`` tiles in waves on the SMs it gets, each ``tile_s``, and whose send
    takes ``send_s`` / SMs (a flat per-SM rate), so the pipeline ends can be computed by hand."""
    from rooflib.compute.cost import ComputeCost

    def compute(sms: int | None) -> ComputeCost:
        k = 132 if sms is None else sms
        t = -(-tiles // k) * tile_s
        return ComputeCost(1.0, 0.0, t, 0.0, t, "tensor", "bf16", 1.0 / t, 1.0, k)

    return Stage(
        "flow",
        compute,
        Comm("send_recv", 1.0, "none", before_compute=before),
        tiles,
        1.0,
        intra_reuse=reuse,
        send_time=lambda mech, sms, nbytes: send_s / max(sms, 1),
    )


def test_inter_sm_ends_are_a_two_stage_flow_shop(h100: rooflib.System) -> None:
    from rooflib.schedule import schedule_time

    fixed = h100.device.sync_inter_sm.value + h100.device.kernel_launch.value
    # compute then send, compute-bound: all compute, then the last wave's tiles leave (1000 tiles on 100 SMs:
    # 10 waves of 100; the last wave's 100 of 1000 tiles take a tenth of the send)
    t = schedule_time(h100, (0, 1), _flow_stage(False, 32 * 5e-6), "inter_sm", "tma", 32)
    assert t == pytest.approx(10e-6 + 5e-6 * 100 / 1000 + fixed)
    # comm-bound: the first wave must be computed before anything leaves, then the send runs to its end
    t = schedule_time(h100, (0, 1), _flow_stage(False, 32 * 50e-6), "inter_sm", "tma", 32)
    assert t == pytest.approx(1e-6 + 50e-6 + fixed)
    # receive then compute, compute-bound, each block read by 10 tiles: the first wave of 100 tiles needs its 10
    # blocks (of 100) before it can start, so more communication SMs shorten the fill while the waves stay
    t = schedule_time(h100, (0, 1), _flow_stage(True, 32 * 5e-6, reuse=10.0), "inter_sm", "tma", 32)
    assert t == pytest.approx(5e-6 * 10 / 100 + 10e-6 + fixed)
    # comm-bound: the last block's readers compute one wave after it arrives
    t = schedule_time(h100, (0, 1), _flow_stage(True, 32 * 50e-6, reuse=10.0), "inter_sm", "tma", 32)
    assert t == pytest.approx(50e-6 + 1e-6 + fixed)
