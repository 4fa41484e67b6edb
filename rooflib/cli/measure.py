"""``rooflib bench``, ``rooflib calibrate``, ``rooflib validate`` and ``rooflib import-nccl-tests``."""

from __future__ import annotations

import json
import math
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from rooflib.cli.common import emit_json, json_option, print_table

if TYPE_CHECKING:
    from rooflib.bench.multicast import NvlsState

__all__ = ["bench", "calibrate_cmd", "import_nccl_tests", "validate_cmd"]


@click.command()
@click.argument("families", nargs=-1)
@click.option("--out", "-o", "out", required=True, type=click.Path(path_type=Path), help="Results folder.")
@click.option("--quick", is_flag=True, help="Fewer sizes and iterations (a smoke test).")
@click.option("--nvcc", default="nvcc", show_default=True, help="CUDA compiler for the shipped kernels.")
@click.option("--keep-going", is_flag=True, help="Record a failing job and go on with the others.")
@click.option(
    "--job-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help="Stop a job (its whole process group) after this long; jobs with their own limit keep it.",
)
def bench(
    families: tuple[str, ...], out: Path, quick: bool, nvcc: str, keep_going: bool, job_timeout: float | None
) -> None:
    """Measure the local GPUs: FAMILIES from p2p, latency, ceilings, gemm, nccl, overlap, tp, or all (default);
    compute, host and programs (one GPU: compute accuracy, host costs, single-GPU programs) run by name.

    Results go to OUT/raw/*.jsonl as each job ends and OUT/results.csv after; a rerun skips finished jobs and
    redoes failed or interrupted ones, replacing their records (never duplicating them). Ctrl-C or SIGTERM ends
    the running job's whole process group; what it measured is kept. NVLink multicast is never used
    (NCCL_NVLS_ENABLE=0 is forced for every job).
    """
    from rooflib.bench.runner import FAMILIES, BenchInterrupted, run_bench

    chosen = FAMILIES if not families or "all" in families else families
    failed: list[str] = []

    def note(job: object, exc: Exception) -> None:
        failed.append(f"{getattr(job, 'key', job)}: {exc}")

    def repaired(text: str) -> None:
        click.echo(f"note: {text}", err=True)

    try:
        path = run_bench(
            chosen,
            out,
            quick=quick,
            nvcc=nvcc,
            on_error=note if keep_going else None,
            on_note=repaired,
            job_timeout_s=job_timeout,
        )
    except BenchInterrupted as stop:
        for line in failed:
            click.echo(f"failed: {line}", err=True)
        click.echo(f"error: {stop}", err=True)
        sys.exit(128 + stop.signum)
    _summary(out)
    click.echo(f"wrote {path}")
    for line in failed:
        click.echo(f"failed: {line}", err=True)
    if failed:
        sys.exit(1)


@contextmanager
def _warnings_on_stderr() -> Iterator[None]:
    """Print the library's measurement warnings as ``warning: ...`` lines on stderr; others pass through."""
    from rooflib.calibrate.checks import MeasurementWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MeasurementWarning)
        try:
            yield
        finally:
            for w in caught:
                if issubclass(w.category, MeasurementWarning):
                    click.echo(f"warning: {w.message}", err=True)
                else:
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _summary(out: Path) -> None:
    from rooflib.calibrate.data import load_results
    from rooflib.errors import RooflibError

    try:
        frame = load_results(out)
    except (RooflibError, ValueError) as exc:  # every job failed: nothing to summarise
        click.echo(f"no measurements to summarise: {exc}", err=True)
        return
    rows = []
    for (family, name, variant), grp in frame.groupby(["family", "name", "variant"]):
        ok = int(grp["verified"].sum())
        best = ""
        if "bytes_per_s" in grp and grp["bytes_per_s"].notna().any():
            best = f"{float(grp['bytes_per_s'].max()) / 1e9:.1f} GB/s"
        elif "busbw_bytes_per_s" in grp and grp["busbw_bytes_per_s"].notna().any():
            best = f"busbw {float(grp['busbw_bytes_per_s'].max()) / 1e9:.1f} GB/s"
        elif "flop_per_s" in grp and grp["flop_per_s"].notna().any():
            best = f"{float(grp['flop_per_s'].max()) / 1e12:.0f} TFLOP/s"
        elif "flops_per_s" in grp and grp["flops_per_s"].notna().any():
            best = f"{float(grp['flops_per_s'].max()) / 1e12:.0f} TFLOP/s"
        elif family == "latency":
            best = f"{float(grp['time_s'].median()) * 1e9:.0f} ns"
        rows.append((family, name, variant, len(grp), f"{ok}/{len(grp)}", best))
    print_table(("family", "name", "variant", "points", "verified", "best"), rows)


@click.command("calibrate")
@click.argument("results", type=click.Path(exists=True, path_type=Path))
@click.option("--system", "-s", "system_name", required=True, help="Catalog system the machine is an instance of.")
@click.option("--out", "-o", "out", required=True, type=click.Path(path_type=Path), help="Profile YAML to write.")
@click.option("--name", default=None, help="Profile name (default: the file name).")
@click.option("--force", is_flag=True, help="Use measurements of another GPU model than the system's (warns).")
@json_option
def calibrate_cmd(results: Path, system_name: str, out: Path, name: str | None, force: bool, as_json: bool) -> None:
    """Fit the model to RESULTS (a `rooflib bench` folder) and write a calibrated profile."""
    from rooflib.calibrate import calibrate

    command = "rooflib " + " ".join(sys.argv[1:]) if sys.argv[1:] else "rooflib calibrate"
    with _warnings_on_stderr():
        profile = calibrate(results, system_name, out, name=name, command=command, force=force)
    if as_json:
        emit_json(profile)
        return
    click.echo(f"wrote {out}: {len(profile['overrides'])} fitted figures for {system_name}")
    for q in profile["fit"]["quality"]:
        if "median_abs_pct" in q:
            click.echo(f"  {q['family']}: in-sample median {q['median_abs_pct']:.1f}%, max {q['max_abs_pct']:.1f}%")


@click.command("validate")
@click.argument("results", type=click.Path(exists=True, path_type=Path))
@click.option("--system", "-s", "system_name", required=True, help="Catalog system the machine is an instance of.")
@click.option("--profile", default=None, metavar="NAME|PATH", help="Calibrated profile to compare as well.")
@click.option("--out", "-o", "out", type=click.Path(path_type=Path), default=None, help="Folder for the report.")
@click.option("--no-plots", is_flag=True)
@click.option("--force", is_flag=True, help="Use measurements of another GPU model than the system's (warns).")
@json_option
def validate_cmd(
    results: Path, system_name: str, profile: str | None, out: Path | None, no_plots: bool, force: bool, as_json: bool
) -> None:
    """Predicted against measured for every family in RESULTS; with --out, writes REPORT.md, CSVs and plots."""
    from rooflib.validate import validate

    with _warnings_on_stderr():
        v = validate(results, system_name, profile=profile, out=out, plots=not no_plots, force=force)
    if as_json:
        emit_json(json.loads(v.errors.to_json(orient="records")))
        return
    rows = []
    for rec in v.errors.to_dict("records"):
        above = rec["max_abs_pct_above_1MiB"]
        rows.append(
            (
                rec["family"],
                rec["name"],
                rec["variant"],
                rec["model"],
                rec["n"],
                f"{rec['median_abs_pct']:.1f}%",
                f"{rec['max_abs_pct']:.1f}%",
                "-" if math.isnan(above) else f"{above:.1f}%",
            )
        )
    print_table(("family", "name", "variant", "model", "n", "median |err|", "max |err|", "max > 1 MiB"), rows)
    if out is not None:
        click.echo(f"wrote {out / 'REPORT.md'}")


@click.command("import-nccl-tests")
@click.argument("text", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", "-o", "out", required=True, type=click.Path(path_type=Path), help="Results folder.")
@click.option("--op", default=None, help="Collective, when the log does not name its test (all_reduce, alltoall, ...).")
@click.option("--gpus", type=click.IntRange(min=1), default=None, help="Ranks, when the log does not list them.")
@click.option(
    "--nvls",
    type=click.Choice(["on", "off", "unknown"]),
    default=None,
    help="Whether NCCL could use NVLS, when the log does not say (NCCL_DEBUG=INFO logs say).",
)
def import_nccl_tests(text: Path, out: Path, op: str | None, gpus: int | None, nvls: str | None) -> None:
    """Add the tables printed by nccl-tests (all_reduce_perf, ...) in TEXT to a results folder.

    The collective, GPU count and model, NCCL version and NVLS state are read from the log; the folder is then
    ready for `rooflib calibrate` and `rooflib validate`. Importing the same log again replaces it.
    """
    from rooflib.bench.nccl_import import import_nccl_tests as run_import

    state: NvlsState | None = "on" if nvls == "on" else "off" if nvls == "off" else "unknown" if nvls else None
    done = run_import(text, out, op=op, gpus=gpus, nvls=state)
    for run in done.runs:
        where = f"{run.gpus} GPUs" + (f" ({run.gpu_model})" if run.gpu_model else "")
        nccl = f", NCCL {run.nccl}" if run.nccl else ""
        click.echo(f"{text} line {run.first_line}: {run.op} on {where}{nccl}, NVLS {run.nvls}; {run.timing}")
        if run.nvls == "unknown":
            click.echo(f"warning: {text}: NVLS state unknown ({run.nvls_evidence})", err=True)
    again = f", replacing {done.replaced} earlier import(s) of this log" if done.replaced else ""
    click.echo(f"added {done.points} points to {out}{again}")
