"""Memory-bound ops fused with the collective of their output or on their input (``map_comm`` / ``comm_map``)."""

from __future__ import annotations

import dataclasses

import pytest

import rooflib
from rooflib.program import fusable_regions
from rooflib.program.regions import region_stage
from rooflib.schedule import predict_stage, schedule_time

H200 = rooflib.load_system("hgx-h200")
N = 1 << 24  # elements


def _dequant_a2a(world: int = 8) -> rooflib.Program:
    """PKB problem 20's shape: a dequantising kernel (fp32 out) then an all-to-all of its output."""
    b = rooflib.ProgramBuilder("dequant_a2a", world=world)
    b.add("elementwise", {"reads": 2, "writes": 1, "flops_per_element": 1.0, "elements": N, "dtype": "bf16"})
    b.collective("all_to_all", 4.0 * N)
    return b.build()


def test_a_producer_and_the_collective_of_its_output_form_a_region() -> None:
    (region,) = fusable_regions(_dequant_a2a())
    assert (region.pattern, region.compute, region.comms) == ("map_comm", 0, (1,))
    quant = rooflib.ProgramBuilder("quant_ag", world=8)  # fp8 out, all-gathered: 8 ranks' worth of bytes
    quant.elementwise("copy", N)
    quant.collective("all_gather", 8.0 * N)
    assert [r.pattern for r in fusable_regions(quant.build())] == ["map_comm"]


def test_a_collective_and_the_op_on_its_output_form_a_region() -> None:
    b = rooflib.ProgramBuilder("rs_scale", world=8)
    b.collective("reduce_scatter", 2.0 * N)
    b.elementwise("mul", N // 8)  # the shard this rank owns
    (region,) = fusable_regions(b.build())
    assert (region.pattern, region.compute, region.comms) == ("comm_map", 1, (0,))


def test_no_region_when_the_elements_differ_or_a_gemm_takes_the_collective() -> None:
    other = rooflib.ProgramBuilder("mismatch", world=8)
    other.elementwise("add", N)
    other.collective("all_to_all", 3.0 * N)  # 3 bytes an element: not this op's output
    assert not fusable_regions(other.build())
    moe = rooflib.ProgramBuilder("moe_like", world=8)
    moe.elementwise("copy", 4096 * 1024)
    moe.collective("all_to_all", 4096 * 1024 * 2.0)
    moe.gemm(4096, 4096, 1024)  # the all-to-all delivers this GEMM's input: the a2a_gemm region wins
    assert [r.pattern for r in fusable_regions(moe.build())] == ["a2a_gemm"]


def test_the_fused_plan_sits_between_the_bound_and_the_baseline() -> None:
    p = rooflib.predict_program(_dequant_a2a(), H200)
    assert p.bound_time_s <= p.best["time_s"] <= p.baseline_time_s
    (fused,) = p.best["fused"]
    assert fused["pattern"] == "map_comm" and p.best["time_s"] < p.baseline_time_s
    stage = region_stage(H200, _dequant_a2a(), fusable_regions(_dequant_a2a())[0])
    pred = predict_stage(H200, tuple(range(8)), stage)
    alone = stage.compute(None).time_s
    best = pred.best
    assert best.time_s >= max(alone, pred.comm_s)  # overlap hides the smaller side, never both


def test_fewer_sms_stream_no_faster_than_their_per_sm_rate() -> None:
    stage = region_stage(H200, _dequant_a2a(), fusable_regions(_dequant_a2a())[0])
    per_sm = H200.device.hbm_per_sm
    assert per_sm is not None
    full = stage.compute(None)
    for sms in (1, 8, 32):
        c = stage.compute(sms)
        assert c.time_s >= full.hbm_bytes / (sms * per_sm.value) * (1 - 1e-12)
        assert c.time_s >= full.time_s
    assert stage.compute(int(H200.device.sms.value)).time_s == pytest.approx(full.time_s)


def test_overlap_charges_the_transfer_s_hbm_traffic_to_a_memory_bound_op() -> None:
    program = _dequant_a2a()
    stage = region_stage(H200, program, fusable_regions(program)[0])
    consumer = rooflib.ProgramBuilder("a2a_scale", world=8)
    consumer.collective("all_to_all", 2.0 * N)
    consumer.elementwise("mul", N)
    back = region_stage(H200, consumer.build(), fusable_regions(consumer.build())[0])
    assert back.comm_hbm_bytes == pytest.approx(2 * 2.0 * N * 7 / 8)  # the sends' reads and the landing writes
    members = tuple(range(8))
    free = dataclasses.replace(back, comm_hbm_bytes=0.0)
    assert schedule_time(H200, members, back, "intra_sm", "tma") > schedule_time(H200, members, free, "intra_sm", "tma")
    # sequential: compute then transfer, nothing shared
    assert schedule_time(H200, members, back, "sequential", "tma") == schedule_time(
        H200, members, free, "sequential", "tma"
    )
    assert stage.comm_hbm_bytes == 0.0  # an all-to-all's landing bytes replace the producer's own store


def test_allreduce_rmsnorm_workload_is_advised() -> None:
    d = rooflib.predict_workload("allreduce_rmsnorm", H200, gpus=8).as_dict()
    (advice,) = [a for a in d["advice"] if a["ops"]]
    assert advice["pattern"] == "comm_map" and advice["binding"] == "communication"
    assert advice["bound_s"] <= advice["best"]["time_s"] <= advice["library_s"]


def test_a_gathered_producer_is_cut_into_its_own_share() -> None:
    """An all-gather's producer writes one rank's share: its chunks are of that share, not of the gathered whole."""
    b = rooflib.ProgramBuilder("quant_ag", world=8)
    b.elementwise("copy", N)
    b.collective("all_gather", 8.0 * N)
    program = b.build()
    stage = region_stage(H200, program, fusable_regions(program)[0])
    t = H200.device.gemm_tile
    assert stage.tiles == -(-N // (t.m * t.n * 2)) and stage.tile_bytes * stage.tiles == pytest.approx(N)
    assert stage.comm_hbm_bytes == pytest.approx(8.0 * N * 7 / 8 - N)  # landing bytes less its own store
