"""The registry of measurement families: the one place the runner, ``rooflib validate`` and the report look a
family up. Adding a family means adding its module to :data:`FAMILIES` (and its ``.cu`` file or worker).

>>> from rooflib.families import registry
>>> registry.bench_names("all")
('p2p', 'latency', 'ceilings', 'gemm', 'nccl', 'overlap', 'tp')
>>> registry.family("compute-holdout").name
'compute'
>>> [j.key for j in registry.plan_jobs(["latency", "nccl"], 1)]
['latency/all']
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal

from rooflib.errors import RooflibError
from rooflib.families import (
    ceilings,
    compute,
    framework_allreduce,
    gemm,
    host,
    latency,
    nccl,
    overlap,
    p2p,
    pkb,
    programs,
    tp,
)
from rooflib.families.base import Family, Figure, Importer, Job, Reference, present
from rooflib.families.importers import IMPORTERS

if TYPE_CHECKING:
    import pandas as pd

    from rooflib.specs.resolve import System

__all__ = [
    "FAMILIES",
    "IMPORTERS",
    "back_to_back_sources",
    "bench_names",
    "family",
    "figures",
    "importer",
    "plan_jobs",
    "references",
    "row_checks",
    "with_part",
]

FAMILIES: tuple[Family, ...] = tuple(
    m.FAMILY
    for m in (p2p, latency, ceilings, gemm, nccl, overlap, tp, compute, host, programs, pkb, framework_allreduce)
)
"""Every family, in the order the runner plans ``all``, validate predicts and the report writes its sections."""

_BY_NAME = {name: fam for fam in FAMILIES for name in fam.names}
if len(_BY_NAME) != sum(len(f.names) for f in FAMILIES):  # pragma: no cover - a registry mistake
    raise RuntimeError("two families share a name")


def family(name: str) -> Family:
    """The family whose rows carry ``name`` (``compute-holdout`` -> the compute family)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        known = ", ".join(_BY_NAME)
        raise RooflibError(f"unknown measurement family {name!r}; families: {known}") from None


def importer(name: str) -> Importer:
    for imp in IMPORTERS:
        if imp.name == name:
            return imp
    raise RooflibError(f"unknown importer {name!r}; importers: {', '.join(i.name for i in IMPORTERS)}")


def bench_names(run: Literal["all", "name"]) -> tuple[str, ...]:
    """The names ``rooflib bench`` runs with ``all`` (``"all"``) or only when named (``"name"``)."""
    return tuple(name for fam in FAMILIES if fam.run == run and present(fam.plan) for name in fam.names)


def plan_jobs(families: Iterable[str], gpus: int, *, quick: bool = False) -> list[Job]:
    """The jobs of each family for ``gpus`` local GPUs (``quick``: fewer sizes, for smoke tests).

    Families that need two GPUs (nccl, overlap, tp; p2p's bidirectional job) plan nothing with fewer.
    """
    runnable = (*bench_names("all"), *bench_names("name"))
    jobs: list[Job] = []
    for name in families:
        fam = _BY_NAME.get(name)
        if name not in runnable or fam is None or not present(fam.plan):
            raise RooflibError(f"unknown benchmark family {name!r}; families: {', '.join(runnable)}, all")
        jobs += fam.plan(name, gpus, quick)  # type: ignore[operator]
    return jobs


def with_part(part: str) -> list[Family]:
    """The families that have ``part`` (one of :data:`rooflib.families.base.PARTS`), in registry order."""
    return [fam for fam in FAMILIES if present(getattr(fam, part))]


def figures() -> list[Figure]:
    """The figures at the top of the validation report, in their order (figures a section places left out)."""
    shown = [fig for fam in with_part("display") for fig in fam.display if fig.rank is not None]  # type: ignore[union-attr]
    return sorted(shown, key=lambda fig: fig.rank or 0)


def references() -> list[tuple[str, Reference]]:
    """Third-party models of measured rows: ``(model name, fn(results folder, frame) -> predicted time_s)``."""
    return [fam.reference for fam in with_part("reference")]  # type: ignore[misc]


def row_checks(frame: pd.DataFrame, system: System) -> list[tuple[pd.Series, str, str]]:
    """Every family's rows that the models cannot take: ``(mask, column, why)``, in registry order."""
    return [p for fam in with_part("checks") for p in fam.checks(frame, system)]  # type: ignore[operator]


def back_to_back_sources() -> tuple[str, ...]:
    """Row sources whose collectives were timed as back-to-back stream launches (predicted ``launch="stream"``)."""
    return tuple(imp.source for imp in IMPORTERS if imp.back_to_back)
