"""The host family's ``queued`` cases (:mod:`rooflib.bench.host_worker` runs them): the device side of an eager
stream, kernels launched while a sleep kernel holds the GPU so that all are queued before the first runs.

- ``queued``, ``queued_mixed``, ``queued_event`` (part ``local``): one-element kernels, the same one, four in
  turn, or each followed by a timing event: ``HostSpec.queued_gap`` and ``queued_event``;
- ``queued_sized`` (part ``queued``): kernels of 4 B to 16 MiB eager against the same in a CUDA graph: is the gap
  paid on top of every kernel, however long?
"""

from __future__ import annotations

import functools
import statistics
import time
from typing import Any

from rooflib.bench.torch_common import Clocks, Sink

__all__ = ["QUEUED_CASES", "QUEUED_NODES", "QUEUED_SIZES", "queued", "queued_sized"]


QUEUED_NODES = (10, 20, 50, 100, 200, 500)
"""Kernels per ``queued`` record (each a one-element ``add_``, launched eagerly behind a sleep kernel)."""
QUEUED_CASES = ("queued", "queued_mixed", "queued_event")
"""The ``queued`` variants: the same kernel each time; four different one-element kernels in turn (``add_``,
``mul_``, ``fill_``, ``copy_``), as a program launches; and ``add_`` with a timing event recorded after each, as
ParallelKernelBench's loop records one after every call."""


def queued(torch: Any, dev: Any, sink: Sink, clocks: Clocks | None, count: int = 7) -> None:
    """``queued``: ``nodes`` one-element kernels launched eagerly while a sleep kernel holds the GPU, so all of
    them are queued before the first runs; ``device_s`` is the device time from the sleep's end to the last
    kernel's (CUDA events), the median of ``count`` rounds. Its slope over ``nodes`` less ``kernel_run`` is the
    gap between two queued eager kernels (a graph's is ``kernel_gap``); ``queued_mixed`` and ``queued_event``
    (:data:`QUEUED_CASES`) the same with different kernels in turn and with an event after each. ``verified``:
    every ``add_`` ran and no round's launches outlasted the hold."""
    from rooflib.bench.torch_timing import _sleep_rate

    x, y, z, w = (torch.zeros(1, device=dev) for _ in range(4))
    mixed = (lambda: x.add_(1), lambda: y.mul_(1.0), lambda: z.fill_(2.0), lambda: w.copy_(z))
    rate = _sleep_rate(torch, dev)
    for name in QUEUED_CASES:
        for nodes in QUEUED_NODES:
            hold_s = 2e-3 + 30e-6 * nodes  # above a launch's host cost (4-10 us) times the kernels
            device, held = [], True
            x.zero_()
            adds = sum(1 for i in range(nodes) if name != "queued_mixed" or i % 4 == 0)
            for _ in range(count):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                marks = [torch.cuda.Event(enable_timing=True) for _ in range(nodes if name == "queued_event" else 0)]
                torch.cuda.synchronize(dev)
                t0 = time.perf_counter()
                torch.cuda._sleep(int(hold_s * rate))
                a.record()
                for i in range(nodes):
                    if name == "queued_mixed":
                        mixed[i % 4]()
                    else:
                        x.add_(1)
                    if marks:
                        marks[i].record()
                b.record()
                held = held and time.perf_counter() - t0 < hold_s and not torch.cuda.current_stream(dev).query()
                b.synchronize()
                device.append(a.elapsed_time(b) * 1e-3)
            rec = {"record": "point", "family": "host", "name": name, "gpus": 1, "nodes": nodes, "calls": count}
            rec.update(device_s=statistics.median(device), time_s=statistics.median(device), held=held)
            rec["verified"] = held and float(x.item()) == float(adds * count)
            rec["sm_mhz"] = clocks.latest_sm_mhz() if clocks else None
            sink.write(rec)


QUEUED_SIZES = (1, 1 << 12, 1 << 16, 1 << 19, 1 << 22)
"""fp32 elements per kernel of the ``queued_sized`` case (4 B to 16 MiB)."""


def queued_sized(torch: Any, dev: Any, sink: Sink, clocks: Clocks | None, nodes: int = 100, count: int = 7) -> None:
    """``queued_sized``: per kernel kind (``add``: ``x.add_(1)``, vectorised; ``strided``: ``y.copy_(s[:, 0])``,
    one column of a two-column matrix, the non-vectorised kernel) and size, ``nodes`` kernels launched eagerly
    while a sleep kernel holds the GPU (all queued before the first runs) and the same ``nodes`` captured in a
    CUDA graph; ``eager_s`` and ``graph_s``: device time per kernel (CUDA events, median of ``count`` rounds).
    ``verified``: every kernel ran (the adds counted, the copies equal their source) and no round's launches
    outlasted the hold."""
    from rooflib.bench.torch_timing import _sleep_rate

    rate = _sleep_rate(torch, dev)
    for kind in ("add", "strided"):
        for n in QUEUED_SIZES:
            x = torch.zeros(n, device=dev)
            src = torch.randn(n, 2, device=dev)
            fn = functools.partial(x.add_, 1) if kind == "add" else functools.partial(x.copy_, src[:, 0])
            fn()
            torch.cuda.synchronize(dev)
            runs, held = 1, True
            eager: list[float] = []
            graph: list[float] = []
            hold_s = 2e-3 + 30e-6 * nodes
            for _ in range(count):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                torch.cuda.synchronize(dev)
                t0 = time.perf_counter()
                torch.cuda._sleep(int(hold_s * rate))
                a.record()
                for _ in range(nodes):
                    fn()
                b.record()
                held = held and time.perf_counter() - t0 < hold_s and not torch.cuda.current_stream(dev).query()
                b.synchronize()
                eager.append(a.elapsed_time(b) * 1e-3 / nodes)
                runs += nodes
            side = torch.cuda.Stream(dev)
            side.wait_stream(torch.cuda.current_stream(dev))
            with torch.cuda.stream(side):
                fn()
            torch.cuda.current_stream(dev).wait_stream(side)
            runs += 1
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for _ in range(nodes):
                    fn()
            g.replay()
            runs += nodes
            for _ in range(count):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                g.replay()
                b.record()
                b.synchronize()
                graph.append(a.elapsed_time(b) * 1e-3 / nodes)
                runs += nodes
            ok = bool((x == runs).all()) if kind == "add" else bool(torch.equal(x, src[:, 0]))
            rec: dict[str, Any] = {"record": "point", "family": "host", "name": "queued_sized", "kind": kind}
            rec["gpus"] = 1
            rec.update(elements=n, bytes=4 * n, nodes=nodes, calls=count, held=held, verified=held and ok)
            rec.update(eager_s=statistics.median(eager), graph_s=statistics.median(graph))
            rec.update(time_s=rec["eager_s"], device_s=rec["eager_s"])
            rec["sm_mhz"] = clocks.latest_sm_mhz() if clocks else None
            sink.write(rec)
            del g
