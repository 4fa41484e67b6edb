"""Every ParallelKernelBench problem traced and predicted: one row per problem (``rooflib trace --pkb ROOT
--problem all``).

A row holds the problem, its category (:mod:`rooflib.trace.pkb_catalog`), the keys of ``rooflib trace --json``
that summarise a prediction (``bound_time_s``, ``baseline_time_s``, ``graph_time_s``, ``host_time_s``, ``best``,
``terms``, ``unmodelled``, ``notes``) and three derived figures: ``speedup_available`` (baseline over bound: the
most any rewrite could gain), ``speedup_best`` (baseline over the best plan's time, eager or replayed as a CUDA
graph, whichever is faster) and ``unmodelled_share``
(share of the eager time in ops no model knows). A problem that does not trace has ``error`` set and no times.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from rooflib.errors import RooflibError
from rooflib.program.ir import Op, Program
from rooflib.specs import System
from rooflib.trace.pkb import Problem, Suite, trace_problem

__all__ = [
    "FAKE_COPIES",
    "FAKE_PREFIX",
    "FILLS",
    "SUMMARY_KEYS",
    "fake_name",
    "local_part",
    "problem_result",
    "problem_row",
    "suite_rows",
]

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
    plan = result.get("best") or {}
    best = min(float(plan.get("time_s", baseline)), float(plan.get("graph_time_s", baseline)))  # fused, or as a graph
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


FAKE_COPIES = frozenset({"c10d.allgather_", "c10d._allgather_base_", "c10d.allgather_into_tensor_coalesced_"})
"""The c10d calls whose fake-backend version copies on the device: all-gathers copy the input into each of the
``world`` parts of the output, one device-to-device copy each (torch's ``FakeProcessGroup``: ``allgather`` and
``_allgather_base``; measured on torch 2.11, where the host cost of these alone grows with the world size,
rooflib.bench.host_worker ``c10d``, and each part is its own memcpy in the CUPTI traces of
docs/validation/pkb/runs/x1-kernels-2)."""

FILLS: dict[str, tuple[str, ...]] = {
    "c10d.allgather_": ("parts",),
    "c10d._allgather_base_": ("parts",),
    "c10d.alltoall_base_": ("all",),
    "c10d.alltoall_": ("parts",),
    "c10d.allreduce_": ("all",),
    "c10d._reduce_scatter_base_": ("part", "part"),
    "c10d.reduce_scatter_": ("part", "part"),
    "c10d.scatter_": ("part",),
}
"""The device work of ``rooflib.bench.pkb_symmetric``'s fills (leases x1-lease-9 on), after the fake call, of a
collective whose tensors are integer or boolean (``integer`` on the op): per c10d call, its kernels, each
reading and writing its bytes once: ``parts``, one copy into each of the group's parts of the output (an
all-gather's input, as the fake all-gather does once more: problem 19 gathers its fp8 output as bytes; a list
all-to-all's own chunk); ``all``, one kernel over the call's bytes (an all-to-all's one broadcast copy, the
sum's ``mul_`` by the group size); ``part``, one kernel over one part (a reduce-scatter's copy and ``mul_``, a
scatter's copy). A sum is assumed (the fill scales only sums); their host time is the record's ``fill_s``, not
modelled here. A gather's part copies read the source the copy before them read and rewrite the parts the fake
copies wrote (L2, as the fake parts)."""

FAKE_PREFIX = "fake."
"""Prefix of a local part's stand-in for a collective: ``HostSpec.ops`` names its measured host cost as
``fake.<c10d op>`` (world-independent) or ``fake.<c10d op>@w<world>`` (measured at that world size)."""


def fake_name(name: str, world: int, host_ops: Mapping[str, object] | None = None) -> str:
    """The ``HostSpec.ops`` key of the fake-backend stand-in for the c10d call ``name`` at world ``world``: the
    world-specific key where ``host_ops`` has it, else the plain one.

    >>> fake_name("c10d.allgather_", 8, {"fake.c10d.allgather_@w8": 5.5e-05})
    'fake.c10d.allgather_@w8'
    >>> fake_name("c10d.allreduce_", 8, {})
    'fake.c10d.allreduce_'
    """
    # a send paired with a receive is one op (rooflib.trace.comm.pair_p2p): what a batch_isend_irecv of both costs
    base = FAKE_PREFIX + ("c10d.send_recv" if name in ("c10d.send", "c10d.recv_") else name)
    keyed = f"{base}@w{world}"
    return keyed if host_ops is not None and keyed in host_ops else base


def _loop_traffic(program: Program) -> float:
    """Bytes one call of the part touches (``l2_reuse_out``, :mod:`rooflib.trace.residency`), the fake
    all-gathers' inputs and outputs included; where no op carries it, those alone."""
    marked = [float(op.params.get("l2_reuse_out", 0.0)) for op in program.ops]
    if any(marked):
        return max(marked)
    gathers = [op for op in program.ops if op.kind == "collective" and op.name in FAKE_COPIES]
    total = 0.0
    for op in gathers:
        group = op.params.get("group")
        parts = len(group) if isinstance(group, list | tuple) and group else program.world
        total += float(op.params.get("bytes", 0.0)) * (1.0 + 1.0 / max(1, parts))
    return total


def _fills(op: Op, parts: int, stream: str, at: int) -> list[Op]:
    """The fill kernels (:data:`FILLS`) of collective ``op`` over ``parts`` ranks, the first after op ``at - 1``."""
    out: list[Op] = []
    nbytes = float(op.params.get("bytes", 0.0))
    for how in FILLS.get(op.name, ()):
        each = nbytes if how == "all" else nbytes / parts
        params: dict[str, object] = {"bytes": each}
        if how == "parts" and op.name in FAKE_COPIES:  # the source the copy before read; the part the fake copy wrote
            params.update(l2_warm=0.5, l2_reuse=2.0 * each, l2_warm_out=0.5, l2_reuse_out=nbytes + each)
        for _ in range(parts if how == "parts" else 1):
            dep = (at + len(out) - 1,)  # after the fake call (op at - 1) and the fills before it
            out.append(Op(f"fill.{op.name}", "copy", dict(params), stream=stream, deps=dep, host="none"))
    return out


def local_part(
    program: Program, host_ops: Mapping[str, object] | None = None, *, fake: bool = True, fills: bool = False
) -> Program:
    """The single-GPU part of a rank's program, as ``rooflib.bench.pkb_worker --mode local`` runs it: on one GPU,
    with torch's ``fake`` process group of ``program.world`` ranks.

    With ``fake`` (the default), each collective or send/receive becomes its fake-backend call: an op that costs
    the host what the call costs there (``HostSpec.ops['fake.<c10d op>']``, :func:`fake_name`; ``host_ops`` is
    that mapping, to pick the world-specific key) and the device nothing, except the all-gathers, whose fake
    version copies the input into every part of the output (one ``copy`` per part, the first carrying the call's
    host cost, the others reading the source from L2 where it fits, :data:`FAKE_COPIES`; all writing into the
    output block the caching allocator hands back call after call, warm where one call's traffic fits the L2,
    ``l2_warm_out``); the allocations before
    it stay charged (``host_calls``); the host sync of a barrier goes (the fake barrier waits for nothing).
    Without ``fake``, the communication is dropped and the ops that waited for it wait for what it waited for.
    With ``fills`` (and ``fake``), the integer collectives also run the fills of ``rooflib.bench.pkb_symmetric``
    (:data:`FILLS`), as the runs that record ``fills`` did.
    """
    keep: dict[int, int] = {}
    carried: dict[int, tuple[int, ...]] = {}
    ops: list[Op] = []
    loop = _loop_traffic(program) if fake else 0.0
    for i, op in enumerate(program.ops):
        deps = tuple(sorted({d for dep in op.deps for d in ((keep[dep],) if dep in keep else carried.get(dep, ()))}))
        comm = op.kind in ("collective", "send_recv")
        if fake and op.kind == "sync" and op.name.startswith("c10d."):
            carried[i] = deps
            continue
        if comm and not fake:
            carried[i] = deps
            continue
        keep[i] = len(ops)
        if comm:
            copies = op.name in FAKE_COPIES
            group = op.params.get("group")
            ranks = len(group) if isinstance(group, list | tuple) and group else program.world
            parts = ranks if copies else 1
            nbytes = float(op.params.get("bytes", 0.0)) / parts if copies else 0.0
            params: dict[str, object] = {"bytes": nbytes}
            for key in ("host_calls", "host_extra"):
                if op.params.get(key):
                    params[key] = op.params[key]
            # writes into the output block the allocator reuses call after call: warm where one call fits the L2
            reuse = {"l2_warm_out": 0.5, "l2_reuse_out": loop} if loop > 0 else {}
            if copies:
                params.update(reuse)
            stream = "compute" if op.stream.startswith("comm") else op.stream
            name = fake_name(op.name, program.world, host_ops)
            ops.append(Op(name, "copy", params, stream=stream, deps=deps, host="kernel"))
            for _ in range(parts - 1):  # one copy per part of the output, issued within the call's host cost
                part = {"bytes": nbytes, "l2_warm": 0.5, **reuse}  # the source the copy before it just read
                ops.append(Op(f"{name}.part", "copy", part, stream=stream, deps=(len(ops) - 1,), host="none"))
            if fills and op.params.get("integer"):
                ops += _fills(op, ranks, stream, len(ops))
            keep[i] = len(ops) - 1
        else:
            ops.append(replace(op, deps=deps))
    return Program(f"{program.name}.local", 1, tuple(ops), source=program.source)
