"""Fake jobs for the runner: ``use_fake_jobs(monkeypatch, jobs)`` makes ``run_bench`` run ``fake_job.py``.

Also runnable as a driver for the signal tests: ``python fakes.py OUT ARGS...`` runs one fake kernel job with
ARGS through ``run_bench`` and exits 128 + the signal when interrupted.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

FAKE_JOB = Path(__file__).resolve().with_name("fake_job.py")


def patch(runner: Any, jobs: list[Any], setattr_: Any) -> None:
    """Point ``runner`` (rooflib.bench.runner) at ``jobs`` run by fake_job.py on one fake H200."""
    from rooflib.bench.store import running_path

    def command(job: Any, out: Path, gpus: int, nvcc: str) -> list[str]:
        sink = () if job.kind == "kernel" else ("--out", str(running_path(out, job.key)))
        return [sys.executable, str(FAKE_JOB), *sink, *job.args]

    setattr_(runner, "detect_gpus", lambda: ["GPU 0: NVIDIA H200 (UUID: GPU-0000)"])
    setattr_(runner, "_driver", lambda: "580.159.04")
    setattr_(runner, "plan_jobs", lambda families, gpus, quick=False: list(jobs))
    setattr_(runner, "_command", command)


def _drive(out: str, args: list[str]) -> int:
    from rooflib.bench import runner
    from rooflib.bench.plan import Job

    runner.GRACE_S = 0.5
    patch(runner, [Job("fake", "fake/a", "kernel", "fake", tuple(args))], setattr)
    try:
        runner.run_bench(["fake"], out, progress=False)
    except runner.BenchInterrupted as stop:
        print(stop, file=sys.stderr)
        return 128 + stop.signum
    return 0


if __name__ == "__main__":
    sys.exit(_drive(sys.argv[1], sys.argv[2:]))
