"""``predict_workload``: bound, PyTorch + NCCL baseline, and the best schedule, mechanism and SM split.

- ``bound_time_s``: ``max(sum compute, sum memory, sum comm)`` over the stages with datasheet peaks, ideal FLOPs
  and the fewest bytes any implementation could move at raw link rates: no implementation can beat it.
- ``baseline_time_s``: what plain PyTorch + NCCL does: each stage's cuBLAS kernel(s) then NCCL's collective
  (the library's own algorithms, stream launches, one call per bucket or layer), one after the other.
- ``schedules``: for each (schedule, mechanism) the sum over stages of that schedule's time (the SM split
  optimised per stage); the baseline itself is one of them (``sequential``/``library``), so ``best`` is never
  slower than the baseline. ``ties``: the schedules within ``tie_tolerance`` of the best (the model cannot tell
  them apart; see :data:`TIE_TOLERANCE`).
- ``notes``: what was adjusted (a default shape rounded up to divide over the GPUs) and why numbers differ from
  ``rooflib collective``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rooflib.compute.rates import ComputeError
from rooflib.errors import UnitError, UnknownNameError
from rooflib.schedule import AUTO, LIBRARY, Choice, StagePrediction, predict_stage
from rooflib.specs.resolve import System
from rooflib.workloads.models import MODELS
from rooflib.workloads.spec import WorkloadSpec, load_workloads, resolve_params

__all__ = ["TIE_TOLERANCE", "Prediction", "predict_workload", "workload_spec"]

TIE_TOLERANCE = 0.03
"""Relative time difference below which two schedules count as a tie: the largest cost of following the model's
choice measured on 2xH200 (3.2 %, docs/validation/README.md, overlap schedules), rounded."""


def _choice_dict(c: Choice) -> dict[str, Any]:
    return {
        "schedule": c.schedule,
        "comm_sms": c.comm_sms,
        "mechanism": c.mechanism,
        "algorithm": c.algorithm or None,
        "time_s": c.time_s,
    }


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
    notes: tuple[str, ...] = ()
    tie_tolerance: float = TIE_TOLERANCE

    @property
    def best(self) -> Choice:
        return min(self.schedules, key=lambda c: (c.time_s, c.comm_sms))

    @property
    def ties(self) -> tuple[Choice, ...]:
        """Other schedules within ``tie_tolerance`` of the best, fastest first."""
        best = self.best
        limit = best.time_s * (1.0 + self.tie_tolerance)
        return tuple(c for c in sorted(self.schedules, key=lambda c: c.time_s) if c != best and c.time_s <= limit)

    def as_dict(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "system": self.system,
            "gpus": self.gpus,
            "params": self.params,
            "bound_time_s": self.bound_time_s,
            "baseline_time_s": self.baseline_time_s,
            "best": _choice_dict(self.best),
            "ties": [_choice_dict(c) for c in self.ties],
            "tie_tolerance": self.tie_tolerance,
            "schedules": [_choice_dict(c) for c in sorted(self.schedules, key=lambda c: c.time_s)],
            "terms": self.terms,
            "notes": list(self.notes),
        }

    def to_frame(self) -> Any:
        """The schedules as a pandas DataFrame (one row per schedule and mechanism, fastest first)."""
        import pandas as pd

        frame = pd.DataFrame.from_records([_choice_dict(c) for c in sorted(self.schedules, key=lambda c: c.time_s)])
        frame.insert(0, "workload", self.workload)
        frame.insert(1, "system", self.system)
        frame.insert(2, "gpus", self.gpus)
        frame["bound_time_s"] = self.bound_time_s
        frame["baseline_time_s"] = self.baseline_time_s
        return frame


def workload_spec(name: str) -> WorkloadSpec:
    specs = load_workloads()
    if name not in specs:
        raise UnknownNameError("workload", name, specs)
    return specs[name][0]


def _combine(stages: tuple[StagePrediction, ...]) -> tuple[Choice, ...]:
    keys = {(c.schedule, c.mechanism) for st in stages for c in st.choices if c.mechanism != "none"}
    if not keys:
        total = sum(st.best.time_s for st in stages)
        return (Choice("sequential", 0, "none", total),)
    out = []
    for schedule, mech in sorted(keys):
        total, sms, algorithms = 0.0, 0, []
        for st in stages:
            match = [c for c in st.choices if (c.schedule, c.mechanism) == (schedule, mech)]
            pick = min(match, key=lambda c: c.time_s) if match else st.best
            total += pick.time_s
            sms = max(sms, pick.comm_sms if match else 0)
            if match and pick.algorithm and pick.algorithm not in algorithms:
                algorithms.append(pick.algorithm)
        out.append(Choice(schedule, sms, mech, total, "/".join(algorithms)))
    return tuple(out)


def _round_defaults(spec: WorkloadSpec, values: dict[str, Any], given: Mapping[str, Any], g: int) -> list[str]:
    """Round defaults that are split over the GPUs up to the next multiple of ``g`` (user values stay)."""
    notes = []
    for key, param in spec.parameters.items():
        value = values[key]
        if param.split and key not in given and isinstance(value, int) and value % g:
            values[key] = math.ceil(value / g) * g
            notes.append(f"default {key} = {value} rounded up to {values[key]} to divide over {g} GPUs")
    return notes


def _check_finite(spec: WorkloadSpec, preds: tuple[StagePrediction, ...]) -> None:
    for p in preds:
        for name in ("bound_s", "baseline_s", "compute_s", "memory_s", "comm_s"):
            if not math.isfinite(getattr(p, name)):
                raise UnitError(f"workload {spec.name!r}: stage {p.stage} has no finite {name}; check its parameters")


def predict_workload(
    name: str,
    system: System,
    *,
    gpus: int | Iterable[int] | None = None,
    params: Mapping[str, Any] | None = None,
    tie_tolerance: float = TIE_TOLERANCE,
) -> Prediction:
    """Predict workload ``name`` (see ``rooflib workloads``) on ``gpus`` of ``system`` with ``params``."""
    if not 0.0 <= tie_tolerance < 1.0:
        raise UnitError(f"tie_tolerance must be in [0, 1), got {tie_tolerance!r}")
    spec = workload_spec(name)
    given = dict(params or {})
    values = resolve_params(spec, given)
    members = system.group(gpus)
    notes = _round_defaults(spec, values, given, len(members))
    try:
        stages = MODELS[spec.model](values, system, len(members))
        preds = tuple(predict_stage(system, members, st) for st in stages)
    except ComputeError as exc:  # say which workload and parameters asked for the impossible kernel
        given_text = ", ".join(f"{k}={v}" for k, v in given.items()) or "defaults"
        raise ComputeError(f"workload {spec.name!r} ({given_text}) on {len(members)} GPUs: {exc}") from None
    _check_finite(spec, preds)
    terms = {
        "compute_s": sum(p.compute_s for p in preds),
        "memory_s": sum(p.memory_s for p in preds),
        "comm_s": sum(p.comm_s for p in preds),
    }
    schedules = _combine(preds)
    auto = [c for c in schedules if c.mechanism == AUTO]
    library = [c for c in schedules if c.mechanism == LIBRARY]
    if auto and library and auto[0].algorithm != library[0].algorithm:
        notes.append(
            f"sequential/{LIBRARY} is NCCL's own algorithm ({library[0].algorithm}), as `rooflib collective "
            f"--algorithm library`; sequential/{AUTO} the fastest modelled collective kernel ({auto[0].algorithm}), "
            "as `rooflib collective`; fused schedules send the bytes with the named transfer mechanism"
        )
    return Prediction(
        workload=spec.name,
        system=system.name,
        gpus=len(members),
        params=values,
        bound_time_s=max(terms.values()),
        baseline_time_s=sum(p.baseline_s for p in preds),
        schedules=schedules,
        terms=terms,
        stages=preds,
        notes=tuple(notes),
        tie_tolerance=tie_tolerance,
    )
