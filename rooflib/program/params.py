"""Parameters of catalog programs: kind, default, meaning, whether the GPUs split them, and their checking.

``--set k=v`` values are checked against a program's parameters: an unknown key or a bad value names the
program, the key and the value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Literal, Protocol

from pydantic import Field

from rooflib.conventions import check_op
from rooflib.errors import RooflibError, UnitError, UnknownNameError
from rooflib.specs.devices import DTYPES
from rooflib.specs.figures import SpecModel
from rooflib.units import MAX_SIZE, parse_size

__all__ = ["Parameter", "resolve_params"]


class Parameter(SpecModel):
    kind: Literal["int", "size", "float", "dtype", "bool", "op"]
    default: Any
    description: str
    min: float | None = None
    split: bool = Field(
        default=False,
        description="divided over the group's GPUs: a default that does not divide is rounded up to the next "
        "multiple of the GPU count; a value the user sets must divide",
    )


_TRUE = ("true", "1", "yes", "on")
_PLAIN = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$")
_FALSE = ("false", "0", "no", "off")


def _as_int(value: Any) -> int:
    """A whole number: an int, a whole float, or text such as ``-5``, ``8192``, ``1e3``, ``8KiB`` (a size)."""
    if isinstance(value, bool):
        raise ValueError("expected a whole number, got a bool")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value) or value != int(value):
            raise ValueError("must be a whole number")
        return int(value)
    if not isinstance(value, str):
        raise ValueError(f"expected a whole number, got {type(value).__name__}")
    text = value.strip().replace("_", "")
    if _PLAIN.match(text):
        number = Decimal(text)
        if abs(number) > MAX_SIZE:
            return MAX_SIZE + 1 if number > 0 else -1  # reported by the range checks of _convert
        if number != number.to_integral_value():
            raise ValueError("must be a whole number")
        return int(number)
    if text.startswith("-"):  # a negative size with a unit: report it as below the minimum, not as a unit error
        return -parse_size(text[1:])
    return parse_size(text)


def _as_float(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"expected a number, got {value!r}")
    out = float(value)
    if not math.isfinite(out):
        raise ValueError("must be a finite number")
    return out


def _as_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f"expected one of {'/'.join(_TRUE + _FALSE)}")


def _convert(workload: str, key: str, param: Parameter, value: Any) -> Any:
    shown = value if isinstance(value, str) else repr(value)
    where = f"workload {workload!r}: parameter {key}={shown}"
    try:
        if param.kind in ("int", "size"):
            out: Any = _as_int(value)
        elif param.kind == "float":
            out = _as_float(value)
        elif param.kind == "bool":
            out = _as_bool(value)
        elif param.kind == "dtype":
            if str(value) not in DTYPES:
                raise ValueError(f"dtype must be one of {', '.join(DTYPES)}")
            out = str(value)
        elif param.kind == "op":
            out = check_op(str(value))
        else:
            out = str(value)
    except (ValueError, TypeError, OverflowError, RooflibError) as exc:
        raise UnitError(f"{where}: {exc}") from None
    if param.min is not None and isinstance(out, int | float) and out < param.min:
        raise UnitError(f"{where}: must be >= {param.min:g}")
    if param.kind in ("int", "size") and out < 0:
        raise UnitError(f"{where}: must be >= 0")
    if param.kind in ("int", "size") and out > MAX_SIZE:
        raise UnitError(f"{where}: must be <= {MAX_SIZE} (2**63 - 1)")
    return out


class Parametrised(Protocol):
    """Anything with named parameters: a workload or a program spec."""

    @property
    def name(self) -> str: ...

    @property
    def parameters(self) -> Mapping[str, Parameter]: ...


def resolve_params(spec: Parametrised, given: Mapping[str, Any]) -> dict[str, Any]:
    """Defaults overridden by ``given``; unknown keys and bad values are errors naming key and value."""
    unknown = set(given) - set(spec.parameters)
    if unknown:
        key = sorted(unknown)[0]
        raise UnknownNameError(f"{spec.name} parameter", key, spec.parameters)
    params = {}
    for key, param in spec.parameters.items():
        params[key] = _convert(spec.name, key, param, given.get(key, param.default))
    return params
