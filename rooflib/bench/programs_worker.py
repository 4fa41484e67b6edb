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
``sm_mhz``. After every timing, one ``record: kernels`` per (program, parameter set) names the kernels one eager
call launches (``kernels``, torch.profiler): CUPTI stays attached after a profiler session and slows every later
launch (pytorch/pytorch#144455), so no timing may follow one.

``--ops`` measures instead the device time of the small row ops and attentions programs are made of, over a
grid that holds none of the programs' shapes (so the programs stay held out): ``record: op``, ``op`` (topk,
softmax, sdpa), its shape (``rows, cols, k`` or ``batch, heads, seq, head_dim, causal``), ``dtype``,
``bytes`` (input and output once), ``groups`` (input groups cycled through more than 3x the L2, as the compute
family), ``time_s`` (median per call of a CUDA-graph replay of ``calls`` calls, the compute family's timing),
``verified`` (the output against a float32 reference).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from functools import partial
from typing import Any

from rooflib.bench.programs import PROGRAMS
from rooflib.bench.torch_common import Clocks, Sink, finish, l2_bytes, meta_record, rel_error
from rooflib.bench.torch_timing import (
    capture_graphs,
    chained_times,
    graph_times,
    groups_for,
    kernel_names,
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
    p.add_argument("--ops", action="store_true", help="the device times of small row ops and attentions instead")
    return p


OP_ROWS = (512, 2048, 8192, 32768)
OP_COLS = (32, 64, 128, 256, 1024)
OP_KS = (2, 8)
SDPA_SEQS = (128, 256, 512, 1024, 2048)
SDPA_HEADS = (4, 8, 16)


def op_grid(quick: bool = False) -> list[dict[str, Any]]:
    """The ``--ops`` points: top-k and softmax (fp32) over rows x cols, causal SDPA (bf16) over seq x heads."""
    rows = OP_ROWS[1::2] if quick else OP_ROWS
    out: list[dict[str, Any]] = []
    for r in rows:
        for c in OP_COLS:
            out += [{"op": "topk", "rows": r, "cols": c, "k": k, "dtype": "fp32"} for k in OP_KS if k < c]
            if c <= 256:
                out.append({"op": "softmax", "rows": r, "cols": c, "dtype": "fp32"})
    for s in SDPA_SEQS[: 3 if quick else None]:
        for h in SDPA_HEADS:
            for d in (64, 128):
                out.append({"op": "sdpa", "batch": 1, "heads": h, "seq": s, "head_dim": d, "causal": True})
    return out


def _op_call(torch: Any, dev: Any, pt: dict[str, Any]) -> tuple[Any, Any, int]:
    """(make one input group, the op on a group, bytes moved)."""
    import torch.nn.functional as F

    if pt["op"] == "sdpa":
        shape = (pt["batch"], pt["heads"], pt["seq"], pt["head_dim"])
        n = math.prod(shape)

        def make_sdpa() -> tuple[Any, ...]:
            return tuple(torch.randn(shape, device=dev, dtype=torch.bfloat16) for _ in range(3))

        def sdpa(g: tuple[Any, ...]) -> Any:
            return F.scaled_dot_product_attention(g[0], g[1], g[2], is_causal=pt["causal"])

        return make_sdpa, sdpa, 4 * n * 2
    rows_shape = (pt["rows"], pt["cols"])

    def make_rows() -> tuple[Any, ...]:
        return (torch.randn(rows_shape, device=dev, dtype=torch.float32),)

    if pt["op"] == "topk":
        out_bytes = pt["rows"] * pt["k"] * (4 + 8)
        return make_rows, lambda g: torch.topk(g[0], pt["k"], dim=-1), pt["rows"] * pt["cols"] * 4 + out_bytes
    return make_rows, lambda g: torch.softmax(g[0], dim=-1), 2 * pt["rows"] * pt["cols"] * 4


def _check_op(torch: Any, pt: dict[str, Any], got: Any, group: tuple[Any, ...]) -> tuple[float, bool]:
    import torch.nn.functional as F

    if pt["op"] == "topk":
        ref = torch.topk(group[0].double().cpu(), pt["k"], dim=-1).values
        err = rel_error(torch, got.values.double().cpu(), ref)
        return err, err < 1e-6
    if pt["op"] == "softmax":
        err = rel_error(torch, got.double().cpu(), torch.softmax(group[0].double().cpu(), dim=-1))
        return err, err < 1e-5
    q, k, v = (t.float() for t in group)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=pt["causal"])
    err = rel_error(torch, got.float(), ref)
    return err, err < 3e-2


def _measure_op(torch: Any, dev: Any, pt: dict[str, Any], l2: int) -> dict[str, Any]:
    make, fn, nbytes = _op_call(torch, dev, pt)
    first = make()
    count = min(64, groups_for(_input_bytes(first), l2))
    groups = [first, *(make() for _ in range(count - 1))]
    err, ok = _check_op(torch, pt, fn(groups[0]), groups[0])
    calls = max(count, 10) if count < 64 else 64

    def call(i: int) -> Any:
        return fn(groups[i % count])

    times = graph_times(torch, dev, call, calls, 20)
    rec = {"record": "op", "family": "programs", "gpus": 1, **pt, "bytes": nbytes, "groups": count, "calls": calls}
    rec.update({"rel_error": err, "verified": ok, **stats(times or [float("nan")])})
    return rec


def _ops(torch: Any, dev: Any, sink: Sink, clocks: Clocks | None, quick: bool) -> None:
    l2 = l2_bytes(torch, dev)
    for pt in op_grid(quick):
        try:
            rec = _measure_op(torch, dev, pt, l2)
        except (RuntimeError, ValueError) as exc:
            rec = {"record": "skipped", "family": "programs", **pt, "reason": f"{type(exc).__name__}: {exc}"[:300]}
        rec["sm_mhz"] = clocks.latest_sm_mhz() if clocks else None
        if rec["record"] == "op":
            t = rec["time_s"] * 1e6
            print(f"op {pt} {t:10.2f} us ok={rec['verified']}", file=sys.stderr, flush=True)
        sink.write(rec)
        torch.cuda.empty_cache()


def _kernels(torch: Any, dev: Any, sink: Sink, measured: list[tuple[str, dict[str, int]]]) -> None:
    """The kernels of one eager call of each measured program (profiler: after every timing, see above)."""
    for name, params in measured:
        prog = PROGRAMS[name]
        args = prog.inputs(0, 1, dev, **params)
        names = kernel_names(torch, dev, partial(prog.fn, *args))
        sink.write({"record": "kernels", "family": "programs", "name": name, "gpus": 1, **params, "kernels": names})
        del args


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

    def eager(i: int) -> Any:
        return prog.fn(*groups[i % count])

    probe = statistics.median(chained_times(torch, dev, eager, 2, 3))
    warm = sweep_counts(probe, target_s=0.02, lo=5, hi=100)
    iters = sweep_counts(probe, target_s=0.04 if quick else 0.1, lo=20, hi=200)
    out = [{**base, "mode": "eager", **stats(chained_times(torch, dev, eager, warm, iters))}]
    if dev.type == "cuda":
        try:
            graphs = capture_graphs(torch, dev, prog.fn, groups)
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
    sink.write(meta_record(torch, dev, "programs", quick=args.quick, ops=args.ops))
    if args.ops:
        if dev.type != "cuda":
            raise SystemExit("--ops needs a GPU (CUDA-graph timing)")
        start = time.monotonic()
        try:
            _ops(torch, dev, sink, clocks, args.quick)
        finally:
            finish(sink, clocks, {"record": "meta", "family": "programs", "phase": "end"}, start)
        return
    measured: list[tuple[str, dict[str, int]]] = []
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
                measured.append((name, params))
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
        if dev.type == "cuda":
            _kernels(torch, dev, sink, measured)
    finally:
        finish(sink, clocks, {"record": "meta", "family": "programs", "phase": "end"}, start)


if __name__ == "__main__":
    main()
