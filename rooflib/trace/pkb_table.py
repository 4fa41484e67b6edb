"""Every ParallelKernelBench problem traced and predicted: one row per problem (``rooflib trace --pkb ROOT
--problem all``).

A row holds the problem, its category (:mod:`rooflib.trace.pkb_catalog`), the keys of ``rooflib trace --json``
that summarise a prediction (``bound_time_s``, ``baseline_time_s``, ``graph_time_s``, ``host_time_s``, ``best``,
``terms``, ``unmodelled``, ``notes``) and three derived figures: ``speedup_available`` (baseline over bound: the
most any rewrite could gain), ``speedup_best`` (baseline over the best plan's time) and ``unmodelled_share``
(share of the eager time in ops no model knows). A problem that does not trace has ``error`` set and no times.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from rooflib.errors import RooflibError
from rooflib.program.ir import Op, Program
from rooflib.specs import System
from rooflib.trace.pkb import Problem, Suite, trace_problem

__all__ = ["SUMMARY_KEYS", "local_part", "problem_result", "problem_row", "suite_rows"]

SUMMARY_KEYS = (
    "bound_time_s",
    "baseline_time_s",
    "graph_time_s",
    "host_time_s",
    "best",
    "terms",
    "unmodelled",
    "notes",
)


def problem_result(
    suite: Suite, problem: Problem, size: tuple[int, int], system: System, gpus: int, dtype: str = "bfloat16"
) -> dict[str, Any]:
    """``rooflib trace --json``'s dict for one problem, with a ``pkb`` entry (problem, category, size, how traced)."""
    from rooflib.program import predict_program
    from rooflib.trace.lower import lower

    trace = trace_problem(suite, problem.id, size, world=gpus, dtype=dtype)
    result: dict[str, Any] = predict_program(lower(trace), system, gpus=gpus).as_dict()
    result["notes"] = [*result.get("notes", []), *trace.notes]
    result["pkb"] = {
        "problem": problem.stem,
        "id": problem.id,
        "category": problem.category,
        "size": list(size),
        "dtype": dtype,
        "calls": len(trace.calls),
        "values": any("with values" in n for n in trace.notes),
    }
    return result


def problem_row(result: dict[str, Any]) -> dict[str, Any]:
    """The table row of one :func:`problem_result`."""
    pkb = result["pkb"]
    baseline, bound = float(result["baseline_time_s"]), float(result["bound_time_s"])
    best = float(result["best"].get("time_s", baseline)) if result.get("best") else baseline
    share = sum(float(r.get("share", 0.0)) for r in result.get("unmodelled", []))
    return {
        "problem": pkb["problem"],
        "id": pkb["id"],
        "category": pkb["category"],
        "system": result["system"],
        "gpus": result["gpus"],
        **{k: result.get(k) for k in SUMMARY_KEYS},
        "best_time_s": best,
        "speedup_available": baseline / bound if bound > 0 else None,
        "speedup_best": baseline / best if best > 0 else None,
        "unmodelled_share": share,
        "values": pkb["values"],
        "error": None,
    }


def suite_rows(
    suite: Suite,
    size: tuple[int, int],
    system: System,
    gpus: int,
    *,
    problems: Iterable[Problem] | None = None,
    dtype: str = "bfloat16",
) -> list[dict[str, Any]]:
    """One row per problem (all of ``suite`` unless ``problems`` is given), failures included with ``error``."""
    rows = []
    for problem in problems if problems is not None else suite.problems:
        start = time.perf_counter()
        try:
            row = problem_row(problem_result(suite, problem, size, system, gpus, dtype))
        except RooflibError as exc:
            row = {"problem": problem.stem, "id": problem.id, "category": problem.category, "system": system.name}
            row.update({"gpus": gpus, "error": str(exc)})
        row["trace_wall_s"] = time.perf_counter() - start
        rows.append(row)
    return rows


def local_part(program: Program) -> Program:
    """The single-GPU part of a rank's program: its ops without the communication (collectives, sends and
    receives), on one GPU, dependencies through removed ops carried over to what they waited for."""
    keep: dict[int, int] = {}
    carried: dict[int, tuple[int, ...]] = {}
    ops: list[Op] = []
    for i, op in enumerate(program.ops):
        deps = tuple(sorted({d for dep in op.deps for d in ((keep[dep],) if dep in keep else carried.get(dep, ()))}))
        if op.kind in ("collective", "send_recv"):
            carried[i] = deps
            continue
        keep[i] = len(ops)
        ops.append(replace(op, deps=deps))
    return Program(f"{program.name}.local", 1, tuple(ops), source=program.source)
