"""``rooflib trace FILE.py:FUNC``: trace a PyTorch program with no GPU and predict it on a system.

FUNC runs under fake tensors and a fake process group (CPU-only torch is enough; :mod:`rooflib.trace`), its
aten and c10d ops are lowered to the program model and predicted by :func:`rooflib.program.predict_program`.
PyTorch is optional for the rest of rooflib: without it this command prints
``error: rooflib trace needs PyTorch: pip install 'rooflib[trace]'`` and exits with code 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from rooflib.cli.common import (
    ImagePath,
    catalog_option,
    emit_json,
    json_option,
    load,
    profile_option,
    system_option,
)
from rooflib.program.ir import Program
from rooflib.specs import System

__all__ = ["trace", "unmodelled_line"]


def _predict(program: Program, system: System, gpus: int) -> dict[str, Any]:
    from rooflib.program import predict_program

    result: dict[str, Any] = predict_program(program, system, gpus=gpus).as_dict()
    return result


def unmodelled_line(result: dict[str, Any]) -> str:
    """The share of the eager time spent in ops no model knows (costed by the bytes they touch)."""
    rows = list(result.get("unmodelled", []))
    if not rows:
        return "unmodelled: none (every op has a model)"
    share = sum(float(r.get("share", 0.0)) for r in rows)
    listed = ", ".join(f"{r['name']} x{r['count']}" for r in rows)
    return f"unmodelled: {100 * share:.1f} % of the eager time, costed by the bytes they touch ({listed})"


@click.command("trace")
@click.argument("target", metavar="FILE.py:FUNC", required=False)
@click.option(
    "--inputs",
    "inputs_spec",
    metavar="FILE.py:INPUTS",
    default=None,
    help="INPUTS(rank, world, device, **params) returning FUNC's example arguments (a tuple, or a dict of "
    "keyword arguments); without it FUNC is called with none.",
)
@system_option
@click.option("--gpus", "-n", type=click.IntRange(min=1), required=True, help="Ranks the program runs on (1: one GPU).")
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="Keyword for INPUTS (repeatable; an int, else a float, else a string).",
)
@click.option("--out", type=ImagePath(), default=None, help="Also write the timeline plot (.png, .svg or .pdf).")
@click.option(
    "--pkb",
    "pkb_root",
    metavar="ROOT",
    default=None,
    help="A ParallelKernelBench checkout: trace its problem --problem (instead of FILE.py:FUNC) on inputs from "
    "its own builder.",
)
@click.option("--problem", default=None, metavar="ID", help="With --pkb: a problem id (16), stem, or 'all'.")
@click.option("--size", "size_text", default="1024x1024", show_default=True, help="With --pkb: PKB's base shape MxN.")
@click.option("--dtype", default="bfloat16", show_default=True, help="With --pkb: the dtype PKB builds inputs in.")
@click.option(
    "--explain", is_flag=True, help="Per fusable region: which resource binds, why this mechanism and schedule."
)
@json_option
@profile_option
@catalog_option
def trace(
    target: str,
    inputs_spec: str | None,
    system_name: str,
    gpus: int,
    sets: tuple[str, ...],
    out: Path | None,
    pkb_root: str | None,
    problem: str | None,
    size_text: str,
    dtype: str,
    explain: bool,
    as_json: bool,
    profile: str | None,
    catalog_paths: tuple[Path, ...],
) -> None:
    """Trace FUNC with fake tensors and a fake process group (no GPU needed) and predict it on a system:
    per-op device and host times, the bound, the eager and CUDA-graph baselines, and the best plan.

    Ops the model does not know are costed by the bytes they touch and listed as unmodelled.

    \b
    Example:
      rooflib trace tests/trace/programs/tp_mlp.py:tp_mlp --inputs tests/trace/programs/tp_mlp.py:inputs \\
          --system hgx-h100 --gpus 8 --set t=4096 --out tp_mlp.png
      rooflib trace --pkb ../shared/pkb --problem 16 --size 4096x4096 --system hgx-h200 --gpus 8
      rooflib trace --pkb ../shared/pkb --problem all --system hgx-h200 --gpus 8 --json
    """
    from rooflib.trace import capture_trace, load_target, lower, parse_sets
    from rooflib.trace.errors import TraceError, import_torch

    import_torch()
    if pkb_root is not None or problem is not None:
        if target is not None or inputs_spec is not None or sets:
            raise TraceError("--pkb traces a ParallelKernelBench problem: give no FILE.py:FUNC, --inputs or --set")
        if pkb_root is None or problem is None:
            raise TraceError("--pkb ROOT and --problem ID go together")
        from rooflib.cli.trace_pkb import trace_pkb

        system = load(system_name, gpus=gpus, profile=profile, paths=catalog_paths)
        trace_pkb(pkb_root, problem, size_text, dtype, system, gpus, out=out, as_json=as_json, explain=explain)
        return
    if target is None:
        raise TraceError("give FILE.py:FUNC to trace (or --pkb ROOT --problem ID)")
    params = parse_sets(sets)
    system = load(system_name, gpus=gpus, profile=profile, paths=catalog_paths)
    func = load_target(target, "FUNC")
    inputs = load_target(inputs_spec, "INPUTS") if inputs_spec else None
    recorded = capture_trace(func, inputs, world=gpus, params=params, name=target.rpartition(":")[2])
    result = _predict(lower(recorded), system, gpus)
    for note in recorded.notes:
        click.echo(f"note: {note}", err=True)
    if out is not None:
        from rooflib.plot.timeline import TimelineDisplay

        TimelineDisplay.from_prediction(result).savefig(out)
    if as_json:
        emit_json(result)
        return
    from rooflib.cli.programs import print_program

    click.echo(f"traced {recorded.source}: {len(recorded.calls)} calls, {len(result['ops'])} ops")
    print_program(result)
    click.echo(unmodelled_line(result))
    if explain:
        from rooflib.cli.workloads import print_advice

        print_advice(result)
