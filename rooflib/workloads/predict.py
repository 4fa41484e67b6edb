"""``predict_workload``: bound, PyTorch + NCCL baseline, and the best schedule, mechanism and SM split.

- ``bound_time_s``: ``max(sum compute, sum memory, sum comm)`` over the stages with datasheet peaks, ideal FLOPs
  and the fewest bytes any mechanism could move: no implementation can beat it.
- ``baseline_time_s``: what plain PyTorch + NCCL does: each stage's cuBLAS kernel(s) then NCCL's collective
  (the library's own algorithms, stream launches), one after the other.
- ``schedules``: for each (schedule, mechanism) the sum over stages of that schedule's time (the SM split
  optimised per stage); ``best`` is the fastest.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rooflib.errors import UnknownNameError
from rooflib.schedule import Choice, StagePrediction, predict_stage
from rooflib.specs.resolve import System
from rooflib.workloads.models import MODELS
from rooflib.workloads.spec import WorkloadSpec, load_workloads, resolve_params

__all__ = ["Prediction", "predict_workload", "workload_spec"]


@dataclass(frozen=True)
class Prediction:
    workload: str
    system: str
    gpus: int
    params: dict[str, Any]
    bound_time_s: float
    baseline_time_s: float
    schedules: tuple[Choice, ...]
    terms: dict[str, float]
    stages: tuple[StagePrediction, ...]

    @property
    def best(self) -> Choice:
        return min(self.schedules, key=lambda c: (c.time_s, c.comm_sms))

    def as_dict(self) -> dict[str, Any]:
        def choice(c: Choice) -> dict[str, Any]:
            return {"schedule": c.schedule, "comm_sms": c.comm_sms, "mechanism": c.mechanism, "time_s": c.time_s}

        return {
            "workload": self.workload,
            "system": self.system,
            "gpus": self.gpus,
            "params": self.params,
            "bound_time_s": self.bound_time_s,
            "baseline_time_s": self.baseline_time_s,
            "best": choice(self.best),
            "schedules": [choice(c) for c in sorted(self.schedules, key=lambda c: c.time_s)],
            "terms": self.terms,
        }


def workload_spec(name: str) -> WorkloadSpec:
    specs = load_workloads()
    if name not in specs:
        raise UnknownNameError("workload", name, specs)
    return specs[name][0]


def _combine(stages: tuple[StagePrediction, ...]) -> tuple[Choice, ...]:
    keys = {(c.schedule, c.mechanism) for st in stages for c in st.choices if c.mechanism not in ("none", "auto")}
    if not keys:
        total = sum(st.best.time_s for st in stages)
        return (Choice("sequential", 0, stages[0].best.mechanism if stages else "none", total),)
    out = []
    for schedule, mech in sorted(keys):
        total, sms = 0.0, 0
        for st in stages:
            match = [c for c in st.choices if (c.schedule, c.mechanism) == (schedule, mech)]
            pick = min(match, key=lambda c: c.time_s) if match else st.best
            total += pick.time_s
            sms = max(sms, pick.comm_sms if match else 0)
        out.append(Choice(schedule, sms, mech, total))
    return tuple(out)


def predict_workload(
    name: str,
    system: System,
    *,
    gpus: int | Iterable[int] | None = None,
    params: Mapping[str, Any] | None = None,
) -> Prediction:
    """Predict workload ``name`` (see ``rooflib workloads``) on ``gpus`` of ``system`` with ``params``."""
    spec = workload_spec(name)
    values = resolve_params(spec, dict(params or {}))
    members = system.group(gpus)
    stages = MODELS[spec.model](values, system, len(members))
    preds = tuple(predict_stage(system, members, st) for st in stages)
    terms = {
        "compute_s": sum(p.compute_s for p in preds),
        "memory_s": sum(p.memory_s for p in preds),
        "comm_s": sum(p.comm_s for p in preds),
    }
    return Prediction(
        workload=spec.name,
        system=system.name,
        gpus=len(members),
        params=values,
        bound_time_s=max(terms.values()),
        baseline_time_s=sum(p.baseline_s for p in preds),
        schedules=_combine(preds),
        terms=terms,
        stages=preds,
    )
