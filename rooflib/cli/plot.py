"""``rooflib plot KIND --out FILE``: the four plots of :mod:`rooflib.plot`, written off-screen (Agg)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from rooflib.cli.common import (
    ImagePath,
    as_launch,
    as_reduction,
    catalog_option,
    launch_option,
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
        type=ImagePath(),
        help="Image file to write (.png, .svg or .pdf, from the suffix).",
    )(f)


def _names(text: str | None) -> list[str]:
    return [t.strip() for t in (text or "").split(",") if t.strip()]


def _group_sizes(text: str | None) -> list[int]:
    """``--gpus``: ``N`` or ``N,M,...`` (whole numbers >= 1); empty for none given."""
    sizes = []
    for item in _names(text):
        if not item.isdigit() or int(item) < 1:
            raise click.BadParameter(f"expected N or N,M,... (whole numbers >= 1), got {text!r}", param_hint="--gpus")
        sizes.append(int(item))
    if text is not None and not sizes:
        raise click.BadParameter(f"expected N or N,M,..., got {text!r}", param_hint="--gpus")
    return sizes


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
@click.option(
    "--gpus",
    "-n",
    "gpus_text",
    default=None,
    metavar="N[,M...]",
    help="First N GPUs (default: all); with --system, N,M,... draws one panel per group size (e.g. 8,64).",
)
@click.option(
    "--algorithms",
    default=None,
    metavar="A,B",
    help="Algorithms to draw with --system (default: all applicable); with --systems, one (default auto).",
)
@launch_option
@profile_option
@catalog_option
def collective_plot(
    out: Path,
    system_name: str | None,
    system_names: str | None,
    op: str,
    gpus_text: str | None,
    algorithms: str | None,
    launch: str,
    profile: str | None,
    catalog_paths: tuple[Path, ...],
) -> None:
    """Bus bandwidth against message size, with the raw link peak as a dashed roof.

    With --system and --gpus N,M,... one panel per group, e.g. a cluster's NVLink domain and 8 nodes:

    \b
      rooflib plot collective --system dgx-h100-superpod --gpus 8,64 --out busbw.png
    """
    from rooflib.plot import CollectiveBandwidthDisplay, CollectiveGroupsDisplay, file_axes
    from rooflib.plot.groups import PANEL_HEIGHT

    if (system_name is None) == (system_names is None):
        raise click.UsageError("give exactly one of --system NAME or --systems A,B,C")
    how = as_launch(launch)
    algs = _names(algorithms)
    groups = _group_sizes(gpus_text)
    gpus = groups[0] if len(groups) == 1 else None
    if system_name is not None and len(groups) > 1:
        if algs:
            raise click.UsageError("--algorithms draws one group; with --gpus N,M,... every algorithm is drawn")
        system = load(system_name, gpus=max(groups), profile=profile, paths=catalog_paths)
        CollectiveGroupsDisplay.from_system(
            system, op, groups, launch=how, ax=file_axes((7.0, PANEL_HEIGHT * len(groups)))
        ).savefig(out)
    elif system_name is not None:
        system = load(system_name, gpus=gpus, profile=profile, paths=catalog_paths)
        CollectiveBandwidthDisplay.from_system(
            system, op, gpus, algorithms=algs or None, launch=how, ax=file_axes()
        ).savefig(out)
    else:
        if len(groups) > 1:
            raise click.UsageError("with --systems, --gpus takes one group size (a curve per system)")
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
