"""Printing a program prediction (``rooflib predict PROGRAM`` and ``rooflib trace``): summary, ops, advice."""

from __future__ import annotations

from typing import Any

import click

from rooflib.cli.common import print_table
from rooflib.units import format_bytes, format_time

__all__ = ["print_program"]


def print_program(d: dict[str, Any]) -> None:
    """The readable form of :meth:`rooflib.program.ProgramPrediction.as_dict`."""
    click.echo(f"{d['program']} on {d['gpus']} GPUs of {d['system']}")
    terms = d["terms"]
    click.echo(
        f"bound {format_time(d['bound_time_s'])} (compute {format_time(terms['compute_s'])}, memory "
        f"{format_time(terms['memory_s'])}, comm {format_time(terms['comm_s'])}: no kernel beats it)"
    )
    click.echo(
        f"eager PyTorch + NCCL {format_time(d['baseline_time_s'])} (host issue {format_time(d['host_time_s'])} per "
        f"iteration); CUDA graph {format_time(d['graph_time_s'])}"
    )
    best = d["best"]
    graph = f", {format_time(best['graph_time_s'])} replayed as a CUDA graph" if "graph_time_s" in best else ""
    click.echo(f"best: {best['schedule']} with {best['mechanism']} ({format_time(best['time_s'])}{graph})")
    for region in best.get("fused", []):
        sms = f", {region['comm_sms']} comm SMs" if region["schedule"] == "inter_sm" else ""
        absorbs = f", absorbing {len(region['absorbs'])} copies/fills" if region.get("absorbs") else ""
        click.echo(
            f"  fuse {' + '.join(region['ops'])} ({region['pattern']}): {region['schedule']} with "
            f"{region['mechanism']}{sms}{absorbs}"
        )
    for note in d.get("notes", []):
        click.echo(f"note: {note}")
    click.echo()
    rows = [
        (
            o["name"],
            o["kind"] + (f" ({o['algorithm']})" if o.get("algorithm") else ""),
            o["stream"],
            format_time(o["device_time_s"]),
            format_time(o["host_time_s"]),
            format_time(o["start_s"]),
            format_time(o["end_s"]),
            format_bytes(o["hbm_bytes"]) if o["hbm_bytes"] else "-",
        )
        for o in d["ops"]
    ]
    print_table(("op", "kind", "stream", "device", "host", "start", "end", "HBM"), rows)
    if d["unmodelled"]:
        click.echo()
        print_table(
            ("unmodelled op", "count", "time", "share"),
            [
                (u["name"], u["count"], format_time(u["device_time_s"]), f"{100 * u['share']:.1f} %")
                for u in d["unmodelled"]
            ],
        )
