"""Sourced figures: a value in SI units plus the source it came from.

In YAML a figure is written ``{value: "450 GB/s", source: h100-datasheet}``; ``source`` is an id from
``hardware/sources.yaml`` or a free text starting with ``measured:``, ``derived:``, ``projection:`` or
``assumption:``. Size-dependent efficiencies are tables (:class:`SizeCurve`), never code constants.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import numpy as np
import numpy.typing as npt
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, Strict, field_validator, model_validator

from rooflib.units import Dimension, parse_quantity

__all__ = [
    "SOURCE_PREFIXES",
    "Bandwidth",
    "Bytes",
    "Count",
    "Duration",
    "Figure",
    "FlopRate",
    "Fraction",
    "Frequency",
    "LogLogCurve",
    "Ratio",
    "SizeCurve",
    "SpecModel",
    "WholeNumber",
    "log_interp",
    "name_of",
]

SOURCE_PREFIXES = ("measured:", "derived:", "projection:", "assumption:", "calibrated:")
MAX_WHOLE = 2**63 - 1


def _fits_int64(v: int) -> int:
    if v > MAX_WHOLE:
        raise ValueError(f"must be at most 2**63 - 1, got {v!r}")
    return v


WholeNumber = Annotated[int, Strict(), AfterValidator(_fits_int64)]
"""A plain integer field (GPU counts, tile sizes): a YAML int, never ``true``, ``"8"`` or ``8.5``; at most an int64."""


def name_of(kind: str, valid: tuple[str, ...]) -> AfterValidator:
    """A validator for ``Annotated[str, name_of(...)]``: the name must be one of ``valid``. Used for dictionary
    keys such as dtypes, ops and algorithms, so a misspelt key is an error naming it, not an entry nobody reads.
    """

    def check(name: str) -> str:
        if name not in valid:
            raise ValueError(f"unknown {kind} {name!r}; valid: {', '.join(valid)}")
        return name

    return AfterValidator(check)


class SpecModel(BaseModel):
    """Base of every spec model: unknown keys are errors and specs are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Figure(SpecModel):
    """A number with a unit and a source. ``value`` is always SI after validation."""

    dimension: ClassVar[Dimension] = "count"
    allow_zero: ClassVar[bool] = False

    value: float
    source: str = Field(min_length=1)
    note: str | None = None

    @field_validator("value", mode="before")
    @classmethod
    def _parse_value(cls, raw: object) -> float:
        return parse_quantity(raw, cls.dimension)

    @field_validator("value")
    @classmethod
    def _check_range(cls, v: float) -> float:
        if v < 0 or (v == 0 and not cls.allow_zero):
            bound = ">= 0" if cls.allow_zero else "> 0"
            raise ValueError(f"must be {bound}, got {v!r}")
        return v

    @model_validator(mode="before")
    @classmethod
    def _bare_value(cls, data: Any) -> Any:
        # A bare scalar is an error that says what is expected, not pydantic's generic "dict expected".
        if not isinstance(data, dict) and not isinstance(data, Figure):
            raise ValueError(
                f"a figure must be written as {{value: ..., source: ...}}, got {data!r} (every figure needs a source)"
            )
        return data

    def __float__(self) -> float:
        return self.value


class Bytes(Figure):
    dimension: ClassVar[Dimension] = "bytes"


class Bandwidth(Figure):
    """Bytes per second, per direction unless the field says otherwise."""

    dimension: ClassVar[Dimension] = "bandwidth"


class Duration(Figure):
    dimension: ClassVar[Dimension] = "time"
    allow_zero: ClassVar[bool] = True


class Frequency(Figure):
    dimension: ClassVar[Dimension] = "frequency"


class FlopRate(Figure):
    dimension: ClassVar[Dimension] = "flop_rate"


class Count(Figure):
    dimension: ClassVar[Dimension] = "count"

    @field_validator("value")
    @classmethod
    def _integral(cls, v: float) -> float:
        if v != int(v):
            raise ValueError(f"must be a whole number, got {v!r}")
        if v > MAX_WHOLE:
            raise ValueError(f"must be at most 2**63 - 1, got {v!r}")
        return v

    def __int__(self) -> int:
        return int(self.value)


class Ratio(Figure):
    """A positive dimensionless ratio, not bounded by 1 (one quantity of a system over the same of another)."""


class Fraction(Figure):
    """An efficiency or share in (0, 1]."""

    dimension: ClassVar[Dimension] = "fraction"

    @field_validator("value")
    @classmethod
    def _unit_interval(cls, v: float) -> float:
        if not 0 < v <= 1:
            raise ValueError(f"must be in (0, 1], got {v!r}")
        return v


def log_interp(points: tuple[tuple[float, float], ...], nbytes: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Efficiency at ``nbytes`` (or any x) from ``(x, efficiency)`` points: log-log linear, clamped at the ends."""
    x = np.log(np.maximum(np.asarray(nbytes, dtype=np.float64), 1.0))
    xs = np.log([p[0] for p in points])
    ys = np.log([p[1] for p in points])
    return np.asarray(np.exp(np.interp(x, xs, ys)), dtype=np.float64)


class LogLogCurve(SpecModel):
    """Efficiency against one quantity (``x_name``), interpolated as log(efficiency) linear in log(x), clamped at
    both ends (:func:`log_interp`). YAML: ``{points: [[x, efficiency], ...], source: ...}``, x strictly
    increasing."""

    x_name: ClassVar[str] = "x"
    x_plural: ClassVar[str] = "x values"
    x_dimension: ClassVar[Dimension] = "count"
    x_least: ClassVar[float] = 0.0  # x > x_least, or x >= x_least with x_inclusive
    x_inclusive: ClassVar[bool] = False

    points: tuple[tuple[float, float], ...]
    source: str = Field(min_length=1)
    note: str | None = None

    @field_validator("points", mode="before")
    @classmethod
    def _parse_points(cls, raw: object) -> tuple[tuple[float, float], ...]:
        name = cls.x_name
        if not isinstance(raw, list | tuple) or not raw:
            raise ValueError(f"must be a non-empty list of [{name}, efficiency] pairs")
        rule = f"{name} {'>=' if cls.x_inclusive else '>'} {cls.x_least:g}"
        out: list[tuple[float, float]] = []
        for i, pair in enumerate(raw):
            if not isinstance(pair, list | tuple) or len(pair) != 2:
                raise ValueError(f"point {i} must be a [{name}, efficiency] pair, got {pair!r}")
            x = parse_quantity(pair[0], cls.x_dimension)
            eff = parse_quantity(pair[1], "fraction")
            x_ok = x >= cls.x_least if cls.x_inclusive else x > cls.x_least
            if not x_ok or not 0 < eff <= 1:
                raise ValueError(f"point {i} needs {rule} and efficiency in (0, 1], got {pair!r}")
            out.append((x, eff))
        xs = [p[0] for p in out]
        if xs != sorted(xs) or len(set(xs)) != len(xs):
            raise ValueError(f"{cls.x_plural} must be strictly increasing")
        return tuple(out)

    def __call__(self, x: npt.ArrayLike) -> npt.NDArray[np.float64]:
        return log_interp(self.points, x)


class SizeCurve(LogLogCurve):
    """Efficiency against message size, interpolated as log(efficiency) linear in log(bytes), clamped at both ends.

    Interpolating in log-log space keeps ``bytes / efficiency`` (the time a size takes) monotone between two
    points whenever it is monotone at the points.

    YAML: ``{points: [[2 KiB, 0.74], [1 MiB, 0.95]], source: ...}``.
    """

    x_name: ClassVar[str] = "size"
    x_plural: ClassVar[str] = "sizes"
    x_dimension: ClassVar[Dimension] = "bytes"
