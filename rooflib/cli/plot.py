"""``rooflib plot KIND --out FILE``: the four plots of :mod:`rooflib.plot`, written off-screen (Agg)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from rooflib.cli.common import (
    as_launch,
    as_reduction,
    catalog_option,
    load,
    open_catalog,
    profile_for,
    profile_option,
    system_option,
)
from rooflib.cli.roofline import dtype_option, kernel_option
from rooflib.plot.kernels import Kernel
from rooflib.specs.devices import DType

__all__ = ["plot"]

F = TypeVar("F", bound=Callable[..., Any])


def out_option(f: F) -> F:
    return click.option(
        "--out",
        "-o",
        required=True,
        type=click.Path(dir_okay=False, path_type=Path),
        help="Image file to write (PNG, SVG or PDF, from the suffix).",
    )(f)


def _names(text: str | None) -> list[str]:
    return [t.strip() for t in (text or "").split(",") if t.strip()]


@click.group()
def plot() -> None:
    """Write a plot: roofline, comm-roofline, collective or mechanism-map."""


@plot.command("roofline")
@system_option
@out_option
@dtype_option
@click.option("--achievable", is_flag=True, help="Add the achievable roofs (dashed).")
@kernel_option
@profile_option
@catalog_option
def roofline_plot(
    system_name: str,
    out: Path,
    dtype: DType,
    achievable: bool,
    kernels: tuple[Kernel, ...],
    profile: str | None,
    catalog_paths: tuple[Path, ...],
) -> None:
    """Hierarchical roofline: L2, HBM, NVLink and IB roofs, compute peaks per dtype, ridge points."""
    from rooflib.plot import HierarchicalRooflineDisplay, file_axes

    system = load(system_name, profile=profile, paths=catalog_paths)
    HierarchicalRooflineDisplay.from_system(
        system, dtype=dtype, achievable=achievable, kernels=kernels, ax=file_axes()
    ).savefig(out)
    click.echo(f"wrote {out}")


@plot.command("comm-roofline")
@system_option
@out_option
@dtype_option
@click.option("--achievable", is_flag=True, help="Use achievable rates for the roofs and bounds.")
@kernel_option
@profile_option
@catalog_option
def comm_roofline_plot(
    system_name: str,
    out: Path,
    dtype: DType,
    achievable: bool,
    kernels: tuple[Kernel, ...],
    profile: str | None,
    catalog_paths: tuple[Path, ...],
) -> None:
    """Communication-aware roofline with kernels as points (default: example tensor-parallel kernels)."""
    from rooflib.plot import CommRooflineDisplay, file_axes

    system = load(system_name, profile=profile, paths=catalog_paths)
    CommRooflineDisplay.from_system(
        system, kernels or None, dtype=dtype, achievable=achievable, ax=file_axes()
    ).savefig(out)
    click.echo(f"wrote {out}")


@plot.command("collective")
@out_option
@click.option("--system", "-s", "system_name", default=None, metavar="NAME", help="One system: a curve per algorithm.")
@click.option("--systems", "system_names", default=None, metavar="A,B,C", help="Several systems: a curve each.")
@click.option("--op", default="all_reduce", show_default=True, help="Collective operation.")
@click.option("--gpus", "-n", type=click.IntRange(min=1), default=None, help="First N GPUs (default: all).")
@click.option(
    "--algorithms",
    default=None,
    metavar="A,B",
    help="Algorithms to draw with --system (default: all applicable); with --systems, one (default auto).",
)
@click.option("--launch", type=click.Choice(["stream", "graph"]), default="stream", show_default=True)
@profile_option
@catalog_option
def collective_plot(
    out: Path,
    system_name: str | None,
    system_names: str | None,
    op: str,
    gpus: int | None,
    algorithms: str | None,
    launch: str,
    profile: str | None,
    catalog_paths: tuple[Path, ...],
) -> None:
    """Bus bandwidth against message size, with the raw link peak as a dashed roof."""
    from rooflib.plot import CollectiveBandwidthDisplay, file_axes

    if (system_name is None) == (system_names is None):
        raise click.UsageError("give exactly one of --system NAME or --systems A,B,C")
    how = as_launch(launch)
    algs = _names(algorithms)
    if system_name is not None:
        system = load(system_name, gpus=gpus, profile=profile, paths=catalog_paths)
        CollectiveBandwidthDisplay.from_system(
            system, op, gpus, algorithms=algs or None, launch=how, ax=file_axes()
        ).savefig(out)
    else:
        if len(algs) > 1:
            raise click.UsageError("with --systems, --algorithms takes one algorithm (or auto)")
        cat = open_catalog(catalog_paths, profile)
        systems = [
            load(name, gpus=gpus, profile=profile_for(cat, profile, name), catalog=cat) for name in _names(system_names)
        ]
        if not systems:
            raise click.UsageError("--systems needs at least one name")
        CollectiveBandwidthDisplay.from_systems(
            systems, op, gpus, algorithm=algs[0] if algs else "auto", launch=how, ax=file_axes()
        ).savefig(out)
    click.echo(f"wrote {out}")


@plot.command("mechanism-map")
@system_option
@out_option
@click.option(
    "--reduction",
    type=click.Choice(["none", "peer", "switch"]),
    default="none",
    show_default=True,
    help="Only mechanisms that can add into the peer (peer) or reduce in the switch (switch).",
)
@profile_option
@catalog_option
def mechanism_map_plot(
    system_name: str, out: Path, reduction: str, profile: str | None, catalog_paths: tuple[Path, ...]
) -> None:
    """Fastest transfer mechanism over message size (128 B..1 GiB) and SM budget (1..all SMs)."""
    from rooflib.plot import MechanismMapDisplay, file_axes

    system = load(system_name, profile=profile, paths=catalog_paths)
    MechanismMapDisplay.from_system(system, reduction=as_reduction(reduction), ax=file_axes()).savefig(out)
    click.echo(f"wrote {out}")
