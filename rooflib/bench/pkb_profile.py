"""Where one call's time goes, op by op: ``rooflib.bench.pkb_worker --mode profile`` (the host's) and ``--mode
kernels`` (the device's: every kernel each op launched, timed by CUPTI).

The profiler slows every later launch in its process (pytorch/pytorch#144455): run it after all timing.
"""

from __future__ import annotations

import bisect
import json
import statistics
import time
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["device_profile", "host_profile", "kernel_ops"]


def host_profile(torch: Any, dev: Any, call: Callable[[], Any], warmup: int, iters: int) -> dict[str, Any]:
    """``warmup`` calls, then ``iters`` back-to-back calls timed on the host (``time_s``, synchronised at the end),
    then as many under ``torch.profiler`` (host activity only; after three unrecorded steps): the top-level ops
    (no parent op) by name with their count and inclusive host seconds per call (``ops``: [name, count,
    seconds]), their sum (``ops_s``) and the profiled wall time per call (``profiled_s``); ``profiled_s - ops_s``
    is the Python between the ops (with the profiler's own cost)."""
    from torch.profiler import ProfilerActivity, profile, schedule

    for _ in range(warmup):
        call()
    torch.cuda.synchronize(dev) if dev.type == "cuda" else None
    t0 = time.perf_counter()
    for _ in range(iters):
        call()
    torch.cuda.synchronize(dev) if dev.type == "cuda" else None
    wall = (time.perf_counter() - t0) / iters
    skip = 3  # profiled steps not recorded: the profiler's own start-up (one waiting, two warming up)
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=2, active=iters)) as prof:
        for step in range(skip + iters):
            if step == skip:
                t1 = time.perf_counter()
            call()
            prof.step()
        t2 = time.perf_counter()
        torch.cuda.synchronize(dev) if dev.type == "cuda" else None
    ops: dict[str, list[float]] = {}
    for ev in prof.events():
        parent = ev.cpu_parent
        if ev.name.startswith("ProfilerStep") or (parent is not None and not parent.name.startswith("ProfilerStep")):
            continue  # the step markers, and the ops inside another op
        got = ops.setdefault(ev.name, [0.0, 0.0])
        got[0] += 1.0 / iters
        got[1] += ev.cpu_time_total * 1e-6 / iters
    rows = sorted(((name, round(c, 3), t) for name, (c, t) in ops.items()), key=lambda r: -r[2])
    return {
        "time_s": wall,
        "time_n": iters,
        "profiled_s": (t2 - t1) / iters,
        "ops_s": sum(t for _, _, t in rows),
        "ops": [list(r) for r in rows],
    }


KERNEL_NAME_CHARS = 160
"""Kernel names are cut to this many characters (CUTLASS and Triton names run to several hundred)."""


def _step_of(ev: Any) -> int | None:
    """The profiler step (``ProfilerStep#k``) an op ran in, from its ancestors; None outside every step."""
    parent = ev
    while parent is not None:
        if parent.name.startswith("ProfilerStep#"):
            return int(parent.name.split("#", 1)[1])
        parent = parent.cpu_parent
    return None


def _top(ev: Any) -> Any:
    """The outermost op above ``ev`` (below the step marker)."""
    while ev.cpu_parent is not None and not ev.cpu_parent.name.startswith("ProfilerStep"):
        ev = ev.cpu_parent
    return ev


def device_profile(torch: Any, dev: Any, call: Callable[[int], Any], warmup: int, iters: int) -> dict[str, Any]:
    """The device kernels of each call, op by op: ``warmup`` calls, then ``iters`` calls under ``torch.profiler``
    with CUDA activity (CUPTI; after three unrecorded steps), ``call(i)`` given the call's index (the caller
    cycles its input groups).

    Returns ``ops``: the ops that launched device work, in launch order, each ``[leaf op, top-level op, input
    shapes of the leaf, [[kernel, median seconds over the calls], ...]]`` (a leaf is the innermost op around the
    launch; memcpy and memset count as kernels), ``calls`` (calls whose op sequence matched the first's and so
    enter the medians), ``kernel_s`` (median over the calls of the summed kernel seconds) and ``kernels`` (kernel
    count per call). CUPTI times each kernel on the device, so the profiler's host overhead does not enter;
    the gaps between kernels do not either (``queued_s`` of ``--mode local`` has them)."""
    from torch.profiler import ProfilerActivity, profile, schedule

    cuda = dev.type == "cuda"
    for i in range(warmup):
        call(i)
    torch.cuda.synchronize(dev) if cuda else None
    skip = 3
    acts = [ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if cuda else [])]
    with profile(activities=acts, record_shapes=True, schedule=schedule(wait=1, warmup=2, active=iters)) as prof:
        for step in range(skip + iters):
            call(warmup + step)
            prof.step()
        torch.cuda.synchronize(dev) if cuda else None
    events = list(prof.events())
    got = kernel_ops(events)
    if not got["ops"] and cuda:  # no kernel linked to its op in the event list: read the Chrome trace instead
        import os
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "trace.json")
            prof.export_chrome_trace(path)
            with open(path) as fh:
                got = trace_ops(json.load(fh))
        got["source"] = "chrome trace"
    kinds: dict[str, int] = {}
    for ev in events:
        key = str(getattr(ev, "device_type", "?"))
        kinds[key] = kinds.get(key, 0) + 1
    got["event_kinds"] = kinds
    return got


def trace_ops(trace: dict[str, Any]) -> dict[str, Any]:
    """:func:`kernel_ops`'s record from a Chrome trace (``export_chrome_trace``): each kernel, memcpy and memset
    joined to the CPU op with its ``External id``, each op to the ``ProfilerStep#k`` span holding it and to the
    outermost op holding it on its thread."""
    evs = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X"]
    steps = [
        e for e in evs if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("cat") != "gpu_user_annotation"
    ]
    ops = [e for e in evs if e.get("cat") == "cpu_op"]
    by_ext: dict[Any, dict[str, Any]] = {}
    for op in ops:  # the innermost op of an external id: the latest to start
        ext = (op.get("args") or {}).get("External id")
        if ext is not None and (ext not in by_ext or op["ts"] >= by_ext[ext]["ts"]):
            by_ext[ext] = op
    tops = _outermost(ops)
    rows: dict[int, dict[int, list[Any]]] = {}
    for k in evs:
        if k.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        op = by_ext.get((k.get("args") or {}).get("External id"))
        if op is None:
            continue
        step = next((int(s["name"].split("#")[1]) for s in steps if s["ts"] <= op["ts"] <= s["ts"] + s["dur"]), None)
        if step is None:
            continue
        byop = rows.setdefault(step, {})
        if id(op) not in byop:
            top = _holder(tops.get(op.get("tid"), ([], [])), op)
            shapes = json.dumps((op.get("args") or {}).get("Input Dims") or [])[:200]
            byop[id(op)] = [op["ts"], op["name"], top, shapes, []]
        byop[id(op)][4].append((str(k["name"])[:KERNEL_NAME_CHARS], float(k["dur"]) * 1e-6))
    return _aggregate({step: [tuple(r) for r in byop.values()] for step, byop in rows.items()})


def _outermost(ops: list[dict[str, Any]]) -> dict[Any, tuple[list[float], list[dict[str, Any]]]]:
    """Per thread, the ops no other op holds (their start times, sorted, and the ops): nested spans of one thread
    never cross, so the outermost op holding an op is the last of these to start at or before it."""
    by: dict[Any, list[dict[str, Any]]] = {}
    for o in ops:
        by.setdefault(o.get("tid"), []).append(o)
    out: dict[Any, tuple[list[float], list[dict[str, Any]]]] = {}
    for tid, group in by.items():
        top: list[dict[str, Any]] = []
        for o in sorted(group, key=lambda o: (o["ts"], -o["dur"])):
            if not top or o["ts"] >= top[-1]["ts"] + top[-1]["dur"]:
                top.append(o)
        out[tid] = ([float(o["ts"]) for o in top], top)
    return out


def _holder(tops: tuple[list[float], list[dict[str, Any]]], op: dict[str, Any]) -> str:
    """The name of the outermost op holding ``op`` (``op`` itself when none does)."""
    starts, spans = tops
    i = bisect.bisect_right(starts, float(op["ts"])) - 1
    if i >= 0 and spans[i]["ts"] + spans[i]["dur"] >= op["ts"] + op["dur"]:
        return str(spans[i]["name"])
    return str(op["name"])


def kernel_ops(events: Iterable[Any]) -> dict[str, Any]:
    """:func:`device_profile`'s record from the profiler's events (``FunctionEvent``-like: ``name``, ``kernels``
    with ``name`` and ``duration`` in us, ``cpu_parent``, ``time_range.start``, ``input_shapes``)."""
    steps: dict[int, list[tuple[float, str, str, str, list[tuple[str, float]]]]] = {}
    for ev in events:
        kernels = getattr(ev, "kernels", None)
        if not kernels or ev.name.startswith("ProfilerStep"):
            continue
        step = _step_of(ev)
        if step is None:
            continue
        shapes = json.dumps(getattr(ev, "input_shapes", None) or [])[:200]
        ks = [(str(k.name)[:KERNEL_NAME_CHARS], float(k.duration) * 1e-6) for k in kernels]
        steps.setdefault(step, []).append((float(ev.time_range.start), ev.name, _top(ev).name, shapes, ks))
    return _aggregate(steps)


def _aggregate(steps: dict[int, list[tuple[float, str, str, str, list[tuple[str, float]]]]]) -> dict[str, Any]:
    seqs = [sorted(steps[s], key=lambda r: r[0]) for s in sorted(steps)]
    if not seqs:
        return {"ops": [], "calls": 0, "kernel_s": 0.0, "kernels": 0}

    def signature(seq: list[tuple[float, str, str, str, list[tuple[str, float]]]]) -> list[Any]:
        return [(name, top, [k for k, _ in ks]) for _, name, top, _, ks in seq]

    first = seqs[0]
    same = [s for s in seqs if signature(s) == signature(first)]
    ops = []
    for j, (_, name, top, shapes, ks) in enumerate(first):
        durs = [statistics.median(s[j][4][q][1] for s in same) for q in range(len(ks))]
        ops.append([name, top, shapes, [[k, d] for (k, _), d in zip(ks, durs, strict=True)]])
    totals = [sum(d for row in s for _, d in row[4]) for s in same]
    return {
        "ops": ops,
        "calls": len(same),
        "kernel_s": statistics.median(totals),
        "kernels": sum(len(op[3]) for op in ops),
    }
