"""``rooflib report``: roofs, collectives, transfer mechanisms and plots for every system of the catalog.

For each system: bf16 roofs and ridge points; all-reduce, all-gather and all-to-all at a few sizes on the NVLink
domain (capped at the system size) and, for systems whose scale-out network joins several NVLink domains, on 8
domains (8 nodes of a DGX SuperPOD, 8 racks of NVL72; capped at the system size); the best transfer mechanism
with all SMs at 4 KiB, 1 MiB and 1 GiB. Writes ``summary.json`` and four plots per system; the collective plot
of a cluster has one panel per group (the domain, then the multi-node group).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

import rooflib
from rooflib.cli.common import catalog_option, emit_json, jsonable, open_catalog, profile_for, profile_option
from rooflib.cli.roofline import roofs_record
from rooflib.collectives import predict_collective
from rooflib.errors import RooflibError
from rooflib.plot.roofline import LEVEL_NAMES
from rooflib.roof import roofs
from rooflib.specs import Catalog, System, load_system
from rooflib.transfer import predict_transfer
from rooflib.units import format_bandwidth, format_bytes, format_flops, format_time

__all__ = [
    "COLLECTIVE_SIZES",
    "REPORT_OPS",
    "TRANSFER_SIZES",
    "OptionError",
    "collective_groups",
    "report",
    "system_summary",
]

REPORT_OPS = ("all_reduce", "all_gather", "all_to_all")
COLLECTIVE_SIZES = (64 * 2**10, 16 * 2**20, 2**30)
TRANSFER_SIZES = (4 * 2**10, 2**20, 2**30)
MULTI_NODE_DOMAINS = 8
PLOTS = ("roofline", "comm-roofline", "collective", "mechanism-map")


class OptionError(RooflibError, ValueError):
    """An option whose value names nothing (an empty list); the message names the option."""


def collective_groups(system: System) -> list[int]:
    """Group sizes to report: the NVLink domain, plus 8 domains (capped at the system) on systems that scale out
    past one domain: 64 GPUs of a DGX H100 SuperPOD, 576 of a GB200 NVL72 SuperPOD."""
    groups = [system.domain_gpus]
    if system.spec.scale_out is not None and system.gpus > system.domain_gpus:
        groups.append(min(system.gpus, MULTI_NODE_DOMAINS * system.domain_gpus))
    return groups


def system_summary(system: System) -> dict[str, Any]:
    """The numbers of one system's report (SI units)."""
    collectives = []
    for gpus in collective_groups(system):
        for op in REPORT_OPS:
            r = predict_collective(op, system, nbytes=list(COLLECTIVE_SIZES), gpus=gpus)
            for i, size in enumerate(COLLECTIVE_SIZES):
                collectives.append(
                    {
                        "op": op,
                        "gpus": gpus,
                        "bytes": size,
                        "algorithm": r.algorithm[i],
                        "protocol": r.protocol[i],
                        "time_s": float(r.time_s[i]),
                        "algbw_bytes_per_s": float(r.algbw[i]),
                        "busbw_bytes_per_s": float(r.busbw[i]),
                    }
                )
    transfers = []
    for size in TRANSFER_SIZES:
        t = predict_transfer(system, size)
        best = t.options[0]
        transfers.append(
            {
                "bytes": size,
                "best": t.best,
                "sms": best.sms,
                "time_s": best.time_s,
                "bandwidth_bytes_per_s": best.bandwidth_bytes_per_s,
            }
        )
    spec = system.spec
    return {
        "name": system.name,
        "display_name": spec.display_name,
        "projection": spec.projection,
        "device": system.device.name,
        "gpus": system.gpus,
        "domain_gpus": system.domain_gpus,
        "profile": None if system.profile is None else system.profile.name,
        "roofs": roofs_record(roofs(system, "bf16")),
        "collectives": collectives,
        "transfers": transfers,
    }


def write_plots(system: System, folder: Path) -> dict[str, str]:
    """The four plots of ``system`` into ``folder``; returns kind -> file name."""
    from rooflib.plot import (
        CollectiveGroupsDisplay,
        CommRooflineDisplay,
        HierarchicalRooflineDisplay,
        MechanismMapDisplay,
        example_kernels,
        file_axes,
    )
    from rooflib.plot.groups import PANEL_HEIGHT

    folder.mkdir(parents=True, exist_ok=True)
    kernels = example_kernels(system)
    groups = collective_groups(system)
    panels = file_axes((7.0, PANEL_HEIGHT * len(groups)))
    displays = {
        "roofline": HierarchicalRooflineDisplay.from_system(system, achievable=True, kernels=kernels, ax=file_axes()),
        "comm-roofline": CommRooflineDisplay.from_system(system, kernels, ax=file_axes()),
        "collective": CollectiveGroupsDisplay.from_system(system, "all_reduce", groups, ax=panels),
        "mechanism-map": MechanismMapDisplay.from_system(system, ax=file_axes()),
    }
    files = {}
    for kind, display in displays.items():
        path = display.savefig(folder / f"{kind}.png")
        files[kind] = path.name
    return files


def print_summary(s: dict[str, Any]) -> None:
    rf = s["roofs"]
    tag = " (projection)" if s["projection"] and "projection" not in s["display_name"] else ""
    click.echo(f"== {s['name']}: {s['display_name']}{tag}, {s['gpus']} GPUs of {s['device']}")
    levels = {"hbm": rf["hbm_bytes_per_s"], **rf["links_bytes_per_s"]}
    roofs_text = " | ".join(
        f"{LEVEL_NAMES.get(k, k)} {format_bandwidth(v)} (ridge {rf['ridge_points'][k]:,.0f} FLOP/B)"
        for k, v in levels.items()
    )
    click.echo(f"   bf16 {format_flops(rf['compute_flops_per_s'])} | {roofs_text}")
    click.echo(f"   {'collective':<11}{'GPUs':>5}  {'bytes':>8}  {'algorithm':<13}{'time':>9}  {'busbw':>10}")
    for c in s["collectives"]:
        click.echo(
            f"   {c['op']:<11}{c['gpus']:>5}  {format_bytes(c['bytes']):>8}  {c['algorithm']:<13}"
            f"{format_time(c['time_s']):>9}  {format_bandwidth(c['busbw_bytes_per_s']):>10}"
        )
    best = " | ".join(
        f"{format_bytes(t['bytes'])}: {t['best']} ({t['sms']} SMs) {format_time(t['time_s'])}" for t in s["transfers"]
    )
    click.echo(f"   best transfer: {best}")


def _load_all(names: list[str], catalog: Catalog, profile: str | None) -> list[System]:
    return [load_system(n, profile=profile_for(catalog, profile, n), catalog=catalog) for n in names]


@click.command()
@click.option(
    "--out",
    "-o",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("rooflib-report"),
    show_default=True,
    help="Folder for summary.json and the plots.",
)
@click.option(
    "--systems",
    "system_names",
    default="all",
    show_default=True,
    metavar="all|A,B",
    help="Systems to report: all of the catalog, or a comma list.",
)
@click.option("--plots/--no-plots", default=True, show_default=True, help="Write the four plots per system.")
@click.option("--json", "as_json", is_flag=True, help="Print summary.json instead of the tables.")
@profile_option
@catalog_option
def report(
    out_dir: Path, system_names: str, plots: bool, as_json: bool, profile: str | None, catalog_paths: tuple[Path, ...]
) -> None:
    """Report every system: roofs, collectives, best transfer mechanisms, plots (into --out)."""
    start = time.perf_counter()
    cat = open_catalog(catalog_paths, profile)
    names = cat.names("system") if system_names.strip() == "all" else [n.strip() for n in system_names.split(",")]
    names = [n for n in names if n]
    if not names:
        valid = ", ".join(cat.names("system"))
        raise OptionError(f"--systems {system_names!r} names no system; give all or a comma list of: {valid}")
    systems = _load_all(names, cat, profile)
    summaries = []
    for system in systems:
        summary = system_summary(system)
        if plots:
            files = write_plots(system, out_dir / system.name)
            summary["plots"] = {kind: f"{system.name}/{name}" for kind, name in files.items()}
        summaries.append(summary)
        if not as_json:
            print_summary(summary)
            click.echo()
    document = {
        "rooflib_version": rooflib.__version__,
        "profile": profile,
        "collective_sizes": list(COLLECTIVE_SIZES),
        "transfer_sizes": list(TRANSFER_SIZES),
        "systems": summaries,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "summary.json").write_text(json.dumps(jsonable(document), indent=2, allow_nan=False) + "\n")
    if as_json:
        emit_json(document)
    else:
        click.echo(
            f"wrote {out_dir / 'summary.json'}"
            + (" and plots" if plots else "")
            + f" in {time.perf_counter() - start:.1f} s"
        )
