"""Timing loops shared by the torch workers, seconds throughout:

- ``chained_times`` (eager): ParallelKernelBench's convention (``utils/performance.py``): one CUDA event before
  the first call and one after every call, no host synchronisation inside the loop, so calls run back to back
  and each sample is the steady-state time of one call (the larger of its device time and its host issue time);
- ``loop_host_time`` (host): back-to-back calls timed with ``perf_counter``, the device left to keep up;
- ``held_host_times`` (host and device): calls issued while a sleep kernel holds the GPU, timed with
  ``perf_counter``: the host's issue cost alone; and, with CUDA events, the same calls' device time as the GPU
  runs them once the hold ends, all of them queued (the host never behind);
- ``host_probe`` (host): a fixed sequence of ten small eager ops issued with the GPU held, the host's speed at
  one moment (a lent host's speed moves by up to 2x within minutes: docs/validation/pkb/runs/x1-lease-9);
- ``graph_times`` (device): the calls captured once into a CUDA graph and replayed; each sample is one replay's
  time over its number of calls, i.e. the device time of a call with the graph's small gap between kernels.

Input groups (:func:`groups_for`): a call's tensors are cloned into ``floor(3 L2 / bytes) + 1`` groups (1 when one
group alone is at least 3x the L2) and the calls cycle through them, so every call reads from HBM, not the L2.
Standard library only at import time (torch is passed in).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

__all__ = [
    "capture_graphs",
    "chained_times",
    "graph_times",
    "groups_for",
    "held_host_times",
    "host_probe",
    "kernel_names",
    "loop_host_time",
    "probe_sequence",
    "stats",
    "sweep_counts",
]


def groups_for(nbytes: float, l2: int, cap: int = 1024) -> int:
    """Input groups so that cycling through them reads more than 3x the L2: ``floor(3 L2 / bytes) + 1``, at least
    2, at most ``cap``; 1 when one group is already at least 3x the L2 (ParallelKernelBench's rule, a larger cap).

    >>> groups_for(1 << 30, 60 << 20), groups_for(64 << 20, 60 << 20), groups_for(1 << 20, 60 << 20)
    (1, 3, 181)
    """
    if nbytes <= 0:
        return 1
    threshold = 3 * l2
    if nbytes >= threshold:
        return 1
    return int(min(max(2, threshold // int(nbytes) + 1), cap))


def _sync(torch: Any, dev: Any) -> None:
    if getattr(dev, "type", "cpu") == "cuda":
        torch.cuda.synchronize(dev)


def chained_times(torch: Any, dev: Any, call: Callable[[int], Any], warmup: int, iters: int) -> list[float]:
    """Seconds of each of ``iters`` back-to-back calls ``call(i)`` after ``warmup`` (CUDA events chained after every
    call, one synchronisation at the end; on the CPU, ``perf_counter`` around each call)."""
    for i in range(warmup):
        call(i)
    _sync(torch, dev)
    if getattr(dev, "type", "cpu") != "cuda":
        out = []
        for i in range(iters):
            t0 = time.perf_counter()
            call(i)
            out.append(time.perf_counter() - t0)
        return out
    events = [torch.cuda.Event(enable_timing=True) for _ in range(iters + 1)]
    events[0].record()
    for i in range(iters):
        call(i)
        events[i + 1].record()
    events[-1].synchronize()
    return [events[i].elapsed_time(events[i + 1]) * 1e-3 for i in range(iters)]


def loop_host_time(torch: Any, fn: Callable[[], Any], calls: int = 500, count: int = 7) -> float:
    """Host seconds per call of ``fn``: 50 warm-up calls, then ``count`` rounds of ``calls`` back-to-back calls
    (``perf_counter``, the GPU synchronised after each round), the median round."""
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    per = []
    for _ in range(count):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        per.append((time.perf_counter() - t0) / calls)
        torch.cuda.synchronize()
    return statistics.median(per)


def held_host_times(torch: Any, dev: Any, call: Callable[[int], Any], calls: int, device_s: float) -> dict[str, Any]:
    """Host seconds of each of ``calls`` calls ``call(i)`` issued while a sleep kernel holds the GPU busy for longer
    than they take (``torch.cuda._sleep``, sized from ``device_s``, the call's measured time): the device never
    waits for the host, so ``perf_counter`` around a call is its issue cost alone (Python, dispatch, launches).

    ``host_waits``: a call waited for the device (a sync: ``.item()``, ``.tolist()``, ``nonzero``) before the hold
    ended; then the per-call times include device work and ``host_s`` is what the host spent, waits included.

    ``queued_s`` (with ``queued_p10_s``, ``queued_p90_s``): when no call waited, the device seconds of each call as
    the GPU ran them, all queued before the hold ended (a CUDA event after the sleep kernel and after every call,
    recorded outside the host timing): the call's device time with the host never behind, what a CUDA-graph
    replay of it costs but for the eager launch gaps. Absent when a call waited. Empty on the CPU."""
    if getattr(dev, "type", "cpu") != "cuda":
        return {}
    rate = _sleep_rate(torch, dev)
    hold_s = 3.0 * calls * max(device_s, 20e-6) + 2e-3
    events = [torch.cuda.Event(enable_timing=True) for _ in range(calls + 1)]
    _sync(torch, dev)
    t_hold = time.perf_counter()
    torch.cuda._sleep(int(hold_s * rate))
    events[0].record()
    out = []
    for i in range(calls):
        t0 = time.perf_counter()
        call(i)
        out.append(time.perf_counter() - t0)
        events[i + 1].record()
    waited = time.perf_counter() - t_hold >= hold_s or torch.cuda.current_stream(dev).query()
    _sync(torch, dev)
    rec = {**stats(out, "host"), "host_waits": bool(waited), "host_hold_s": hold_s}
    if not waited:
        rec.update(stats([events[i].elapsed_time(events[i + 1]) * 1e-3 for i in range(calls)], "queued"))
    return rec


PROBE_OPS = ("add", "mul", "sum", "cat", "view", "t", "slice", "gt", "where", "clone")
"""The ops of :func:`probe_sequence`, in order (views included: they cost the host, not the device)."""


def probe_sequence(torch: Any, x: Any, y: Any) -> Any:
    """The ten small eager ops of :data:`PROBE_OPS` on ``x`` and ``y`` (64 elements each): the work
    :func:`host_probe` times, and what ``rooflib trace`` traces to predict it from a host's figures."""
    a, b, c = x + y, x * y, x.sum()
    d = torch.cat([a, b]).view(8, 16).t()[1:5]
    return torch.where(x > 0, a, b).clone(), c, d


def host_probe(torch: Any, dev: Any, calls: int = 40) -> float | None:
    """Median host seconds of one :func:`probe_sequence` on 64-element tensors, ``calls`` of them issued while a
    sleep kernel holds the GPU (:func:`held_host_times`): the same work at every moment it is run, so two
    probes' ratio is the ratio of the host's speed at those moments, and a probe over its prediction from a
    host's figures is how much more ops cost in a sequence than in their own loops. None on the CPU."""
    x, y = torch.randn(64, device=dev), torch.randn(64, device=dev)
    for _ in range(5):
        probe_sequence(torch, x, y)
    rec = held_host_times(torch, dev, lambda _: probe_sequence(torch, x, y), calls, 20e-6)
    return rec.get("host_s")


_SLEEP_RATE: dict[str, float] = {}


def _sleep_rate(torch: Any, dev: Any) -> float:
    """Cycles per second of ``torch.cuda._sleep`` on ``dev`` (timed once with CUDA events)."""
    key = str(dev)
    if key not in _SLEEP_RATE:
        cycles = 20_000_000
        torch.cuda._sleep(cycles // 10)  # warm
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(cycles)
        end.record()
        end.synchronize()
        _SLEEP_RATE[key] = cycles / (start.elapsed_time(end) * 1e-3)
    return _SLEEP_RATE[key]


def graph_times(
    torch: Any,
    dev: Any,
    call: Callable[[int], Any],
    calls: int,
    replays: int,
    kernels: list[str] | None = None,
) -> list[float] | None:
    """Per-call device seconds: ``call(0) .. call(calls - 1)`` captured into one CUDA graph, replayed ``replays``
    times back to back (events chained after every replay); each sample is a replay's time over ``calls``.

    None on the CPU. The captured outputs stay alive with the graph until it is dropped. ``kernels``, a list, gets
    the names of the kernels one replay runs (the first 8)."""
    if getattr(dev, "type", "cpu") != "cuda":
        return None
    side = torch.cuda.Stream(dev)
    side.wait_stream(torch.cuda.current_stream(dev))
    with torch.cuda.stream(side):  # warm-up on a side stream, as torch.cuda.graphs recommends before capture
        for i in range(min(calls, 3)):
            call(i)
    torch.cuda.current_stream(dev).wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    keep = []
    with torch.cuda.graph(graph):
        for i in range(calls):
            keep.append(call(i))
    graph.replay()  # one untimed replay
    torch.cuda.synchronize(dev)
    events = [torch.cuda.Event(enable_timing=True) for _ in range(replays + 1)]
    events[0].record()
    for i in range(replays):
        graph.replay()
        events[i + 1].record()
    events[-1].synchronize()
    out = [events[i].elapsed_time(events[i + 1]) * 1e-3 / calls for i in range(replays)]
    if kernels is not None:
        kernels.extend(kernel_names(torch, dev, graph.replay) or [])
    del keep, graph
    return out


def sweep_counts(estimate_s: float, *, target_s: float = 0.05, lo: int = 10, hi: int = 200) -> int:
    """Timed calls for a point whose call takes about ``estimate_s``: enough for ``target_s``, in [lo, hi].

    >>> sweep_counts(1e-3), sweep_counts(1e-6), sweep_counts(1.0)
    (50, 200, 10)
    """
    if not estimate_s > 0:
        return hi
    return int(min(hi, max(lo, math.ceil(target_s / estimate_s))))


def stats(samples: Sequence[float], prefix: str = "time") -> dict[str, float | int | None]:
    """``{prefix}_s`` (median), ``_p10_s``, ``_p90_s``, ``_mean_s`` and ``_n`` of ``samples`` (seconds)."""
    if not samples:
        return {f"{prefix}_s": None, f"{prefix}_n": 0}
    srt = sorted(samples)
    last = len(srt) - 1
    return {
        f"{prefix}_s": statistics.median(srt),
        f"{prefix}_p10_s": srt[int(0.1 * last)],
        f"{prefix}_p90_s": srt[math.ceil(0.9 * last)],
        f"{prefix}_mean_s": statistics.fmean(srt),
        f"{prefix}_n": len(srt),
    }


def kernel_names(torch: Any, dev: Any, fn: Callable[[], Any]) -> list[str] | None:
    """Names of the CUDA kernels one call of ``fn`` launches (torch.profiler; None on the CPU or on failure)."""
    if getattr(dev, "type", "cpu") != "cuda":
        return None
    try:
        from torch.profiler import ProfilerActivity, profile

        torch.cuda.synchronize(dev)
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize(dev)
        names = [
            e.name
            for e in prof.events()
            if str(getattr(e, "device_type", "")).endswith("CUDA") and not e.name.startswith(("Memcpy", "Memset"))
        ]
        return names[:8]
    except Exception:  # informative only: the measurement stands without it
        return None


def capture_graphs(torch: Any, dev: Any, fn: Callable[..., Any], groups: Sequence[tuple[Any, ...]]) -> list[Any]:
    """One CUDA graph of ``fn(*group)`` per input group (warmed up on a side stream first, as torch.cuda.graphs
    recommends); replay them to time the program without host issue."""
    side = torch.cuda.Stream(dev)
    side.wait_stream(torch.cuda.current_stream(dev))
    with torch.cuda.stream(side):
        for g in groups:
            fn(*g)
    torch.cuda.current_stream(dev).wait_stream(side)
    graphs = []
    for g in groups:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn(*g)
        graphs.append(graph)
    return graphs
