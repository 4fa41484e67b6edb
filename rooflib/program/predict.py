"""``predict_program``: bound, eager and CUDA-graph times, host time, per-op timeline and the best fused plan.

- ``bound_time_s``: ``max(sum of FLOPs at the datasheet peaks, sum of HBM bytes at the datasheet rate, sum of the
  communication lower bounds)`` over every op: no real kernel can beat it.
- ``baseline_time_s``: the eager timeline (plain PyTorch + NCCL, back-to-back iterations);
  ``graph_time_s``: one CUDA-graph replay; ``host_time_s``: the host's issue time per eager iteration.
- ``schedules``: one plan per (schedule, mechanism): every fusable region (:mod:`rooflib.program.regions`)
  run as the schedule model prices it (``rooflib.schedule.predict_stage``: intra- or inter-SM, the transfer
  mechanism, communication SMs; a region the plan cannot run this way takes its own best), the program timed
  eagerly. The plain program is the plan ``sequential``/``library`` (its time is the baseline), so ``best`` is
  never slower than the baseline; ``sequential``/``auto`` replaces each collective by the fastest modelled
  kernel. ``best`` also gives the plan's time replayed as a CUDA graph and the regions it fuses; ``ties``: the
  plans within ``tie_tolerance`` of the best.
- ``unmodelled``: ops costed only by the bytes they touch, with their share of the eager time.
- ``advice``: per region, the binding resource, the best mechanism and schedule against the runner-ups and
  NCCL's own collective, and a rationale (:mod:`rooflib.program.advice`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from rooflib.errors import UnitError
from rooflib.program.advice import host_advice, region_advice
from rooflib.program.cost import OpCost, op_cost
from rooflib.program.ir import Op, Program, ProgramError
from rooflib.program.regions import Region, find_regions, region_stage
from rooflib.program.timeline import HostCosts, Timeline, host_costs, simulate
from rooflib.schedule import AUTO, LIBRARY, Choice, StagePrediction, predict_stage
from rooflib.specs.resolve import System

__all__ = ["TIE_TOLERANCE", "ProgramPrediction", "choice_dict", "fusable_regions", "predict_program"]

TIE_TOLERANCE = 0.03
"""Relative time difference below which two plans count as a tie: the largest cost of following the model's
choice measured on 2xH200 (3.2 %, docs/validation/README.md, overlap schedules), rounded."""
_SAME = 1e-9  # eager times this close are one time (float rounding of the same host-bound sum)


def fusable_regions(program: Program) -> list[Region]:
    """The regions of ``program`` one fused kernel could run (a compute op with its communication)."""
    return [r for r in find_regions(program) if r.compute is not None]


def choice_dict(c: Choice) -> dict[str, Any]:
    return {
        "schedule": c.schedule,
        "comm_sms": c.comm_sms,
        "mechanism": c.mechanism,
        "algorithm": c.algorithm or None,
        "time_s": c.time_s,
    }


@dataclass(frozen=True)
class _Plan:
    choice: Choice
    ops: tuple[Op, ...]
    costs: tuple[OpCost, ...]
    fused: tuple[tuple[Region, Choice], ...]


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
    schedules: tuple[Choice, ...] = ()
    stages: tuple[StagePrediction, ...] = ()
    params: dict[str, Any] = field(default_factory=dict)
    tie_tolerance: float = TIE_TOLERANCE
    advice: list[dict[str, Any]] = field(default_factory=list)

    @property
    def best_choice(self) -> Choice:
        key = (self.best["schedule"], self.best["mechanism"])
        return next(c for c in self.schedules if (c.schedule, c.mechanism) == key)

    @property
    def ties(self) -> tuple[Choice, ...]:
        """Other plans within ``tie_tolerance`` of the best, fastest first."""
        best = self.best_choice
        limit = best.time_s * (1.0 + self.tie_tolerance)
        return tuple(c for c in sorted(self.schedules, key=lambda c: c.time_s) if c != best and c.time_s <= limit)

    def as_dict(self) -> dict[str, Any]:
        return {
            "program": self.program,
            "system": self.system,
            "gpus": self.gpus,
            "params": self.params,
            "bound_time_s": self.bound_time_s,
            "baseline_time_s": self.baseline_time_s,
            "graph_time_s": self.graph_time_s,
            "host_time_s": self.host_time_s,
            "best": self.best,
            "ties": [choice_dict(c) for c in self.ties],
            "tie_tolerance": self.tie_tolerance,
            "schedules": [choice_dict(c) for c in sorted(self.schedules, key=lambda c: c.time_s)],
            "terms": self.terms,
            "ops": self.ops,
            "unmodelled": self.unmodelled,
            "advice": self.advice,
            "notes": self.notes,
        }

    def to_frame(self) -> Any:
        """The ops as a pandas DataFrame (one row per op, in issue order)."""
        import pandas as pd

        return pd.DataFrame.from_records(self.ops)


def _op_rows(program: Program, costs: list[OpCost], eager: Timeline, hc: HostCosts) -> list[dict[str, Any]]:
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
                "host_time_s": hc.wait(op) if op.kind == "sync" else hc.issue(op),
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


def _library(pred: StagePrediction) -> Choice | None:
    return next((c for c in pred.choices if c.mechanism == LIBRARY), None)


def _apply(
    system: System, program: Program, costs: list[OpCost], region: Region, pred: StagePrediction, pick: Choice
) -> tuple[list[Op], list[OpCost]]:
    """The ops and costs of ``program`` with ``region`` run as ``pick``."""
    ops, out = list(program.ops), list(costs)
    library = _library(pred)
    if pick.mechanism in (LIBRARY, "none") or library is None:
        return ops, out
    if pick.mechanism == AUTO:  # the collective(s) as the fastest modelled kernel: the difference in comm time
        comm_s = sum(costs[i].device_s for i in region.comms)
        delta = pick.time_s - library.time_s
        for i in region.comms:
            share = costs[i].device_s / comm_s if comm_s > 0 else 1.0 / len(region.comms)
            out[i] = replace(costs[i], device_s=max(0.0, costs[i].device_s + delta * share))
        return ops, out
    assert region.compute is not None  # fused choices exist only for regions with compute
    launch = system.device.kernel_launch.value  # the timeline charges the fused kernel's launch itself
    out[region.compute] = replace(costs[region.compute], device_s=max(0.0, pick.time_s - launch))
    for i in (*region.comms, *region.glue):
        out[i] = replace(costs[i], device_s=0.0)
        ops[i] = replace(program.ops[i], host="none")
    return ops, out


def _plans(
    system: System,
    program: Program,
    costs: list[OpCost],
    regions: list[Region],
    preds: list[StagePrediction],
    hc: HostCosts,
    eager_s: float,
) -> list[_Plan]:
    keys = sorted({(c.schedule, c.mechanism) for p in preds for c in p.choices if c.mechanism != "none"})
    plans = []
    for schedule, mech in keys:
        ops, plan_costs = list(program.ops), list(costs)
        sms, algorithms, fused = 0, [], []
        for region, pred in zip(regions, preds, strict=True):
            match = [c for c in pred.choices if (c.schedule, c.mechanism) == (schedule, mech)]
            pick = min(match, key=lambda c: c.time_s) if match else pred.best
            if match:
                sms = max(sms, pick.comm_sms)
                if pick.algorithm and pick.algorithm not in algorithms:
                    algorithms.append(pick.algorithm)
            new_ops, new_costs = _apply(system, program, plan_costs, region, pred, pick)
            for i in region.ops:
                ops[i], plan_costs[i] = new_ops[i], new_costs[i]
            if pick.mechanism not in (LIBRARY, AUTO, "none"):
                fused.append((region, pick))
        plain = mech == LIBRARY
        t = eager_s if plain else simulate(ops, plan_costs, hc, "eager").time_s
        choice = Choice(schedule, sms, mech, t, "/".join(algorithms))
        plans.append(_Plan(choice, tuple(ops), tuple(plan_costs), tuple(fused)))
    return plans


def _best(plans: list[_Plan], program: Program, hc: HostCosts) -> dict[str, Any]:
    """The fastest plan eagerly; among plans the eager timeline cannot tell apart (a host-bound step takes the
    host's issue time whatever its kernels do), the fastest replayed as a CUDA graph, then the fewest SMs."""
    fastest = min(p.choice.time_s for p in plans)
    tied = [p for p in plans if p.choice.time_s <= fastest * (1.0 + _SAME)]
    graphs = [simulate(p.ops, p.costs, hc, "graph").time_s for p in tied]
    i = min(range(len(tied)), key=lambda j: (graphs[j], tied[j].choice.comm_sms))
    plan, graph = tied[i], graphs[i]
    out = choice_dict(plan.choice)
    out["time_s"] = fastest  # the tied plans' one eager time (never above the baseline through rounding)
    out["graph_time_s"] = graph
    out["fused"] = [
        {
            "ops": [program.ops[k].name for k in r.ops if k not in r.glue],
            "absorbs": [program.ops[k].name for k in r.glue],  # copies and fills the fused kernel makes needless
            "pattern": r.pattern,
            "schedule": ch.schedule,
            "mechanism": ch.mechanism,
            "comm_sms": ch.comm_sms,
        }
        for r, ch in plan.fused
    ]
    return out


def _check_finite(program: Program, values: Mapping[str, float]) -> None:
    for name, value in values.items():
        if not math.isfinite(value):
            raise UnitError(f"program {program.name!r}: no finite {name}; check its parameters")


def _frozen(value: Any) -> Any:
    if isinstance(value, Mapping):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_frozen(v) for v in value)
    return value


def _op_costs(system: System, ops: Iterable[Op], members: tuple[int, ...]) -> list[OpCost]:
    """:func:`op_cost` of each op; ops of the same kind, name and parameters (a traced loop's steps) are costed
    once."""
    seen: dict[Any, OpCost] = {}
    out = []
    for op in ops:
        try:
            key = (op.kind, op.name, _frozen(op.params))
            hash(key)
        except TypeError:  # a parameter that cannot be a key: costed on its own
            out.append(op_cost(system, op, members))
            continue
        cost = seen.get(key)
        if cost is None:
            cost = seen[key] = op_cost(system, op, members)
        out.append(cost)
    return out


def predict_program(
    program: Program,
    system: System,
    *,
    gpus: int | Iterable[int] | None = None,
    params: Mapping[str, Any] | None = None,
    tie_tolerance: float = TIE_TOLERANCE,
) -> ProgramPrediction:
    """Predict ``program`` on ``gpus`` of ``system`` (default: the program's ``world`` first GPUs)."""
    if not 0.0 <= tie_tolerance < 1.0:
        raise UnitError(f"tie_tolerance must be in [0, 1), got {tie_tolerance!r}")
    members = system.group(program.world if gpus is None else gpus)
    if len(members) != program.world:
        raise ProgramError(f"program {program.name!r} is written for {program.world} ranks, given {len(members)} GPUs")
    costs = _op_costs(system, program.ops, members)
    hc = host_costs(system)
    eager = simulate(program.ops, costs, hc, "eager")
    graph = simulate(program.ops, costs, hc, "graph")
    terms = {
        "compute_s": sum(c.ideal_compute_s for c in costs),
        "memory_s": sum(c.ideal_memory_s for c in costs),
        "comm_s": sum(c.ideal_comm_s for c in costs),
    }
    _check_finite(program, {**terms, "eager time": eager.time_s, "graph time": graph.time_s})
    regions = find_regions(program) if len(members) > 1 else []
    preds = [predict_stage(system, members, region_stage(system, program, r)) for r in regions]
    plans = _plans(system, program, costs, regions, preds, hc, eager.time_s)
    if not plans:
        plans = [_Plan(Choice("sequential", 0, "none", eager.time_s), program.ops, tuple(costs), ())]
    best = _best(plans, program, hc)
    _check_finite(program, {"best time": best["time_s"]})
    notes = []
    if best["fused"]:
        notes.append(f"best fuses {len(best['fused'])} region(s) of compute and communication into single kernels")
    auto = [p.choice for p in plans if p.choice.mechanism == AUTO]
    library = [p.choice for p in plans if p.choice.mechanism == LIBRARY]
    if auto and library and auto[0].algorithm != library[0].algorithm:
        notes.append(
            f"sequential/{LIBRARY} is NCCL's own algorithm ({library[0].algorithm}), as `rooflib collective "
            f"--algorithm library`; sequential/{AUTO} the fastest modelled collective kernel ({auto[0].algorithm}), "
            "as `rooflib collective`; fused schedules send the bytes with the named transfer mechanism"
        )
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
        schedules=tuple(p.choice for p in plans),
        stages=tuple(preds),
        params=dict(params or {}),
        tie_tolerance=tie_tolerance,
        advice=[
            *host_advice(eager, graph.time_s, best["graph_time_s"], terms),
            *(region_advice(program, r, p, tie_tolerance) for r, p in zip(regions, preds, strict=True)),
        ],
    )
