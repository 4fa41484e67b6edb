"""``framework_allreduce``: aiconfigurator's custom all-reduce tables of TensorRT-LLM, vLLM and SGLang, imported by
``rooflib import-aiconfigurator`` into ``raw/framework_allreduce.jsonl``. Not NCCL: kept out of every fit and of
the NCCL validation (their meta records say ``excluded_from_fit``).
"""

from __future__ import annotations

from rooflib.families.base import Absent, Family, Schema

__all__ = ["FAMILY"]

FAMILY = Family(
    names=("framework_allreduce",),
    doc=__doc__ or "",
    run="import",
    plan=Absent("imported only (rooflib import-aiconfigurator)"),
    schema=Schema(required=("name", "gpus", "bytes", "time_s"), optional=("framework", "source")),
    predict=Absent("framework kernels are not modelled: kept out of the NCCL validation"),
    checks=Absent("no prediction, nothing to check"),
    reference=Absent("no third-party model"),
    tables=Absent("no comparison"),
    section=Absent("no comparison"),
    fit=Absent("excluded from every fit (issue 12: framework all-reduce tables are not NCCL)"),
    display=Absent("no comparison"),
)
