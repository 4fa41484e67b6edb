"""GEMMs timed as aiconfigurator's tables time them: inside a CUDA graph, weight copies cycled so the weights come
from HBM, not L2; one GPU.

    python -m rooflib.bench.gemm_graph_worker --out gemm-graph.jsonl [--dtypes bf16,fp8] [--modes graph,eager]
        [--shapes grid|tinyk|MxNxK,...] [--max-seconds S]

Per shape and dtype: fresh random normal inputs; ``copies`` weight copies (enough that they pass twice the L2,
at most 64), one activation; a graph of ``copies`` GEMMs (copy i's output in its own buffer) is captured and
replayed (``--warmup``, then ``--iters`` replays between CUDA events); the record's ``time_s`` is the median replay
over ``copies``. bf16 through ``torch.matmul``, fp8 (e4m3, unit scales, bf16 output) through ``torch._scaled_mm``:
a bare GEMM, without the activation quantisation the tables' fp8 rows include. The first and last copies'
outputs are checked against an fp32 product of the same inputs (relative Frobenius error: bf16 < 2e-2, fp8 < 1e-1).
``--modes eager`` also times the same GEMMs launched eagerly, back to back over the same weight copies, all
queued behind a sleep kernel so that the host never holds the GPU back (``mode: eager``): what a PyTorch program
that keeps the device busy sees, as ParallelKernelBench's timing does. Writes JSON Lines (one ``meta``, one
``gemm`` record per shape and mode); a rerun appends only the shapes and modes its file lacks, so an interrupted
run loses nothing and duplicates nothing.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import statistics
import time
from typing import Any

from rooflib.bench.gemm_worker import _bf16_product, _fp8_product
from rooflib.bench.timing import event_times

MS = (1, 8, 16, 64, 129, 256, 1024, 4096, 8192)
NK = ((4096, 4096), (8192, 8192), (1024, 8192), (8192, 1024), (16384, 4096), (4096, 16384), (512, 16384))
SHAPES = tuple((m, n, k) for n, k in NK for m in MS)
TINY_K = tuple((s, s, k) for s in (4096, 8192, 16384) for k in (16, 32, 64, 128, 256, 512, 1024))
"""Large outputs over a short k (``--shapes tinyk``): GEMMs that write more than they read or compute, where
the epilogue (the output's store), not the main loop, sets the time."""
SHAPE_SETS = {"grid": SHAPES, "tinyk": TINY_K}


def parse_shapes(text: str) -> tuple[tuple[int, int, int], ...]:
    """``grid``, ``tinyk`` or explicit ``MxNxK`` shapes separated by commas."""
    if text in SHAPE_SETS:
        return SHAPE_SETS[text]
    shapes = []
    for item in text.split(","):
        dims = item.lower().split("x")
        if len(dims) != 3 or not all(d.isdigit() and int(d) > 0 for d in dims):
            raise ValueError(f"--shapes: {item!r} is not MxNxK (positive integers) nor one of {sorted(SHAPE_SETS)}")
        shapes.append((int(dims[0]), int(dims[1]), int(dims[2])))
    return tuple(shapes)


TOL = {"bf16": 2e-2, "fp8": 1e-1}


def _done(path: str) -> set[tuple[str, int, int, int, str]]:
    seen: set[tuple[str, int, int, int, str]] = set()
    if not os.path.exists(path):
        return seen
    with open(path) as fh:
        for line in fh:
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:  # a line cut by an interruption: that shape runs again
                continue
            if rec.get("record") in ("gemm", "skip"):
                seen.add((rec["dtype"], rec["m"], rec["n"], rec["k"], rec.get("mode", "graph")))
    return seen


def _torn(path: str) -> bool:
    """Whether the file's last line was cut (no final newline)."""
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return False
    with open(path, "rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) != b"\n"


def _operands(torch: Any, dtype: str, m: int, n: int, k: int, copies: int) -> tuple[Any, list[Any]]:
    dev = torch.device("cuda", 0)
    a = torch.randn(m, k, device=dev)
    bs = [torch.randn(k, n, device=dev) for _ in range(copies)]
    if dtype == "bf16":
        return a.bfloat16(), [b.bfloat16() for b in bs]
    return a.to(torch.float8_e4m3fn), [b.t().contiguous().to(torch.float8_e4m3fn).t() for b in bs]


def _product(torch: Any, dtype: str, a: Any, b: Any) -> Any:
    return (_bf16_product(a, b) if dtype == "bf16" else _fp8_product(torch, a, b))()


SLEEP_CYCLES = 8_000_000
"""A sleep kernel of about 4 ms at 2 GHz ahead of each timed eager batch: longer than the host takes to launch
64 GEMMs, so the whole batch is queued when the device reaches it."""


def measure(
    torch: Any, dtype: str, m: int, n: int, k: int, l2: int, warmup: int, iters: int, mode: str = "graph"
) -> dict[str, Any]:
    elem = 2 if dtype == "bf16" else 1
    copies = max(2, min(64, math.ceil(2 * l2 / (n * k * elem))))
    a, bs = _operands(torch, dtype, m, n, k, copies)
    for b in bs[:2]:  # warm cuBLAS's heuristics and workspace outside the capture
        _product(torch, dtype, a, b)
    torch.cuda.synchronize()
    graph = None
    if mode == "graph":
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            outs = [_product(torch, dtype, a, b) for b in bs]
        times = event_times(torch, graph.replay, warmup, iters, per_call=copies)
    else:  # eager, back to back, queued behind a sleep kernel (events after it: the batch alone)
        held: list[Any] = []

        def batch() -> None:
            held[:] = [_product(torch, dtype, a, b) for b in bs]

        times = event_times(
            torch, batch, warmup, iters, per_call=copies, before=lambda: torch.cuda._sleep(SLEEP_CYCLES)
        )
        outs = held
    errs = []
    for i in (0, copies - 1):
        ref = a.float() @ bs[i].float()
        errs.append(float(torch.linalg.norm(outs[i].float() - ref) / torch.linalg.norm(ref)))
    med = statistics.median(times)
    del graph, outs
    return {
        "record": "gemm",
        "family": "gemm",
        "source": "rooflib",
        "name": f"gemm_{dtype}",
        "dtype": dtype,
        "mode": mode,
        "m": m,
        "n": n,
        "k": k,
        "copies": copies,
        "flops": 2.0 * m * n * k,
        "time_s": med,
        "time_p10_s": sorted(times)[len(times) // 10],
        "time_p90_s": sorted(times)[(9 * len(times)) // 10],
        "flops_per_s": 2.0 * m * n * k / med,
        "rel_error": max(errs),
        "verified": max(errs) < TOL[dtype],
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--dtypes", default="bf16,fp8")
    p.add_argument("--modes", default="graph", help="graph, eager (queued eager launches), or both: graph,eager")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--iters", type=int, default=15)
    p.add_argument("--max-seconds", type=float, default=float("inf"), help="start no new shape after this")
    p.add_argument("--shapes", default="grid", help="grid (default), tinyk, or MxNxK,MxNxK,...")
    args = p.parse_args(argv)
    try:
        shapes = parse_shapes(args.shapes)
    except ValueError as exc:
        p.error(str(exc))
    modes = [md for md in args.modes.split(",") if md]
    bad = [md for md in modes if md not in ("graph", "eager")]
    if bad or not modes:
        p.error(f"--modes {args.modes!r}: each must be graph or eager")
    import torch

    start = time.monotonic()
    props = torch.cuda.get_device_properties(0)
    l2 = int(getattr(props, "L2_cache_size", 50 << 20))
    done = _done(args.out)
    torn = _torn(args.out)
    with open(args.out, "a") as sink:
        if torn:  # an interrupted write: end its line so the next record starts on its own
            sink.write("\n")
        meta = {
            "record": "meta",
            "family": "gemm",
            "worker": "gemm_graph_worker",
            "gpu": props.name,
            "sms": props.multi_processor_count,
            "l2_bytes": l2,
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        }
        sink.write(json.dumps(meta) + "\n")
        for dtype in args.dtypes.split(","):
            if dtype == "fp8" and (props.major < 9 or not hasattr(torch, "_scaled_mm")):
                continue
            for (m, n, k), mode in ((s, md) for s in shapes for md in modes):
                if (dtype, m, n, k, mode) in done or time.monotonic() - start > args.max_seconds:
                    continue
                try:
                    rec = measure(torch, dtype, m, n, k, l2, args.warmup, args.iters, mode)
                except RuntimeError as exc:  # a shape the library refuses (fp8 wants dimensions of 16)
                    rec = {"record": "skip", "dtype": dtype, "mode": mode, "m": m, "n": n, "k": k}
                    rec["error"] = str(exc)[:200]
                sink.write(json.dumps(rec) + "\n")
                sink.flush()
                torch.cuda.empty_cache()
                t_us = rec.get("time_s", float("nan")) * 1e6
                print(f"{dtype} {mode} {m}x{n}x{k}: {t_us:.1f} us {rec.get('verified')}")


if __name__ == "__main__":
    main()
