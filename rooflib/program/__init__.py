"""Programs: the ops of a multi-GPU program per rank (the IR), their costs, and the host/device timeline.

>>> import rooflib
>>> b = rooflib.ProgramBuilder("tp_mlp", world=8)
>>> _ = b.gemm(8192, 8192, 2048, name="down")
>>> _ = b.collective("all_reduce", 8192 * 8192 * 2, name="allreduce")
>>> p = rooflib.predict_program(b.build(), rooflib.load_system("hgx-h100"))
>>> p.bound_time_s <= p.best["time_s"] <= p.baseline_time_s
True
"""

from rooflib.program.cost import OpCost, op_cost
from rooflib.program.ir import HOST_KINDS, OP_KINDS, HostKind, Op, OpKind, Program, ProgramBuilder, ProgramError
from rooflib.program.predict import TIE_TOLERANCE, ProgramPrediction, fusable_regions, predict_program
from rooflib.program.regions import Region, find_regions
from rooflib.program.timeline import HostCosts, Timeline, host_costs, simulate

__all__ = [
    "HOST_KINDS",
    "OP_KINDS",
    "TIE_TOLERANCE",
    "HostCosts",
    "HostKind",
    "Op",
    "OpCost",
    "OpKind",
    "Program",
    "ProgramBuilder",
    "ProgramError",
    "ProgramPrediction",
    "Region",
    "Timeline",
    "find_regions",
    "fusable_regions",
    "host_costs",
    "op_cost",
    "predict_program",
    "simulate",
]
