"""``rooflib roofline``: roofs and ridge points of a system, kernels placed on its communication-aware roofline."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from rooflib.cli.common import (
    ImagePath,
    catalog_option,
    emit_json,
    json_option,
    load,
    parse_amount,
    parse_bytes,
    print_table,
    profile_option,
    system_option,
)
from rooflib.errors import UnitError
from rooflib.plot.kernels import Kernel
from rooflib.roof import Roofs, roofline, roofs
from rooflib.specs import DTYPES, System
from rooflib.specs.devices import DType
from rooflib.units import format_bandwidth, format_flops, format_time

__all__ = ["KernelType", "dtype_option", "kernel_option", "kernel_records", "roofline_cmd", "roofs_record"]

F = TypeVar("F", bound=Callable[..., Any])


if TYPE_CHECKING:  # click >= 8.4 makes ParamType generic; older versions are not subscriptable
    _KernelParam = click.ParamType[Kernel]
else:
    _KernelParam = click.ParamType


class KernelType(_KernelParam):
    """``NAME:FLOPS:HBM_BYTES:NVLINK_BYTES[:IB_BYTES]``, per GPU, e.g. ``gemm:1.1e12:4e8:2e8``."""

    name = "kernel"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Kernel:
        if isinstance(value, Kernel):
            return value
        parts = str(value).split(":")
        if len(parts) not in (4, 5) or not parts[0]:
            self.fail(f"{value!r} is not NAME:FLOPS:HBM_BYTES:NVLINK_BYTES[:IB_BYTES]", param, ctx)
        try:
            flops = parse_amount(parts[1], "FLOPs")
            hbm, nvlink = parse_bytes(parts[2]), parse_bytes(parts[3])
            net = {"nvlink": float(nvlink)}
            if len(parts) == 5 and parse_bytes(parts[4]) > 0:
                net["ib"] = float(parse_bytes(parts[4]))
        except UnitError as exc:
            self.fail(f"in kernel {value!r}: {exc}", param, ctx)
        return Kernel(parts[0], flops, float(hbm), net)


def kernel_option(f: F) -> F:
    return click.option(
        "--kernel",
        "-k",
        "kernels",
        type=KernelType(),
        multiple=True,
        help="A kernel per GPU: NAME:FLOPS:HBM_BYTES:NVLINK_BYTES[:IB_BYTES] (repeatable).",
    )(f)


def dtype_option(f: F) -> F:
    return click.option(
        "--dtype", type=click.Choice(DTYPES), default="bf16", show_default=True, help="Compute peak for this data type."
    )(f)


def roofs_record(r: Roofs) -> dict[str, Any]:
    levels = ["l2", "hbm", *r.links]
    return {
        "system": r.system,
        "dtype": r.dtype,
        "achievable": r.achievable,
        "compute_flops_per_s": r.compute,
        "hbm_bytes_per_s": r.hbm,
        "l2_bytes_per_s": r.l2,
        "links_bytes_per_s": dict(r.links),
        "ridge_points": {lv: r.ridge(lv) for lv in levels},
    }


def kernel_records(system: System, kernels: Sequence[Kernel], dtype: DType, achievable: bool) -> list[dict[str, Any]]:
    out = []
    for k in kernels:
        line = roofline(
            system, flops=k.flops, hbm_bytes=k.hbm_bytes, net_bytes=k.net_bytes, dtype=dtype, achievable=achievable
        )
        out.append(
            {
                "name": k.name,
                "flops": k.flops,
                "hbm_bytes": k.hbm_bytes,
                "net_bytes": dict(k.net_bytes),
                "bound_s": line.bound_s,
                "sum_s": line.sum_s,
                "serial_s": line.serial_s,
                "limiter": line.limiter,
                "intensity_hbm": line.intensity_hbm,
                "intensity_net": line.intensity_net,
                "attainable_flops_per_s": line.attainable_flops,
            }
        )
    return out


def print_roofs(rec: dict[str, Any]) -> None:
    kind = "achievable" if rec["achievable"] else "peak"
    click.echo(f"{rec['system']}: {kind} roofs per GPU ({rec['dtype']})")
    rows = [["compute", format_flops(rec["compute_flops_per_s"]), "-"]]
    levels = {"l2": rec["l2_bytes_per_s"], "hbm": rec["hbm_bytes_per_s"], **rec["links_bytes_per_s"]}
    rows += [[lv, format_bandwidth(bw), f"{rec['ridge_points'][lv]:,.0f}"] for lv, bw in levels.items()]
    print_table(["roof", "rate", "ridge FLOP/B"], rows)


@click.command("roofline")
@system_option
@dtype_option
@click.option("--achievable", is_flag=True, help="Achievable rates (efficiencies applied) instead of datasheet peaks.")
@kernel_option
@click.option(
    "--out",
    "-o",
    type=ImagePath(),
    default=None,
    help="Also write the hierarchical roofline plot (PNG, SVG or PDF) with the kernels as points.",
)
@json_option
@profile_option
@catalog_option
def roofline_cmd(
    system_name: str,
    dtype: DType,
    achievable: bool,
    kernels: tuple[Kernel, ...],
    out: Path | None,
    as_json: bool,
    profile: str | None,
    catalog_paths: tuple[Path, ...],
) -> None:
    """Roofs, ridge points and kernel bounds on the communication-aware roofline.

    Example: rooflib roofline --system hgx-h100 --kernel gemm:1.1e12:4e8:2e8
    """
    system = load(system_name, profile=profile, paths=catalog_paths)
    rec = roofs_record(roofs(system, dtype, achievable=achievable))
    rec["kernels"] = kernel_records(system, kernels, dtype, achievable)
    if out is not None:
        from rooflib.plot import HierarchicalRooflineDisplay, file_axes

        HierarchicalRooflineDisplay.from_system(
            system, dtype=dtype, achievable=achievable, kernels=kernels, ax=file_axes()
        ).savefig(out)
    if as_json:
        emit_json(rec)
        return
    print_roofs(rec)
    if rec["kernels"]:
        click.echo()
        rows = [
            [
                k["name"],
                format_time(k["bound_s"]),
                format_time(k["serial_s"]),
                format_time(k["sum_s"]),
                k["limiter"],
                f"{k['intensity_hbm']:,.1f}",
                ", ".join(f"{c} {v:,.1f}" for c, v in k["intensity_net"].items()),
            ]
            for k in rec["kernels"]
        ]
        print_table(["kernel", "bound", "serial", "sum", "limiter", "FLOP/HBM B", "FLOP/net B"], rows)
    if out is not None:
        click.echo(f"wrote {out}")
