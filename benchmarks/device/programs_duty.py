"""The single-GPU programs timed from idle (burst) and after the GPU has been kept busy (sustained): a held-out test
of the GEMM duty term (``compute.gemm.sustained_share``, fitted on GEMM ramps only) on whole programs.

    python3 benchmarks/device/programs_duty.py --out $OUT/duty.jsonl      # on the device (torch, one GPU)

Per point (a program of :mod:`rooflib.bench.programs` and a parameter set, GEMM-heavy ones and a memory-bound
control): input groups as the programs family draws them (cycling past 3x the L2, at most 16), the output checked
against the same program on float32 copies, one CUDA graph per group. Then, in this order:

- ``burst``: the GPU idles ``--idle`` seconds, then ``--burst`` graph replays back to back, timed between CUDA
  events (the first replay included: no warm-up, which would warm the GPU);
- ``sustained``: ``--warm`` seconds of back-to-back replays (a host sync every 50), then ``--iters`` replays timed
  the same way.

Records: one ``meta``, per point and duty one ``point`` in the programs family's schema (``mode: graph``) with
``duty``, ``busy_before_s`` (seconds the GPU had been kept busy when the timing began) and the SM clock and power
sampled by nvidia-smi during the timing (``sm_mhz``, ``power_w``: medians, None when too short to sample). A rerun
appends only the points its file lacks. Never changes a clock or a limit.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

POINTS: tuple[tuple[str, int], ...] = (  # (program, index of its parameter set in rooflib.bench.programs)
    ("mlp_block", 2),
    ("mlp_block", 1),
    ("attention_block", 1),
    ("attention_block", 2),
    ("cross_entropy", 2),
    ("cross_entropy", 1),
    ("router", 2),
    ("elementwise_chain", 2),  # memory-bound: no duty term expected
)


def _window(samples: list[dict[str, Any]], start: float, end: float, key: str) -> float | None:
    vals = [s[key] for s in samples if start <= s["t"] <= end and s.get(key) is not None]
    return statistics.median(vals) if vals else None


def _timed(torch: Any, replay: Any, n: int) -> list[float]:
    """Seconds of each of ``n`` back-to-back calls ``replay(i)``, from CUDA events (one sync at the end)."""
    events = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
    events[0].record()
    for i in range(n):
        replay(i)
        events[i + 1].record()
    torch.cuda.synchronize()
    return [events[i].elapsed_time(events[i + 1]) * 1e-3 for i in range(n)]


def measure(torch: Any, dev: Any, name: str, index: int, args: argparse.Namespace, clocks: Any) -> list[dict[str, Any]]:
    from rooflib.bench.programs import PROGRAMS
    from rooflib.bench.programs_worker import MAX_GROUPS, _input_bytes, _upcast, check_output
    from rooflib.bench.torch_common import l2_bytes
    from rooflib.bench.torch_timing import capture_graphs, groups_for, stats

    prog = PROGRAMS[name]
    params = dict(prog.sizes[index])
    first = prog.inputs(0, 1, dev, **params)
    count = min(MAX_GROUPS, groups_for(_input_bytes(first), l2_bytes(torch, dev)))
    groups = [first, *(prog.inputs(0, 1, dev, **params) for _ in range(count - 1))]
    err, ok = check_output(torch, name, prog.fn(*groups[0]), prog.fn(*_upcast(torch, groups[0])))
    graphs = capture_graphs(torch, dev, prog.fn, groups)
    base = {"record": "point", "family": "programs", "name": name, "gpus": 1, **params, "groups": count}
    base |= {"mode": "graph", "input_bytes": _input_bytes(first), "rel_error": err, "verified": ok}

    def replay(i: int) -> None:
        graphs[i % count].replay()

    out = []
    torch.cuda.synchronize()
    time.sleep(args.idle)
    t0 = time.time()
    burst = _timed(torch, replay, args.burst)
    t1 = time.time()
    out.append(
        base
        | {"duty": "burst", "busy_before_s": 0.0, **stats(burst)}
        | {"sm_mhz": _window(clocks.samples, t0, t1, "sm_mhz"), "power_w": _window(clocks.samples, t0, t1, "power_w")}
    )
    busy = sum(burst)
    start = time.time()
    i = 0
    while time.time() - start < args.warm:
        replay(i)
        i += 1
        if i % 50 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    busy += time.time() - start
    t0 = time.time()
    sustained = _timed(torch, replay, args.iters)
    t1 = time.time()
    out.append(
        base
        | {"duty": "sustained", "busy_before_s": round(busy, 4), **stats(sustained)}
        | {"sm_mhz": _window(clocks.samples, t0, t1, "sm_mhz"), "power_w": _window(clocks.samples, t0, t1, "power_w")}
    )
    graphs.clear()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--idle", type=float, default=4.0, help="seconds idle before each burst (default 4)")
    ap.add_argument("--burst", type=int, default=5, help="replays timed from idle (default 5)")
    ap.add_argument("--warm", type=float, default=2.0, help="seconds of replays before the sustained timing")
    ap.add_argument("--iters", type=int, default=20, help="replays timed sustained (default 20)")
    args = ap.parse_args(argv)
    import torch

    from rooflib.bench.torch_common import Clocks, meta_record

    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    torch.backends.cuda.matmul.allow_tf32 = False
    done = set()
    if args.out.exists():
        for line in args.out.read_text().splitlines():
            try:
                r = json.loads(line)
            except ValueError:
                continue  # a cut-off last line: that point runs again
            if r.get("record") == "point":
                done.add((r["name"], r.get("duty"), json.dumps({k: r.get(k) for k in sorted(r) if k in _KEYS})))
    clocks = Clocks(0, interval_ms=100)
    with args.out.open("a") as fh:
        fh.write(json.dumps(meta_record(torch, dev, "programs-duty", idle=args.idle, warm=args.warm)) + "\n")
        for name, index in POINTS:
            from rooflib.bench.programs import PROGRAMS

            params = PROGRAMS[name].sizes[index]
            key = json.dumps({k: params[k] for k in sorted(params) if k in _KEYS})
            if (name, "burst", key) in done and (name, "sustained", key) in done:
                continue
            for rec in measure(torch, dev, name, index, args, clocks):
                fh.write(json.dumps(rec) + "\n")
                fh.flush()
                sys.stderr.write(
                    f"{name:18s} {key:60s} {rec['duty']:9s} {rec['time_s'] * 1e6:9.1f} us  "
                    f"{rec['sm_mhz']} MHz  {rec['power_w']} W  ok {rec['verified']}\n"
                )
    clocks.close()
    return 0


_KEYS = ("tokens", "hidden", "ffn", "batch", "seq", "heads", "kv_heads", "layers", "elements", "experts", "k", "vocab")


if __name__ == "__main__":
    raise SystemExit(main())
