"""``overlap``: compute and communication overlap schedules on two GPUs (``kernels/overlap.cu``): sequential,
intra-SM (warp-specialised) and inter-SM with S communication SMs, tiles scattered to the peer (GEMM + RS) and, job
``overlap/gather``, input blocks gathered from it (AG + GEMM), over compute per byte.

No prediction per row: :func:`rooflib.validate.overlap.overlap_table` composes the stand-alone runs
(``compute_only``, ``comm_only``) with the schedule model and compares each combined run, and
:func:`~rooflib.validate.overlap.schedule_choice_summary` scores the predicted schedule choice. Fit: the copy
engine's cost per further piece (:func:`rooflib.calibrate.transfer.ce_piece_cost`, inside ``fit_transfers``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rooflib.families.base import Absent, Family, Figure, Job, Ref, Schema

if TYPE_CHECKING:
    from pathlib import Path

    import pandas as pd

    from rooflib.specs.resolve import System
    from rooflib.validate.report import Validation

__all__ = ["FAMILY"]

# --direction gather: 256 input blocks of 32 KiB per GPU, each read by 8 output tiles (2048 tiles, as AG + GEMM);
# inter_ce in pieces of 8, 32 and 128 blocks, each issue form (stream, graph, preissued: the program's default)
_GATHER = ("--direction", "gather", "--tiles", "256", "--reuse", "8", "--tile-bytes", "32K", "--ce-chunk", "8,32,128")


def plan(family: str, gpus: int, quick: bool) -> list[Job]:
    """Overlap schedules on two GPUs. Scatter (each sends its output tiles to the other, GEMM + reduce-scatter): the
    default problem, a 4x larger one, 64 KiB tiles. Gather (each computes from the other's input blocks, all-gather +
    GEMM): 256 blocks x 8 output tiles each."""
    if gpus < 2:
        return []
    sweep: tuple[str, ...]
    if quick:
        sweep = ("--iters", "1,16,128", "--comm-sms", "1,8", "--iters-timing", "5", "--warmup", "1")
        return [
            Job(family, "overlap/t1056", "kernel", "overlap", ("--tiles", "1056", *sweep)),
            Job(family, "overlap/gather", "kernel", "overlap", (*_GATHER, *sweep)),
        ]
    iters = "1,2,4,8,16,24,32,48,64,96,128,192,256,384,512,1024"  # comm-bound to compute-bound, dense near the cross
    sweep = ("--iters", iters, "--comm-sms", "1,2,4,8,12,16,24,32", "--iters-timing", "30")
    return [
        Job(family, "overlap/t1056", "kernel", "overlap", ("--tiles", "1056", *sweep)),
        Job(family, "overlap/t4224", "kernel", "overlap", ("--tiles", "4224", *sweep)),
        Job(family, "overlap/b64k", "kernel", "overlap", ("--tiles", "1056", "--tile-bytes", "64K", *sweep)),
        Job(family, "overlap/gather", "kernel", "overlap", (*_GATHER, *sweep)),
    ]


def tables(frame: pd.DataFrame, system: System) -> dict[str, pd.DataFrame]:
    from rooflib.validate.overlap import overlap_table, schedule_choice_summary

    over = overlap_table(frame, system)
    if over.empty:
        return {}
    return {"overlap": over, "overlap_choices": schedule_choice_summary(over)}


def draw(v: Validation, path: Path) -> str | None:
    from rooflib.plot.validation import OverlapScheduleDisplay

    over = v.tables.get("overlap")
    if over is None or over.empty:
        return None
    return OverlapScheduleDisplay(over).savefig(path).name


def section(v: Validation, out: Path, plots: bool) -> list[str]:
    from rooflib.validate.overlap import TIE_PCT

    over, choices = v.tables.get("overlap"), v.tables.get("overlap_choices")
    if over is None or choices is None or choices.empty:
        return []
    per = over.groupby("schedule")["err_pct"].agg(lambda e: float(e.abs().median()))
    lines = [
        "## Overlap schedules (overlap microbenchmark)",
        "",
        f"{len(over)} points; median |error| of time: "
        + ", ".join(f"{k} {val:.1f} %" for k, val in per.items())
        + f". Over {len(choices)} (job, compute-per-byte) settings the predicted winner (intra- vs inter-SM) is"
        f" right in {choices['winner_ok'].mean() * 100:.0f} %, the best inter-SM S within one step in"
        f" {choices['best_s_ok'].mean() * 100:.0f} %, both in {choices['choice_ok'].mean() * 100:.0f} %"
        f" ({choices['choice_ok_tie'].mean() * 100:.0f} % counting measured ties within {TIE_PCT:g} % as"
        " either); following the prediction costs"
        f" {choices['regret_pct'].median():.1f} % (median; max {choices['regret_pct'].max():.1f} %) over the"
        " fastest measured choice; the chosen schedule's predicted time is off by"
        f" {choices['chosen_err_pct'].abs().median():.1f} % (median)."
        " Details: `overlap.csv`, `overlap_choices.csv`.",
        "",
    ]
    if plots:
        lines += [f"![overlap]({draw(v, out / FIGURE.file)})", ""]
    return lines


FIGURE = Figure("overlap.png", draw, rank=None)

FAMILY = Family(
    names=("overlap",),
    doc=__doc__ or "",
    run="all",
    plan=plan,
    schema=Schema(
        required=("name", "variant", "gpus", "job", "record", "tiles", "tile_bytes"),
        optional=("schedule", "comm_sms", "iters", "time_s", "send_path", "ce_chunk", "reuse", "input_blocks"),
    ),
    predict=Absent("a combined run is predicted from the same job's stand-alone runs: see tables"),
    checks=Absent("overlap_table skips jobs without stand-alone runs"),
    reference=Absent("no third-party model of overlap schedules"),
    tables=tables,
    section=section,
    fit=(Ref("rooflib.calibrate.transfer", "ce_piece_cost", note="copy_engine.piece_cost, via fit_transfers"),),
    display=(FIGURE,),
)
