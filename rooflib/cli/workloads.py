"""``rooflib workloads``, ``rooflib predict WORKLOAD`` and ``rooflib what-if WORKLOAD``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from rooflib.cli.common import catalog_option, emit_json, json_option, load, print_table, profile_option, system_option
from rooflib.units import format_time

__all__ = ["predict", "what_if", "workloads"]


def _parse_sets(values: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"expected key=value, got {item!r}", param_hint="--set")
        out[key.strip()] = value.strip()
    return out


_SET = click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Workload parameter (repeatable).")


@click.command()
@json_option
def workloads(as_json: bool) -> None:
    """List the workload catalog with parameters and defaults."""
    from rooflib.workloads import load_workloads

    specs = load_workloads()
    if as_json:
        emit_json(
            [
                {
                    "name": s.name,
                    "display_name": s.display_name,
                    "description": s.description.strip(),
                    "parameters": {
                        k: {"kind": p.kind, "default": p.default, "description": p.description}
                        for k, p in s.parameters.items()
                    },
                    "sources": list(s.sources),
                }
                for s, _ in specs.values()
            ]
        )
        return
    rows = [
        (s.name, ", ".join(f"{k}={p.default}" for k, p in s.parameters.items()), s.display_name)
        for s, _ in specs.values()
    ]
    print_table(("workload", "parameters (defaults)", "what"), rows)


def _row(choice: dict[str, Any]) -> tuple[str, str, str, str]:
    sms = str(choice["comm_sms"]) if choice["schedule"] == "inter_sm" else ("all" if choice["comm_sms"] else "-")
    return choice["schedule"], choice["mechanism"], sms, format_time(choice["time_s"])


@click.command()
@click.argument("workload")
@system_option
@click.option("--gpus", "-n", type=click.IntRange(min=1), default=None, help="First N GPUs (default: the system).")
@_SET
@json_option
@profile_option
@catalog_option
def predict(
    workload: str,
    system_name: str,
    gpus: int | None,
    sets: tuple[str, ...],
    as_json: bool,
    profile: str | None,
    catalog_paths: tuple[Path, ...],
) -> None:
    """Bound, PyTorch + NCCL baseline and the best schedule for WORKLOAD (see `rooflib workloads`).

    Example: rooflib predict gemm_rs --system hgx-h100 --gpus 8 --set m=8192 --set n=8192 --set k=16384
    """
    from rooflib.workloads import predict_workload

    system = load(system_name, gpus=gpus, profile=profile, paths=catalog_paths)
    result = predict_workload(workload, system, gpus=gpus, params=_parse_sets(sets)).as_dict()
    if as_json:
        emit_json(result)
        return
    params = " ".join(f"{k}={v}" for k, v in result["params"].items())
    click.echo(f"{workload} on {result['gpus']} GPUs of {system.name}: {params}")
    terms = result["terms"]
    click.echo(
        f"bound {format_time(result['bound_time_s'])} (compute {format_time(terms['compute_s'])}, memory "
        f"{format_time(terms['memory_s'])}, comm {format_time(terms['comm_s'])}); PyTorch + NCCL baseline "
        f"{format_time(result['baseline_time_s'])}"
    )
    best = result["best"]
    click.echo(f"best: {best['schedule']} with {best['mechanism']} ({format_time(best['time_s'])})\n")
    print_table(("schedule", "mechanism", "comm SMs", "time"), [_row(c) for c in result["schedules"]])


@click.command("what-if")
@click.argument("workload")
@click.option("--systems", required=True, help="Comma-separated systems, e.g. hgx-a100,hgx-h100,hgx-b200.")
@click.option("--gpus", "-n", type=click.IntRange(min=1), default=8, show_default=True)
@_SET
@click.option("--sweep", default=None, metavar="KEY=V1,V2,...", help="Also sweep one parameter (a line plot).")
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Write the plot (PNG/SVG/PDF).")
@json_option
@catalog_option
def what_if(
    workload: str,
    systems: str,
    gpus: int,
    sets: tuple[str, ...],
    sweep: str | None,
    out: Path | None,
    as_json: bool,
    catalog_paths: tuple[Path, ...],
) -> None:
    """Bound, baseline and best schedule of WORKLOAD across systems (A100 -> H100 -> B200 -> NVL72 -> ...) and,
    with --sweep, across sizes.

    Example: rooflib what-if gemm_rs --systems hgx-a100,hgx-h100,hgx-b200 --sweep k=1024,4096,16384,65536
    """
    from rooflib.workloads import predict_workload

    params = _parse_sets(sets)
    key: str | None = None
    values: list[str | None] = [None]
    if sweep is not None:
        key, _, listed = sweep.partition("=")
        values = [v.strip() for v in listed.split(",") if v.strip()]
        if not key or not values:
            raise click.BadParameter(f"expected KEY=V1,V2,..., got {sweep!r}", param_hint="--sweep")
    results = []
    for name in [s.strip() for s in systems.split(",") if s.strip()]:
        system = load(name, gpus=gpus, paths=catalog_paths)
        for value in values:
            these = params if key is None else {**params, key: value}
            results.append(predict_workload(workload, system, gpus=gpus, params=these).as_dict())
    if out is not None:
        from rooflib.plot.whatif import WhatIfDisplay, WhatIfSweepDisplay

        if key is None:
            WhatIfDisplay.from_predictions(results).savefig(out)
        else:
            WhatIfSweepDisplay.from_predictions(results, key).savefig(out)
    if as_json:
        emit_json(results)
        return
    rows = [
        (
            r["system"],
            *([str(r["params"][key])] if key else []),
            format_time(r["bound_time_s"]),
            format_time(r["baseline_time_s"]),
            format_time(r["best"]["time_s"]),
            f"{r['best']['schedule']}/{r['best']['mechanism']}",
            f"{r['baseline_time_s'] / r['best']['time_s']:.2f}x",
        )
        for r in results
    ]
    headers = ("system", *([key] if key else []), "bound", "baseline", "best", "schedule", "speed-up")
    print_table(headers, rows)
    if out is not None:
        click.echo(f"wrote {out}")
