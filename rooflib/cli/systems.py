"""``rooflib systems`` (the catalog's systems) and ``rooflib show SYSTEM`` (figures, links, topology).

Both take ``--catalog PATH`` (user files: their systems are listed, marked with the file they come from) and
``--profile NAME|PATH``: ``systems`` marks the system the profile calibrates, ``show`` resolves the system with
the profile and lists every calibrated figure next to the catalog figure it replaces, with its source.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from rooflib.cli.common import (
    catalog_option,
    emit_json,
    json_option,
    load,
    open_catalog,
    print_table,
    profile_option,
)
from rooflib.cli.describe import FigureRow, calibrated_rows, figure_rows, figures_json
from rooflib.specs import Catalog, System
from rooflib.specs.catalog import builtin_data_dir
from rooflib.topology import topology_of
from rooflib.units import format_bandwidth

__all__ = ["show", "systems", "topology_summary"]


def _user_file(catalog: Catalog, name: str) -> str | None:
    """The file a user system comes from (relative to the working folder when inside it); None when built-in."""
    path = catalog.items["system"][name].path.resolve()
    if path.is_relative_to(builtin_data_dir("hardware").resolve()):
        return None
    here = Path.cwd().resolve()
    return str(path.relative_to(here) if path.is_relative_to(here) else path)


@click.command()
@json_option
@profile_option
@catalog_option
def systems(as_json: bool, profile: str | None, catalog_paths: tuple[Path, ...]) -> None:
    """List the systems of the catalog (built-in plus --catalog paths; --profile marks the system it calibrates)."""
    cat = open_catalog(catalog_paths, profile)
    calibrated = None if profile is None else cat.profile(profile)[0]
    rows: list[dict[str, Any]] = []
    for name in cat.names("system"):
        spec = cat.system(name)
        per_node = spec.gpus_per_node
        rows.append(
            {
                "name": name,
                "display_name": spec.display_name,
                "gpus": spec.nodes.default * per_node,
                "gpus_per_node": per_node,
                "max_gpus": spec.nodes.max * per_node,
                "domain_gpus": spec.scale_up.domain_gpus,
                "device": spec.device,
                "library": spec.library,
                "scale_out": None if spec.scale_out is None else spec.scale_out.nic,
                "projection": spec.projection,
                "file": _user_file(cat, name),
                "profile": calibrated.name if calibrated is not None and calibrated.system == name else None,
            }
        )
    if as_json:
        emit_json(rows)
        return
    headers = ["name", "GPUs", "max", "NVLink domain", "device", "scale-out", "description"]
    table = [
        [
            r["name"],
            r["gpus"],
            r["max_gpus"],
            r["domain_gpus"],
            r["device"],
            r["scale_out"] or "-",
            r["display_name"] + (" (projection)" if r["projection"] else ""),
        ]
        for r in rows
    ]
    if calibrated is not None:
        headers.append("profile")
        for line, r in zip(table, rows, strict=True):
            line.append(r["profile"] or "-")
    if any(r["file"] for r in rows):
        headers.append("from")
        for line, r in zip(table, rows, strict=True):
            line.append(_short(r["file"], 60, left=True) if r["file"] else "built-in")
    print_table(headers, table)
    if calibrated is not None and not any(r["profile"] for r in rows):
        click.echo(f"profile {calibrated.name} is for system {calibrated.system!r}, which is not in the catalog")


def topology_summary(system: System) -> dict[str, Any]:
    """GPUs, NVLink domains, per-GPU egress per link class and bisection bandwidth (B/s, one direction)."""
    topo = topology_of(system)
    return {
        "gpus": system.gpus,
        "nodes": system.nodes,
        "domains": len(topo.scale_up_domains()),
        "domain_gpus": system.domain_gpus,
        "egress_bytes_per_s": topo.egress(0),
        "bisection_bytes_per_s": topo.bisection_bandwidth(),
    }


def _short(source: str | None, width: int = 72, *, left: bool = False) -> str:
    """Text for a table cell: long sources and size curves are cut (``--json`` has them in full); ``left`` cuts
    the start instead (for file paths)."""
    text = source or ""
    if len(text) <= width:
        return text
    return "..." + text[-(width - 3) :] if left else text[: width - 3] + "..."


def _cells(rows: list[FigureRow]) -> list[list[str]]:
    return [[r.field, _short(r.text, 48), _short(r.source)] for r in rows]


def _models(system: System) -> dict[str, Any]:
    """The spec models of ``system`` by the name ``show`` prints them under (device, links by role, library)."""
    return {"device": system.device, **_links(system), "library": system.library}


def _links(system: System) -> dict[str, Any]:
    links: dict[str, Any] = {"nvlink": system.link, "nvswitch": system.switch}
    if system.nic is not None:
        links["infiniband"] = system.nic
    if system.host_link is not None:
        links["pcie"] = system.host_link
    return links


@click.command()
@click.argument("system_name", metavar="SYSTEM")
@click.option("--gpus", type=click.IntRange(min=1), default=None, help="Size a cluster to hold this many GPUs.")
@json_option
@profile_option
@catalog_option
def show(
    system_name: str, gpus: int | None, as_json: bool, profile: str | None, catalog_paths: tuple[Path, ...]
) -> None:
    """Device figures (with units and sources), links and topology of SYSTEM."""
    system = load(system_name, gpus=gpus, profile=profile, paths=catalog_paths)
    base = None if profile is None else load(system_name, gpus=gpus, paths=catalog_paths)
    calibrated = [] if base is None else calibrated_rows(_models(base), _models(system))
    topo = topology_summary(system)
    spec = system.spec
    links = _links(system)
    if as_json:
        emit_json(
            {
                "name": system.name,
                "display_name": spec.display_name,
                "description": spec.description,
                "projection": spec.projection,
                "sources": list(spec.sources),
                "gpus_per_node": system.gpus_per_node,
                "profile": None if system.profile is None else system.profile.name,
                "device": {
                    "name": system.device.name,
                    "display_name": system.device.display_name,
                    "figures": figures_json(system.device),
                },
                "links": {
                    role: {"name": link.name, "display_name": link.display_name, "figures": figures_json(link)}
                    for role, link in links.items()
                },
                "library": {"name": system.library.name, "figures": figures_json(system.library)},
                "topology": topo,
                "calibrated": [
                    {"field": f, "value": new.value, "text": new.text, "catalog_text": old.text, "source": new.source}
                    for f, old, new in calibrated
                ],
            }
        )
        return
    click.echo(f"{spec.display_name} ({system.name}){' - projection' if spec.projection else ''}")
    click.echo(spec.description)
    click.echo(f"sources: {', '.join(spec.sources)}")
    if system.profile is not None:
        click.echo(f"profile: {system.profile.name} ({system.profile.provenance.date})")
        click.echo()
        print_table(
            ["field", "calibrated", "catalog", "source"],
            [[f, _short(new.text, 40), _short(old.text, 40), _short(new.source)] for f, old, new in calibrated],
            title=f"calibrated by profile {system.profile.name} ({len(calibrated)} figures)",
        )
    click.echo()
    print_table(
        ["field", "value", "source"], _cells(figure_rows(system.device)), title=f"device {system.device.display_name}"
    )
    for role, link in links.items():
        click.echo()
        print_table(["field", "value", "source"], _cells(figure_rows(link)), title=f"{role}: {link.display_name}")
    click.echo()
    library = system.library
    print_table(["field", "value", "source"], _cells(figure_rows(library)), title=f"library: {library.display_name}")
    click.echo()
    egress = ", ".join(f"{cls} {format_bandwidth(bw)}" for cls, bw in topo["egress_bytes_per_s"].items())
    print_table(
        ["topology", "value"],
        [
            ["GPUs", f"{topo['gpus']} ({topo['nodes']} nodes x {system.gpus_per_node})"],
            ["NVLink domains", f"{topo['domains']} of {topo['domain_gpus']} GPUs"],
            ["egress per GPU", egress],
            ["bisection bandwidth", format_bandwidth(topo["bisection_bytes_per_s"])],
        ],
    )
