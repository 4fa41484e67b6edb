"""Measurement families as modules: one per family (p2p, latency, ceilings, gemm, nccl, overlap, tp, compute, host,
programs, pkb, framework_allreduce) and one for the importers (nccl-tests, aiconfigurator).

Each module declares a :class:`~rooflib.families.base.Family`: its job plan, its record schema, the prediction of
its rows, the rows its model cannot take, a third-party model, comparison tables and a report section, the
calibration fits that read it and its figures (Display objects of :mod:`rooflib.plot.validation`); a part it does
not have is an :class:`~rooflib.families.base.Absent` saying why. :mod:`rooflib.families.registry` is the one
lookup the runner (:mod:`rooflib.bench.plan`), ``rooflib validate`` and its report use.

Importing this package is cheap (no pydantic, torch or matplotlib): model layers load when a prediction runs.
"""

from __future__ import annotations

from rooflib.families.base import PARTS, Absent, Family, Figure, Importer, Job, Ref, Schema, present
from rooflib.families.registry import FAMILIES, IMPORTERS, family, plan_jobs

__all__ = [
    "FAMILIES",
    "IMPORTERS",
    "PARTS",
    "Absent",
    "Family",
    "Figure",
    "Importer",
    "Job",
    "Ref",
    "Schema",
    "family",
    "plan_jobs",
    "present",
]
