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
- ``op`` (one record per ``op``, with the ``aten`` ops it dispatches; the cases are in
  :mod:`rooflib.bench.host_ops`): one eager PyTorch call as programs write it, on tiny tensors so the host
  bounds it (``HostSpec.ops``, by aten name): out-of-place ops that allocate (``add``, ``mul`` by a scalar,
  ``gelu``, ``silu``, ``tanh``, ``div``, the ``float`` cast), row ops (``softmax``, ``log_softmax``, ``sum``
  over a dim, ``topk``, ``nll_loss``), cuBLAS (``mm`` 64 x 64 x 64 and a 1 x 1024 x 1024 GEMV), causal
  ``sdpa``, views that launch nothing (``view``, ``transpose``, ``reshape``, ``split``: ``HostSpec.view``);
  and compositions the single ops predict, as held-out checks: a 3-D ``matmul`` (two views around an mm),
  ``cross_entropy`` (log-softmax then NLL) and ``chain`` (the six-op elementwise chain of
  :mod:`rooflib.bench.programs`, ``calls`` counting chains);
- ``mix`` (after the ``op`` cases): every ``op`` case that neither waits nor composes others, once each per round
  in a fixed order, as a program mixes different ops: ``host_s`` per round against ``alone_s``, the sum of the
  same cases' own-loop figures (``ratio``: what mixing costs over the tight loops' figures);
- ``iteration``: what a timed loop adds per iteration, as :func:`rooflib.bench.torch_timing.chained_times` runs
  the programs family (the next input group picked, an empty program called, a fresh CUDA event recorded, as
  ParallelKernelBench does: ``HostSpec.iteration``; ``events: fresh``);
- ``autograd`` (one record per ``case``): forward chains with and without ``requires_grad``, their
  ``backward()``, and ParallelKernelBench's two-layer training step, each with the autograd work it does
  counted (``records``, ``nodes``, ``backward``) and the aten ops it dispatches (:mod:`rooflib.bench.host_autograd`);
- ``queued`` (CUDA only): 10-500 one-element kernels launched eagerly behind a sleep kernel, all queued before
  the first runs: the device time per kernel of a queued eager stream (the slope less ``kernel_run``: the gap
  between two queued eager kernels, against a graph's ``kernel_gap``);
- ``queued_sized`` (``--part queued``, CUDA only): 100 kernels of one size queued eagerly behind a sleep kernel
  and the same 100 in a CUDA graph, sizes 4 B to 16 MiB, a vectorised ``add_`` and a non-vectorised strided
  ``copy_``: the device time per kernel of each, whose difference is the eager gap at that kernel's duration
  (is ``HostSpec.queued_gap`` paid on top of every kernel, or hidden behind the longer ones?);
- ``kernel_run`` (last, CUDA only): the device duration of the one-element ``add_`` kernel inside a graph, from
  the profiler (CUPTI); ``HostSpec.kernel_gap`` is the graph slope less it. Then ``op`` ``add`` and ``mm`` again
  with ``after_profiler: true``: CUPTI stays attached after a profiler session (pytorch/pytorch#144455) and
  slows every later launch, which is why no timed measurement may follow a profiler session.
- ``ops`` (``--part ops --cases a,b``): only the named op cases, each alone, between probes (no ``mix``);
- ``nccl`` (``--part nccl``, under torchrun, any world size): ``all_reduce`` of 4 B and of 1 MiB back to back
  (``HostSpec.nccl``); rank 0 writes the slowest rank's figures. NVLink multicast stays off.
- ``c10d`` (``--part c10d``, one process, one GPU): every ``torch.distributed`` call kind the ParallelKernelBench
  problems make, through torch's ``fake`` process group of ``--worlds`` ranks (the backend
  ``rooflib.bench.pkb_worker --mode local`` times the problems' single-GPU parts with): the call returns at once
  and moves nothing, so ``host_s`` is torch.distributed's own Python and c10d dispatch (a lower bound of a real
  NCCL call's host cost, ``HostSpec.nccl``). One record per case (``name: c10d``, ``case``, ``world``, the
  ``c10d`` op it dispatches as ``rooflib trace`` records it, ``bytes`` of the buffer), see
  :data:`rooflib.bench.host_dist.C10D_CASES`;
  then the calls that launch nothing or little that the problems make often (``name: alloc``: ``torch.empty``,
  ``empty_like``, ``new_empty``, ``zeros``, ``torch.tensor`` of a list (a host-to-device copy), ``cat``,
  ``stack``, ``contiguous`` of a contiguous tensor) with the aten op they dispatch.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from rooflib.bench.host_ops import OP_CASES, PKB_CASES, SYNC_CASES, op_cases, pkb_cases
from rooflib.bench.host_queued import queued, queued_sized
from rooflib.bench.torch_common import Clocks, Sink, finish, meta_record
from rooflib.bench.torch_timing import host_probe, stats
from rooflib.conventions import MULTICAST_OFF

__all__ = ["GRAPH_NODES", "OP_CASES", "main", "op_cases", "parser", "rounds"]

GRAPH_NODES = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--part", choices=("local", "nccl", "c10d", "queued", "ops"), default="local")
    p.add_argument("--cases", default="", help="ops: the op cases to time alone (comma-separated names)")
    p.add_argument("--worlds", default="2,8", help="c10d: fake process-group sizes")
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
    _ops(torch, dev, sink, args, clocks)
    _iteration(torch, dev, sink, args, clocks)
    from rooflib.bench.host_autograd import autograd_part  # it imports this module's rounds

    autograd_part(torch, dev, sink, args, clocks)
    if cuda:
        _graphs(torch, dev, sink, args, clocks)
        queued(torch, dev, sink, clocks)
        _profiled(torch, dev, sink, args, clocks)


def _op_record(
    torch: Any, dev: Any, name: str, fn: Callable[[], Any], args: argparse.Namespace, clocks: Clocks | None
) -> dict[str, Any]:
    calls = max(1, args.calls // 2)
    rec: dict[str, Any] = {"record": "point", "family": "host", "name": "op", "op": name, "gpus": 1}
    rec.update({"aten": list(OP_CASES.get(name) or PKB_CASES[name]), "calls": calls})
    rec.update(rounds(torch, dev, fn, calls, args.rounds))
    rec["verified"] = fn() is not None
    rec["sm_mhz"] = clocks.latest_sm_mhz() if clocks else None
    return rec


MIX_EXCLUDED = ("chain", "matmul3d", "cross_entropy", "no_grad", *SYNC_CASES)
"""Cases the ``mix`` round leaves out: the compositions (their parts are in it) and the calls that wait."""


def _ops(torch: Any, dev: Any, sink: Sink, args: argparse.Namespace, clocks: Clocks | None) -> None:
    alone: dict[str, float] = {}
    fns: dict[str, Callable[[], Any]] = {}
    for name, fn in op_cases(torch, dev).items():
        if name == "sdpa" and dev.type != "cuda":
            continue
        _probe(torch, dev, sink, f"op {name}")
        rec = _op_record(torch, dev, name, fn, args, clocks)
        sink.write(rec)
        alone[name], fns[name] = float(rec["host_s"]), fn
    for name, fn in pkb_cases(torch, dev).items():  # rooflib.bench.host_ops: the ops PKB's references use most
        _probe(torch, dev, sink, f"op {name}")
        try:
            rec = _op_record(torch, dev, name, fn, args, clocks)
        except Exception as exc:  # one op this torch refuses: recorded, the rest stands
            rec = {"record": "skipped", "family": "host", "name": "op", "op": name, "gpus": 1}
            sink.write({**rec, "reason": f"{type(exc).__name__}: {exc}"[:300]})
            continue
        sink.write(rec)
        alone[name], fns[name] = float(rec["host_s"]), fn
    sink.write(_mix(torch, dev, {k: f for k, f in fns.items() if k not in MIX_EXCLUDED}, alone, args))


def _only_ops(torch: Any, dev: Any, sink: Sink, args: argparse.Namespace, clocks: Clocks | None) -> None:
    """``--part ops``: only the op cases ``--cases`` names, each after a probe, between a start and an end probe
    (no ``mix`` round: a few cases are not a program's mix)."""
    names = [c for c in args.cases.split(",") if c]
    fns = {**op_cases(torch, dev), **pkb_cases(torch, dev)}
    sink.write(meta_record(torch, dev, "host", part="ops"))
    try:
        _probe(torch, dev, sink, "start")
        for name in names:
            _probe(torch, dev, sink, f"op {name}")
            sink.write(_op_record(torch, dev, name, fns[name], args, clocks))
        _probe(torch, dev, sink, "end")
    finally:
        finish(sink, clocks, {"record": "meta", "family": "host", "part": "ops", "phase": "end"})


def _mix(
    torch: Any, dev: Any, fns: dict[str, Callable[[], Any]], alone: dict[str, float], args: argparse.Namespace
) -> dict[str, Any]:
    """``mix``: every case of ``fns`` once per round, in a fixed order, as a program mixes ops: ``host_s`` per
    round, ``alone_s`` the sum of the same cases' figures each measured in its own loop, ``ratio`` the two's
    quotient (what a sequence of different ops costs over the tight loops' figures)."""
    order = list(fns)

    def round_() -> None:
        for name in order:
            fns[name]()

    rec: dict[str, Any] = {"record": "point", "family": "host", "name": "mix", "gpus": 1, "cases": order}
    rec.update(rounds(torch, dev, round_, max(1, args.calls // 20), args.rounds))
    rec["alone_s"] = sum(alone[name] for name in order)
    rec["ratio"] = rec["host_s"] / rec["alone_s"] if rec["alone_s"] else None
    rec["verified"] = bool(order)
    return rec


def _iteration(torch: Any, dev: Any, sink: Sink, args: argparse.Namespace, clocks: Clocks | None) -> None:
    """A timed loop's own cost per iteration, as ``chained_times`` and ParallelKernelBench run the programs: a
    fresh CUDA event recorded after every call (its first record creates the CUDA event; a reused event costs
    less, which is why earlier records without ``events: fresh`` are not used as ``HostSpec.iteration``)."""
    groups = [(torch.zeros(1, device=dev),) for _ in range(16)]
    cuda = dev.type == "cuda"
    pool = min(args.calls, 50) + args.calls * args.rounds + 1  # rounds(): the warm-up calls, then every round
    events = [torch.cuda.Event(enable_timing=True) for _ in range(pool)] if cuda else []
    state = {"i": 0}

    def empty(*xs: Any) -> Any:
        return xs[0]

    def step() -> Any:
        i = state["i"] = state["i"] + 1
        out = empty(*groups[i % len(groups)])
        if cuda:
            events[i % len(events)].record()
        return out

    rec = {"record": "point", "family": "host", "name": "iteration", "gpus": 1, "calls": args.calls, "events": "fresh"}
    rec.update(rounds(torch, dev, step, args.calls, args.rounds))
    rec["verified"] = state["i"] > 0
    rec["sm_mhz"] = clocks.latest_sm_mhz() if clocks else None
    sink.write(rec)


def _profiled(torch: Any, dev: Any, sink: Sink, args: argparse.Namespace, clocks: Clocks | None) -> None:
    """The tiny kernel's own device duration (profiler), then two ops again with CUPTI attached."""
    from torch.profiler import ProfilerActivity, profile

    x = torch.zeros(1, device=dev)
    graph = torch.cuda.CUDAGraph()
    side = torch.cuda.Stream(dev)
    side.wait_stream(torch.cuda.current_stream(dev))
    with torch.cuda.stream(side):
        x.add_(1)
    torch.cuda.current_stream(dev).wait_stream(side)
    with torch.cuda.graph(graph):
        for _ in range(100):
            x.add_(1)
    torch.cuda.synchronize(dev)
    try:
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(5):
                graph.replay()
            torch.cuda.synchronize(dev)
        runs = [
            float(e.time_range.elapsed_us()) * 1e-6
            for e in prof.events()
            if str(getattr(e, "device_type", "")).endswith("CUDA") and "add" in e.name.lower()
        ]
    except Exception as exc:  # recorded, the rest stands
        sink.write({"record": "skipped", "family": "host", "name": "kernel_run", "reason": str(exc)[:300]})
        runs = []
    if runs:
        rec = {"record": "point", "family": "host", "name": "kernel_run", "gpus": 1, "calls": len(runs)}
        rec.update({"device_s": statistics.median(runs), "time_s": statistics.median(runs), "verified": True})
        rec["sm_mhz"] = clocks.latest_sm_mhz() if clocks else None
        sink.write(rec)
    cases = op_cases(torch, dev)
    for name in ("add", "mm"):
        sink.write({**_op_record(torch, dev, name, cases[name], args, clocks), "after_profiler": True})


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


def _probe(torch: Any, dev: Any, sink: Sink, when: str) -> None:
    """The host's speed now (:func:`rooflib.bench.torch_timing.host_probe`), at the start and end of the part and
    before each op case: their median (``rooflib.calibrate.host.probe_reference``) is the host's speed while the
    figures were measured, which the probes taken before each ParallelKernelBench problem are compared with."""
    probe = host_probe(torch, dev)
    if probe is not None:
        rec = {"record": "point", "family": "host", "name": "probe", "when": when, "gpus": 1, "calls": 40}
        sink.write({**rec, "host_s": probe, "time_s": probe, "device_s": 0.0})


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    os.environ.update(MULTICAST_OFF)  # before torch is imported: never NVLink multicast
    import torch

    if args.part in ("nccl", "c10d"):
        from rooflib.bench.host_dist import c10d_part, nccl_part  # imports this module: not at the top

        (nccl_part if args.part == "nccl" else c10d_part)(torch, args)
        return
    unknown = [c for c in args.cases.split(",") if c and c not in OP_CASES and c not in PKB_CASES]
    if args.part == "ops" and (unknown or not args.cases):
        sys.stderr.write(
            f"error: --cases: {','.join(unknown) or 'none given'}: not an op case of rooflib.bench.host_ops\n"
        )
        raise SystemExit(2)
    dev = torch.device("cuda", 0) if args.device == "cuda" else torch.device("cpu")
    if args.part == "queued" and dev.type != "cuda":
        sys.stderr.write("error: --part queued needs a CUDA device (--device cuda)\n")
        raise SystemExit(2)
    sink = Sink(args.out)
    clocks = Clocks(0) if dev.type == "cuda" else None
    if args.part == "ops":
        _only_ops(torch, dev, sink, args, clocks)
        return
    if args.part == "queued":
        sink.write(meta_record(torch, dev, "host", part="queued"))
        try:
            queued_sized(torch, dev, sink, clocks)
        finally:
            finish(sink, clocks, {"record": "meta", "family": "host", "part": "queued", "phase": "end"})
        return
    sink.write(meta_record(torch, dev, "host", part="local"))
    try:
        _probe(torch, dev, sink, "start")
        _local(torch, dev, sink, args, clocks)
        _probe(torch, dev, sink, "end")
    finally:
        finish(sink, clocks, {"record": "meta", "family": "host", "part": "local", "phase": "end"})


if __name__ == "__main__":
    main()
