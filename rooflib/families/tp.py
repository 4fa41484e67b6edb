"""``tp``: tensor-parallel GEMM + collective through PyTorch on two GPUs (``rooflib.bench.tp_worker``): sequential
``torch.matmul`` + NCCL, PyTorch's fused symmetric-memory ops and the copy-engine pipeline
(:mod:`rooflib.bench.ce_pipeline`, one job per shape, with a time limit).

No prediction per row: :func:`rooflib.validate.tp.tp_table` puts each measured shape next to
``predict_workload``'s bound, PyTorch + NCCL baseline, best schedule and inter-SM copy-engine schedule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rooflib.families.base import Absent, Family, Figure, Job, Schema

if TYPE_CHECKING:
    from pathlib import Path

    import pandas as pd

    from rooflib.specs.resolve import System
    from rooflib.validate.report import Validation

__all__ = ["FAMILY"]


def plan(family: str, gpus: int, quick: bool) -> list[Job]:
    """Tensor-parallel GEMM + collective (sequential vs PyTorch's fused async-TP ops), one torchrun job."""
    if gpus < 2:
        return []
    shapes: tuple[str, ...] = ("--ms", "4096", "--ks", "1024,8192", "--iters", "5") if quick else ("--iters", "10")
    jobs = [Job(family, "tp/all", "torchrun", "rooflib.bench.tp_worker", shapes)]
    # the copy-engine pipeline: one process per shape (several in one process hung once in a device-side
    # barrier, docs/validation/h200/runs/x2-ce)
    ms, ks = ((4096,), (1024, 8192)) if quick else ((4096, 8192, 16384), (1024, 4096, 16384))
    for w in ("gemm_rs", "ag_gemm"):
        for m in ms:
            for k in ks:
                args = ("--workloads", w, "--impls", "ce_pipeline", "--ms", str(m), "--ks", str(k), "--iters", "10")
                job = Job(family, f"tp/ce/{w}/{m}/{k}", "torchrun", "rooflib.bench.tp_worker", args, timeout_s=240)
                jobs.append(job)
    return jobs


def tables(frame: pd.DataFrame, system: System) -> dict[str, pd.DataFrame]:
    from rooflib.validate.tp import tp_table

    tp = tp_table(frame, system)
    return {} if tp.empty else {"tp": tp}


def draw(v: Validation, path: Path) -> str | None:
    from rooflib.plot.validation import TensorParallelDisplay

    tp = v.tables.get("tp")
    if tp is None or tp.empty:
        return None
    return TensorParallelDisplay(tp).savefig(path).name


def section(v: Validation, out: Path, plots: bool) -> list[str]:
    tp = v.tables.get("tp")
    if tp is None or tp.empty:
        return []
    lines = [
        "## Tensor-parallel ops (torch)",
        "",
        f"{len(tp)} shapes; PyTorch + NCCL baseline predicted within"
        f" {tp['baseline_err_pct'].abs().median():.1f} % (median |error|,"
        f" max {tp['baseline_err_pct'].abs().max():.1f} %)"
        f" of the measured sequential runs; bound below every measured run: {bool(tp['bound_below_all'].all())}."
        f" Each at its measurement's GEMM duty ({_duties(tp, 'baseline_duty')}: the first 0.1 s a process keeps"
        " the GPU busy is a burst, `rooflib.validate.tp`). Details: `tp.csv`.",
        "",
    ]
    if "ce_err_pct" in tp and tp["ce_err_pct"].notna().any():
        ce = tp["ce_err_pct"].dropna()
        lines += [
            f"Copy-engine pipeline (cuBLAS pieces, peer copies on a side stream), {len(ce)} shapes: the predicted"
            f" inter-SM copy-engine schedule is within {ce.abs().median():.1f} % (median |error|, max"
            f" {ce.abs().max():.1f} %) of the measured pipeline"
            f" ({_duties(tp.dropna(subset=['ce_err_pct']), 'ce_duty')}).",
            "",
        ]
    if plots:
        lines += [f"![tensor-parallel ops]({draw(v, out / FIGURE.file)})", ""]
    return lines


def _duties(tp: pd.DataFrame, column: str) -> str:
    """How many comparisons ran at each duty, e.g. ``"7 burst, 29 sustained"``."""
    counts: dict[str, int] = {str(d): int(n) for d, n in tp[column].value_counts().items()} if column in tp else {}
    return ", ".join(f"{n} {duty}" for duty, n in sorted(counts.items())) or "no duty"


FIGURE = Figure("tp.png", draw, rank=None)

FAMILY = Family(
    names=("tp",),
    doc=__doc__ or "",
    run="all",
    plan=plan,
    schema=Schema(
        required=("name", "variant", "gpus", "workload", "impl", "m", "n", "k", "time_s"),
        optional=("time_s_fastest_gpu", "dtype"),
    ),
    predict=Absent("a shape is predicted as a whole workload (bound, baseline, schedules): see tables"),
    checks=Absent("tp_table names a row the workload model refuses"),
    reference=Absent("no third-party model of tensor-parallel ops"),
    tables=tables,
    section=section,
    fit=Absent("validation only: the workload model composes figures fitted from p2p, gemm and nccl"),
    display=(FIGURE,),
)
