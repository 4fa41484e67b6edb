"""``rooflib collective OP``: time, algbw and busbw of a collective (nccl-tests conventions) on a system."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import numpy as np

from rooflib.cli.common import (
    SizeList,
    SizeSpec,
    as_launch,
    catalog_option,
    emit_json,
    json_option,
    load,
    print_table,
    profile_option,
    system_option,
)
from rooflib.collectives import CollectiveResult, bandwidths, predict_collective
from rooflib.units import format_bandwidth, format_bytes, format_time

__all__ = ["collective", "result_records"]


def result_records(result: CollectiveResult, *, top: int = 5) -> list[dict[str, Any]]:
    """One JSON record per size of ``result`` (keys: op, system, gpus, bytes, algorithm, time_s, ...)."""
    out = []
    for i, size in enumerate(result.nbytes):
        times = {alg: float(t[i]) for alg, t in result.candidates.items()}
        out.append(
            {
                "op": result.op,
                "system": result.system,
                "gpus": result.gpus,
                "bytes": int(size),
                "algorithm": result.algorithm[i],
                "time_s": float(result.time_s[i]),
                "algbw_bytes_per_s": float(result.algbw[i]),
                "busbw_bytes_per_s": float(result.busbw[i]),
                "candidates": [{"algorithm": a, "time_s": t} for a, t in sorted(times.items(), key=lambda kv: kv[1])],
                "protocol": result.protocol[i],
                "link_loads": [
                    {
                        "from": ld.source,
                        "to": ld.target,
                        "cls": ld.cls,
                        "bytes": ld.bytes,
                        "utilization": ld.utilization,
                    }
                    for ld in result.link_loads(i, top=top)
                ],
                "not_applicable": dict(result.not_applicable),
            }
        )
    return out


def _print(result: CollectiveResult, records: list[dict[str, Any]], launch: str, many: bool) -> None:
    click.echo(f"{result.op} on {result.gpus} GPUs of {result.system} ({launch} launch)")
    rows = [
        [
            format_bytes(r["bytes"]),
            r["algorithm"],
            r["protocol"],
            format_time(r["time_s"]),
            format_bandwidth(r["algbw_bytes_per_s"]),
            format_bandwidth(r["busbw_bytes_per_s"]),
        ]
        for r in records
    ]
    print_table(["bytes", "algorithm", "protocol", "time", "algbw", "busbw"], rows)
    if many:
        return
    rec = records[0]
    click.echo()
    rows = []
    for cand in rec["candidates"]:
        busbw = bandwidths(result.op, result.gpus, rec["bytes"], cand["time_s"])[1]
        rows.append([cand["algorithm"], format_time(cand["time_s"]), format_bandwidth(float(busbw))])
    print_table(["candidate", "time", "busbw"], rows)
    for alg, why in rec["not_applicable"].items():
        click.echo(f"not applicable: {alg}: {why}")
    if rec["link_loads"]:
        click.echo()
        rows = [
            [ld["from"], ld["to"], ld["cls"], format_bytes(ld["bytes"]), f"{100 * ld['utilization']:.0f}%"]
            for ld in rec["link_loads"]
        ]
        print_table(["busiest links: from", "to", "class", "bytes", "busy"], rows)


@click.command()
@click.argument("op")
@system_option
@click.option(
    "--gpus",
    "-n",
    type=click.IntRange(min=1),
    default=None,
    help="Use the first N GPUs (a cluster is sized to hold them). Default: the whole system.",
)
@click.option(
    "--bytes",
    "-b",
    "sizes",
    type=SizeList(),
    default="1GiB",
    show_default=True,
    help="Size S (nccl-tests): 1GiB, 64MB, 4096; a list 1MiB,1GiB; or a range 1KiB:1GiB (powers of 2).",
)
@click.option(
    "--algorithm",
    "-a",
    default="auto",
    show_default=True,
    help="auto (fastest per size) or ring, tree, direct, two_shot, recursive, nvls, hierarchical.",
)
@click.option(
    "--launch",
    type=click.Choice(["stream", "graph"]),
    default="stream",
    show_default=True,
    help="Launch cost per call: plain stream launch or a replayed CUDA graph.",
)
@click.option("--top", type=click.IntRange(min=0), default=5, show_default=True, help="Busiest links to report.")
@json_option
@profile_option
@catalog_option
def collective(
    op: str,
    system_name: str,
    gpus: int | None,
    sizes: SizeSpec,
    algorithm: str,
    launch: str,
    top: int,
    as_json: bool,
    profile: str | None,
    catalog_paths: tuple[Path, ...],
) -> None:
    """Predict collective OP (all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, ...).

    Example: rooflib collective all_reduce --system hgx-h100 --gpus 8 --bytes 1KiB:1GiB
    """
    system = load(system_name, gpus=gpus, profile=profile, paths=catalog_paths)
    result = predict_collective(
        op,
        system,
        nbytes=np.asarray(sizes.values, dtype=np.float64),
        gpus=gpus,
        algorithm=algorithm,
        launch=as_launch(launch),
    )
    records = result_records(result, top=top)
    if as_json:
        emit_json(records if sizes.many else records[0])
    else:
        _print(result, records, launch, sizes.many)
