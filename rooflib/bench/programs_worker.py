"""The ``programs`` benchmark family: the six programs of :mod:`rooflib.bench.programs`, eager and as CUDA graphs.

    python -m rooflib.bench.programs_worker --out programs.jsonl

Each (program, parameter set) draws as many input groups as it takes to cycle through more than 3x the L2 (at most
16), checks the output against the same program on float32 copies of the inputs (TF32 off), then is timed two ways, each
with ParallelKernelBench's convention (back-to-back iterations cycling the groups, a CUDA event after every
iteration, no host synchronisation inside the loop):

- ``eager``: the function called as written (the steady state of back-to-back calls: host issue and device
  time overlap, so a host-bound program shows its host time);
- ``graph``: one CUDA graph captured per input group and replayed.

Record schema (``record: point``, ``family: programs``): ``name`` (the program), ``mode`` (eager / graph), the
parameters (``tokens``, ``hidden``, ...), ``groups``, ``input_bytes``, ``time_s`` (median), ``time_p10_s``,
``time_p90_s``, ``time_mean_s`` (ParallelKernelBench reports the mean), ``time_n``, ``rel_error``, ``verified``,
``kernels`` (names of the kernels one eager call launches), ``sm_mhz``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any

from rooflib.bench.programs import PROGRAMS
from rooflib.bench.torch_common import (
    Clocks,
    Sink,
    chained_times,
    finish,
    groups_for,
    kernel_names,
    l2_bytes,
    meta_record,
    rel_error,
    stats,
    sweep_counts,
)

__all__ = ["check_output", "main", "parser"]

MAX_GROUPS = 16


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--programs", default=",".join(PROGRAMS), help=f"comma-separated, from {', '.join(PROGRAMS)}")
    p.add_argument("--quick", action="store_true", help="the first two parameter sets of each program")
    p.add_argument("--device", default="cuda", help="cuda (default) or cpu (tests: eager only)")
    p.add_argument("--sizes", default="", help="only these parameter sets, e.g. 0,1 (tests)")
    return p


def _upcast(torch: Any, args: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(a.float() if hasattr(a, "is_floating_point") and a.is_floating_point() else a for a in args)


def check_output(torch: Any, name: str, got: Any, ref: Any) -> tuple[float, bool]:
    """Relative error against the float32 run and whether it passes (the router: weights close and at least 90 %
    of the chosen experts the same, ties in bf16 logits may swap a few)."""
    if name == "router":
        err = rel_error(torch, got[0], ref[0])
        agree = float((got[1] == ref[1]).float().mean())
        return err, err < 5e-2 and agree >= 0.9
    err = rel_error(torch, got, ref)
    return err, err < 3e-2


def _input_bytes(args: tuple[Any, ...]) -> int:
    return sum(int(a.numel() * a.element_size()) for a in args if hasattr(a, "numel"))


def _graphs(torch: Any, dev: Any, fn: Any, groups: list[tuple[Any, ...]]) -> list[Any]:
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


def _measure(torch: Any, dev: Any, name: str, params: dict[str, int], l2: int, quick: bool) -> list[dict[str, Any]]:
    prog = PROGRAMS[name]
    first = prog.inputs(0, 1, dev, **params)
    count = min(MAX_GROUPS, groups_for(_input_bytes(first), l2))
    groups = [first, *(prog.inputs(0, 1, dev, **params) for _ in range(count - 1))]
    got = prog.fn(*groups[0])
    ref = prog.fn(*_upcast(torch, groups[0]))
    err, ok = check_output(torch, name, got, ref)
    del got, ref
    base = {"record": "point", "family": "programs", "name": name, "gpus": 1, **params, "groups": count}
    base.update({"input_bytes": _input_bytes(first), "rel_error": err, "verified": ok})
    base["kernels"] = kernel_names(torch, dev, lambda: prog.fn(*groups[0]))

    def eager(i: int) -> Any:
        return prog.fn(*groups[i % count])

    probe = statistics.median(chained_times(torch, dev, eager, 2, 3))
    warm = sweep_counts(probe, target_s=0.02, lo=5, hi=100)
    iters = sweep_counts(probe, target_s=0.04 if quick else 0.1, lo=20, hi=200)
    out = [{**base, "mode": "eager", **stats(chained_times(torch, dev, eager, warm, iters))}]
    if dev.type == "cuda":
        try:
            graphs = _graphs(torch, dev, prog.fn, groups)
            replay = chained_times(torch, dev, lambda i: graphs[i % count].replay(), warm, iters)
            out.append({**base, "mode": "graph", **stats(replay)})
            del graphs
        except Exception as exc:  # recorded, the eager point stands
            out.append(
                {
                    "record": "skipped",
                    "family": "programs",
                    "name": name,
                    "mode": "graph",
                    **params,
                    "reason": f"{type(exc).__name__}: {exc}"[:300],
                }
            )
    return out


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    names = [n for n in args.programs.split(",") if n]
    unknown = [n for n in names if n not in PROGRAMS]
    if unknown:
        raise SystemExit(f"unknown program(s) {', '.join(unknown)}; programs: {', '.join(PROGRAMS)}")
    import torch

    dev = torch.device("cuda", 0) if args.device == "cuda" else torch.device("cpu")
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
        torch.backends.cuda.matmul.allow_tf32 = False
    sink = Sink(args.out)
    clocks = Clocks(0) if dev.type == "cuda" else None
    l2 = l2_bytes(torch, dev)
    sink.write(meta_record(torch, dev, "programs", quick=args.quick))
    chosen = [int(s) for s in args.sizes.split(",") if s]
    start = time.monotonic()
    try:
        for name in names:
            sizes = PROGRAMS[name].sizes
            picked = [sizes[i] for i in chosen] if chosen else list(sizes[:2] if args.quick else sizes)
            for params in picked:
                try:
                    recs = _measure(torch, dev, name, params, l2, args.quick)
                except (RuntimeError, ValueError) as exc:
                    recs = [
                        {
                            "record": "skipped",
                            "family": "programs",
                            "name": name,
                            **params,
                            "reason": f"{type(exc).__name__}: {exc}"[:300],
                        }
                    ]
                for rec in recs:
                    if rec["record"] == "point":
                        rec["sm_mhz"] = clocks.latest_sm_mhz() if clocks else None
                        t = rec["time_s"] * 1e6
                        print(
                            f"programs {name:18s} {rec['mode']:5s} {params} {t:10.1f} us ok={rec['verified']}",
                            file=sys.stderr,
                            flush=True,
                        )
                    sink.write(rec)
                if dev.type == "cuda":
                    torch.cuda.empty_cache()
    finally:
        finish(sink, clocks, {"record": "meta", "family": "programs", "phase": "end"}, start)


if __name__ == "__main__":
    main()
