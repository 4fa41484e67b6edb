"""``host``: host issue costs of PyTorch ops, kernel launches and NCCL calls (``rooflib.bench.host_worker``; its
NCCL job needs two GPUs). Run by name, not by ``all``.

Fit: the device's host figures (:func:`rooflib.calibrate.compute.fit_compute_profile` with host rows, and
:func:`rooflib.calibrate.host.fit_host` for ``tools/programs_report.py``); not compared by ``rooflib validate``.
"""

from __future__ import annotations

from rooflib.families.base import Absent, Family, Job, Ref, Schema

__all__ = ["FAMILY"]


def plan(family: str, gpus: int, quick: bool) -> list[Job]:
    calls = ("--calls", "500" if quick else "2000")
    jobs = [
        Job(family, "host/local", "module", "rooflib.bench.host_worker", ("--part", "local", *calls), timeout_s=120)
    ]
    if gpus >= 2:
        jobs.append(
            Job(family, "host/nccl", "torchrun", "rooflib.bench.host_worker", ("--part", "nccl", *calls), timeout_s=180)
        )
    return jobs


FAMILY = Family(
    names=("host",),
    doc=__doc__ or "",
    run="name",
    plan=plan,
    schema=Schema(required=("name", "variant", "gpus", "time_s", "calls", "device_s"), optional=("op", "aten")),
    predict=Absent("host costs are model inputs, fitted not predicted"),
    checks=Absent("not validated row by row"),
    reference=Absent("no third-party model"),
    tables=Absent("the fit's checks (rooflib.calibrate.host.host_checks) compare them"),
    section=Absent("reported by tools/programs_report.py"),
    fit=(
        Ref("rooflib.calibrate.compute", "fit_compute_profile", note="host rows"),
        Ref("rooflib.calibrate.host", "fit_host"),
    ),
    display=Absent("reported as tables"),
)
