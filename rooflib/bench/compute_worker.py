"""The ``compute`` benchmark family: GEMMs, memory-bound ops and attention on one GPU, through PyTorch.

    python -m rooflib.bench.compute_worker --part gemm --out compute.jsonl   # or memory, attention, kernels, conv

Every point draws fresh random normal inputs into as many groups as it takes to cycle through more than 3x the
L2 (:func:`rooflib.bench.torch_timing.groups_for`; one group for ``hot`` points), checks its output against a
float32 reference on a slice (``rel_error``, ``verified``), warms up, then is timed twice: back to back with
CUDA events after every call (``eager_*``: ParallelKernelBench's convention) and as a replayed CUDA graph of many
calls (``graph_*``). Each can only add to the device time of a call (eager: the host's issue time when it is
longer; graph: what capture changes, seen on the H200 as a graph memcpy node for a copy and a slower kernel for
large cuBLAS GEMMs), so ``time_s`` is the smaller median (``timing`` says which), with its p10 and p90 beside
it; the attention backward pass is timed eagerly only. The kernels one call launches are
recorded by name (torch.profiler), clocks are sampled throughout (``sm_mhz`` per point, a summary in the closing
meta record).

Record schema (``record: point``, ``family: compute``): ``op`` (gemm, attention, or a memory op: copy, add, mul,
gelu, silu, rmsnorm, layernorm, softmax, sum), ``mode`` (cold / hot for memory ops and GEMMs, fwd / bwd for
attention), ``dtype``, the shape (``m, n, k``; ``tensor_bytes, rows, cols, elements``; ``batch, heads, kv_heads,
seq_q, seq_kv, head_dim, causal, backend``), ``flops``, ``bytes_moved`` (every input and output once),
``groups``, ``graph_calls``, ``time_s``, ``time_p10_s``, ``time_p90_s``, ``timing`` (graph / eager: the smaller),
``eager_s``, ``eager_p10_s``, ``eager_p90_s``, ``eager_mean_s``, ``graph_s``..., ``rel_error``, ``verified``,
``kernels``, ``sm_mhz``; ``profile`` (``conv`` points, and every point with ``--profile``): each kernel one call
launches with its median CUPTI seconds, ``[[name, seconds], ...]`` in launch order. Points that cannot run (an fp8
shape cuBLAS refuses) are ``record: skipped``. ``--part conv``: convolutions (:mod:`rooflib.bench.conv_cases`;
``n, c, k, spatial, kernel, groups, channels_last`` and the implicit GEMM's ``gemm_m, gemm_n, gemm_k``).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from contextlib import nullcontext
from typing import Any

from rooflib.bench.compute_grids import (
    GRIDS,
    KERNEL_OPS,
    MEMORY_OPS,
    attention_shapes,
    gemm_shapes,
    holdout_attention_shapes,
    holdout_gemm_shapes,
    holdout_memory_points,
    memory_points,
    short_row_points,
)
from rooflib.bench.torch_common import Clocks, Sink, finish, l2_bytes, meta_record
from rooflib.bench.torch_timing import chained_times, graph_times, groups_for, kernel_names, stats, sweep_counts

__all__ = ["main", "parser", "time_case"]

PARTS = ("gemm", "memory", "attention", "kernels", "conv")
_GRAPH_TARGET_S = 3e-4  # a replay at least this long, so the graph launch is amortised
_GRAPH_BYTES = 4 << 30  # at most this much captured output per graph
_SGEMM_MAX_FLOPS = 4e10
"""fp32 GEMMs (CUDA cores, about 50 TFLOP/s) only up to this: the grid's largest shapes would take 0.1 s a call."""
_MIN_GRAPH_CALLS = 256
"""Calls per graph at least (runs/x1-kernels-3's one-group points replayed 8-13 calls, sized by a host-bound
eager estimate, and their per-call time carried a share of the graph's launch: 0.5-1 us)."""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="JSON Lines file to append the records to")
    p.add_argument("--part", required=True, choices=PARTS)
    p.add_argument("--quick", action="store_true", help="a few points per part (a smoke test)")
    p.add_argument(
        "--grid", choices=GRIDS, default="main", help="main (fitted), holdout (a second grid), short_rows (memory only)"
    )
    p.add_argument("--dtypes", default="bf16,fp8", help="GEMM dtypes (bf16, fp8, fp32)")
    p.add_argument("--device", default="cuda", help="cuda (default) or cpu (tests: no graphs, no events)")
    p.add_argument("--max-seconds", type=float, default=0.0, help="start no new point after this long (0: none)")
    p.add_argument("--no-kernels", action="store_true", help="do not record kernel names (torch.profiler)")
    p.add_argument("--limit", type=int, default=0, help="only the first N points (tests)")
    p.add_argument("--ops", default="", help="comma-separated op names: only their points (kernels, memory parts)")
    p.add_argument("--modes", default="", help="comma-separated modes (cold, hot): only their points (same parts)")
    p.add_argument("--profile", action="store_true", help="time every kernel of a call by CUPTI (always for conv)")
    return p


def time_case(
    torch: Any, dev: Any, case: Any, groups: int, *, quick: bool = False, kernels: bool = False
) -> dict[str, Any]:
    """Draw ``groups`` input groups, check the output, and time the case eager and as a graph (seconds);
    ``kernels``: record the kernel names of one graph replay (``graph_kernels``)."""
    data = [case.make(i) for i in range(groups)]
    out = case.call(data[0])
    err = case.check(data[0], out)
    del out

    def call(i: int) -> Any:
        return case.call(data[i % groups])

    probe = chained_times(torch, dev, call, warmup=2, iters=3)
    est = statistics.median(probe)
    target = 0.02 if quick else 0.08
    warmup = min(max(groups, 2), sweep_counts(est, target_s=0.01, lo=2, hi=400))
    eager = chained_times(torch, dev, call, warmup, sweep_counts(est, target_s=target, lo=10, hi=300))
    rec: dict[str, Any] = {"groups": groups, "rel_error": err, "verified": bool(err <= case.tolerance)}
    rec.update(stats(eager, "eager"))
    graph = None
    if case.graph_ok:
        # est is the eager time, host-bound for small ops: at least _MIN_GRAPH_CALLS calls (as long as the replay
        # stays under 50 ms by it), so one replay's launch is not shared by a dozen calls only
        calls = max(groups, math.ceil(_GRAPH_TARGET_S / max(est, 1e-7)), min(_MIN_GRAPH_CALLS, int(0.05 / est)))
        calls = max(1, min(calls, 1024, int(_GRAPH_BYTES // max(case.out_bytes, 1.0))))
        replays = sweep_counts(calls * est, target_s=target, lo=5, hi=40)
        names: list[str] = []
        try:
            graph = graph_times(torch, dev, call, calls, replays, names if kernels else None)
        except Exception as exc:  # a call that cannot be captured is still measured eagerly
            rec["graph_error"] = f"{type(exc).__name__}: {exc}"[:300]
            graph = None
        rec["graph_calls"] = calls
        if kernels:
            rec["graph_kernels"] = names
    # each way can only add to a call's device time (eager: host issue; graph: what capture changes, e.g. a
    # copy as a graph memcpy node, another cuBLAS algorithm): time_s is the smaller median, its spread beside it
    best = "eager"
    if graph:
        rec.update(stats(graph, "graph"))
        best = "graph" if statistics.median(graph) < statistics.median(eager) else "eager"
    chosen = graph if best == "graph" and graph else eager
    rec.update({k.replace(best, "time", 1): v for k, v in stats(chosen, best).items()})
    rec["timing"] = best
    data.clear()  # free the groups before the next point
    return rec


def _gemm_points(torch: Any, args: argparse.Namespace) -> list[tuple[str, dict[str, Any], Any]]:
    from rooflib.bench.compute_ops import gemm_case

    dtypes = [d for d in args.dtypes.split(",") if d]
    out = []
    shapes = holdout_gemm_shapes(args.quick) if args.grid == "holdout" else gemm_shapes(args.quick)
    for m, n, k in shapes:
        for dt in dtypes:
            if dt == "fp32" and 2.0 * m * n * k > _SGEMM_MAX_FLOPS:
                continue
            fields = {"op": "gemm", "mode": "cold", "dtype": dt, "grid": args.grid, "m": m, "n": n, "k": k}
            out.append(("gemm", fields, (lambda dev, m=m, n=n, k=k, dt=dt: gemm_case(torch, dev, m, n, k, dt))))
    return out


def _wanted(args: argparse.Namespace, op: str, mode: str) -> bool:
    """Whether ``--ops`` and ``--modes`` (empty: all) keep a point of ``op`` in ``mode``."""
    ops = {o for o in str(getattr(args, "ops", "")).split(",") if o}
    modes = {m for m in str(getattr(args, "modes", "")).split(",") if m}
    return (not ops or op in ops) and (not modes or mode in modes)


def _memory_points(torch: Any, args: argparse.Namespace) -> list[tuple[str, dict[str, Any], Any]]:
    from rooflib.bench.compute_ops import memory_case

    out = []
    grids = {"holdout": holdout_memory_points, "short_rows": short_row_points}
    points = grids.get(args.grid, memory_points)(args.quick)
    for op, cache, size, cols, dt in points:
        if not _wanted(args, op, cache):
            continue
        fields = {"op": op, "mode": cache, "dtype": dt, "grid": args.grid, "tensor_bytes": size}
        out.append((op, fields, (lambda dev, op=op, s=size, c=cols, dt=dt: memory_case(torch, dev, op, s, c, dt))))
    return out


def _kernel_points(torch: Any, args: argparse.Namespace) -> list[tuple[str, dict[str, Any], Any]]:
    from rooflib.bench.compute_grids import kernel_points
    from rooflib.bench.kernel_cases import kernel_case

    out = []
    for op, cache, size, dt in kernel_points(args.quick):
        name = op.partition("@")[0]  # sum_dim0@C: the op sum_dim0 over rows of C (the case's cols says so)
        if not _wanted(args, name, cache):
            continue
        fields = {"op": name, "mode": cache, "dtype": dt, "grid": "kernels", "tensor_bytes": size}
        out.append((op, fields, (lambda dev, op=op, s=size, dt=dt: kernel_case(torch, dev, op, s, dt))))
    return out


def _conv_points(torch: Any, args: argparse.Namespace) -> list[tuple[str, dict[str, Any], Any]]:
    from rooflib.bench.conv_cases import conv_case, conv_shapes

    out = []
    for s in conv_shapes(args.grid, args.quick):
        op = "conv_depthwise" if s.depthwise else "conv"
        if not _wanted(args, op, "cold"):
            continue
        fields = {"op": op, "mode": "cold", "dtype": "bf16", "grid": args.grid, **s.fields()}
        out.append((op, fields, (lambda dev, s=s: conv_case(torch, dev, s))))
    return out


def _profile(torch: Any, dev: Any, case: Any, groups: int) -> list[list[Any]] | None:
    """Each kernel of one call with its median CUPTI seconds (``profile``; None on the CPU or on failure)."""
    if getattr(dev, "type", "cpu") != "cuda":
        return None
    from rooflib.bench.pkb_profile import device_profile

    data = [case.make(i) for i in range(groups)]
    try:
        got = device_profile(torch, dev, lambda i: case.call(data[i % groups]), warmup=3, iters=7)
    except Exception:  # informative only: the point's timing stands without it
        return None
    finally:
        data.clear()
    return [[name, seconds] for op in got.get("ops", []) for name, seconds in op[3]]


def _attention_points(torch: Any, args: argparse.Namespace) -> list[tuple[str, dict[str, Any], Any]]:
    from rooflib.bench.compute_ops import attention_case

    out = []
    shapes = holdout_attention_shapes(args.quick) if args.grid == "holdout" else attention_shapes(args.quick)
    for s in shapes:
        fields = {
            "op": "attention",
            "mode": "bwd" if s.backward else "fwd",
            "dtype": "bf16",
            "grid": args.grid,
            "batch": s.batch,
            "heads": s.heads,
            "kv_heads": s.kv_heads,
            "seq_q": s.seq_q,
            "seq_kv": s.seq_kv,
            "head_dim": s.head_dim,
            "causal": s.causal,
            "backend": s.backend,
        }
        out.append(("attention", fields, (lambda dev, s=s: attention_case(torch, dev, s))))
    return out


def _backend(torch: Any, name: str) -> Any:
    if name == "default":
        return nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    chosen = {"flash": "FLASH_ATTENTION", "cudnn": "CUDNN_ATTENTION", "efficient": "EFFICIENT_ATTENTION"}[name]
    return sdpa_kernel(getattr(SDPBackend, chosen))


def _measure(torch: Any, dev: Any, fields: dict[str, Any], build: Any, l2: int, args: argparse.Namespace) -> Any:
    with _backend(torch, str(fields.get("backend", "default"))):
        case = build(dev)
        groups = 1 if fields.get("mode") == "hot" else groups_for(case.bytes_moved, l2)
        rec = time_case(torch, dev, case, groups, quick=args.quick, kernels=not args.no_kernels)
        if args.profile or fields.get("op") in ("conv", "conv_depthwise"):
            rec["profile"] = _profile(torch, dev, case, groups)
        if not args.no_kernels:
            first = case.make(0)
            rec["kernels"] = kernel_names(torch, dev, lambda: case.call(first))
            del first
    rec.update(case.extra)
    rec["flops"] = case.flops
    rec["bytes_moved"] = case.bytes_moved
    t = rec.get("time_s")
    if t:
        rec["bytes_per_s"] = case.bytes_moved / t
        rec["flops_per_s"] = case.flops / t if case.flops else None
    return rec


def _filter_error(args: argparse.Namespace) -> str | None:
    """A misspelt ``--ops`` or ``--modes`` name: the one-line error (not a run of no points), else None."""
    valid = {"kernels": KERNEL_OPS, "memory": MEMORY_OPS, "conv": ("conv", "conv_depthwise")}.get(args.part, ())
    for flag, names, allowed in (("--ops", args.ops, valid), ("--modes", args.modes, ("cold", "hot"))):
        bad = [n for n in names.split(",") if n and n not in allowed]
        if bad and not allowed:
            return f"error: {flag} applies to the kernels and memory parts, not --part {args.part}"
        if bad:
            return f"error: {flag}: unknown {bad[0]!r}; valid for --part {args.part}: {', '.join(allowed)}"
    return None


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    error = _filter_error(args)
    if error is not None:
        sys.stderr.write(error + "\n")
        raise SystemExit(2)
    import torch

    dev = torch.device(args.device, 0) if args.device == "cuda" else torch.device("cpu")
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
        torch.backends.cuda.matmul.allow_tf32 = False  # float32 references stay float32
    sink = Sink(args.out)
    clocks = Clocks(dev.index or 0) if dev.type == "cuda" else None
    l2 = l2_bytes(torch, dev)
    sink.write(meta_record(torch, dev, "compute", part=args.part, quick=args.quick, grid=args.grid))
    parts = {
        "gemm": _gemm_points,
        "memory": _memory_points,
        "attention": _attention_points,
        "kernels": _kernel_points,
        "conv": _conv_points,
    }
    points = parts[args.part](torch, args)
    if args.limit:
        points = points[: args.limit]
    start = time.monotonic()
    done = 0
    try:
        for _, fields, build in points:
            if args.max_seconds and time.monotonic() - start > args.max_seconds:
                sink.write({"record": "skipped", "family": "compute", **fields, "reason": "time limit"})
                continue
            began = time.monotonic()
            try:
                rec = {"record": "point", "family": "compute", "gpus": 1, **fields}
                rec.update(_measure(torch, dev, fields, build, l2, args))
                rec["point_s"] = time.monotonic() - began
            except (RuntimeError, ValueError, NotImplementedError) as exc:
                if "out of memory" in str(exc).lower() and dev.type == "cuda":
                    torch.cuda.empty_cache()
                reason = f"{type(exc).__name__}: {exc}"[:400]
                sink.write({"record": "skipped", "family": "compute", **fields, "reason": reason})
                print(f"compute skipped {fields}: {reason}", file=sys.stderr, flush=True)
                continue
            rec["sm_mhz"] = clocks.latest_sm_mhz() if clocks else None
            sink.write(rec)
            done += 1
            shape = {k: v for k, v in fields.items() if k not in ("op", "mode", "dtype")}
            t = rec.get("time_s") or math.nan
            print(
                f"compute {fields['op']:9s} {fields['mode']:4s} {fields['dtype']:4s} {shape} {t * 1e6:10.1f} us"
                f"  ok={rec['verified']}",
                file=sys.stderr,
                flush=True,
            )
            if dev.type == "cuda":
                torch.cuda.empty_cache()
    finally:
        end = {"record": "meta", "family": "compute", "part": args.part, "phase": "end", "points": done}
        finish(sink, clocks, end, start)


if __name__ == "__main__":
    main()
