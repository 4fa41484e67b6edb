"""Importers: measurements made elsewhere, read into a results folder whose rows join the families above.

- ``nccl-tests``: an nccl-tests log (``rooflib import-nccl-tests``) into ``nccl`` rows, ``source: nccl-tests``,
  timed as back-to-back stream launches (nccl-tests' loop).
- ``aiconfigurator``: NVIDIA's measured tables (``rooflib import-aiconfigurator``) into ``nccl`` and ``gemm`` rows,
  ``source: aiconfigurator`` (its NCCL tables were measured with nccl-tests, so back to back too), and the
  framework all-reduce tables into ``framework_allreduce`` rows, kept out of every fit.
"""

from __future__ import annotations

from rooflib.families.base import Importer, Ref

__all__ = ["IMPORTERS"]

IMPORTERS = (
    Importer(
        name="nccl-tests",
        doc="nccl-tests logs (all_reduce_perf and friends) into nccl rows",
        source="nccl-tests",
        families=("nccl",),
        run=Ref("rooflib.bench.nccl_import", "import_nccl_tests"),
        back_to_back=True,
        fit=(Ref("rooflib.calibrate.collectives", "fit_collectives"),),
    ),
    Importer(
        name="aiconfigurator",
        doc="aiconfigurator's nccl_perf, GEMM and framework all-reduce tables",
        source="aiconfigurator",
        families=("nccl", "gemm", "framework_allreduce"),
        run=Ref("rooflib.bench.aiconfigurator_import", "import_aiconfigurator"),
        back_to_back=True,
        fit=(
            Ref("rooflib.calibrate.collectives", "fit_collectives"),
            Ref("rooflib.calibrate.device", "fit_device"),
        ),
        excluded_from_fit=("framework_allreduce",),
    ),
)
