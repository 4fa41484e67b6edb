"""Where does ParallelKernelBench's timed loop spend the time a small program's calls do not explain? One H200
(device tool), the fake process group of 8 ranks, from the repository root (rooflib importable):

    python3 benchmarks/device/host_loop_probe.py OUT.json

For a few small programs (an empty function, one ``add``, one ``clone``, the 1_allreduce shape: ``@no_grad``,
clone, ``dist.all_reduce``, and four elementwise ops in a row), per call:

- ``events``: PKB's loop (:func:`rooflib.bench.torch_timing.chained_times`: a CUDA event after every call, the
  device-side interval between consecutive events, median of 200);
- ``events_host``: the same loop's host time per iteration (``perf_counter`` around it, before the final sync);
- ``loop``: back-to-back calls with no events, host time per call (median of 7 rounds of 200);
- ``held``: calls issued while a sleep kernel holds the GPU (the issue cost alone);
- ``held_events``: PKB's loop issued while the GPU is held: its host time per iteration, events included.
"""

# ruff: noqa: B023  (each lambda runs in the iteration that made it)
from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any


def main() -> None:
    import torch
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore

    from rooflib.bench.torch_timing import _sleep_rate, chained_times, held_host_times

    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=8)
    dev = torch.device("cuda")
    x, y = (torch.randn(1024, 1024, device=dev, dtype=torch.bfloat16) for _ in range(2))

    @torch.no_grad()
    def allreduce(t: torch.Tensor) -> torch.Tensor:
        out = t.clone()
        dist.all_reduce(out, op=dist.ReduceOp.SUM)
        return out

    def four(t: torch.Tensor) -> torch.Tensor:
        return ((t * 2.0 + 1.0) * t).neg()

    programs: dict[str, Callable[[], Any]] = {
        "empty": lambda: None,
        "add": lambda: x + y,
        "clone": lambda: x.clone(),
        "1_allreduce": lambda: allreduce(x),
        "four_elementwise": lambda: four(x),
    }
    rate = _sleep_rate(torch, dev)
    out: dict[str, Any] = {}
    print(f"{'program':18s} {'events':>8s} {'ev host':>8s} {'loop':>8s} {'held':>8s} {'held ev':>8s}  (us per call)")
    for name, fn in programs.items():
        events = statistics.median(chained_times(torch, dev, lambda i: fn(), 50, 200))
        t0 = time.perf_counter()
        chained_times_host = []
        for _ in range(5):
            t0 = time.perf_counter()
            evs = [torch.cuda.Event(enable_timing=True) for _ in range(201)]
            evs[0].record()
            for i in range(200):
                fn()
                evs[i + 1].record()
            chained_times_host.append((time.perf_counter() - t0) / 200)
            evs[-1].synchronize()
        loops = []
        for _ in range(7):
            t0 = time.perf_counter()
            for _ in range(200):
                fn()
            loops.append((time.perf_counter() - t0) / 200)
            torch.cuda.synchronize()
        held = float(held_host_times(torch, dev, lambda i: fn(), 50, 50e-6)["host_s"])
        held_ev = []
        for _ in range(5):
            torch.cuda.synchronize()
            torch.cuda._sleep(int(0.05 * rate))  # 50 ms: longer than 200 iterations take to issue
            evs = [torch.cuda.Event(enable_timing=True) for _ in range(201)]
            t0 = time.perf_counter()
            evs[0].record()
            for i in range(200):
                fn()
                evs[i + 1].record()
            held_ev.append((time.perf_counter() - t0) / 200)
            torch.cuda.synchronize()
        row = {
            "events_s": events,
            "events_host_s": statistics.median(chained_times_host),
            "loop_s": statistics.median(loops),
            "held_s": held,
            "held_events_s": statistics.median(held_ev),
        }
        out[name] = row
        print(f"{name:18s} " + " ".join(f"{v * 1e6:8.2f}" for v in row.values()))
    with open(sys.argv[1], "w") as fh:
        json.dump(out, fh, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
