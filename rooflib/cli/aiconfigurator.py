"""``rooflib import-aiconfigurator``: NVIDIA aiconfigurator's measured NCCL and GEMM tables into a results folder."""

from __future__ import annotations

from pathlib import Path

import click

__all__ = ["import_aiconfigurator"]


def _ints(text: str | None, option: str) -> list[int] | None:
    if text is None:
        return None
    items = [t.strip() for t in text.split(",")]
    if not all(t.isdigit() and int(t) >= 1 for t in items):
        raise click.BadParameter(f"expected GPU counts such as 2,4, got {text!r}", param_hint=option)
    return [int(t) for t in items]


def _words(text: str | None) -> list[str] | None:
    return None if text is None else [t.strip() for t in text.split(",") if t.strip()]


@click.command("import-aiconfigurator")
@click.argument("path")
@click.option("--out", "-o", "out", required=True, type=click.Path(path_type=Path), help="Results folder.")
@click.option("--gpus", default=None, metavar="N[,N...]", help="GPU counts to import (default: all in the tables).")
@click.option("--op", "ops", default=None, metavar="OP[,OP...]", help="Collectives (all_reduce, alltoall, ...).")
@click.option(
    "--tables",
    default="nccl,gemm,framework",
    show_default=True,
    metavar="KIND[,KIND...]",
    help="nccl (comm/nccl), gemm, framework (TRT-LLM / vLLM / SGLang custom all-reduce, kept out of every fit).",
)
@click.option("--nccl", "nccl_versions", default=None, metavar="V[,V...]", help="comm/nccl/<V> folders (default: all).")
@click.option("--gemm-framework", default="trtllm", show_default=True, help="gemm/<framework>: its newest table.")
@click.option(
    "--nvls",
    type=click.Choice(["on", "off", "unknown"]),
    default=None,
    help="Whether NCCL could use NVLS (the tables do not say; default: on where the GPU's NVSwitch has multicast).",
)
def import_aiconfigurator(
    path: str,
    out: Path,
    gpus: str | None,
    ops: str | None,
    tables: str,
    nccl_versions: str | None,
    gemm_framework: str,
    nvls: str | None,
) -> None:
    """Add the tables aiconfigurator measured for one system to a results folder.

    PATH is a system data folder (.../aiconfigurator_core/systems/data/h100_sxm) or, with aiconfigurator-core
    installed, a system name (h100_sxm). NCCL rows (nccl-tests, back-to-back stream launches) go to
    OUT/raw/nccl.jsonl, GEMM rows (bf16, fp8, nvfp4) to OUT/raw/gemm.jsonl, the frameworks' custom all-reduce to
    OUT/raw/framework_allreduce.jsonl, each table with its provenance; the folder is then ready for
    `rooflib calibrate` and `rooflib validate` (its plots included). Importing the same tables again replaces them.
    """
    from rooflib.bench.aiconfigurator_import import import_aiconfigurator as run_import
    from rooflib.bench.aiconfigurator_tables import NCCL_OPS
    from rooflib.conventions import check_op

    op_list = None if ops is None else [NCCL_OPS.get(o.lower()) or check_op(o) for o in _words(ops) or []]
    done = run_import(
        path,
        out,
        gpus=_ints(gpus, "--gpus"),
        ops=op_list,
        tables=_words(tables) or [],
        nccl_versions=_words(nccl_versions),
        gemm_framework=gemm_framework,
        nvls=nvls,
    )
    for t in done.tables:
        skipped = "; skipped " + ", ".join(f"{n} {why}" for why, n in t.skipped.items()) if t.skipped else ""
        versions = f" ({', '.join(t.versions)})" if t.versions else ""
        click.echo(f"{t.path}: {len(t.records)} {t.kind} rows{versions}{skipped}")
    for note in done.notes:
        click.echo(f"warning: {note}", err=True)
    again = f", replacing {done.replaced} earlier import(s) of these tables" if done.replaced else ""
    click.echo(f"added {done.points} points to {out}{again}; NVLS {done.nvls}")
    if done.catalog_system:
        click.echo(f"next: rooflib validate {out} --system {done.catalog_system} --out REPORT")
