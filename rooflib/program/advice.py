"""Advice per fusable region: which resource binds, the best mechanism and schedule, and why (``--explain``).

For each region of a program (:mod:`rooflib.program.regions`) the schedule model has priced every (schedule,
mechanism, communication SMs) choice; the advice names the best, compares it with the runner-up mechanism and
schedule and with NCCL's own collective after the compute (the eager baseline of the region), and says which
resource binds: the region's compute at the datasheet peak, its HBM traffic, or its communication at the link
rate (the terms of the bound). The rationale is built from those numbers only; nothing is asserted that the
model did not compute.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rooflib.program.ir import Program
from rooflib.program.regions import Region
from rooflib.schedule import AUTO, LIBRARY, Choice, StagePrediction
from rooflib.transfer import CAPABILITIES
from rooflib.units import format_time

__all__ = ["HOST_BOUND", "host_advice", "region_advice"]

HOST_BOUND = 0.9
"""A CUDA graph is advised when its replay takes less than this share of the eager time."""

_WHY_MECHANISM = {
    "multimem": "the NVSwitch reduces (multimem ld_reduce / red), so each GPU sends its data once instead of "
    "relaying partial sums",
    "copy_engine": "DMA engines move the bytes and leave every SM to the compute",
    "tma": "bulk asynchronous copies issued by one thread per tile: few SM cycles per byte",
    "ldst": "register loads and stores: fine-grained, but every byte passes through SM registers",
    "rdma_proxy": "across NVLink domains the bytes go by GPUDirect RDMA through a CPU proxy",
    "rdma_gpu": "across NVLink domains the GPU posts its RDMA writes itself (IBGDA)",
}


def _mechanism(choice: Choice) -> str:
    return choice.mechanism.split("+")[0]


def _best_by(choices: Sequence[Choice], key: str) -> dict[str, Choice]:
    out: dict[str, Choice] = {}
    for c in choices:
        if c.mechanism in (LIBRARY, AUTO, "none"):
            continue
        k = c.schedule if key == "schedule" else c.mechanism
        if k not in out or c.time_s < out[k].time_s:
            out[k] = c
    return out


def _binding(pred: StagePrediction) -> tuple[str, float]:
    terms = {"compute": pred.compute_s, "memory": pred.memory_s, "communication": pred.comm_s}
    name = max(terms, key=lambda k: terms[k])
    return name, terms[name]


def _schedule_reason(best: Choice, pred: StagePrediction) -> str:
    c, m = pred.compute_s, pred.comm_s
    if best.schedule == "sequential":
        small = min(c, m)
        return (
            f"overlap would hide at most the smaller side ({format_time(small)} of "
            f"{'compute' if c <= m else 'communication'} at the bound), less than what overlapping costs here"
        )
    if best.schedule == "intra_sm":
        return "every SM computes and sends its own tiles: no SM is given up, each tile's send hides behind the next"
    return (
        f"{best.comm_sms} SMs communicate while the others compute: the sends run beside the compute waves at the "
        f"price of {best.comm_sms} SMs of compute"
        if CAPABILITIES[_mechanism(best)].uses_sms  # type: ignore[index]
        else "the copy engine sends while all SMs compute"
    )


def region_advice(program: Program, region: Region, pred: StagePrediction, tie_tolerance: float) -> dict[str, Any]:
    """The advice for ``region`` of ``program`` whose stage the schedule model predicted as ``pred``; runner-ups
    within ``tie_tolerance`` of the best are called ties."""
    names = [program.ops[i].name for i in region.ops]
    library = next((c for c in pred.choices if c.mechanism == LIBRARY), None)
    fused = [c for c in pred.choices if c.mechanism not in (LIBRARY, AUTO, "none")]
    best = min(fused or list(pred.choices), key=lambda c: (c.time_s, c.comm_sms))
    binding, _ = _binding(pred)
    by_mech = _best_by(pred.choices, "mechanism")
    by_sched = _best_by(pred.choices, "schedule")
    out: dict[str, Any] = {
        "ops": names,
        "pattern": region.pattern,
        "binding": binding,
        "bound_s": pred.bound_s,
        "terms": {"compute_s": pred.compute_s, "memory_s": pred.memory_s, "comm_s": pred.comm_s},
        "library_s": library.time_s if library else None,
        "best": {
            "schedule": best.schedule,
            "mechanism": best.mechanism,
            "comm_sms": best.comm_sms,
            "algorithm": best.algorithm or None,
            "time_s": best.time_s,
        },
        "speedup": (library.time_s / best.time_s) if library and best.time_s > 0 else None,
        "by_mechanism": {k: v.time_s for k, v in sorted(by_mech.items(), key=lambda kv: kv[1].time_s)},
        "by_schedule": {k: v.time_s for k, v in sorted(by_sched.items(), key=lambda kv: kv[1].time_s)},
    }
    out["rationale"] = _rationale(out, best, pred, by_mech, by_sched, tie_tolerance)
    return out


def _versus(best: Choice, other: Choice, tie: float) -> str:
    return "ties with" if other.time_s <= best.time_s * (1.0 + tie) else "beats"


def _rationale(
    d: dict[str, Any],
    best: Choice,
    pred: StagePrediction,
    by_mech: dict[str, Choice],
    by_sched: dict[str, Choice],
    tie: float,
) -> str:
    t = d["terms"]
    head = (
        f"{' + '.join(d['ops'])} ({d['pattern']}): {d['binding']} binds (compute {format_time(t['compute_s'])}, "
        f"memory {format_time(t['memory_s'])}, communication {format_time(t['comm_s'])} at the bound)."
    )
    if best.mechanism in (LIBRARY, AUTO, "none"):
        alone = {c.mechanism: c for c in pred.choices if c.mechanism in (LIBRARY, AUTO)}
        if LIBRARY not in alone or AUTO not in alone:
            return f"{head} Nothing to fuse or overlap here ({format_time(best.time_s)})."
        lib, auto = alone[LIBRARY], alone[AUTO]
        gain = f", {lib.time_s / auto.time_s:.2f}x" if auto.time_s < lib.time_s else ""
        return (
            f"{head} Nothing to fuse: the collective runs alone. NCCL's own algorithm ({lib.algorithm}) takes "
            f"{format_time(lib.time_s)}; the fastest modelled kernel ({auto.algorithm}) {format_time(auto.time_s)}"
            f"{gain}."
        )
    sms = f" on {best.comm_sms} communication SMs" if best.schedule == "inter_sm" and best.comm_sms else ""
    lines = [head, f"Best: {best.schedule} with {best.mechanism}{sms}, {format_time(best.time_s)}"]
    if d["library_s"]:
        lines[-1] += f" against {format_time(d['library_s'])} for the unfused kernel then NCCL ({d['speedup']:.2f}x)."
    else:
        lines[-1] += "."
    others = [(k, v) for k, v in by_mech.items() if k != best.mechanism]
    why = _WHY_MECHANISM.get(_mechanism(best), "")
    if others:
        k, v = min(others, key=lambda kv: kv[1].time_s)
        vs = _versus(best, v, tie)
        lines.append(f"Mechanism: {best.mechanism} ({why}) {vs} {k} ({format_time(v.time_s)}, {v.schedule}).")
    elif why:
        lines.append(f"Mechanism: {best.mechanism}, the only one that can ({why}).")
    rest = [(k, v) for k, v in by_sched.items() if k != best.schedule]
    reason = _schedule_reason(best, pred)
    if rest:
        k, v = min(rest, key=lambda kv: kv[1].time_s)
        lines.append(f"Schedule: {best.schedule} {_versus(best, v, tie)} {k} ({format_time(v.time_s)}): {reason}.")
    else:
        lines.append(f"Schedule: {best.schedule}: {reason}.")
    return " ".join(lines)


def host_advice(eager: Any, graph_s: float, best_graph_s: float, terms: dict[str, float]) -> list[dict[str, Any]]:
    """Advice to replay the program as a CUDA graph when the eager loop is host-bound (``eager``: the eager
    :class:`~rooflib.program.timeline.Timeline`); empty when the graph would not be faster than ``HOST_BOUND``."""
    if not graph_s < HOST_BOUND * eager.time_s:
        return []
    fused = f"; with the fused regions below, {format_time(best_graph_s)}" if best_graph_s < graph_s * 0.99 else ""
    text = (
        f"Host-bound: the eager loop takes {format_time(eager.time_s)}, of which the host spends "
        f"{format_time(eager.host_s)} issuing ops; one CUDA-graph replay takes {format_time(graph_s)} "
        f"({eager.time_s / graph_s:.2f}x){fused}. Capture the step in a CUDA graph (torch.cuda.graphs) or fuse its "
        "small ops before tuning any kernel."
    )
    return [
        {
            "ops": [],
            "pattern": "graph",
            "binding": "host",
            "bound_s": max(terms.values()),
            "terms": dict(terms),
            "library_s": eager.time_s,
            "best": {"schedule": "graph", "mechanism": "library", "comm_sms": 0, "algorithm": None, "time_s": graph_s},
            "speedup": eager.time_s / graph_s,
            "by_mechanism": {},
            "by_schedule": {},
            "rationale": text,
        }
    ]
