"""Where the time of a short eager call goes on one GPU: its kernels alone (CUPTI), the same calls replayed as a
CUDA graph, and eager with the host never behind (calls queued behind a sleep kernel), with and without a timing
event after each call (ParallelKernelBench records one). Inputs cold: cycled through groups past 3x the L2.

    python benchmarks/device/eager_chain.py --out $OUT/chain.jsonl      # on the device (torch, one GPU)

The cases are the shapes of ParallelKernelBench's 1024x1024 single-GPU parts (a 2 MiB clone, four column blocks
made contiguous and concatenated, three elementwise ops) and one long kernel (a 32 MiB clone). Each record:
``case``, ``kernels`` and ``kernel_s`` (CUPTI, median per call), ``graph_s`` (a graph of one call per input
group, replayed; per call), ``chained_s`` (PKB's loop: an event after each call), ``queued_s`` (held calls, an
event after each), ``queued_bare_s`` (held calls, events only around all of them), ``verified`` (each case's
output against the same call on the host). What the program model says for the same calls:
``python tools/eager_chain_report.py``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any


def cases(torch: Any) -> dict[str, tuple[tuple[int, int], Any]]:
    def strided4(x: Any) -> Any:
        return torch.cat([x[:, j * 256 : (j + 1) * 256].contiguous() for j in range(4)])

    def ew3(x: Any) -> Any:
        y = x * 2
        return (y + x).neg()

    return {
        "clone": ((1024, 1024), lambda x: x.clone()),
        "strided4": ((1024, 1024), strided4),
        "ew3": ((1024, 1024), ew3),
        "clone_32m": ((4096, 4096), lambda x: x.clone()),
    }


def _graph_s(torch: Any, dev: Any, fn: Any, inputs: list[Any], replays: int = 7) -> float:
    """Per call: one graph of a call on each input group (cold, as the eager loop cycles them), replayed."""
    s = torch.cuda.Stream(dev)
    s.wait_stream(torch.cuda.current_stream(dev))
    with torch.cuda.stream(s):
        for x in inputs[:3]:
            fn(x)
    torch.cuda.current_stream(dev).wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        outs = [fn(x) for x in inputs]
    times = []
    for _ in range(replays):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e-3 / len(inputs))
    del outs
    return statistics.median(times)


def _bare_s(torch: Any, dev: Any, fn: Any, inputs: list[Any], calls: int, device_s: float) -> float:
    """Per call: ``calls`` calls queued behind a sleep kernel, events only before the first and after the last."""
    from rooflib.bench.torch_timing import _sleep_rate

    rate = _sleep_rate(torch, dev)
    out = []
    for _ in range(5):
        torch.cuda.synchronize(dev)
        torch.cuda._sleep(int((3.0 * calls * max(device_s, 20e-6) + 2e-3) * rate))
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for i in range(calls):
            fn(inputs[(40 + i) % len(inputs)])
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b) * 1e-3 / calls)
    return statistics.median(out)


def measure(torch: Any, dev: Any, name: str, shape: tuple[int, int], fn: Any, l2: int) -> dict[str, Any]:
    """One case's record (the module docstring)."""
    from rooflib.bench.pkb_profile import device_profile
    from rooflib.bench.torch_timing import chained_times, groups_for, held_host_times

    torch.manual_seed(len(name))
    x0 = torch.randn(shape, device=dev, dtype=torch.bfloat16)
    groups = groups_for(x0.numel() * 2, l2, cap=128)
    inputs = [x0] + [x0.clone() for _ in range(groups - 1)]
    ok = bool(torch.equal(fn(x0).cpu(), fn(x0.cpu())))
    prof = device_profile(torch, dev, lambda i: fn(inputs[i % groups]), 5, 20)
    chained = statistics.median(chained_times(torch, dev, lambda i: fn(inputs[i % groups]), 10, 50))
    held = held_host_times(torch, dev, lambda i: fn(inputs[(50 + i) % groups]), 20, chained)
    return {
        "record": "point",
        "family": "eager_chain",
        "case": name,
        "shape": list(shape),
        "groups": groups,
        "kernels": prof.get("kernels"),
        "kernel_s": prof.get("kernel_s"),
        "graph_s": _graph_s(torch, dev, fn, inputs[: min(groups, 64)]),
        "chained_s": chained,
        "queued_s": held.get("queued_s"),
        "queued_bare_s": _bare_s(torch, dev, fn, inputs, 20, chained),
        "verified": ok,
    }


def main(argv: list[str] | None = None) -> None:
    import torch

    from rooflib.bench.torch_common import l2_bytes

    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", required=True, type=Path)
    a = p.parse_args(argv)
    dev = torch.device("cuda")
    l2 = l2_bytes(torch, dev)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    with a.out.open("w") as fh:
        meta = {"record": "meta", "family": "eager_chain", "torch": torch.__version__}
        fh.write(json.dumps({**meta, "gpu": torch.cuda.get_device_name(dev), "l2_bytes": l2}) + "\n")
        for name, (shape, fn) in cases(torch).items():
            rec = measure(torch, dev, name, shape, fn, l2)
            fh.write(json.dumps(rec) + "\n")
            fh.flush()
            us = {k: round(v * 1e6, 2) for k, v in rec.items() if k.endswith("_s") and v}
            print(f"{name:10s} kernels={rec['kernels']} verified={rec['verified']} {us}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
