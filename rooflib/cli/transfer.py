"""``rooflib transfer``: one message between two GPUs by each mechanism under an SM budget."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from rooflib.cli.common import (
    SizeList,
    SizeSpec,
    as_reduction,
    catalog_option,
    emit_json,
    json_option,
    load,
    print_table,
    profile_option,
    system_option,
)
from rooflib.transfer import MECHANISMS, TransferResult, predict_transfer
from rooflib.units import format_bandwidth, format_bytes, format_time

__all__ = ["transfer", "transfer_record"]


def transfer_record(result: TransferResult) -> dict[str, Any]:
    """JSON record: bytes, sms (the budget), best, mechanisms (fastest first), unavailable, link_bytes_per_s."""
    return {
        "bytes": int(result.nbytes),
        "sms": result.sms,
        "best": result.best,
        "mechanisms": [
            {
                "mechanism": o.mechanism,
                "time_s": o.time_s,
                "bandwidth_bytes_per_s": o.bandwidth_bytes_per_s,
                "sms": o.sms,
            }
            for o in result.options
        ],
        "unavailable": dict(result.unavailable),
        "link_bytes_per_s": result.link_bytes_per_s,
        "ties": _ties(result),
    }


TIE = 0.03
"""Mechanisms within this relative time of the fastest are reported as ties (the model's calibrated transfer
error is 1.9 % median on 2xH200, docs/validation/README.md)."""


def _ties(result: TransferResult) -> list[str]:
    best = result.options[0].time_s
    return [o.mechanism for o in result.options[1:] if o.time_s <= best * (1 + TIE)]


@click.command()
@system_option
@click.option(
    "--bytes",
    "-b",
    "size",
    type=SizeList(single=True),
    default="1MiB",
    show_default=True,
    help="Message size: 4KiB, 1MiB, 1GiB, 4096.",
)
@click.option("--sms", type=click.IntRange(min=0), default=None, help="SM budget for the transfer (default: all SMs).")
@click.option(
    "--mechanism",
    "-m",
    type=click.Choice(["auto", *MECHANISMS], case_sensitive=False),
    default="auto",
    show_default=True,
    help="Mechanism to predict (auto: every capable one, best first).",
)
@click.option(
    "--reduction",
    type=click.Choice(["none", "peer", "switch"]),
    default="none",
    show_default=True,
    help="Need to add into the peer's memory (peer) or reduce in the NVSwitch (switch).",
)
@click.option("--src", type=click.IntRange(min=0), default=0, show_default=True, help="Source GPU.")
@click.option("--dst", type=click.IntRange(min=0), default=1, show_default=True, help="Destination GPU.")
@click.option("--pull", is_flag=True, help="The receiver reads from the sender's memory instead of the sender writing.")
@json_option
@profile_option
@catalog_option
def transfer(
    system_name: str,
    size: SizeSpec,
    sms: int | None,
    mechanism: str,
    reduction: str,
    src: int,
    dst: int,
    pull: bool,
    as_json: bool,
    profile: str | None,
    catalog_paths: tuple[Path, ...],
) -> None:
    """Predict one GPU-to-GPU message by copy engine, TMA, register ld/st or multimem.

    Example: rooflib transfer --system hgx-h100 --bytes 1MiB --sms 8
    """
    system = load(system_name, gpus=max(src, dst) + 1, profile=profile, paths=catalog_paths)
    result = predict_transfer(
        system,
        size.values[0],
        sms=sms,
        mechanism=mechanism.lower(),
        reduction=as_reduction(reduction),
        src=src,
        dst=dst,
        pull=pull,
    )
    if as_json:
        emit_json(transfer_record(result))
        return
    click.echo(
        f"{format_bytes(result.nbytes)} from GPU {src} to GPU {dst} on {system.name}, budget {result.sms} SMs, "
        f"path {format_bandwidth(result.link_bytes_per_s)} per direction"
    )
    ties = _ties(result)
    rows: list[list[object]] = [
        [
            o.mechanism + (" (best)" if o.mechanism == result.best else " (tie)" if o.mechanism in ties else ""),
            o.sms,
            format_time(o.time_s),
            format_bandwidth(o.bandwidth_bytes_per_s),
        ]
        for o in result.options
    ]
    rows += [[m, "-", "-", f"unavailable: {why}"] for m, why in result.unavailable.items()]
    print_table(["mechanism", "SMs", "time", "bandwidth"], rows)
    if ties:
        click.echo(f"within {100 * TIE:g} % of the best (a tie the model cannot split): {', '.join(ties)}")
