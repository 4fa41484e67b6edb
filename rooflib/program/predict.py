"""``predict_program``: bound, eager and CUDA-graph times, host time, per-op timeline and the best fused plan.

- ``bound_time_s``: ``max(sum of FLOPs at the datasheet peaks, sum of HBM bytes at the datasheet rate, sum of the
  communication lower bounds)`` over every op: no real kernel can beat it.
- ``baseline_time_s``: the eager timeline (plain PyTorch + NCCL, back-to-back iterations);
  ``graph_time_s``: one CUDA-graph replay; ``host_time_s``: the host's issue time per eager iteration.
- ``best``: the fusable regions (a GEMM whose output a collective reduces, :func:`fusable_regions`) replaced by
  the schedule model's best plan for them (``rooflib.schedule.predict_stage``: mechanism, intra- or inter-SM,
  communication SMs), the program replayed as a graph; never slower than the graph or eager time (the plain
  program is one of the plans).
- ``unmodelled``: ops costed only by the bytes they touch, with their share of the eager time.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from rooflib.compute import bytes_per_element, gemm
from rooflib.compute.cost import ComputeCost
from rooflib.program.cost import OpCost, op_cost
from rooflib.program.ir import Op, Program, ProgramError
from rooflib.program.timeline import Timeline, host_costs, simulate
from rooflib.schedule import Comm, Stage, gemm_pipeline, predict_stage
from rooflib.specs.resolve import System

__all__ = ["ProgramPrediction", "Region", "fusable_regions", "predict_program"]

_FUSABLE = {"all_reduce": "gemm_ar", "reduce_scatter": "gemm_rs"}


@dataclass(frozen=True)
class Region:
    """A GEMM and the collective of its output (or input, for AG + GEMM): fused by one kernel in the best plan."""

    gemm: int
    collective: int
    pattern: str  # gemm_ar, gemm_rs or ag_gemm


def _operand_bytes(op: Op, which: str) -> float:
    p = op.params
    rows, cols = (p["m"], p["n"]) if which == "out" else (p["m"], p["k"])
    return float(rows) * float(cols) * float(p.get("batch", 1)) * bytes_per_element(str(p.get("dtype", "bf16")))


def fusable_regions(program: Program) -> list[Region]:
    """GEMMs next (on their stream) to a collective of exactly their operand: an all-reduce or reduce-scatter of
    their output after them (GEMM + AR, GEMM + RS), or an all-gather of their input before them (AG + GEMM)."""
    out = []
    for i, op in enumerate(program.ops[:-1]):
        nxt = program.ops[i + 1]
        if nxt.stream != op.stream or "group" in op.params or "group" in nxt.params:
            continue
        if op.kind == "gemm" and nxt.kind == "collective":
            coll = str(nxt.params.get("op"))
            if coll in _FUSABLE and math.isclose(float(nxt.params["bytes"]), _operand_bytes(op, "out"), rel_tol=1e-9):
                out.append(Region(i, i + 1, _FUSABLE[coll]))
        elif op.kind == "collective" and nxt.kind == "gemm" and op.params.get("op") == "all_gather":
            if math.isclose(float(op.params["bytes"]), _operand_bytes(nxt, "in"), rel_tol=1e-9):
                out.append(Region(i + 1, i, "ag_gemm"))
    return out


def _gemm_cost(system: System, op: Op, sms: int | None) -> ComputeCost:
    p = op.params
    dims = (int(p["m"]), int(p["n"]), int(p["k"]))
    return gemm(system.device, *dims, str(p.get("dtype", "bf16")), batch=int(p.get("batch", 1)), sms=sms)


def _fused(system: System, members: tuple[int, ...], program: Program, region: Region) -> tuple[float, Any]:
    """Device seconds of the region as one fused kernel (its launch left to the timeline) and the choice."""
    g, c = program.ops[region.gemm], program.ops[region.collective]
    t = system.device.gemm_tile
    tiles = math.ceil(int(g.params["m"]) / t.m) * math.ceil(int(g.params["n"]) / t.n) * int(g.params.get("batch", 1))
    eb = bytes_per_element(str(g.params.get("dtype", "bf16")))
    switch = system.switch.in_network_reduction and system.switch.multicast and region.pattern == "gemm_ar"
    op = str(c.params["op"])
    if region.pattern == "ag_gemm":
        comm = Comm("all_gather", float(c.params["bytes"]), "none", before_compute=True)
        stage = Stage(region.pattern, partial(_gemm_cost, system, g), comm, tiles, float(c.params["bytes"]) / tiles)
        stage = replace(stage, intra_reuse=float(math.ceil(int(g.params["n"]) / t.n)))
    else:
        comm = Comm(op, float(c.params["bytes"]), "switch" if switch else "peer")  # type: ignore[arg-type]
        stage = Stage(region.pattern, partial(_gemm_cost, system, g), comm, tiles, t.m * t.n * eb)
    pred = predict_stage(system, members, replace(stage, pipeline=gemm_pipeline(system, eb)))
    best = pred.best
    return max(0.0, best.time_s - system.device.kernel_launch.value), best


@dataclass(frozen=True)
class ProgramPrediction:
    program: str
    system: str
    gpus: int
    bound_time_s: float
    baseline_time_s: float
    graph_time_s: float
    host_time_s: float
    best: dict[str, Any]
    terms: dict[str, float]
    ops: list[dict[str, Any]]
    unmodelled: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "program": self.program,
            "system": self.system,
            "gpus": self.gpus,
            "bound_time_s": self.bound_time_s,
            "baseline_time_s": self.baseline_time_s,
            "graph_time_s": self.graph_time_s,
            "host_time_s": self.host_time_s,
            "best": self.best,
            "terms": self.terms,
            "ops": self.ops,
            "unmodelled": self.unmodelled,
            "notes": self.notes,
        }

    def to_frame(self) -> Any:
        """The ops as a pandas DataFrame (one row per op, in issue order)."""
        import pandas as pd

        return pd.DataFrame.from_records(self.ops)


def _op_rows(program: Program, costs: list[OpCost], eager: Timeline, hc: Any) -> list[dict[str, Any]]:
    rows = []
    for op, cost, slot in zip(program.ops, costs, eager.slots, strict=True):
        rows.append(
            {
                "name": op.name,
                "kind": op.kind,
                "stream": op.stream,
                "flops": cost.flops,
                "hbm_bytes": cost.hbm_bytes,
                "net_bytes": cost.net_bytes,
                "device_time_s": cost.device_s,
                "host_time_s": hc.sync if op.kind == "sync" else hc.issue(op),
                "start_s": slot.start_s,
                "end_s": slot.end_s,
                "host_start_s": slot.host_start_s,
                "host_end_s": slot.host_end_s,
                **({"algorithm": cost.algorithm} if cost.algorithm else {}),
            }
        )
    return rows


def _unmodelled(program: Program, costs: list[OpCost], total: float) -> list[dict[str, Any]]:
    by_name: dict[str, list[float]] = {}
    for op, cost in zip(program.ops, costs, strict=True):
        if cost.unmodelled:
            by_name.setdefault(op.name, []).append(cost.device_s)
    return [
        {"name": name, "count": len(ts), "device_time_s": sum(ts), "share": sum(ts) / total if total > 0 else 0.0}
        for name, ts in sorted(by_name.items(), key=lambda kv: -sum(kv[1]))
    ]


def predict_program(program: Program, system: System, *, gpus: int | Iterable[int] | None = None) -> ProgramPrediction:
    """Predict ``program`` on ``gpus`` of ``system`` (default: the program's ``world`` first GPUs)."""
    members = system.group(program.world if gpus is None else gpus)
    if len(members) != program.world:
        raise ProgramError(f"program {program.name!r} is written for {program.world} ranks, given {len(members)} GPUs")
    costs = [op_cost(system, op, members) for op in program.ops]
    hc = host_costs(system)
    eager = simulate(program.ops, costs, hc, "eager")
    graph = simulate(program.ops, costs, hc, "graph")
    terms = {
        "compute_s": sum(c.ideal_compute_s for c in costs),
        "memory_s": sum(c.ideal_memory_s for c in costs),
        "comm_s": sum(c.ideal_comm_s for c in costs),
    }
    best_t, best = min(
        (eager.time_s, {"schedule": "eager", "comm_sms": 0, "mechanism": "library", "time_s": eager.time_s}),
        (graph.time_s, {"schedule": "graph", "comm_sms": 0, "mechanism": "library", "time_s": graph.time_s}),
        key=lambda kv: kv[0],
    )
    regions = fusable_regions(program) if len(members) > 1 else []
    notes = []
    if regions:
        fused_costs = list(costs)
        fused_ops = list(program.ops)
        choices = []
        for region in regions:
            seconds, choice = _fused(system, members, program, region)
            fused_costs[region.gemm] = replace(costs[region.gemm], device_s=seconds)
            fused_costs[region.collective] = replace(costs[region.collective], device_s=0.0)
            fused_ops[region.collective] = replace(program.ops[region.collective], host="none")
            choices.append((region, choice))
        fused = simulate(fused_ops, fused_costs, hc, "graph")
        if fused.time_s < best_t:
            first = choices[0][1]
            best_t = fused.time_s
            best = {
                "schedule": first.schedule,
                "comm_sms": first.comm_sms,
                "mechanism": first.mechanism,
                "time_s": fused.time_s,
                "fused": [
                    {
                        "ops": [program.ops[k].name for k in sorted((r.gemm, r.collective))],
                        "pattern": r.pattern,
                        "schedule": ch.schedule,
                        "mechanism": ch.mechanism,
                        "comm_sms": ch.comm_sms,
                    }
                    for r, ch in choices
                ],
            }
            notes.append(f"best fuses {len(regions)} GEMM + collective region(s) and replays the program as a graph")
    return ProgramPrediction(
        program=program.name,
        system=system.name,
        gpus=len(members),
        bound_time_s=max(terms.values()),
        baseline_time_s=eager.time_s,
        graph_time_s=graph.time_s,
        host_time_s=eager.host_s,
        best=best,
        terms=terms,
        ops=_op_rows(program, costs, eager, hc),
        unmodelled=_unmodelled(program, costs, eager.time_s),
        notes=notes,
    )
