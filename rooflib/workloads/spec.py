"""Workload catalog: ``workloads/*.yaml`` (one file each), validated by pydantic, parameters with defaults.

A file names the model function that turns parameters into stages (``rooflib.workloads.models``), describes
every parameter (kind, default, meaning) and cites where the workload's conventions come from. ``--set k=v``
values are checked against it: an unknown key or a bad value names the workload, the key and the value.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field

from rooflib.errors import UnitError, UnknownNameError
from rooflib.specs.catalog import builtin_data_dir, validate_model
from rooflib.specs.devices import DTYPES
from rooflib.specs.figures import SpecModel
from rooflib.units import parse_size

__all__ = ["Parameter", "WorkloadSpec", "load_workloads", "resolve_params"]


class Parameter(SpecModel):
    kind: Literal["int", "size", "float", "dtype", "bool", "op"]
    default: Any
    description: str
    min: float | None = None


class WorkloadSpec(SpecModel):
    kind: Literal["workload"]
    name: str
    display_name: str
    description: str
    model: str
    sources: tuple[str, ...] = Field(min_length=1)
    parameters: dict[str, Parameter]


@cache
def load_workloads(root: Path | None = None) -> dict[str, tuple[WorkloadSpec, Path]]:
    """All workload specs by name (the built-in ``workloads/`` folder unless ``root`` is given)."""
    folder = root or builtin_data_dir("workloads")
    out: dict[str, tuple[WorkloadSpec, Path]] = {}
    for path in sorted(folder.glob("*.yaml")):
        with path.open(encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
        spec = validate_model(WorkloadSpec, data, path)
        out[spec.name] = (spec, path)
    return out


def _convert(workload: str, key: str, param: Parameter, value: Any) -> Any:
    where = f"workload {workload!r}: parameter {key}={value!r}"
    try:
        if param.kind in ("int", "size"):
            out: Any = parse_size(value) if isinstance(value, str) else int(value)
        elif param.kind == "float":
            out = float(value)
        elif param.kind == "bool":
            out = value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes", "on")
        elif param.kind == "dtype":
            if str(value) not in DTYPES:
                raise ValueError(f"dtype must be one of {', '.join(DTYPES)}")
            out = str(value)
        else:
            out = str(value)
    except (ValueError, TypeError, UnitError) as exc:
        raise UnitError(f"{where}: {exc}") from None
    if param.min is not None and isinstance(out, int | float) and out < param.min:
        raise UnitError(f"{where}: must be >= {param.min:g}")
    return out


def resolve_params(spec: WorkloadSpec, given: dict[str, Any]) -> dict[str, Any]:
    """Defaults overridden by ``given``; unknown keys and bad values are errors naming key and value."""
    unknown = set(given) - set(spec.parameters)
    if unknown:
        key = sorted(unknown)[0]
        raise UnknownNameError(f"{spec.name} parameter", key, spec.parameters)
    params = {}
    for key, param in spec.parameters.items():
        params[key] = _convert(spec.name, key, param, given.get(key, param.default))
    return params
