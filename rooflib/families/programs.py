"""``programs``: small single-GPU PyTorch programs (:mod:`rooflib.bench.programs`) timed eager and as CUDA graphs
(``rooflib.bench.programs_worker``). Run by name, not by ``all``.

Compared by :func:`rooflib.validate.programs.programs_table` (``rooflib trace`` + ``predict_program`` of the same
functions and shapes; ``tools/programs_report.py``), not row by row in ``rooflib validate``. Its per-op records
join the small-op fit (:func:`rooflib.calibrate.compute.small_op_rows`).
"""

from __future__ import annotations

from rooflib.families.base import Absent, Family, Job, Ref, Schema

__all__ = ["FAMILY"]


def plan(family: str, gpus: int, quick: bool) -> list[Job]:
    args = ("--quick",) if quick else ()
    return [Job(family, "programs/all", "module", "rooflib.bench.programs_worker", args, timeout_s=240)]


FAMILY = Family(
    names=("programs",),
    doc=__doc__ or "",
    run="name",
    plan=plan,
    schema=Schema(required=("name", "variant", "gpus", "time_s", "mode"), optional=("tokens", "hidden", "op")),
    predict=Absent("a program is traced and predicted as a whole: rooflib.validate.programs.programs_table"),
    checks=Absent("not validated row by row"),
    reference=Absent("no third-party model"),
    tables=Absent("built by tools/programs_report.py (it needs torch for the tracer)"),
    section=Absent("written by tools/programs_report.py"),
    fit=(Ref("rooflib.calibrate.compute", "small_op_rows", note="per-op records into the small-op fit"),),
    display=Absent("reported as tables"),
)
