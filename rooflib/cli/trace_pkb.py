"""``rooflib trace --pkb ROOT --problem ID|all``: ParallelKernelBench problems traced and predicted (the
formatting; the work is :mod:`rooflib.trace.pkb` and :mod:`rooflib.trace.pkb_table`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from rooflib.cli.common import emit_json, print_table
from rooflib.specs import System
from rooflib.units import format_time

__all__ = ["print_rows", "trace_pkb"]


def _plan(best: dict[str, Any] | None) -> str:
    if not best:
        return "-"
    fused = best.get("fused") or []
    regions = "+".join(r["pattern"] for r in fused)
    return f"{best['schedule']}/{best['mechanism']}" + (f" [{regions}]" if regions else "")


def print_rows(rows: list[dict[str, Any]]) -> None:
    """The ``--problem all`` table."""
    body = []
    for r in rows:
        if r.get("error"):
            body.append((r["problem"], r["category"], "-", "-", "-", "-", "-", "-", f"error: {r['error'][:60]}"))
            continue
        body.append(
            (
                r["problem"],
                r["category"],
                format_time(r["bound_time_s"]),
                format_time(r["baseline_time_s"]),
                format_time(r["graph_time_s"]),
                _plan(r["best"]),
                f"{r['speedup_available']:.2f}x" if r["speedup_available"] else "-",
                f"{100 * r['unmodelled_share']:.1f} %",
                "values" if r["values"] else "",
            )
        )
    headers = ("problem", "category", "bound", "baseline", "graph", "best plan", "speed-up available", "unmodelled", "")
    print_table(headers, body)
    ok = [r for r in rows if not r.get("error")]
    low = sum(1 for r in ok if r["unmodelled_share"] < 0.05)
    click.echo(f"{len(ok)}/{len(rows)} traced; {low} with under 5 % of the eager time unmodelled")


def trace_pkb(
    root: str,
    problem: str,
    size_text: str,
    dtype: str,
    system: System,
    gpus: int,
    *,
    out: Path | None,
    as_json: bool,
    explain: bool = False,
) -> None:
    """Trace one PKB problem (or ``all``) and print or emit its prediction."""
    from rooflib.trace.pkb import open_suite, parse_size
    from rooflib.trace.pkb_table import problem_result, suite_rows

    suite = open_suite(root)
    size = parse_size(size_text)
    if problem.strip().lower() == "all":
        rows = suite_rows(suite, size, system, gpus, dtype=dtype)
        if as_json:
            emit_json({"system": system.name, "gpus": gpus, "size": list(size), "dtype": dtype, "problems": rows})
        else:
            print_rows(rows)
        return
    result = problem_result(suite, suite.problem(problem), size, system, gpus, dtype)
    if out is not None:
        from rooflib.plot.timeline import TimelineDisplay

        TimelineDisplay.from_prediction(result).savefig(out)
    if as_json:
        emit_json(result)
        return
    from rooflib.cli.programs import print_program
    from rooflib.cli.trace import unmodelled_line

    pkb = result["pkb"]
    how = " (run with values on the host)" if pkb["values"] else ""
    click.echo(f"ParallelKernelBench {pkb['problem']} ({pkb['category']}), size {size[0]}x{size[1]} {dtype}{how}")
    print_program(result)
    click.echo(unmodelled_line(result))
    if explain:
        from rooflib.cli.workloads import print_advice

        print_advice(result)
