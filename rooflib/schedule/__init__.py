"""Overlap schedules for a stage of compute and communication: sequential, intra-SM, inter-SM(s)."""

from rooflib.schedule.model import AUTO, LIBRARY, SCHEDULES, Choice, StagePrediction, predict_stage, schedule_time
from rooflib.schedule.pressure import Pipeline, Pressure, gemm_pipeline, intra_sm_pressure
from rooflib.schedule.stage import Comm, Stage, direct_egress

__all__ = [
    "AUTO",
    "LIBRARY",
    "SCHEDULES",
    "Choice",
    "Comm",
    "Pipeline",
    "Pressure",
    "Stage",
    "StagePrediction",
    "direct_egress",
    "gemm_pipeline",
    "intra_sm_pressure",
    "predict_stage",
    "schedule_time",
]
