"""The program model: IR checks, op costs, the host/device timeline and the prediction's invariants."""

from __future__ import annotations

import pytest

import rooflib
from rooflib.compute import gemm
from rooflib.program import ProgramBuilder, ProgramError, host_costs, predict_program


@pytest.fixture(scope="module")
def h100() -> rooflib.System:
    return rooflib.load_system("hgx-h100")


def _tp_mlp(world: int = 8) -> rooflib.Program:
    t, h, f = 8192, 8192, 28672
    b = ProgramBuilder("tp_mlp", world=world)
    b.norm("rmsnorm", t, h)
    b.gemm(t, 2 * f // world, h, name="gate_up")
    b.elementwise("swiglu", t * f // world)
    b.gemm(t, h, f // world, name="down")
    b.collective("all_reduce", t * h * 2, name="allreduce")
    b.elementwise("add", t * h)
    return b.build()


def test_ir_refuses_what_cannot_be_right() -> None:
    b = ProgramBuilder("bad")
    with pytest.raises(ProgramError, match="gemm m must be finite and > 0"):
        b.gemm(0, 8, 8)
    with pytest.raises(ProgramError, match="copy bytes must be finite"):
        b.copy(float("nan"))
    with pytest.raises(rooflib.UnknownNameError, match="unknown op kind 'matmul'"):
        b.add("matmul", {})  # type: ignore[arg-type]
    with pytest.raises(rooflib.UnknownNameError, match="unknown collective 'allreduce'"):
        b.collective("allreduce", 8)
    b.gemm(8, 8, 8)
    b.add("elementwise", {"op": "add", "elements": 8}, after=[5])
    with pytest.raises(ProgramError, match=r"depends on ops \[5\], not earlier ones"):
        b.build()


def test_gemm_op_costs_what_the_compute_model_says(h100: rooflib.System) -> None:
    b = ProgramBuilder("one", world=1)
    b.gemm(4096, 4096, 4096)
    p = predict_program(b.build(), h100)
    op = p.ops[0]
    assert op["device_time_s"] == pytest.approx(gemm(h100.device, 4096, 4096, 4096).time_s)
    assert op["flops"] == pytest.approx(2 * 4096**3)


def test_bound_below_best_below_baseline(h100: rooflib.System) -> None:
    p = predict_program(_tp_mlp(), h100)
    assert 0 < p.bound_time_s <= p.best["time_s"] <= p.graph_time_s <= p.baseline_time_s * (1 + 1e-9)
    assert p.best["fused"][0]["ops"] == ["down", "allreduce"] and p.best["fused"][0]["pattern"] == "gemm_ar"
    assert [o["kind"] for o in p.ops] == ["norm", "gemm", "elementwise", "gemm", "collective", "elementwise"]
    ar = p.ops[4]
    assert ar["net_bytes"] == pytest.approx(2 * 7 / 8 * 8192 * 8192 * 2) and ar["algorithm"]


def test_host_and_device_overlap_in_eager_steady_state(h100: rooflib.System) -> None:
    """Back-to-back iterations cost max(host, device), not their sum; a graph removes the per-op host cost."""
    hc = host_costs(h100)
    tiny = ProgramBuilder("tiny", world=1)
    for _ in range(30):
        tiny.elementwise("add", 1024)
    p = predict_program(tiny.build(), h100)
    assert p.baseline_time_s == pytest.approx(30 * hc.kernel)  # host-bound: the host's issue time
    assert p.host_time_s == pytest.approx(30 * hc.kernel)
    assert p.graph_time_s < p.baseline_time_s / 2
    big = ProgramBuilder("big", world=1)
    big.gemm(16384, 16384, 16384)
    q = predict_program(big.build(), h100)
    device = q.ops[0]["device_time_s"]
    eager_gap = hc.kernel_gap if hc.queued_gap is None else hc.queued_gap  # an eager stream's gap
    # device-bound: host and launch hidden; the timed loop's event holds the queued stream once per iteration
    assert q.baseline_time_s == pytest.approx(device + eager_gap + hc.queued_event)
    assert hc.queued_event > 0
    assert q.host_time_s < q.baseline_time_s


def test_sync_waits_for_the_device(h100: rooflib.System) -> None:
    b = ProgramBuilder("sync", world=1)
    b.gemm(8192, 8192, 8192)
    b.sync(name="item")
    p = predict_program(b.build(), h100)
    hc = host_costs(h100)
    gemm_end = p.ops[0]["end_s"]
    assert p.ops[1]["start_s"] == pytest.approx(gemm_end + hc.sync)
    assert p.baseline_time_s >= p.ops[0]["device_time_s"] + hc.sync


def test_compute_ops_on_other_streams_share_the_sms(h100: rooflib.System) -> None:
    b = ProgramBuilder("streams", world=1)
    b.gemm(8192, 8192, 8192, stream="a")
    b.gemm(8192, 8192, 8192, stream="b")
    p = predict_program(b.build(), h100)
    assert p.ops[1]["start_s"] >= p.ops[0]["end_s"]  # not overlapped: no faster than the SMs allow
    assert p.bound_time_s <= p.baseline_time_s


def test_communication_on_a_side_stream_overlaps_compute(h100: rooflib.System) -> None:
    b = ProgramBuilder("overlap", world=8)
    b.collective("all_gather", 2**30, stream="comm")
    b.gemm(8192, 8192, 8192)
    p = predict_program(b.build(), h100)
    assert p.ops[1]["start_s"] < p.ops[0]["end_s"]


def test_unmodelled_ops_are_reported(h100: rooflib.System) -> None:
    b = ProgramBuilder("odd", world=1)
    b.gemm(1024, 1024, 1024)
    b.unmodelled("aten.fft_r2c", 2**28)
    p = predict_program(b.build(), h100)
    assert p.unmodelled and p.unmodelled[0]["name"] == "aten.fft_r2c" and 0 < p.unmodelled[0]["share"] < 1


def test_world_must_match_the_group(h100: rooflib.System) -> None:
    with pytest.raises(ProgramError, match="written for 8 ranks, given 4 GPUs"):
        predict_program(_tp_mlp(8), h100, gpus=4)


@pytest.mark.parametrize(("system", "gpus"), [("dgx-h100-superpod", 16), ("gb200-nvl72", 72), ("hgx-a100", 8)])
def test_invariants_across_systems(system: str, gpus: int) -> None:
    s = rooflib.load_system(system, gpus=gpus)
    p = predict_program(_tp_mlp(8), s, gpus=8)
    assert 0 < p.bound_time_s <= p.best["time_s"] <= p.baseline_time_s * (1 + 1e-9)


def test_program_path_agrees_with_the_workload_catalog(h100: rooflib.System) -> None:
    """GEMM + RS and AG + GEMM as two-op programs give the catalog workloads' bound and best (within 2 %)."""
    from rooflib.workloads import predict_workload

    m = n = k = 8192
    rs = ProgramBuilder("gemm_rs", world=8)
    rs.gemm(m, n, k // 8, name="mm")
    rs.collective("reduce_scatter", m * n * 2, name="rs")
    ag = ProgramBuilder("ag_gemm", world=8)
    ag.collective("all_gather", m * k * 2, name="ag")
    ag.gemm(m, n // 8, k, name="mm")
    for builder, workload in ((rs, "gemm_rs"), (ag, "ag_gemm")):
        p = predict_program(builder.build(), h100)
        w = predict_workload(workload, h100, gpus=8)
        assert p.bound_time_s == pytest.approx(w.bound_time_s, rel=1e-9)
        assert p.best["time_s"] == pytest.approx(w.best.time_s, rel=0.02)
        assert p.baseline_time_s == pytest.approx(w.baseline_time_s, rel=0.05)  # eager overlaps host and device
        assert p.best["fused"][0]["pattern"] == workload


def test_attention_backward_and_packed_sequences_are_costed() -> None:
    from rooflib.compute import attention

    h200 = rooflib.load_system("hgx-h200")
    b = rooflib.ProgramBuilder("attn", world=1)
    fwd = b.attention(2, 32, 4096, 4096, 128, causal=True)
    bwd = b.attention(2, 32, 4096, 4096, 128, causal=True, backward=True)
    packed = b.varlen_attention([4096, 1024, 1024, 512], 32, 128)
    p = rooflib.predict_program(b.build(), h200).ops
    assert p[bwd]["flops"] == pytest.approx(2.5 * p[fwd]["flops"])  # FlashAttention-2: five matmuls, not two
    assert p[bwd]["device_time_s"] > 2 * p[fwd]["device_time_s"]
    one = {n: attention(h200.device, 1, 32, n, n, 128, causal=True) for n in (4096, 1024, 512)}
    expected = one[4096].flops + 2 * one[1024].flops + one[512].flops  # each sequence attends to itself only
    assert p[packed]["flops"] == pytest.approx(expected)
    with pytest.raises(ProgramError, match="at least one sequence"):
        rooflib.ProgramBuilder("x").varlen_attention([], 32, 128)


def test_unknown_lengths_bound_counts_one_longest_sequence() -> None:
    h200 = rooflib.load_system("hgx-h200")
    b = rooflib.ProgramBuilder("attn", world=1)
    b.add("attention", {"batch": 8, "heads": 32, "seq_q": 2048, "seq_kv": 2048, "head_dim": 128, "varlen": True})
    p = rooflib.predict_program(b.build(), h200)
    full = rooflib.ProgramBuilder("attn", world=1)
    full.attention(8, 32, 2048, 2048, 128)
    q = rooflib.predict_program(full.build(), h200)
    assert p.baseline_time_s == pytest.approx(q.baseline_time_s)  # the time runs all 8 sequences of the longest
    assert p.terms["compute_s"] == pytest.approx(q.terms["compute_s"] / 8)  # the bound: only one must exist


def test_a_host_bound_tie_is_broken_by_the_graph_replay(h100: rooflib.System) -> None:
    """Host-bound, every plan takes the host's issue time eagerly; the best is then the one whose CUDA-graph
    replay is fastest (here the fastest modelled collective kernel), not whichever float rounding favours."""
    b = ProgramBuilder("host_bound", world=8)
    for _ in range(3):
        b.collective("all_gather", 256 * 1024, name="ag")
        for _ in range(3):
            b.elementwise("add", 1024)
    p = predict_program(b.build(), h100)
    plans = {(c["schedule"], c["mechanism"]): c["time_s"] for c in p.as_dict()["schedules"]}
    lib, auto = plans[("sequential", "library")], plans[("sequential", "auto")]
    assert auto == pytest.approx(lib, rel=1e-9)  # tied eagerly
    assert p.best["mechanism"] == "auto" and p.best["graph_time_s"] < p.graph_time_s
    assert p.best["time_s"] <= p.baseline_time_s
