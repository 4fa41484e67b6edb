"""Ctrl-C (SIGINT) and SIGTERM end the running job's whole process group, keep what it measured, and the next
run resumes. The run is a subprocess (tests/bench/fakes.py) so that the signal goes to it, not to pytest."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rooflib.bench.plan import Job
from rooflib.bench.runner import run_bench
from rooflib.bench.store import read_done

FAKES = Path(__file__).resolve().with_name("fakes.py")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by its parent) counts as gone
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _wait_gone(pid: int, seconds: float = 10.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize(
    ("sig", "extra"), [(signal.SIGINT, ()), (signal.SIGTERM, ()), (signal.SIGINT, ("--ignore-term",))]
)
def test_a_signal_ends_the_job_group_and_the_next_run_resumes(
    tmp_path: Path, sig: signal.Signals, extra: tuple[str, ...], fake_jobs: Callable[[list[Any]], None]
) -> None:
    out, pids = tmp_path / "run", tmp_path / "pids"
    args = ["--sleep", "60", "--child-pid-file", str(pids), *extra]
    driver = subprocess.Popen(
        [sys.executable, str(FAKES), str(out), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        end = time.monotonic() + 30
        while not pids.exists():
            assert driver.poll() is None, driver.communicate()
            assert time.monotonic() < end, "the fake job never started"
            time.sleep(0.05)
        job_pid, child_pid = (int(x) for x in pids.read_text().split())
        driver.send_signal(sig)
        _, err = driver.communicate(timeout=30)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert driver.returncode == 128 + sig, err
    assert f"stopped by {sig.name} during job fake/a" in err and "rerun the same command" in err
    assert _wait_gone(job_pid) and _wait_gone(child_pid), "the job's process group survived"
    records = [json.loads(line) for line in (out / "raw" / "fake.jsonl").read_text().splitlines()]
    assert len([r for r in records if r["record"] == "point"]) == 3 and not any(r["complete"] for r in records)
    assert read_done(out) == set() and (out / "results.csv").exists()
    fake_jobs([Job("fake", "fake/a", "kernel", "fake", ())])  # the rerun: the job finishes this time
    run_bench(["fake"], out, progress=False)
    records = [json.loads(line) for line in (out / "raw" / "fake.jsonl").read_text().splitlines()]
    assert len([r for r in records if r["record"] == "point"]) == 3 and all(r["complete"] for r in records)
    assert read_done(out) == {"fake/a"}
