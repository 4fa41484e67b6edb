"""``rooflib bench``: run the shipped microbenchmarks on the local GPUs and keep a resumable long-form table.

Each family is split into jobs (one program invocation each). Every job's JSON Lines go to
``DIR/raw/<family>.jsonl`` as they arrive and its key to ``DIR/done.txt`` when it finishes, so an interrupted run
keeps what it measured and a rerun skips finished jobs. :func:`collect` turns the raw records into
``DIR/results.csv`` (one row per measured point) and ``DIR/meta.json`` (GPU, driver, CUDA, NCCL, clocks, dates,
commands).

Families: p2p, latency, ceilings, gemm (one GPU or more); nccl, overlap (the shipped ``overlap`` program: compute and
communication overlap schedules, tiles scattered to the peer and, job ``overlap/gather``, input blocks gathered from
it) and tp (tensor-parallel GEMM + collective through PyTorch, sequential and fused) need two GPUs and plan no jobs
with fewer. ``run_bench(..., only=[keys])`` runs a subset of the planned jobs.

Multicast never runs: the environment of every job forces NCCL_NVLS_ENABLE=0,
TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and NVSHMEM_DISABLE_NVLS=1, and the multimem program is not part of any
family (it refuses to run without ``--allow-multicast`` anyway).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rooflib.conventions import MULTICAST_OFF
from rooflib.errors import RooflibError

__all__ = ["FAMILIES", "Job", "collect", "detect_gpus", "plan_jobs", "run_bench"]

FAMILIES = ("p2p", "latency", "ceilings", "gemm", "nccl", "overlap", "tp")
_KEPT = ("point", "nccl", "gemm", "tp", "compute_rate")  # record types that become rows of results.csv
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


def detect_gpus() -> list[str]:
    """Names of the visible NVIDIA GPUs (empty without a driver or a GPU)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    names = [line for line in out.stdout.splitlines() if line.startswith("GPU ")]
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip():
        names = names[: len([v for v in visible.split(",") if v.strip()])]
    return names


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


def plan_jobs(families: Iterable[str], gpus: int, *, quick: bool = False) -> list[Job]:
    """The jobs of each family for ``gpus`` local GPUs (``quick``: fewer sizes, for smoke tests).

    Families that need two GPUs (nccl, overlap, tp; p2p's bidirectional job) plan nothing with fewer.
    """
    jobs: list[Job] = []
    for fam in families:
        if fam not in FAMILIES:
            raise RooflibError(f"unknown benchmark family {fam!r}; families: {', '.join(FAMILIES)}, all")
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
    return jobs


def _command(job: Job, out: Path, gpus: int, nvcc: str) -> list[str]:
    raw = str(out / "raw" / f"{job.family}.jsonl")
    if job.kind == "kernel":
        from rooflib.bench.build import build

        return [str(build(job.target, nvcc=nvcc)), *job.args]
    if job.kind == "module":
        return [sys.executable, "-m", job.target, "--out", raw, *job.args]
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={gpus}"]
    return [*torchrun, "-m", job.target, "--out", raw, *job.args]


def _run_job(job: Job, out: Path, gpus: int, nvcc: str) -> None:
    cmd = _command(job, out, gpus, nvcc)
    env = {**os.environ, **job.env, **MULTICAST_OFF}
    raw = out / "raw" / f"{job.family}.jsonl"
    err_path = out / "raw" / (job.log or f"{job.family}.stderr.log")
    with err_path.open("a") as err:
        err.write(f"\n# {time.strftime('%Y-%m-%dT%H:%M:%S')} {' '.join(cmd)}\n")
        err.flush()
        try:
            if job.kind == "kernel":
                with raw.open("a") as sink:
                    code, stdout = _call(cmd, subprocess.PIPE, err, env, job.timeout_s)
                    for line in stdout.splitlines():
                        if line.startswith("{"):
                            rec = json.loads(line)
                            rec.setdefault("family", job.family)
                            rec["job"] = job.key
                            sink.write(json.dumps(rec) + "\n")
            else:
                code, _ = _call(cmd, err, err, env, job.timeout_s)
        except subprocess.TimeoutExpired as exc:
            raise RooflibError(f"benchmark job {job.key} timed out after {exc.timeout:g} s; see {err_path}") from None
    if code != 0:
        raise RooflibError(f"benchmark job {job.key} failed (exit {code}); see {err_path}")


def _call(cmd: list[str], stdout: Any, stderr: Any, env: dict[str, str], timeout: float | None) -> tuple[int, str]:
    """Run ``cmd`` in its own process group; on timeout kill the whole group (torchrun's workers too)."""
    with subprocess.Popen(cmd, stdout=stdout, stderr=stderr, text=True, env=env, start_new_session=True) as proc:
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
    return proc.returncode, out or ""


def run_bench(
    families: Iterable[str],
    out: str | Path,
    *,
    quick: bool = False,
    nvcc: str = "nvcc",
    progress: bool = True,
    on_error: Callable[[Job, Exception], None] | None = None,
    only: Iterable[str] | None = None,
) -> Path:
    """Run ``families`` on the local GPUs into ``out``; returns the path of ``results.csv``.

    ``only``: job keys (``overlap/gather``, say) to run out of the families' plan; the others are skipped. A key
    that the plan lacks is an error.
    """
    names = detect_gpus()
    if not names:
        raise RooflibError(
            "no NVIDIA GPU is visible here (nvidia-smi finds none): `rooflib bench` measures a real machine. "
            "Predictions (`rooflib collective`, `transfer`, `roofline`, `report`) need no GPU."
        )
    root = Path(out)
    (root / "raw").mkdir(parents=True, exist_ok=True)
    done_file = root / "done.txt"
    done = set(done_file.read_text().split()) if done_file.exists() else set()
    planned = plan_jobs(families, len(names), quick=quick)
    if only is not None:
        keys = set(only)
        unknown = keys - {j.key for j in planned}
        if unknown:
            raise RooflibError(f"no such job(s) in the plan: {', '.join(sorted(unknown))}")
        planned = [j for j in planned if j.key in keys]
    todo = [j for j in planned if j.key not in done]
    from tqdm import tqdm

    for job in tqdm(todo, desc="rooflib bench", unit="job", disable=not progress):
        try:
            _run_job(job, root, len(names), nvcc)
        except (RooflibError, OSError) as exc:
            if on_error is None:
                raise
            on_error(job, exc)
            continue
        with done_file.open("a") as fh:
            fh.write(job.key + "\n")
    collect(root)
    return root / "results.csv"


def collect(out: str | Path) -> Any:
    """Gather ``DIR/raw/*.jsonl`` into ``DIR/results.csv`` and ``DIR/meta.json``; returns the DataFrame."""
    import pandas as pd

    root = Path(out)
    rows: list[dict[str, Any]] = []
    meta: list[dict[str, Any]] = []
    for path in sorted((root / "raw").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            if not line.startswith("{"):
                continue
            rec = json.loads(line)
            kind = rec.get("record")
            if kind == "meta":
                meta.append(rec)
            elif kind in _KEPT:
                rec.setdefault("family", path.stem)
                rows.append(rec)
    frame = pd.DataFrame.from_records(rows)
    frame.to_csv(root / "results.csv", index=False)
    (root / "meta.json").write_text(json.dumps(meta, indent=1))
    return frame
