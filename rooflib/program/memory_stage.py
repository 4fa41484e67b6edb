"""The stage of a memory-bound op fused with a collective (:mod:`rooflib.program.regions`' ``map_comm`` and
``comm_map``): its cost on a number of SMs, its chunks and the HBM bytes the transfer adds beside it."""

from __future__ import annotations

import math
from collections.abc import Callable

from rooflib.compute.cost import ComputeCost
from rooflib.compute.memory import sm_stream_share
from rooflib.compute.rates import check_dtype
from rooflib.program.cost import op_cost
from rooflib.program.ir import Op
from rooflib.schedule import Comm, Stage
from rooflib.schedule.stage import direct_egress
from rooflib.specs.compute_models import program_floor
from rooflib.specs.resolve import System

__all__ = ["memory_cost", "memory_stage"]


def memory_cost(system: System, op: Op) -> Callable[[int | None], ComputeCost]:
    """A memory-bound op's cost on a number of SMs: on all of them its program cost (measured curves, L2, the
    program floor); on fewer, at the share of that rate those SMs stream
    (:func:`rooflib.compute.memory.sm_stream_share`) and no faster than they start its programs (the floor of a
    Triton grid on that many SMs); its FLOPs on their vector units."""
    base = op_cost(system, op, ())
    dev = system.device
    dtype = check_dtype(str(op.params.get("dtype", "bf16")))
    peak = dev.vector_peak(dtype) or dev.vector_peak("fp32") or math.inf
    total = int(dev.sms.value)
    programs = op.params.get("programs")
    floors = dev.compute.programs if dev.compute is not None else None

    def cost(sms: int | None) -> ComputeCost:
        used = total if sms is None else sms
        flops_rate = peak * used / total
        compute_s = base.flops / flops_rate
        memory_s = base.device_s
        if used < total:
            memory_s /= sm_stream_share(dev, used)
            if isinstance(programs, int) and floors is not None:
                memory_s = max(memory_s, program_floor(floors, used, programs))
        rate = base.hbm_bytes / memory_s if memory_s > 0 and base.hbm_bytes > 0 else dev.hbm_bandwidth.value
        return ComputeCost(
            base.flops,
            base.hbm_bytes,
            compute_s,
            memory_s,
            max(compute_s, memory_s),
            "vector",
            dtype,
            flops_rate,
            rate,
            used,
        )

    return cost


def memory_stage(system: System, world: int, name: str, op: Op, comm: Comm) -> Stage:
    """A memory-bound op with the collective of its output (or on its input): the op's own part of the moved
    tensor (an all-gather's input, a reduce-scatter's output: one rank's share) in chunks of one GEMM output
    tile's bytes in bf16; the HBM bytes the transfer adds beside the op: what lands from peers (less the op's
    own output, which a fused producer sends instead of storing), or, on the receiving side, what the sends read
    and what lands (the op then reads it)."""
    t = system.device.gemm_tile
    chunk = float(t.m * t.n * 2)
    n = world  # a region's collective spans the whole world (no ``group``)
    moved = direct_egress(comm.op, comm.nbytes, n)  # bytes each GPU sends (and, balanced, receives)
    shard = comm.op == ("reduce_scatter" if comm.before_compute else "all_gather")
    local = comm.nbytes / n if shard else comm.nbytes  # the bytes the op itself writes or reads
    extra = 2.0 * moved if comm.before_compute else max(0.0, moved - local)
    tiles = max(1, math.ceil(local / chunk))
    return Stage(name, memory_cost(system, op), comm, tiles, local / tiles, comm_hbm_bytes=extra)
