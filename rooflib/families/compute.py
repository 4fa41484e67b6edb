"""``compute`` and ``compute-holdout``: GEMMs, memory-bound ops and attention through PyTorch on one GPU
(``rooflib.bench.compute_worker``, one module job per part with a soft limit inside and a hard one outside);
``compute-holdout`` is the worker's second grid, for out-of-sample checks. Run by name, not by ``all``.

Compared by ``python -m rooflib.calibrate.compute_report`` (docs/validation/h200/report-x1-compute), not by
``rooflib validate``. Fit: :func:`rooflib.calibrate.compute.fit_compute_profile` (``compute`` rows only: the
holdout grid is never fitted).
"""

from __future__ import annotations

from rooflib.families.base import Absent, Family, Job, Ref, Schema

__all__ = ["FAMILY"]

PART_LIMITS_S = {"gemm": 150, "memory": 110, "attention": 70}
"""Each part's soft time limit inside the worker (s); the job's hard limit is one minute more."""


def plan(family: str, gpus: int, quick: bool) -> list[Job]:
    q = ("--quick",) if quick else ()
    grid = ("--grid", "holdout") if family == "compute-holdout" else ()
    return [
        Job(
            family,
            f"{family}/{part}",
            "module",
            "rooflib.bench.compute_worker",
            ("--part", part, "--max-seconds", str(s), *grid, *q),
            timeout_s=s + 60,
        )
        for part, s in PART_LIMITS_S.items()
    ]


FAMILY = Family(
    names=("compute", "compute-holdout"),
    doc=__doc__ or "",
    run="name",
    plan=plan,
    schema=Schema(
        required=("name", "variant", "gpus", "time_s", "op", "dtype", "flops", "bytes_moved"),
        optional=("m", "n", "k", "kernels", "eager_s"),
    ),
    predict=Absent("compared by rooflib.calibrate.compute_report, not rooflib validate"),
    checks=Absent("not validated row by row"),
    reference=Absent("no third-party model"),
    tables=Absent("compared by rooflib.calibrate.compute_report"),
    section=Absent("report written by rooflib.calibrate.compute_report"),
    fit=(Ref("rooflib.calibrate.compute", "fit_compute_profile", note="compute rows; compute-holdout held out"),),
    display=Absent("figures drawn by rooflib.calibrate.compute_report"),
)
