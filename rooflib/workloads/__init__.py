"""Workloads users bring: tensor-parallel GEMMs, attention, MoE, data parallelism, pipelines, collectives."""

from rooflib.program.spec import ProgramSpec as WorkloadSpec
from rooflib.workloads.predict import TIE_TOLERANCE, Prediction, predict_workload, workload_spec
from rooflib.workloads.spec import Parameter, load_workloads, resolve_params

__all__ = [
    "TIE_TOLERANCE",
    "Parameter",
    "Prediction",
    "WorkloadSpec",
    "load_workloads",
    "predict_workload",
    "resolve_params",
    "workload_spec",
]
