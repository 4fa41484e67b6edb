"""Where one call's host time goes, op by op: ``rooflib.bench.pkb_worker --mode profile``.

Host activity only (no CUPTI tracing), yet the profiler slows every later launch in its process
(pytorch/pytorch#144455): run it after all timing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

__all__ = ["host_profile"]


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
