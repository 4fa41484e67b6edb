"""``rooflib workloads``, ``rooflib predict WORKLOAD`` and ``rooflib what-if WORKLOAD``."""

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
    open_catalog,
    print_table,
    profile_for,
    profile_option,
    system_option,
)
from rooflib.errors import UnitError
from rooflib.units import format_time

__all__ = ["predict", "print_advice", "what_if", "workloads"]


def print_advice(result: dict[str, Any]) -> None:
    """The rationale of every region (``--explain``): binding resource, mechanism, schedule."""
    for item in result.get("advice", []):
        click.echo()
        click.echo(click.wrap_text(item["rationale"], width=118))


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
@click.option("--system", "-s", "system_name", default=None, metavar="NAME", help="Show defaults as used on it.")
@click.option("--gpus", "-n", type=click.IntRange(min=1), default=None, help="GPU count the defaults divide over.")
@json_option
@profile_option
@catalog_option
def workloads(
    system_name: str | None,
    gpus: int | None,
    as_json: bool,
    profile: str | None,
    catalog_paths: tuple[Path, ...],
) -> None:
    """List the workload catalog with parameters and defaults (with --system/--gpus: as rounded for that group).

    Example: rooflib workloads --system gb200-nvl72 --gpus 72
    """
    from rooflib.workloads import load_workloads, resolve_params
    from rooflib.workloads.predict import _round_defaults

    specs = load_workloads()
    group: int | None = None
    if system_name is not None or gpus is not None:
        if system_name is None:
            raise click.BadParameter("--gpus needs --system", param_hint="--gpus")
        system = load(system_name, gpus=gpus, profile=profile, paths=catalog_paths)
        group = len(system.group(gpus))
    records: list[dict[str, Any]] = []
    for s, _ in specs.values():
        defaults = {k: p.default for k, p in s.parameters.items()}
        notes: list[str] = []
        if group is not None:
            defaults = resolve_params(s, {})
            notes = _round_defaults(s, defaults, {}, group)
        records.append(
            {
                "name": s.name,
                "display_name": s.display_name,
                "description": s.description.strip(),
                "parameters": {
                    k: {"kind": p.kind, "default": defaults[k], "split": p.split, "description": p.description}
                    for k, p in s.parameters.items()
                },
                "sources": list(s.sources),
                "notes": notes,
            }
        )
    if as_json:
        emit_json(records)
        return
    rows = [
        (r["name"], ", ".join(f"{k}={p['default']}" for k, p in r["parameters"].items()), r["display_name"])
        for r in records
    ]
    print_table(("workload", "parameters (defaults)", "what"), rows)
    if group is not None:
        click.echo(f"\ndefaults for {group} GPUs; parameters split over the GPUs round up to a multiple of {group}")


def _mechanism(choice: dict[str, Any]) -> str:
    return f"{choice['mechanism']} ({choice['algorithm']})" if choice.get("algorithm") else choice["mechanism"]


def _key(choice: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(choice.get(k) for k in ("schedule", "mechanism", "algorithm", "comm_sms", "time_s"))


def _row(choice: dict[str, Any], best: dict[str, Any], ties: list[dict[str, Any]]) -> tuple[str, ...]:
    sms = str(choice["comm_sms"]) if choice["schedule"] == "inter_sm" else ("all" if choice["comm_sms"] else "-")
    mark = "best" if _key(choice) == _key(best) else ("tie" if _key(choice) in {_key(t) for t in ties} else "")
    return choice["schedule"], _mechanism(choice), sms, format_time(choice["time_s"]), mark


_LEGEND = (
    "mechanisms: library = NCCL's own algorithm as a separate call (the baseline); auto = the fastest modelled "
    "collective kernel as a separate call (as `rooflib collective`); a transfer mechanism (copy_engine, tma, ldst, "
    "multimem; +rdma_* across NVLink domains) = a fused kernel sending the bytes itself"
)


@click.command()
@click.argument("workload")
@system_option
@click.option("--gpus", "-n", type=click.IntRange(min=1), default=None, help="First N GPUs (default: the system).")
@_SET
@click.option(
    "--tie-tolerance",
    type=click.FloatRange(0.0, 1.0, max_open=True),
    default=None,
    help="Schedules within this relative time of the best are reported as ties (default: the model's measured "
    "choice error, 0.03).",
)
@click.option(
    "--out",
    type=ImagePath(),
    default=None,
    help="For a program: also write its timeline plot (.png, .svg or .pdf).",
)
@click.option(
    "--explain",
    is_flag=True,
    help="Per fusable region: which resource binds, why this mechanism and this schedule.",
)
@json_option
@profile_option
@catalog_option
def predict(
    workload: str,
    system_name: str,
    gpus: int | None,
    sets: tuple[str, ...],
    tie_tolerance: float | None,
    out: Path | None,
    explain: bool,
    as_json: bool,
    profile: str | None,
    catalog_paths: tuple[Path, ...],
) -> None:
    """Bound, PyTorch + NCCL baseline and the best schedule for WORKLOAD (see `rooflib workloads`).

    Example: rooflib predict gemm_rs --system hgx-h100 --gpus 8 --set m=8192 --set n=8192 --set k=16384
    """
    from rooflib.workloads import TIE_TOLERANCE, load_workloads, predict_workload

    catalog = open_catalog(catalog_paths, profile)
    tol = TIE_TOLERANCE if tie_tolerance is None else tie_tolerance
    if workload not in load_workloads() and workload in catalog.names("program"):
        sets_ = _parse_sets(sets)
        _predict_program(workload, system_name, gpus, sets_, tol, as_json, profile, catalog, out, explain)
        return
    system = load(system_name, gpus=gpus, profile=profile, catalog=catalog)
    result = predict_workload(workload, system, gpus=gpus, params=_parse_sets(sets), tie_tolerance=tol).as_dict()
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
    click.echo(
        f"CUDA graph of the plain program {format_time(result['graph_time_s'])}; host issue "
        f"{format_time(result['host_time_s'])} per eager iteration"
    )
    best, ties = result["best"], result["ties"]
    line = (
        f"best: {best['schedule']} with {_mechanism(best)} ({format_time(best['time_s'])}, "
        f"{format_time(best['graph_time_s'])} replayed as a CUDA graph)"
    )
    if ties:
        pct = 100 * result["tie_tolerance"]
        line += f"; within {pct:g} % (a tie the model cannot split): " + ", ".join(
            f"{c['schedule']}/{_mechanism(c)}" for c in ties
        )
    click.echo(line)
    for note in result["notes"]:
        click.echo(f"note: {note}")
    click.echo()
    rows = [_row(c, best, ties) for c in result["schedules"]]
    print_table(("schedule", "mechanism", "comm SMs", "time", ""), rows)
    click.echo(f"\n{_LEGEND}")
    if explain:
        print_advice(result)


def _predict_program(
    name: str,
    system_name: str,
    gpus: int | None,
    sets: dict[str, str],
    tie_tolerance: float,
    as_json: bool,
    profile: str | None,
    catalog: Any,
    out: Path | None,
    explain: bool = False,
) -> None:
    """``rooflib predict PROGRAM``: a ``kind: program`` file of a ``--catalog`` folder, as workloads are predicted."""
    from rooflib.cli.programs import print_program
    from rooflib.errors import RooflibError, SpecError
    from rooflib.program import ProgramError
    from rooflib.program.spec import load_spec
    from rooflib.workloads.predict import predict_spec

    system = load(system_name, gpus=gpus, profile=profile, catalog=catalog)
    spec, path = load_spec(catalog, name)
    try:
        result = predict_spec(spec, system, gpus=gpus, params=sets, tie_tolerance=tie_tolerance).as_dict()
    except RooflibError as exc:
        if isinstance(exc, SpecError) or str(path) in str(exc):
            raise
        raise ProgramError(f"{path}: program {name!r}: {exc}") from None
    if out is not None:
        from rooflib.plot.timeline import TimelineDisplay

        TimelineDisplay.from_prediction(result).savefig(out)
    if as_json:
        emit_json(result)
        return
    print_program(result)
    if explain:
        print_advice(result)


def _parse_sweep(sweeps: tuple[str, ...], params: dict[str, str]) -> tuple[str | None, list[str | None]]:
    """``(key, values)`` of the one ``--sweep KEY=V1,V2,...`` (``(None, [None])`` without one)."""
    if len(sweeps) > 1:
        raise click.BadParameter(
            f"given {len(sweeps)} times ({', '.join(sweeps)}); sweep one parameter at a time", param_hint="--sweep"
        )
    if not sweeps:
        return None, [None]
    key, _, listed = sweeps[0].partition("=")
    key = key.strip()
    values: list[str | None] = [v.strip() for v in listed.split(",") if v.strip()]
    if not key or not values:
        raise click.BadParameter(f"expected KEY=V1,V2,..., got {sweeps[0]!r}", param_hint="--sweep")
    if key in params:
        raise click.BadParameter(f"{key} is both swept and set (--set {key}={params[key]})", param_hint="--sweep")
    return key, values


@click.command("what-if")
@click.argument("workload")
@click.option("--systems", required=True, help="Comma-separated systems, e.g. hgx-a100,hgx-h100,hgx-b200.")
@click.option("--gpus", "-n", type=click.IntRange(min=1), default=8, show_default=True)
@_SET
@click.option(
    "--sweep", "sweeps", multiple=True, metavar="KEY=V1,V2,...", help="Also sweep one parameter (a line plot)."
)
@click.option("--out", type=ImagePath(), default=None, help="Write the plot (.png, .svg or .pdf, from the suffix).")
@json_option
@profile_option
@catalog_option
def what_if(
    workload: str,
    systems: str,
    gpus: int,
    sets: tuple[str, ...],
    sweeps: tuple[str, ...],
    out: Path | None,
    as_json: bool,
    profile: str | None,
    catalog_paths: tuple[Path, ...],
) -> None:
    """Bound, baseline and best schedule of WORKLOAD across systems (A100 -> H100 -> B200 -> NVL72 -> ...) and,
    with --sweep, across sizes.

    Example: rooflib what-if gemm_rs --systems hgx-a100,hgx-h100,hgx-b200 --sweep k=1024,4096,16384,65536
    """
    from rooflib.workloads import predict_workload

    params = _parse_sets(sets)
    key, values = _parse_sweep(sweeps, params)
    names = [s.strip() for s in systems.split(",") if s.strip()]
    if not names:
        raise UnitError(f"--systems {systems!r} names no system; give a comma-separated list, e.g. hgx-h100,hgx-b200")
    catalog = open_catalog(catalog_paths, profile)
    if profile is not None and not any(profile_for(catalog, profile, n) for n in names):
        raise UnitError(f"--profile {profile!r} is for none of the systems {', '.join(names)}")
    results = []
    for name in names:
        system = load(name, gpus=gpus, profile=profile_for(catalog, profile, name), catalog=catalog)
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
