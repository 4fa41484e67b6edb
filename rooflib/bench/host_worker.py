"""The ``host`` benchmark family: what the host pays to issue work to a GPU through PyTorch (seconds per call).

    python -m rooflib.bench.host_worker --part local --out host.jsonl
    torchrun --nproc-per-node=N -m rooflib.bench.host_worker --part nccl --out host.jsonl   # any world size

Tests (``record: point``, ``family: host``, ``name``), each run in ``--rounds`` rounds of ``calls`` back-to-back
calls with no synchronisation inside a round; ``host_s`` is the host time of a round over its calls (median over
rounds), ``device_s`` the CUDA-event time of the round over its calls, ``time_s`` the round's wall time up to the
final synchronisation over its calls:

- ``launch``: ``torch.cuda._sleep(0)``, a near-empty kernel launched with no operator dispatch (raw launch rate);
- ``kernel``: ``x.add_(1)`` on a one-element tensor, an eager PyTorch op launching one kernel (``HostSpec.kernel``);
- ``cublas``: a 64 x 64 x 64 bf16 ``torch.matmul`` (``HostSpec.cublas``);
- ``sync``: one ``x.add_(1)`` then ``torch.cuda.synchronize()``, and ``item``: then ``x.item()``: a round trip
  per call (launch, the kernel, the host's wake-up);
- ``graph``: a captured CUDA graph of ``nodes`` tiny kernels (1 to 1000) replayed back to back: ``host_s`` per
  replay (``HostSpec.graph_launch`` at one node), ``device_s`` per replay (its slope in ``nodes`` is the gap
  between kernels of a graph, ``HostSpec.graph_node``);
- ``nccl`` (``--part nccl``, under torchrun, any world size): ``all_reduce`` of 4 B and of 1 MiB back to back
  (``HostSpec.nccl``); rank 0 writes the slowest rank's figures. NVLink multicast stays off.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from rooflib.bench.torch_common import Clocks, Sink, finish, meta_record, stats
from rooflib.conventions import MULTICAST_OFF

__all__ = ["GRAPH_NODES", "main", "parser", "rounds"]

GRAPH_NODES = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--part", choices=("local", "nccl"), default="local")
    p.add_argument("--calls", type=int, default=2000, help="back-to-back calls per round")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--device", default="cuda", help="cuda, or cpu (tests: host time only)")
    p.add_argument("--timeout", type=float, default=300.0, help="process-group timeout in seconds (nccl)")
    return p


def rounds(torch: Any, dev: Any, fn: Callable[[], Any], calls: int, count: int) -> dict[str, Any]:
    """Median over ``count`` rounds of ``calls`` back-to-back ``fn()``: host, device and wall seconds per call."""
    cuda = getattr(dev, "type", "cpu") == "cuda"
    for _ in range(min(calls, 50)):
        fn()
    if cuda:
        torch.cuda.synchronize(dev)
    host, device, wall = [], [], []
    for _ in range(count):
        a = torch.cuda.Event(enable_timing=True) if cuda else None
        b = torch.cuda.Event(enable_timing=True) if cuda else None
        if a is not None:
            a.record()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        t1 = time.perf_counter()
        if b is not None:
            b.record()
            b.synchronize()
        t2 = time.perf_counter()
        host.append((t1 - t0) / calls)
        wall.append((t2 - t0) / calls)
        if a is not None and b is not None:
            device.append(a.elapsed_time(b) * 1e-3 / calls)
    out: dict[str, Any] = {**stats(host, "host"), "time_s": statistics.median(wall)}
    if device:
        out["device_s"] = statistics.median(device)
    return out


def _local(torch: Any, dev: Any, sink: Sink, args: argparse.Namespace, clocks: Clocks | None) -> None:
    cuda = dev.type == "cuda"
    x = torch.zeros(1, device=dev)
    a = torch.randn(64, 64, device=dev, dtype=torch.bfloat16)
    b = torch.randn(64, 64, device=dev, dtype=torch.bfloat16)

    def sync_call() -> None:
        x.add_(1)
        if cuda:
            torch.cuda.synchronize(dev)

    tests: list[tuple[str, Callable[[], Any], int]] = [
        ("kernel", lambda: x.add_(1), args.calls),
        ("cublas", lambda: a @ b, args.calls),
        ("sync", sync_call, max(1, args.calls // 4)),
        ("item", lambda: x.add_(1).item(), max(1, args.calls // 4)),
    ]
    if cuda:
        tests.insert(0, ("launch", lambda: torch.cuda._sleep(0), args.calls))
    for name, fn, calls in tests:
        before = float(x.item())
        rec = {"record": "point", "family": "host", "name": name, "gpus": 1, "calls": calls}
        rec.update(rounds(torch, dev, fn, calls, args.rounds))
        if name in ("kernel", "sync", "item"):  # every call added one: the kernels ran
            ran = float(x.item()) - before
            rec["verified"] = ran == calls * args.rounds + min(calls, 50)
        else:
            rec["verified"] = True
        rec["sm_mhz"] = clocks.latest_sm_mhz() if clocks else None
        sink.write(rec)
    if cuda:
        _graphs(torch, dev, sink, args, clocks)


def _graphs(torch: Any, dev: Any, sink: Sink, args: argparse.Namespace, clocks: Clocks | None) -> None:
    x = torch.zeros(1, device=dev)
    for nodes in GRAPH_NODES:
        side = torch.cuda.Stream(dev)
        side.wait_stream(torch.cuda.current_stream(dev))
        with torch.cuda.stream(side):
            x.add_(1)
        torch.cuda.current_stream(dev).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(nodes):
                x.add_(1)
        x.zero_()
        replays = max(20, min(500, 20000 // nodes))
        rec = {"record": "point", "family": "host", "name": "graph", "gpus": 1, "nodes": nodes, "calls": replays}
        rec.update(rounds(torch, dev, graph.replay, replays, args.rounds))
        runs = replays * args.rounds + min(replays, 50)
        rec["verified"] = float(x.item()) == float(nodes * runs)
        rec["sm_mhz"] = clocks.latest_sm_mhz() if clocks else None
        sink.write(rec)
        del graph


def _nccl(torch: Any, args: argparse.Namespace) -> None:
    import datetime

    import torch.distributed as dist

    local = int(os.environ.get("LOCAL_RANK", "0"))
    timeout = datetime.timedelta(seconds=args.timeout)
    if args.device == "cpu":  # tests: the same calls through gloo
        dev = torch.device("cpu")
        dist.init_process_group("gloo", timeout=timeout)
    else:
        torch.cuda.set_device(local)
        dev = torch.device("cuda", local)
        dist.init_process_group("nccl", device_id=dev, timeout=timeout)
    rank, world = dist.get_rank(), dist.get_world_size()
    sink = Sink(args.out) if rank == 0 else None
    if sink is not None:
        nccl = torch.cuda.nccl.version() if dev.type == "cuda" else None
        version = ".".join(map(str, nccl)) if isinstance(nccl, tuple) else str(nccl)
        sink.write(meta_record(torch, dev, "host", part="nccl", gpus=world, nccl=version))
    try:
        for nbytes in (4, 1 << 20):
            buf = torch.ones(nbytes // 4, device=dev)
            dist.barrier()
            got = rounds(torch, dev, partial(dist.all_reduce, buf), max(1, args.calls // 4), args.rounds)
            buf.fill_(1.0)
            dist.all_reduce(buf)
            ok = bool(torch.all(buf == world).item())
            vals = torch.tensor(
                [got["host_s"], got["time_s"], got.get("device_s", 0.0), 0.0 if ok else 1.0],
                device=dev,
                dtype=torch.float64,
            )
            dist.all_reduce(vals, op=dist.ReduceOp.MAX)
            host_s, time_s, device_s, bad = (float(v) for v in vals.tolist())
            if sink is not None:
                rec = {
                    "record": "point",
                    "family": "host",
                    "name": "nccl",
                    "op": "all_reduce",
                    "gpus": world,
                    "bytes": nbytes,
                    "calls": max(1, args.calls // 4),
                    "host_s": host_s,
                    "time_s": time_s,
                    "device_s": device_s,
                    "verified": bad == 0.0,
                }
                sink.write(rec)
    finally:
        if sink is not None:
            sink.close()
        dist.destroy_process_group()


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    os.environ.update(MULTICAST_OFF)  # before torch is imported: never NVLink multicast
    import torch

    if args.part == "nccl":
        _nccl(torch, args)
        return
    dev = torch.device("cuda", 0) if args.device == "cuda" else torch.device("cpu")
    sink = Sink(args.out)
    clocks = Clocks(0) if dev.type == "cuda" else None
    sink.write(meta_record(torch, dev, "host", part="local"))
    try:
        _local(torch, dev, sink, args, clocks)
    finally:
        finish(sink, clocks, {"record": "meta", "family": "host", "part": "local", "phase": "end"})


if __name__ == "__main__":
    main()
