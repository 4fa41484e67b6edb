"""``predict_workload``: a catalog workload (a ``kind: program`` file) predicted through the program model.

The workload's YAML is built into a :class:`~rooflib.program.Program` for the group's GPU count and predicted by
:func:`~rooflib.program.predict_program` (one code path for workloads, user programs and traced ones):

- ``bound_time_s``: ``max(sum compute, sum memory, sum comm)`` over the ops with datasheet peaks, ideal FLOPs
  and the fewest bytes any implementation could move at raw link rates: no implementation can beat it.
- ``baseline_time_s``: what plain PyTorch + NCCL does: the program's ops issued eagerly (cuBLAS, then NCCL's own
  algorithm, one call per bucket or layer), back-to-back iterations on the host/device timeline.
- ``schedules``: for each (schedule, mechanism) the program with its fusable regions run that way (the SM split
  optimised per region); the baseline itself is one of them (``sequential``/``library``), so ``best`` is never
  slower than the baseline. ``ties``: the schedules within ``tie_tolerance`` of the best (the model cannot tell
  them apart; see :data:`TIE_TOLERANCE`).
- ``notes``: what was adjusted (a default shape rounded up to divide over the GPUs) and why numbers differ from
  ``rooflib collective``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rooflib.compute.rates import ComputeError
from rooflib.errors import UnitError, UnknownNameError
from rooflib.program.predict import TIE_TOLERANCE, ProgramPrediction, choice_dict, predict_program
from rooflib.program.spec import build_program
from rooflib.schedule import Choice, StagePrediction
from rooflib.specs.resolve import System
from rooflib.workloads.spec import load_workloads, resolve_params

if TYPE_CHECKING:
    from rooflib.program.spec import ProgramSpec

__all__ = ["TIE_TOLERANCE", "Prediction", "predict_workload", "workload_spec"]


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
    program: ProgramPrediction | None = None

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
        """The keys of :meth:`rooflib.program.ProgramPrediction.as_dict` (``rooflib trace``) and ``workload``."""
        out: dict[str, Any] = {
            "workload": self.workload,
            "system": self.system,
            "gpus": self.gpus,
            "params": self.params,
            "bound_time_s": self.bound_time_s,
            "baseline_time_s": self.baseline_time_s,
            "best": choice_dict(self.best),
            "ties": [choice_dict(c) for c in self.ties],
            "tie_tolerance": self.tie_tolerance,
            "schedules": [choice_dict(c) for c in sorted(self.schedules, key=lambda c: c.time_s)],
            "terms": self.terms,
            "notes": list(self.notes),
        }
        if self.program is not None:
            p = self.program.as_dict()
            out = {"workload": self.workload, **p, **{k: out[k] for k in ("params", "notes", "tie_tolerance")}}
        return out

    def to_frame(self) -> Any:
        """The schedules as a pandas DataFrame (one row per schedule and mechanism, fastest first)."""
        import pandas as pd

        frame = pd.DataFrame.from_records([choice_dict(c) for c in sorted(self.schedules, key=lambda c: c.time_s)])
        frame.insert(0, "workload", self.workload)
        frame.insert(1, "system", self.system)
        frame.insert(2, "gpus", self.gpus)
        frame["bound_time_s"] = self.bound_time_s
        frame["baseline_time_s"] = self.baseline_time_s
        return frame


def workload_spec(name: str) -> ProgramSpec:
    specs = load_workloads()
    if name not in specs:
        raise UnknownNameError("workload", name, specs)
    return specs[name][0]


def round_defaults(spec: ProgramSpec, values: dict[str, Any], given: Mapping[str, Any], g: int) -> list[str]:
    """Round defaults that are split over the GPUs up to the next multiple of ``g`` (user values stay)."""
    notes = []
    for key, param in spec.parameters.items():
        value = values[key]
        if param.split and key not in given and isinstance(value, int) and value % g:
            values[key] = math.ceil(value / g) * g
            notes.append(f"default {key} = {value} rounded up to {values[key]} to divide over {g} GPUs")
    return notes


_round_defaults = round_defaults  # the name `rooflib workloads` has used


def predict_spec(
    spec: ProgramSpec,
    system: System,
    *,
    gpus: int | Iterable[int] | None = None,
    params: Mapping[str, Any] | None = None,
    tie_tolerance: float = TIE_TOLERANCE,
) -> Prediction:
    """Predict the catalog program ``spec`` on ``gpus`` of ``system`` with ``params`` (defaults rounded to divide)."""
    if not 0.0 <= tie_tolerance < 1.0:
        raise UnitError(f"tie_tolerance must be in [0, 1), got {tie_tolerance!r}")
    given = dict(params or {})
    values = resolve_params(spec, given)
    members = system.group(gpus)
    notes = round_defaults(spec, values, given, len(members))
    try:
        program = build_program(spec, len(members), values)
        p = predict_program(program, system, gpus=members, params=values, tie_tolerance=tie_tolerance)
    except ComputeError as exc:  # say which workload and parameters asked for the impossible kernel
        given_text = ", ".join(f"{k}={v}" for k, v in given.items()) or "defaults"
        raise ComputeError(f"workload {spec.name!r} ({given_text}) on {len(members)} GPUs: {exc}") from None
    return Prediction(
        workload=spec.name,
        system=system.name,
        gpus=len(members),
        params=values,
        bound_time_s=p.bound_time_s,
        baseline_time_s=p.baseline_time_s,
        schedules=p.schedules,
        terms=p.terms,
        stages=p.stages,
        notes=tuple([*notes, *p.notes]),
        tie_tolerance=tie_tolerance,
        program=p,
    )


def predict_workload(
    name: str,
    system: System,
    *,
    gpus: int | Iterable[int] | None = None,
    params: Mapping[str, Any] | None = None,
    tie_tolerance: float = TIE_TOLERANCE,
) -> Prediction:
    """Predict workload ``name`` (see ``rooflib workloads``) on ``gpus`` of ``system`` with ``params``."""
    return predict_spec(workload_spec(name), system, gpus=gpus, params=params, tie_tolerance=tie_tolerance)
