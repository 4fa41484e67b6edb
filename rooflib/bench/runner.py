"""``rooflib bench``: run the shipped microbenchmarks on the local GPUs and keep a resumable long-form table.

The families and their jobs are planned by :mod:`rooflib.bench.plan`; where records live and how a rerun replaces
them, by :mod:`rooflib.bench.store`. Each job runs in its own process group (``start_new_session``); a per-job
time limit, Ctrl-C (SIGINT) or SIGTERM ends the whole group (torchrun and its workers): SIGTERM first, SIGKILL
after :data:`GRACE_S`. What the job measured until then is kept as incomplete records, the job stays out of
``done.txt``, and the next run with the same folder redoes it. ``run_bench(..., only=[keys])`` runs a subset.

Every record says where it was measured: ``gpu`` (the model, as nvidia-smi names it), ``driver``, ``nccl`` (the
library version the job reported, None for programs without NCCL) and ``nvls`` (``off``: NCCL reads
NCCL_NVLS_ENABLE as 0).

Multicast never runs: every job's environment keeps NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and
NVSHMEM_DISABLE_NVLS=1, replacing any value that does not clearly keep multicast off
(:func:`rooflib.bench.multicast.keep_multicast_off`); the multimem program is part of no family.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rooflib.bench.multicast import keep_multicast_off, nvls_state
from rooflib.bench.plan import FAMILIES, NCCL_OPS, SINGLE_GPU_FAMILIES, Job, plan_jobs
from rooflib.bench.store import (
    collect,
    locked,
    mark_done,
    read_done,
    read_job_output,
    repair,
    running_path,
    store_job,
)
from rooflib.errors import RooflibError

__all__ = [
    "FAMILIES",
    "NCCL_OPS",
    "SINGLE_GPU_FAMILIES",
    "BenchInterrupted",
    "Job",
    "collect",
    "detect_gpus",
    "gpu_model",
    "plan_jobs",
    "run_bench",
]

GRACE_S = 5.0
"""Seconds a stopped job's process group has between SIGTERM and SIGKILL."""


class BenchInterrupted(RooflibError):
    """``rooflib bench`` stopped by a signal; ``signum`` is the signal, the folder can be resumed."""

    def __init__(self, message: str, signum: int) -> None:
        super().__init__(message)
        self.signum = signum


class _Stop(BaseException):
    """Raised by the signal handlers (SIGINT, SIGTERM) while a run is in progress."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum
        self.job: str | None = None


class _Signals:
    """Signal handling for a run: a signal raises :class:`_Stop`, except inside ``critical()`` sections
    (killing a job, storing its records), where it waits until the section ends."""

    def __init__(self) -> None:
        self.depth = 0
        self.pending: int | None = None

    def handler(self, signum: int, _frame: Any) -> None:
        if self.depth:
            self.pending = signum
            return
        raise _Stop(signum)

    @contextmanager
    def critical(self, *, deliver: bool = True) -> Iterator[None]:
        """Signals wait until the section ends; then one is raised (``deliver``) or dropped."""
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
            if not self.depth and self.pending is not None:
                signum, self.pending = self.pending, None
                if deliver:
                    raise _Stop(signum)

    @contextmanager
    def installed(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        old = {s: signal.signal(s, self.handler) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for s, h in old.items():
                signal.signal(s, h)


_SIGNALS = _Signals()


def detect_gpus() -> list[str]:
    """Names of the visible NVIDIA GPUs, as ``nvidia-smi -L`` lists them (empty without a driver or a GPU)."""
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
        wanted = [v.strip() for v in visible.split(",") if v.strip()]
        if all(v.isdigit() for v in wanted):
            return [names[int(v)] for v in wanted if int(v) < len(names)]
        names = names[: len(wanted)]
    return names


def gpu_model(listed: str) -> str:
    """``'NVIDIA H200'`` from ``'GPU 0: NVIDIA H200 (UUID: GPU-...)'``."""
    name = listed.split(":", 1)[1] if listed.startswith("GPU ") and ":" in listed else listed
    return name.split(" (UUID", 1)[0].strip()


def _driver() -> str | None:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        out = subprocess.run(
            [smi, "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [line.strip() for line in out.stdout.splitlines() if line.strip()]
    return lines[0] if out.returncode == 0 and lines else None


def _command(job: Job, out: Path, gpus: int, nvcc: str) -> list[str]:
    """The job's command line; workers write to the job's ``.running`` file (a program's stdout goes there)."""
    if job.kind == "kernel":
        from rooflib.bench.build import build

        return [str(build(job.target, nvcc=nvcc)), *job.args]
    sink = str(running_path(out, job.key))
    if job.kind == "module":
        return [sys.executable, "-m", job.target, "--out", sink, *job.args]
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={gpus}"]
    return [*torchrun, "-m", job.target, "--out", sink, *job.args]


def _stamp(machine: dict[str, Any], env: dict[str, str], records: list[dict[str, Any]]) -> dict[str, Any]:
    nccl = next((r.get("nccl") for r in records if r.get("record") == "meta" and r.get("nccl")), None)
    return {**machine, "nccl": nccl, "nvls": nvls_state(env)}


def _run_job(job: Job, out: Path, gpus: int, nvcc: str, machine: dict[str, Any], timeout: float | None) -> int:
    """Run one job and store what it wrote (complete or not); returns the number of records kept."""
    cmd = _command(job, out, gpus, nvcc)
    env, replaced = keep_multicast_off({**os.environ, **job.env})
    sink = running_path(out, job.key)
    sink.parent.mkdir(parents=True, exist_ok=True)
    sink.unlink(missing_ok=True)
    err_path = out / "raw" / (job.log or f"{job.family}.stderr.log")
    code: int | None = None
    failure = ""
    with err_path.open("a") as err:
        err.write(f"\n# {time.strftime('%Y-%m-%dT%H:%M:%S')} {' '.join(cmd)}\n")
        for note in replaced:
            err.write(f"# rooflib bench: multicast kept off: {note}\n")
        err.flush()
        try:
            with sink.open("a") as stdout:
                code, _ = _call(cmd, stdout if job.kind == "kernel" else err, err, env, job.timeout_s or timeout)
        except subprocess.TimeoutExpired:
            failure = f"timed out after {job.timeout_s or timeout:g} s (its process group was killed)"
        finally:
            with _SIGNALS.critical():
                got = read_job_output(sink, program_stdout=job.kind == "kernel")
                if got.partial is not None:
                    err.write(f"# rooflib bench: dropped a cut-off last line: {got.partial[:200]}\n")
                for number, line in got.bad:
                    err.write(f"# rooflib bench: line {number} is not a JSON record: {line[:200]}\n")
                ok = code == 0 and not failure and not got.bad and got.partial is None
                kept = store_job(out, job.family, job.key, got.records, _stamp(machine, env, got.records), complete=ok)
                sink.unlink(missing_ok=True)
    if failure or code != 0:
        why = failure or f"failed (exit {code})"
        raise RooflibError(f"benchmark job {job.key} {why}; {kept} records kept as incomplete; see {err_path}")
    if got.partial is not None:
        raise RooflibError(f"benchmark job {job.key} ended in a cut-off line; {kept} records kept as incomplete")
    if got.bad:
        number, line = got.bad[0]
        raise RooflibError(
            f"benchmark job {job.key} wrote {len(got.bad)} line(s) that are not JSON records (first, line {number}: "
            f"{line[:80]!r}); its {kept} records are kept as incomplete; see {err_path}"
        )
    return kept


def _kill_group(proc: subprocess.Popen[Any]) -> None:
    """SIGTERM to the job's process group, SIGKILL to whatever is left after :data:`GRACE_S`."""
    for sig, wait in ((signal.SIGTERM, GRACE_S), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            pass


def _call(cmd: list[str], stdout: Any, stderr: Any, env: dict[str, str], timeout: float | None) -> tuple[int, str]:
    """Run ``cmd`` in its own process group; on timeout or interruption end the whole group (torchrun's
    workers too) before raising."""
    with subprocess.Popen(cmd, stdout=stdout, stderr=stderr, text=True, env=env, start_new_session=True) as proc:
        try:
            out, _ = proc.communicate(timeout=timeout)
        except BaseException:  # a timeout, Ctrl-C or SIGTERM: never leave the job's processes running
            with _SIGNALS.critical():
                _kill_group(proc)
            raise
        with _SIGNALS.critical():  # the leader exited: anything it left in its group goes too
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    return proc.returncode, out or ""


def run_bench(
    families: Iterable[str],
    out: str | Path,
    *,
    quick: bool = False,
    nvcc: str = "nvcc",
    progress: bool = True,
    on_error: Callable[[Job, Exception], None] | None = None,
    on_note: Callable[[str], None] | None = None,
    only: Iterable[str] | None = None,
    job_timeout_s: float | None = None,
) -> Path:
    """Run ``families`` on the local GPUs into ``out``; returns the path of ``results.csv``.

    ``only``: job keys (``overlap/gather``, say) to run out of the families' plan; a key the plan lacks is an
    error. ``job_timeout_s``: the time limit of jobs without their own. ``on_note`` hears about repairs of an
    earlier interrupted run. A signal (SIGINT, SIGTERM) stops the run with :class:`BenchInterrupted` after the
    running job's processes are ended and its records stored.
    """
    names = detect_gpus()
    if not names:
        raise RooflibError(
            "no NVIDIA GPU is visible here (nvidia-smi finds none): `rooflib bench` measures a real machine. "
            "Predictions (`rooflib collective`, `transfer`, `roofline`, `report`) need no GPU."
        )
    if job_timeout_s is not None and not job_timeout_s > 0:
        raise RooflibError(f"a job time limit must be > 0 s, got {job_timeout_s!r}")
    root = Path(out)
    try:
        (root / "raw").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RooflibError(f"cannot make the results folder {root}: {exc.strerror or exc}") from None
    planned = plan_jobs(families, len(names), quick=quick)
    if only is not None:
        keys = set(only)
        unknown = keys - {j.key for j in planned}
        if unknown:
            raise RooflibError(f"no such job(s) in the plan: {', '.join(sorted(unknown))}")
        planned = [j for j in planned if j.key in keys]
    models = sorted({gpu_model(n) for n in names})
    machine = {"gpu": " / ".join(models), "driver": _driver()}
    stopped: _Stop | None = None
    with locked(root), _SIGNALS.installed():
        try:
            for note in repair(root):
                if on_note is not None:
                    on_note(note)
            _run_all(planned, root, len(names), nvcc, machine, job_timeout_s, progress, on_error)
        except _Stop as stop:
            stopped = stop
        with _SIGNALS.critical(deliver=False):  # results.csv always matches raw/
            collect(root)
    if stopped is not None:
        name = signal.Signals(stopped.signum).name
        during = f" during job {stopped.job}" if stopped.job else ""
        raise BenchInterrupted(
            f"stopped by {name}{during}: its processes were ended and what it measured is kept as incomplete "
            f"records; rerun the same command to resume (finished jobs are listed in {root / 'done.txt'})",
            stopped.signum,
        )
    return root / "results.csv"


def _run_all(
    planned: list[Job],
    root: Path,
    gpus: int,
    nvcc: str,
    machine: dict[str, Any],
    timeout: float | None,
    progress: bool,
    on_error: Callable[[Job, Exception], None] | None,
) -> None:
    from tqdm import tqdm

    done = read_done(root)
    todo = [j for j in planned if j.key not in done]
    for job in tqdm(todo, desc="rooflib bench", unit="job", disable=not progress):
        try:
            _run_job(job, root, gpus, nvcc, machine, timeout)
        except _Stop as stop:
            stop.job = job.key
            raise
        except (RooflibError, OSError) as exc:
            if on_error is None:
                raise
            on_error(job, exc)
            continue
        with _SIGNALS.critical():
            mark_done(root, job.key)
