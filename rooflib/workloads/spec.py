"""Workload catalog: ``workloads/*.yaml``, one ``kind: program`` file each (:mod:`rooflib.program.spec`).

A file describes every parameter (kind, default, meaning), the checks the parameters must pass on a group of
GPUs, the ops of one rank, and cites where the workload's conventions come from. ``--set k=v`` values are
checked against it: an unknown key or a bad value names the workload, the key and the value.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from rooflib.program.params import Parameter, resolve_params
from rooflib.specs.catalog import builtin_data_dir, load_yaml, validate_model

if TYPE_CHECKING:
    from rooflib.program.spec import ProgramSpec

__all__ = ["Parameter", "load_workloads", "resolve_params"]


@cache
def load_workloads(root: Path | None = None) -> dict[str, tuple[ProgramSpec, Path]]:
    """All workload specs by name (the built-in ``workloads/`` folder unless ``root`` is given)."""
    from rooflib.program.spec import ProgramSpec

    folder = root or builtin_data_dir("workloads")
    out: dict[str, tuple[ProgramSpec, Path]] = {}
    for path in sorted(folder.glob("*.yaml")):
        spec = validate_model(ProgramSpec, load_yaml(path), path)
        out[spec.name] = (spec, path)
    return out
