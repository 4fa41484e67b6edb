"""The jobs of each ``rooflib bench`` family: what runs, with which arguments.

Each family's module under :mod:`rooflib.families` plans its jobs (one program invocation each, with a unique key,
the unit of resume); :func:`plan_jobs` looks every asked-for family up in :mod:`rooflib.families.registry`: p2p,
latency, ceilings, gemm (one GPU or more); nccl, overlap (the shipped ``overlap`` program: compute and
communication overlap schedules, tiles scattered to the peer and, job ``overlap/gather``, input blocks gathered
from it) and tp (tensor-parallel GEMM + collective through PyTorch, sequential and fused) need two GPUs and plan
no jobs with fewer. The multimem program is part of no family. A job's key starts with its family
(``p2p/tma/size``).

:data:`SINGLE_GPU_FAMILIES` are run by name, not by ``all``: compute (GEMMs, memory-bound ops and attention through
PyTorch, minutes), compute-holdout (a second grid of the same, for out-of-sample checks), host (host issue
costs; its NCCL job needs two GPUs) and programs (small PyTorch programs eager and as CUDA graphs).
"""

from __future__ import annotations

from rooflib.families.base import Job
from rooflib.families.nccl import NCCL_OPS
from rooflib.families.registry import bench_names, plan_jobs

__all__ = ["FAMILIES", "NCCL_OPS", "SINGLE_GPU_FAMILIES", "Job", "plan_jobs"]

FAMILIES = bench_names("all")
"""What ``rooflib bench all`` runs: p2p, latency, ceilings, gemm, nccl, overlap, tp."""
SINGLE_GPU_FAMILIES = bench_names("name")
"""Families run by name only (``rooflib bench compute host programs``): ``all`` means :data:`FAMILIES`."""
