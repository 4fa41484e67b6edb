"""Single-GPU PyTorch programs measured eager and as CUDA graphs (``family == "programs"``, rooflib/bench/programs.py)
against ``rooflib trace`` + ``predict_program`` of the same functions and shapes.

Needs torch (the tracer); each program is traced with the measured shapes on one GPU and its predicted eager
(``baseline_time_s``) and graph (``graph_time_s``) times put next to the measured median of that mode.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from rooflib.specs.resolve import System

__all__ = ["programs_table"]

_SHAPE_KEYS = (
    "tokens",
    "hidden",
    "ffn",
    "batch",
    "seq",
    "heads",
    "kv_heads",
    "layers",
    "elements",
    "experts",
    "k",
    "vocab",
)


def programs_table(records: list[dict[str, Any]], system: System) -> pd.DataFrame:
    """One row per measured (program, shape, mode): measured and predicted seconds and the error in percent."""
    from rooflib.bench.programs import PROGRAMS
    from rooflib.program import predict_program
    from rooflib.trace import trace_program

    rows = []
    cache: dict[tuple[str, tuple[tuple[str, int], ...]], Any] = {}
    for rec in records:
        if rec.get("family") != "programs" or rec.get("record") != "point" or not rec.get("verified"):
            continue
        name = str(rec["name"])
        shape = tuple((k, int(rec[k])) for k in _SHAPE_KEYS if k in rec and rec[k] is not None)
        key = (name, shape)
        if key not in cache:
            prog = PROGRAMS[name]
            program = trace_program(prog.fn, prog.inputs, world=1, params=dict(shape), name=name)
            cache[key] = (predict_program(program, system, gpus=1), len(program.ops))
        pred, ops = cache[key]
        mode = str(rec["mode"])
        predicted = pred.baseline_time_s if mode == "eager" else pred.graph_time_s
        measured = float(rec["time_s"])
        rows.append(
            {
                "program": name,
                "shape": " ".join(f"{k}={v}" for k, v in shape),
                "mode": mode,
                "ops": ops,
                "measured_s": measured,
                "predicted_s": predicted,
                "error_pct": (predicted / measured - 1.0) * 100.0,
                "bound_s": pred.bound_time_s,
                "bound_below": pred.bound_time_s <= measured,
                "host_s": pred.host_time_s,
                "unmodelled_share": sum(u["share"] for u in pred.unmodelled),
            }
        )
    return pd.DataFrame.from_records(rows)
