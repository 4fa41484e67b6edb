"""Shared-memory and register pressure of an intra-SM (warp-specialised) schedule.

An intra-SM kernel keeps its sends in flight inside the SMs that compute, so they compete for the SM's
storage. With ``r`` the per-SM send rate the overlapped kernel needs and ``L`` the link latency, Little's law
asks for ``r L`` bytes in flight per SM:

- TMA (bulk copies from shared memory): those bytes are shared-memory buffers taken from the compute's
  mainloop, leaving ``floor((smem - r L) / stage)`` of its ``stages`` pipeline stages (``stage = (tm + tn) tk``
  bytes of operands). The mainloop needs ``1 + ceil(d L_op / stage)`` stages to keep operands coming at the
  rate ``d`` its tensor cores consume them (``L_op``: the device's loaded ``operand_latency``, measured by
  ``tma_stream``); with fewer it runs at ``(stages_left - 1) stage / L_op`` (Little's law again), and with
  fewer than two there is no pipeline left: the schedule is infeasible.
- register ld/st and multimem: the bytes in flight live in registers. What the compute's own warps leave of
  the register file (``register_file - 4 compute_registers``) caps the per-SM send rate at ``free / L``.

Both are checks, not fits: they only bind when a buffer crowds out the pipeline or the compute holds the
register file (the Hopper warp-specialised GEMM of the catalog holds 64,512 of 65,536 registers).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rooflib.specs.resolve import System
from rooflib.transfer import CAPABILITIES, Mechanism

__all__ = ["Pipeline", "Pressure", "gemm_pipeline", "intra_sm_pressure"]


@dataclass(frozen=True)
class Pipeline:
    """The compute kernel's mainloop: ``stages`` shared-memory stages of ``stage_bytes`` operands, each feeding
    ``flops_per_stage``; ``registers``: 32-bit registers its warps hold per SM (0: unknown, not checked)."""

    stage_bytes: float
    stages: int
    flops_per_stage: float
    registers: int = 0

    def __post_init__(self) -> None:
        if self.stage_bytes <= 0 or self.stages < 1 or self.flops_per_stage <= 0:
            raise ValueError(f"a pipeline needs positive stage bytes, stages and FLOPs per stage, got {self}")


def gemm_pipeline(system: System, bytes_per_element: float) -> Pipeline:
    """The mainloop of the device's default GEMM tile (``gemm_tile``) for operands of that width."""
    t = system.device.gemm_tile
    return Pipeline((t.m + t.n) * t.k * bytes_per_element, t.stages, 2.0 * t.m * t.n * t.k, t.compute_registers)


@dataclass(frozen=True)
class Pressure:
    in_flight_bytes: float  # per SM, to sustain the send rate over the link latency
    stages_left: int  # mainloop stages after the shared-memory send buffers (TMA)
    stages_needed: int  # to cover the operand latency at the compute's rate
    compute_factor: float  # >= 1: the compute's slowdown; inf: no pipeline left (infeasible)
    send_rate_cap: float  # per-SM bytes/s the free registers sustain (register paths); inf when not limited


def intra_sm_pressure(
    system: System,
    pipeline: Pipeline,
    mechanism: Mechanism,
    *,
    send_bytes: float,
    compute_s: float,
    comm_s: float,
    flops: float,
    link_latency: float,
) -> Pressure:
    """Pressure of sending ``send_bytes`` from every SM while it computes ``flops`` (times on all SMs alone)."""
    dev = system.device
    sms = int(dev.sms)
    span = max(compute_s, comm_s)
    rate = send_bytes / span / sms if span > 0 else 0.0
    in_flight = rate * link_latency
    smem = dev.shared_memory_per_sm.value
    register_path = CAPABILITIES[mechanism].uses_sms and mechanism != "tma"
    buffers = 0.0 if register_path else in_flight
    full = min(pipeline.stages, int(smem // pipeline.stage_bytes))
    left = min(full, int(max(0.0, smem - buffers) // pipeline.stage_bytes))
    op_latency = dev.operand_latency.value if dev.operand_latency is not None else 0.0
    demand = flops / compute_s / sms * pipeline.stage_bytes / pipeline.flops_per_stage if compute_s > 0 else 0.0
    needed = 1 + math.ceil(demand * op_latency / pipeline.stage_bytes)

    def slowdown(stages: int) -> float:
        if stages < 2:
            return math.inf
        supply = (stages - 1) * pipeline.stage_bytes / op_latency if op_latency > 0 else math.inf
        return max(1.0, demand / supply)

    factor = slowdown(left) / slowdown(full) if full >= 2 else 1.0
    cap = math.inf
    if register_path and pipeline.registers > 0 and link_latency > 0:
        free = max(0.0, dev.register_file_per_sm.value - 4.0 * pipeline.registers)
        cap = free / link_latency
    return Pressure(in_flight, left, needed, factor, cap)
