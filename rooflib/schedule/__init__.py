"""Overlap schedules: sequential, intra-SM (warp-specialised) and inter-SM with s communication SMs."""

from rooflib.schedule.model import SCHEDULES, Choice, StagePrediction, predict_stage, schedule_time
from rooflib.schedule.stage import Comm, Stage, direct_egress

__all__ = ["SCHEDULES", "Choice", "Comm", "Stage", "StagePrediction", "direct_egress", "predict_stage", "schedule_time"]
