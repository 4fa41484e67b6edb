"""How fast a busy GPU falls from its burst clock to its power-limited one: a GEMM run back to back for a few
seconds from idle, timed in batches, so each batch's rate is a point on the ramp.

    python benchmarks/device/gemm_ramp.py --out $OUT/ramp.jsonl      # on the device (torch, one GPU)

Per case (dtype and m = n = k): fresh random normal inputs, weight copies cycled past twice the L2 (as the graph
worker does), one output buffer per copy; the GPU idles ``--idle`` seconds, then ``--seconds`` of back-to-back
GEMMs are timed in batches of ``--batch`` GEMMs between CUDA events recorded on the stream (no host sync inside
the run, so the GPU never waits on the host; a batch holds enough GEMMs for about 1 ms); the first and last
copies' outputs are checked against an fp32 product (bf16 < 2e-2, fp8 < 1e-1 relative Frobenius error).
Records: one ``meta``; one ``ramp`` per case with
``t_s`` (batch end since the run's start, from the events), ``batch_s`` (each batch's time per GEMM), the medians
of the first 20 ms and of the last second, and ``verified``. A rerun appends only the cases its file lacks.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

CASES = (("bf16", 8192), ("fp8", 8192), ("bf16", 4096), ("bf16", 2048))


def _inputs(torch: Any, dtype: str, size: int, l2_bytes: int) -> tuple[Any, list[Any], Any]:
    dev = torch.device("cuda")
    a32 = torch.randn(size, size, device=dev)
    elt = 1 if dtype == "fp8" else 2
    copies = max(2, min(64, -(-2 * l2_bytes // (size * size * elt))))
    ws32 = [torch.randn(size, size, device=dev) / size**0.5 for _ in range(copies)]
    if dtype == "fp8":
        a = a32.to(torch.float8_e4m3fn)
        ws = [w.to(torch.float8_e4m3fn).t().contiguous().t() for w in ws32]
    else:
        a = a32.to(torch.bfloat16)
        ws = [w.to(torch.bfloat16) for w in ws32]
    return a, ws, ws32


def _gemm(torch: Any, dtype: str, a: Any, w: Any) -> Any:
    if dtype == "fp8":
        one = torch.ones((), device=a.device)
        return torch._scaled_mm(a, w, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    return a @ w


def run_case(torch: Any, dtype: str, size: int, seconds: float, batch: int, idle: float) -> dict[str, Any]:
    props = torch.cuda.get_device_properties(0)
    a, ws, ws32 = _inputs(torch, dtype, size, props.L2_cache_size)
    outs = [_gemm(torch, dtype, a, w) for w in ws]  # warm the kernels once (a few ms)
    torch.cuda.synchronize()
    est = 2.0 * size**3 / (1e15 if dtype == "bf16" else 2e15)
    batch = max(batch, int(1e-3 / est))  # at least about 1 ms a batch: a few thousand points a case
    batches = max(4, int(seconds / (est * batch)))
    time.sleep(idle)
    events = [torch.cuda.Event(enable_timing=True) for _ in range(batches + 1)]
    events[0].record()
    i = 0
    for b in range(batches):
        for _ in range(batch):
            outs[i % len(ws)] = _gemm(torch, dtype, a, ws[i % len(ws)])
            i += 1
        events[b + 1].record()
    events[-1].synchronize()
    t_ms = [events[0].elapsed_time(e) for e in events[1:]]
    per = [(t_ms[0] if j == 0 else t_ms[j] - t_ms[j - 1]) * 1e-3 / batch for j in range(batches)]
    tol = 1e-1 if dtype == "fp8" else 2e-2
    ok = True
    a_ref = a.float()
    for j in (0, len(ws) - 1):
        ref = a_ref @ ws[j].float()
        got = _gemm(torch, dtype, a, ws[j]).float()
        ok = ok and bool(((got - ref).norm() / ref.norm()).item() < tol)
    del ws32
    t_s = [x * 1e-3 for x in t_ms]
    first = [p for p, t in zip(per, t_s, strict=True) if t <= 0.02] or per[:1]
    last = [p for p, t in zip(per, t_s, strict=True) if t >= t_s[-1] - 1.0]
    return {
        "record": "ramp",
        "dtype": dtype,
        "m": size,
        "n": size,
        "k": size,
        "batch": batch,
        "flops": 2.0 * size**3,
        "t_s": [round(x, 6) for x in t_s],
        "batch_s": [float(f"{p:.6e}") for p in per],
        "first_20ms_s": statistics.median(first),
        "last_1s_s": statistics.median(last),
        "verified": ok,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--idle", type=float, default=3.0)
    args = ap.parse_args(argv)
    import torch

    done = set()
    if args.out.exists():
        for line in args.out.read_text().splitlines():
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue
            if r.get("record") == "ramp":
                done.add((r["dtype"], r["m"]))
    props = torch.cuda.get_device_properties(0)
    with args.out.open("a") as f:
        if not done:
            meta = {
                "record": "meta",
                "family": "gemm-ramp",
                "gpu": props.name,
                "sms": props.multi_processor_count,
                "torch": torch.__version__,
                "date": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
            }
            f.write(json.dumps(meta) + "\n")
        for dtype, size in CASES:
            if (dtype, size) in done:
                continue
            r = run_case(torch, dtype, size, args.seconds, args.batch, args.idle)
            f.write(json.dumps(r) + "\n")
            f.flush()
            tf = r["flops"] / 1e12
            print(
                f"{dtype:5s} {size:5d} first 20 ms {tf / r['first_20ms_s']:7.1f} TFLOP/s  last 1 s "
                f"{tf / r['last_1s_s']:7.1f}  ratio {r['last_1s_s'] / r['first_20ms_s']:.3f}  "
                f"verified {r['verified']}",
                file=sys.stderr,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
