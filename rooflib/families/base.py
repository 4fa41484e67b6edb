"""The parts a measurement family declares, and the job a family plans.

A :class:`Family` names every part; a part the family does not have is an :class:`Absent` with the reason, never
a silent None, so that ``tests/families/test_registry.py`` can check that nothing was forgotten. Parts that live in
other layers (calibration fits, importers) are :class:`Ref` objects (module and function, imported on first use), so
that importing the registry stays cheap for ``rooflib bench`` and pulls in neither calibrate nor matplotlib.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import pandas as pd

    from rooflib.specs.resolve import System
    from rooflib.validate.report import Validation

__all__ = [
    "PARTS",
    "Absent",
    "Family",
    "Figure",
    "Importer",
    "Job",
    "PlanFn",
    "Ref",
    "Schema",
    "present",
]


@dataclass(frozen=True)
class Job:
    """One program invocation of ``rooflib bench``, the unit of resume; ``key`` starts with the family."""

    family: str
    key: str
    kind: str  # "kernel" (a shipped CUDA program), "module" (python -m), "torchrun"
    target: str  # program name or module
    args: tuple[str, ...]
    log: str | None = None  # capture stderr here (NCCL's tuning table)
    env: dict[str, str] = field(default_factory=dict)
    timeout_s: float | None = None  # a job still running after this is killed and reported as failed


@dataclass(frozen=True)
class Absent:
    """A part a family does not have, and why (``Absent("imported only")``)."""

    why: str

    def __post_init__(self) -> None:
        if not self.why.strip():
            raise ValueError("an absent part must say why")


@dataclass(frozen=True)
class Ref:
    """A function in another module (``Ref("rooflib.calibrate.transfer", "fit_transfers")``), imported on use."""

    module: str
    function: str
    note: str = ""

    def resolve(self) -> Callable[..., Any]:
        fn = getattr(importlib.import_module(self.module), self.function)
        if not callable(fn):
            raise TypeError(f"{self} is not a function")
        return fn  # type: ignore[no-any-return]

    def __str__(self) -> str:
        return f"{self.module}.{self.function}"


@dataclass(frozen=True)
class Schema:
    """The columns of a family's rows after :func:`rooflib.calibrate.data.load_results`.

    ``required``: present and non-null in every row of every committed run of the family (checked by the tests);
    ``optional``: read when present (by the family's prediction, checks or tables)."""

    required: tuple[str, ...]
    optional: tuple[str, ...] = ()

    def missing(self, rows: pd.DataFrame) -> list[str]:
        """The required columns that ``rows`` lacks or leaves empty somewhere."""
        return [c for c in self.required if c not in rows or rows[c].isna().any()]


PlanFn = Callable[[str, int, bool], list[Job]]
"""``plan(name, gpus, quick) -> jobs``: the jobs of family ``name`` for ``gpus`` local GPUs."""


@dataclass(frozen=True)
class Figure:
    """One figure of ``rooflib validate``'s report: ``draw(validation, path) -> file name or None`` (nothing to
    draw). ``rank`` orders the figures of all families at the top of the report; None: the family's section
    places it."""

    file: str
    draw: Callable[[Validation, Path], str | None]
    rank: int | None


Predict = Callable[["System", "pd.DataFrame"], "pd.Series"]
Checks = Callable[["pd.DataFrame", "System"], "list[tuple[pd.Series, str, str]]"]
Tables = Callable[["pd.DataFrame", "System"], "dict[str, pd.DataFrame]"]
Section = Callable[["Validation", Path, bool], "list[str]"]
Reference = Callable[[Path, "pd.DataFrame"], "pd.Series"]

PARTS = ("plan", "schema", "predict", "checks", "reference", "tables", "fit", "display", "section")
"""Every part a family declares (a value or an :class:`Absent`)."""


@dataclass(frozen=True)
class Family:
    """A measurement family: what ``rooflib bench`` runs, what its rows hold, how the model predicts and fits
    them and how ``rooflib validate`` shows them.

    - ``names``: the family names its rows carry (``compute`` and ``compute-holdout`` share one module);
    - ``run``: ``"all"`` (part of ``rooflib bench all``), ``"name"`` (run by name only), ``"import"`` (rows come
      from an importer, never from ``rooflib bench``) or ``"external"`` (run by its own script);
    - ``plan``: jobs for a number of GPUs; ``schema``: its columns;
    - ``predict``: ``time_s`` for each row (NaN without a model); ``checks``: rows the model cannot take, as
      ``(mask over the whole frame, column, why)``; ``reference``: a third-party model's prediction of the rows
      (NCCL's own tuning model), from the results folder;
    - ``tables``: comparisons that are not one prediction per row (schedules), keyed by CSV name;
      ``section``: the report's Markdown for them;
    - ``fit``: the calibration functions that read its rows; ``display``: its figures in the report.
    """

    names: tuple[str, ...]
    doc: str
    run: Literal["all", "name", "import", "external"]
    plan: PlanFn | Absent
    schema: Schema
    predict: Predict | Absent
    checks: Checks | Absent
    reference: tuple[str, Reference] | Absent
    tables: Tables | Absent
    section: Section | Absent
    fit: tuple[Ref, ...] | Absent
    display: tuple[Figure, ...] | Absent

    @property
    def name(self) -> str:
        return self.names[0]

    def parts(self) -> Mapping[str, Any]:
        return {p: getattr(self, p) for p in PARTS}


@dataclass(frozen=True)
class Importer:
    """Measurements somebody else made, read into a results folder (``rooflib import-...``).

    ``source``: the ``source`` value of its records; ``families``: the families its rows join (their predictions,
    fits and figures apply); ``back_to_back``: its collective rows were timed as back-to-back stream launches
    (nccl-tests' loop), so they are predicted with ``launch="stream"``; ``run``: the import function;
    ``fit``: what of it calibration uses (or why none)."""

    name: str
    doc: str
    source: str
    families: tuple[str, ...]
    run: Ref
    back_to_back: bool
    fit: tuple[Ref, ...] | Absent
    excluded_from_fit: tuple[str, ...] = ()


def present(part: object) -> bool:
    """Whether a part is there (not :class:`Absent`)."""
    return not isinstance(part, Absent)
