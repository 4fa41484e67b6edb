"""``rooflib systems`` (the catalog's systems) and ``rooflib show SYSTEM`` (figures, links, topology)."""

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
from rooflib.cli.describe import figure_rows, figures_json
from rooflib.specs import System
from rooflib.topology import topology_of
from rooflib.units import format_bandwidth

__all__ = ["show", "systems", "topology_summary"]


@click.command()
@json_option
@catalog_option
def systems(as_json: bool, catalog_paths: tuple[Path, ...]) -> None:
    """List the systems of the catalog (built-in plus --catalog paths)."""
    cat = open_catalog(catalog_paths)
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
            }
        )
    if as_json:
        emit_json(rows)
        return
    print_table(
        ["name", "GPUs", "max", "NVLink domain", "device", "scale-out", "description"],
        [
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
        ],
    )


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


def _short(source: str | None, width: int = 72) -> str:
    """A source for a table cell: long free-text sources are cut (``--json`` has them in full)."""
    text = source or ""
    return text if len(text) <= width else text[: width - 3] + "..."


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
            }
        )
        return
    click.echo(f"{spec.display_name} ({system.name}){' - projection' if spec.projection else ''}")
    click.echo(spec.description)
    click.echo(f"sources: {', '.join(spec.sources)}")
    if system.profile is not None:
        click.echo(f"profile: {system.profile.name} ({system.profile.provenance.date})")
    click.echo()
    rows = [[r.field, r.text, _short(r.source)] for r in figure_rows(system.device)]
    print_table(["field", "value", "source"], rows, title=f"device {system.device.display_name}")
    for role, link in links.items():
        click.echo()
        rows = [[r.field, r.text, _short(r.source)] for r in figure_rows(link)]
        print_table(["field", "value", "source"], rows, title=f"{role}: {link.display_name}")
    click.echo()
    rows = [[r.field, r.text, _short(r.source)] for r in figure_rows(system.library)]
    print_table(["field", "value", "source"], rows, title=f"library: {system.library.display_name}")
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
