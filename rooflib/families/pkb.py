"""``pkb``: ParallelKernelBench problems timed with PKB's own convention (``rooflib.bench.pkb_worker``), one GPU
(``--mode local``) or under torchrun (``--mode dist``). It needs a PKB checkout, so ``rooflib bench`` does not plan
it: ``benchmarks/device/pkb_h200.sh`` runs it.

Compared by ``tools/pkb_report.py`` (``rooflib trace --pkb`` predictions, :mod:`rooflib.trace.pkb_table`), not by
``rooflib validate``.
"""

from __future__ import annotations

from rooflib.families.base import Absent, Family, Schema

__all__ = ["FAMILY"]

FAMILY = Family(
    names=("pkb",),
    doc=__doc__ or "",
    run="external",
    plan=Absent("needs a ParallelKernelBench checkout (--pkb ROOT): run by benchmarks/device/pkb_h200.sh"),
    schema=Schema(required=("problem", "mode", "time_s"), optional=("world", "rank", "size", "dtype", "verified")),
    predict=Absent("a problem is traced and predicted as a whole program: tools/pkb_report.py"),
    checks=Absent("not validated row by row"),
    reference=Absent("no third-party model"),
    tables=Absent("built by tools/pkb_report.py"),
    section=Absent("written by tools/pkb_report.py (docs/validation/pkb)"),
    fit=Absent("validation only"),
    display=Absent("drawn by tools/pkb_report.py (rooflib.plot.speedup)"),
)
