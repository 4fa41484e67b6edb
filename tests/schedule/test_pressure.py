from __future__ import annotations

import math

import pytest

import rooflib
from rooflib.schedule import Pipeline, gemm_pipeline, intra_sm_pressure


@pytest.fixture(scope="module")
def h200() -> rooflib.System:
    return rooflib.load_system("hgx-h200")


def _pressure(system: rooflib.System, pipe: Pipeline, mech: str, send_bytes: float, latency: float = 1e-6):  # type: ignore[no-untyped-def]
    # compute: 132 SMs for 1 ms at 4.5 TFLOP/s per SM; the send takes as long
    return intra_sm_pressure(
        system, pipe, mech, send_bytes=send_bytes, compute_s=1e-3, comm_s=1e-3, flops=132 * 4.5e12 * 1e-3,
        link_latency=latency,
    )


def test_the_catalog_gemm_keeps_its_pipeline(h200: rooflib.System) -> None:
    pipe = gemm_pipeline(h200, 2.0)
    assert pipe.stage_bytes == (128 + 256) * 64 * 2 and pipe.stages == 4
    p = _pressure(h200, pipe, "tma", send_bytes=0.4e9)  # 400 GB/s of sends: ~3 KB in flight per SM
    assert p.in_flight_bytes == pytest.approx(0.4e9 / 1e-3 / 132 * 1e-6)
    assert p.stages_left == 4 and p.compute_factor == 1.0
    # 4.5 TFLOP/s per SM eats 48 KiB per 4.2 MFLOP: ~53 GB/s; over 678 ns that is under one stage in flight
    assert p.stages_needed == 2


def test_send_buffers_crowd_out_the_mainloop(h200: rooflib.System) -> None:
    pipe = Pipeline(stage_bytes=56 * 1024, stages=4, flops_per_stage=2.0 * 128 * 128 * 64)
    smem = h200.device.shared_memory_per_sm.value
    # sends needing 120 KiB in flight per SM leave floor((228 - 120) / 56) = 1 stage: no pipeline
    heavy = _pressure(h200, pipe, "tma", send_bytes=120 * 1024 * 132 / 1e-6 * 1e-3)
    assert heavy.stages_left == int((smem - 120 * 1024) // (56 * 1024)) == 1
    assert math.isinf(heavy.compute_factor)
    # 70 KiB leave 2 stages: one in flight over the operand latency, slower than the compute eats
    mid = _pressure(h200, pipe, "tma", send_bytes=70 * 1024 * 132 / 1e-6 * 1e-3)
    assert mid.stages_left == 2
    demand = 4.5e12 * 56 * 1024 / pipe.flops_per_stage
    supply = 56 * 1024 / h200.device.operand_latency.value  # type: ignore[union-attr]
    assert demand > supply and mid.compute_factor == pytest.approx(demand / supply)
    # register paths keep their bytes in registers, not shared memory
    assert _pressure(h200, pipe, "ldst", send_bytes=120 * 1024 * 132 / 1e-6 * 1e-3).compute_factor == 1.0


def test_registers_cap_register_path_sends(h200: rooflib.System) -> None:
    pipe = gemm_pipeline(h200, 2.0)  # the warp-specialised GEMM holds 64,512 of the 65,536 registers
    p = _pressure(h200, pipe, "ldst", send_bytes=1e8, latency=1.2e-6)
    assert p.send_rate_cap == pytest.approx((65536 - 64512) * 4 / 1.2e-6)
    assert math.isinf(_pressure(h200, pipe, "tma", send_bytes=1e8).send_rate_cap)
    unknown = Pipeline(pipe.stage_bytes, pipe.stages, pipe.flops_per_stage, registers=0)
    assert math.isinf(_pressure(h200, unknown, "ldst", send_bytes=1e8).send_rate_cap)


def test_an_infeasible_intra_sm_schedule_is_not_offered(h200: rooflib.System) -> None:
    from dataclasses import replace

    from rooflib.program import fusable_regions
    from rooflib.program.regions import region_stage
    from rooflib.program.spec import build_program
    from rooflib.schedule import predict_stage, schedule_time
    from rooflib.workloads import workload_spec

    program = build_program(workload_spec("gemm_rs"), 2, {"m": 8192, "n": 8192, "k": 1024, "dtype": "bf16"})
    (region,) = fusable_regions(program)
    stage = region_stage(h200, program, region)  # send-bound: ~3 KB in flight
    assert any(c.schedule == "intra_sm" for c in predict_stage(h200, (0, 1), stage).choices)
    # a mainloop of two 113 KiB stages leaves 2 KiB of shared memory, less than the sends keep in flight
    crowded = replace(stage, pipeline=Pipeline(113 * 1024, 2, 2.0 * 128 * 256 * 64))
    choices = predict_stage(h200, (0, 1), crowded).choices
    assert not any(c.schedule == "intra_sm" and c.mechanism == "tma" for c in choices)
    assert math.isinf(schedule_time(h200, (0, 1), crowded, "intra_sm", "tma"))
