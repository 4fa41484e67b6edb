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
    launch_option,
    load,
    print_table,
    profile_option,
    system_option,
)
from rooflib.collectives import CollectiveResult, bandwidths, predict_collective
from rooflib.units import format_bandwidth, format_bytes, format_time

__all__ = ["collective", "result_records"]


TIE = 0.03
"""Candidates within this relative time of the fastest are marked as ties (the model cannot tell them apart;
the measured collective error on 2xH200 is 2.7 % median, docs/validation/README.md)."""


def result_records(
    result: CollectiveResult, *, top: int = 5, library: CollectiveResult | None = None
) -> list[dict[str, Any]]:
    """One JSON record per size of ``result`` (keys: op, system, gpus, bytes, algorithm, time_s, ...); with
    ``library`` (the same sizes predicted with ``algorithm="library"``) each record also says what NCCL runs."""
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
        ranked = sorted(times.items(), key=lambda kv: kv[1])
        out[-1]["ties"] = [a for a, t in ranked[1:] if t <= ranked[0][1] * (1 + TIE)]
        if library is not None:
            out[-1]["library"] = {
                "algorithm": library.algorithm[i],
                "protocol": library.protocol[i],
                "time_s": float(library.time_s[i]),
                "busbw_bytes_per_s": float(library.busbw[i]),
            }
    return out


def _print(result: CollectiveResult, records: list[dict[str, Any]], launch: str, many: bool, algorithm: str) -> None:
    click.echo(f"{result.op} on {result.gpus} GPUs of {result.system} ({launch} launch)")
    headers = ["bytes", "algorithm", "protocol", "time", "algbw", "busbw"]
    if algorithm == "auto":
        click.echo(
            "auto: the fastest modelled kernel (NCCL's algorithms and custom symmetric-memory kernels); "
            "library: what NCCL itself runs (plain PyTorch + NCCL)"
        )
        headers = ["bytes", "auto", "protocol", "time", "algbw", "busbw", "library", "time ", "busbw "]
    rows = []
    for r in records:
        row = [
            format_bytes(r["bytes"]),
            r["algorithm"],
            r["protocol"],
            format_time(r["time_s"]),
            format_bandwidth(r["algbw_bytes_per_s"]),
            format_bandwidth(r["busbw_bytes_per_s"]),
        ]
        if "library" in r:
            lib = r["library"]
            row += [lib["algorithm"], format_time(lib["time_s"]), format_bandwidth(lib["busbw_bytes_per_s"])]
        rows.append(row)
    print_table(headers, rows)
    if many:
        return
    rec = records[0]
    click.echo()
    rows = []
    for cand in rec["candidates"]:
        busbw = bandwidths(result.op, result.gpus, rec["bytes"], cand["time_s"])[1]
        mark = "best" if cand is rec["candidates"][0] else ("tie" if cand["algorithm"] in rec["ties"] else "")
        rows.append([cand["algorithm"], format_time(cand["time_s"]), format_bandwidth(float(busbw)), mark])
    print_table(["candidate", "time", "busbw", ""], rows)
    if rec["ties"]:
        click.echo(f"within {100 * TIE:g} % of the best (a tie the model cannot split): {', '.join(rec['ties'])}")
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
    help="auto: the fastest modelled kernel per size (custom symmetric-memory kernels included); library: what "
    "NCCL itself runs (its own algorithm choice: plain PyTorch + NCCL); or one of ring, tree, direct, two_shot, "
    "recursive, nvls, nvls_tree, hierarchical.",
)
@launch_option
@click.option(
    "--dtype",
    default=None,
    help="Element type (bf16, half, fp32, int8, fp8, ...): NVLink multicast (NVLS) reduces 16-bit and wider "
    "types only, so an 8-bit all-reduce or reduce-scatter runs a ring or tree. Default: any (NVLS allowed).",
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
    dtype: str | None,
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
        dtype=dtype,
    )
    library = None
    if algorithm == "auto":
        library = predict_collective(
            op,
            system,
            nbytes=np.asarray(sizes.values, dtype=np.float64),
            gpus=gpus,
            algorithm="library",
            launch=as_launch(launch),
            dtype=dtype,
        )
    records = result_records(result, top=top, library=library)
    if as_json:
        emit_json(records if sizes.many else records[0])
    else:
        _print(result, records, launch, sizes.many, algorithm)
