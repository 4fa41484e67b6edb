"""The jobs of each ``rooflib bench`` family: what runs, with which arguments.

Each family is split into jobs (one program invocation each) with a unique key, the unit of resume: p2p, latency,
ceilings, gemm (one GPU or more); nccl, overlap (the shipped ``overlap`` program: compute and communication
overlap schedules, tiles scattered to the peer and, job ``overlap/gather``, input blocks gathered from it) and tp
(tensor-parallel GEMM + collective through PyTorch, sequential and fused) need two GPUs and plan no jobs with
fewer. The multimem program is part of no family. A job's key starts with its family (``p2p/tma/size``).

:data:`SINGLE_GPU_FAMILIES` are run by name, not by ``all``: compute (GEMMs, memory-bound ops and attention through
PyTorch, minutes), compute-holdout (a second grid of the same, for out-of-sample checks), host (host issue
costs; its NCCL job needs two GPUs) and programs (small PyTorch programs eager and as CUDA graphs).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from rooflib.errors import RooflibError

__all__ = ["FAMILIES", "NCCL_OPS", "SINGLE_GPU_FAMILIES", "Job", "plan_jobs"]

FAMILIES = ("p2p", "latency", "ceilings", "gemm", "nccl", "overlap", "tp")
SINGLE_GPU_FAMILIES = ("compute", "compute-holdout", "host", "programs")
"""Families run by name only (``rooflib bench compute host programs``): ``all`` means :data:`FAMILIES`."""
NCCL_OPS = (
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "all_to_all",
    "broadcast",
    "reduce",
    "send_recv",
    "gather",
    "scatter",
)


@dataclass(frozen=True)
class Job:
    family: str
    key: str
    kind: str  # "kernel" (a shipped CUDA program), "module" (python -m), "torchrun"
    target: str  # program name or module
    args: tuple[str, ...]
    log: str | None = None  # capture stderr here (NCCL's tuning table)
    env: dict[str, str] = field(default_factory=dict)
    timeout_s: float | None = None  # a job still running after this is killed and reported as failed


def _sizes(lo: int, hi: int) -> str:
    out, s = [], lo
    while s <= hi:
        out.append(str(s))
        s *= 2
    return ",".join(out)


def _p2p_jobs(gpus: int, quick: bool) -> list[Job]:
    top = (64 << 20) if quick else (1 << 30)
    sizes = _sizes(128, top)
    sm_list = "1,2,4,8" if quick else "1,2,3,4,6,8,12,16,20,24,32,48,66,96,132"
    it = ("--iters", "5", "--warmup", "2") if quick else ("--iters", "15", "--warmup", "3")
    jobs: list[Job] = []
    for mech in ("copy_engine", "tma", "ldst_push", "ldst_pull", "tma_reduce", "red"):
        jobs.append(
            Job(
                "p2p", f"p2p/{mech}/size", "kernel", "p2p", ("--mechanism", mech, "--bytes", sizes, "--sms", "all", *it)
            )
        )
        if mech != "copy_engine":
            jobs.append(
                Job(
                    "p2p",
                    f"p2p/{mech}/sms",
                    "kernel",
                    "p2p",
                    ("--mechanism", mech, "--bytes", str(top // 4), "--sms", sm_list, *it),
                )
            )
    if gpus >= 2:
        both = ("--mechanism", "copy_engine,tma,ldst_push", "--bytes", f"{1 << 20},{top}", "--sms", "all")
        jobs.append(Job("p2p", "p2p/bidirectional", "kernel", "p2p", (*both, "--direction", "bidirectional", *it)))
    return jobs


def _nccl_jobs(gpus: int, quick: bool) -> list[Job]:
    if gpus < 2:
        return []
    hi = "64M" if quick else "1G"
    return [
        Job(
            "nccl",
            f"nccl/{op}",
            "torchrun",
            "rooflib.bench.nccl_worker",
            ("--ops", op, "--min-bytes", "1K", "--max-bytes", hi, "--iters", "8" if quick else "20"),
            log=f"nccl_tuning_{op}.log",
            env={"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "TUNING"},
        )
        for op in NCCL_OPS
    ]


# --direction gather: 256 input blocks of 32 KiB per GPU, each read by 8 output tiles (2048 tiles, as AG + GEMM);
# inter_ce in pieces of 8, 32 and 128 blocks, each issue form (stream, graph, preissued: the program's default)
_GATHER = ("--direction", "gather", "--tiles", "256", "--reuse", "8", "--tile-bytes", "32K", "--ce-chunk", "8,32,128")


def _overlap_jobs(gpus: int, quick: bool) -> list[Job]:
    """Overlap schedules on two GPUs. Scatter (each sends its output tiles to the other, GEMM + reduce-scatter): the
    default problem, a 4x larger one, 64 KiB tiles. Gather (each computes from the other's input blocks, all-gather +
    GEMM): 256 blocks x 8 output tiles each."""
    if gpus < 2:
        return []
    sweep: tuple[str, ...]
    if quick:
        sweep = ("--iters", "1,16,128", "--comm-sms", "1,8", "--iters-timing", "5", "--warmup", "1")
        return [
            Job("overlap", "overlap/t1056", "kernel", "overlap", ("--tiles", "1056", *sweep)),
            Job("overlap", "overlap/gather", "kernel", "overlap", (*_GATHER, *sweep)),
        ]
    iters = "1,2,4,8,16,24,32,48,64,96,128,192,256,384,512,1024"  # comm-bound to compute-bound, dense near the cross
    sweep = ("--iters", iters, "--comm-sms", "1,2,4,8,12,16,24,32", "--iters-timing", "30")
    return [
        Job("overlap", "overlap/t1056", "kernel", "overlap", ("--tiles", "1056", *sweep)),
        Job("overlap", "overlap/t4224", "kernel", "overlap", ("--tiles", "4224", *sweep)),
        Job("overlap", "overlap/b64k", "kernel", "overlap", ("--tiles", "1056", "--tile-bytes", "64K", *sweep)),
        Job("overlap", "overlap/gather", "kernel", "overlap", (*_GATHER, *sweep)),
    ]


def _tp_jobs(gpus: int, quick: bool) -> list[Job]:
    """Tensor-parallel GEMM + collective (sequential vs PyTorch's fused async-TP ops), one torchrun job."""
    if gpus < 2:
        return []
    shapes: tuple[str, ...] = ("--ms", "4096", "--ks", "1024,8192", "--iters", "5") if quick else ("--iters", "10")
    jobs = [Job("tp", "tp/all", "torchrun", "rooflib.bench.tp_worker", shapes)]
    # the copy-engine pipeline: one process per shape (several in one process hung once in a device-side
    # barrier, docs/validation/h200/runs/x2-ce)
    ms, ks = ((4096,), (1024, 8192)) if quick else ((4096, 8192, 16384), (1024, 4096, 16384))
    for w in ("gemm_rs", "ag_gemm"):
        for m in ms:
            for k in ks:
                args = ("--workloads", w, "--impls", "ce_pipeline", "--ms", str(m), "--ks", str(k), "--iters", "10")
                job = Job("tp", f"tp/ce/{w}/{m}/{k}", "torchrun", "rooflib.bench.tp_worker", args, timeout_s=240)
                jobs.append(job)
    return jobs


def _compute_jobs(family: str, quick: bool) -> list[Job]:
    """GEMMs, memory-bound ops and attention: one module job each, with a soft limit inside and a hard one outside
    (``compute-holdout``: the worker's second grid)."""
    q = ("--quick",) if quick else ()
    grid = ("--grid", "holdout") if family == "compute-holdout" else ()
    limits = {"gemm": 150, "memory": 110, "attention": 70}
    return [
        Job(
            family,
            f"{family}/{part}",
            "module",
            "rooflib.bench.compute_worker",
            ("--part", part, "--max-seconds", str(s), *grid, *q),
            timeout_s=s + 60,
        )
        for part, s in limits.items()
    ]


def _host_jobs(gpus: int, quick: bool) -> list[Job]:
    calls = ("--calls", "500" if quick else "2000")
    jobs = [
        Job("host", "host/local", "module", "rooflib.bench.host_worker", ("--part", "local", *calls), timeout_s=120)
    ]
    if gpus >= 2:
        jobs.append(
            Job("host", "host/nccl", "torchrun", "rooflib.bench.host_worker", ("--part", "nccl", *calls), timeout_s=180)
        )
    return jobs


def _single_gpu_jobs(family: str, gpus: int, quick: bool) -> list[Job]:
    if family == "host":
        return _host_jobs(gpus, quick)
    if family == "programs":
        args = ("--quick",) if quick else ()
        return [Job(family, "programs/all", "module", "rooflib.bench.programs_worker", args, timeout_s=240)]
    return _compute_jobs(family, quick)


def plan_jobs(families: Iterable[str], gpus: int, *, quick: bool = False) -> list[Job]:
    """The jobs of each family for ``gpus`` local GPUs (``quick``: fewer sizes, for smoke tests).

    Families that need two GPUs (nccl, overlap, tp; p2p's bidirectional job) plan nothing with fewer.
    """
    jobs: list[Job] = []
    for fam in families:
        if fam not in (*FAMILIES, *SINGLE_GPU_FAMILIES):
            known = ", ".join((*FAMILIES, *SINGLE_GPU_FAMILIES))
            raise RooflibError(f"unknown benchmark family {fam!r}; families: {known}, all")
        if fam == "p2p":
            jobs += _p2p_jobs(gpus, quick)
        elif fam == "latency":
            jobs.append(Job(fam, "latency/all", "kernel", "latency", ("--iters", "2000" if quick else "20000")))
        elif fam == "ceilings":
            jobs.append(Job(fam, "ceilings/all", "kernel", "ceilings", ()))
        elif fam == "gemm":
            jobs.append(
                Job(fam, "gemm/all", "module", "rooflib.bench.gemm_worker", ("--iters", "5" if quick else "10"))
            )
        elif fam == "nccl":
            jobs += _nccl_jobs(gpus, quick)
        elif fam == "overlap":
            jobs += _overlap_jobs(gpus, quick)
        elif fam == "tp":
            jobs += _tp_jobs(gpus, quick)
        elif fam in SINGLE_GPU_FAMILIES:
            jobs += _single_gpu_jobs(fam, gpus, quick)
    return jobs
