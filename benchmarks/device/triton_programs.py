"""How long a Triton launch of many small programs takes: the program-slot floor of ``compute.programs``.

    python benchmarks/device/triton_programs.py --out $OUT/triton.jsonl     # on the device (torch + triton, one GPU)

A kernel of P programs, each W warps over BLOCK elements, keeps at most ``slots(W)`` programs resident per SM
(``min(blocks_per_sm, warps_per_sm // W)``); when each program does little, the launch takes about
``P / (SMs x slots(W)) x program_time`` however few bytes it moves. Three kernels, written here, time that
against their bytes: ``scale`` (x * one scale per program, bf16 in, fp32 out: a blocked dequantisation),
``absmax`` (per program: the absolute maximum, x / (max / 448) stored as bf16 and the scale as fp32: a blocked
quantisation, a reduction inside each program) and ``copy`` (bf16 to bf16). Grid: BLOCK 32-4096, W 1, 2, 4, 8,
elements 2^24, 2^26, 2^28. Per point: fresh random normal inputs (two copies alternated unless one input
passes 8x the L2), 3 warm-up calls, then ``--iters`` calls each between CUDA events queued behind a sleep kernel (the
launcher's host time not timed), the median; every output
checked against torch (scale and copy exact, absmax within bf16 rounding). Records: one ``meta``, one ``point``
per case (kernel, block, warps, elements, programs, bytes, time_s, verified). A rerun appends only the cases its
file lacks. Nothing here uses NVLink or multicast (one GPU).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch
import triton
import triton.language as tl

BLOCKS = (32, 64, 128, 256, 512, 1024, 2048, 4096)
WARPS = (1, 2, 4, 8)
SIZES = (1 << 24, 1 << 26, 1 << 28)
KERNELS = ("scale", "absmax", "copy")


@triton.jit
def _scale(x_ptr, s_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    s = tl.load(s_ptr + pid)
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(y_ptr + offs, x * s, mask=mask)


@triton.jit
def _absmax(x_ptr, y_ptr, s_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs).to(tl.float32)
    s = tl.max(tl.abs(x)) / 448.0
    safe = tl.where(s == 0.0, 1.0, s)
    tl.store(y_ptr + offs, (x / safe).to(tl.bfloat16))
    tl.store(s_ptr + pid, s)


@triton.jit
def _copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def _case(kernel: str, n: int, block: int, warps: int, l2: int, iters: int) -> dict[str, Any]:
    dev = torch.device("cuda")
    programs = n // block
    copies = 2 if n * 2 < 8 * l2 else 1  # two inputs alternated unless one passes 8x the L2
    xs = [torch.randn(n, device=dev, dtype=torch.bfloat16) for _ in range(copies)]
    if kernel == "scale":
        ss = [torch.randn(programs, device=dev, dtype=torch.float32) for _ in range(copies)]
        ys = [torch.empty(n, device=dev, dtype=torch.float32) for _ in range(copies)]
        moved = n * 2 + programs * 4 + n * 4

        def call(i: int) -> None:
            _scale[(programs,)](xs[i], ss[i], ys[i], n, BLOCK=block, num_warps=warps)

    elif kernel == "absmax":
        ss = [torch.empty(programs, device=dev, dtype=torch.float32) for _ in range(copies)]
        ys = [torch.empty(n, device=dev, dtype=torch.bfloat16) for _ in range(copies)]
        moved = n * 2 + n * 2 + programs * 4

        def call(i: int) -> None:
            _absmax[(programs,)](xs[i], ys[i], ss[i], BLOCK=block, num_warps=warps)

    else:
        ys = [torch.empty(n, device=dev, dtype=torch.bfloat16) for _ in range(copies)]
        moved = n * 2 * 2

        def call(i: int) -> None:
            _copy[(programs,)](xs[i], ys[i], n, BLOCK=block, num_warps=warps)

    for i in range(3):
        call(i % copies)
    torch.cuda.synchronize()
    times = []
    for i in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(1_000_000)  # holds the stream while the host queues the call: no launch cost timed
        start.record()
        call(i % copies)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3)
    ok = True
    for i in range(copies):
        x = xs[i]
        if kernel == "scale":
            want = x.float().view(programs, block) * ss[i].view(programs, 1)
            ok &= bool(torch.equal(ys[i].view(programs, block), want))
        elif kernel == "absmax":
            s = x.float().view(programs, block).abs().amax(dim=1) / 448.0
            safe = torch.where(s == 0, torch.ones_like(s), s)
            want = (x.float().view(programs, block) / safe[:, None]).to(torch.bfloat16)
            ok &= bool(torch.allclose(ss[i], s, rtol=1e-6, atol=0.0))
            ok &= bool(torch.allclose(ys[i].view(programs, block).float(), want.float(), rtol=1e-2, atol=1e-2))
        else:
            ok &= bool(torch.equal(ys[i], x))
    return {
        "record": "point",
        "kernel": kernel,
        "block": block,
        "warps": warps,
        "elements": n,
        "programs": programs,
        "bytes": moved,
        "time_s": statistics.median(times),
        "min_s": min(times),
        "iters": iters,
        "copies": copies,
        "verified": ok,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--max-seconds", type=float, default=240.0)
    args = ap.parse_args(argv)
    props = torch.cuda.get_device_properties(0)
    done: set[tuple[Any, ...]] = set()
    if args.out.exists():
        for line in args.out.read_text().splitlines():
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by an interruption: its case runs again
            if r.get("record") == "point":
                done.add((r["kernel"], r["block"], r["warps"], r["elements"]))
    t0 = time.monotonic()
    with open(args.out, "a") as fh:
        if not done:
            meta = {
                "record": "meta",
                "device": props.name,
                "sms": props.multi_processor_count,
                "l2_bytes": props.L2_cache_size,
                "torch": torch.__version__,
                "triton": triton.__version__,
                "max_threads_per_sm": getattr(props, "max_threads_per_multi_processor", None),
            }
            fh.write(json.dumps(meta) + "\n")
        for n in SIZES:
            for kernel in KERNELS:
                for block in BLOCKS:
                    for warps in WARPS:
                        key = (kernel, block, warps, n)
                        if key in done:
                            continue
                        if time.monotonic() - t0 > args.max_seconds:
                            sys.stderr.write(f"stopped at {key}: --max-seconds\n")
                            return 0
                        rec = _case(kernel, n, block, warps, props.L2_cache_size, args.iters)
                        fh.write(json.dumps(rec) + "\n")
                        fh.flush()
                        sys.stderr.write(
                            f"{kernel:6s} n=2^{n.bit_length() - 1} block={block:4d} warps={warps} "
                            f"{rec['time_s'] * 1e6:9.1f} us {rec['bytes'] / rec['time_s'] / 1e9:7.0f} GB/s "
                            f"{'ok' if rec['verified'] else 'WRONG'}\n"
                        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
