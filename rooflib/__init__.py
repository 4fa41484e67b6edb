"""rooflib: how fast a multi-GPU kernel can possibly run, how fast the plain PyTorch + NCCL version runs, and
which transfer mechanism and overlap schedule get close to the bound.

The public API is small and re-exported here; heavy submodules load on first use so ``import rooflib`` stays
fast.

>>> import rooflib
>>> system = rooflib.load_system("hgx-h100")
>>> r = rooflib.predict_collective("all_reduce", system, nbytes=1 << 30)
>>> r.algorithm[0] in rooflib.ALGORITHMS
True
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # specs
    "Catalog": "rooflib.specs",
    "System": "rooflib.specs",
    "default_catalog": "rooflib.specs",
    "load_system": "rooflib.specs",
    # errors and units
    "RooflibError": "rooflib.errors",
    "SpecError": "rooflib.errors",
    "UnknownNameError": "rooflib.errors",
    "GroupError": "rooflib.errors",
    "UnitError": "rooflib.errors",
    "parse_quantity": "rooflib.units",
    "parse_size": "rooflib.units",
    # topology
    "Topology": "rooflib.topology",
    # transfer
    "MECHANISMS": "rooflib.transfer",
    "predict_transfer": "rooflib.transfer",
    "transfer_time": "rooflib.transfer",
    "best_mechanism": "rooflib.transfer",
    # collectives
    "ALGORITHMS": "rooflib.collectives",
    "OPS": "rooflib.collectives",
    "predict_collective": "rooflib.collectives",
    "bus_factor": "rooflib.collectives",
    # roofline
    "roofline": "rooflib.roof",
    "roofs": "rooflib.roof",
    # workloads and programs
    "predict_workload": "rooflib.workloads",
    "Program": "rooflib.program",
    "ProgramBuilder": "rooflib.program",
    "predict_program": "rooflib.program",
}

__all__ = [
    "ALGORITHMS",
    "MECHANISMS",
    "OPS",
    "Catalog",
    "GroupError",
    "Program",
    "ProgramBuilder",
    "RooflibError",
    "SpecError",
    "System",
    "Topology",
    "UnitError",
    "UnknownNameError",
    "__version__",
    "best_mechanism",
    "bus_factor",
    "default_catalog",
    "load_system",
    "parse_quantity",
    "parse_size",
    "predict_collective",
    "predict_program",
    "predict_transfer",
    "predict_workload",
    "roofline",
    "roofs",
    "transfer_time",
]

if TYPE_CHECKING:
    from rooflib.collectives import (
        ALGORITHMS,
        OPS,
        bus_factor,
        predict_collective,
    )
    from rooflib.errors import (
        GroupError,
        RooflibError,
        SpecError,
        UnitError,
        UnknownNameError,
    )
    from rooflib.program import Program, ProgramBuilder, predict_program
    from rooflib.roof import roofline, roofs
    from rooflib.specs import (
        Catalog,
        System,
        default_catalog,
        load_system,
    )
    from rooflib.topology import Topology
    from rooflib.transfer import (
        MECHANISMS,
        best_mechanism,
        predict_transfer,
        transfer_time,
    )
    from rooflib.units import parse_quantity, parse_size
    from rooflib.workloads import predict_workload


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rooflib' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
