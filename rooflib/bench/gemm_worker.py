"""Achievable GEMM throughput through cuBLAS (torch.matmul; fp8 through torch._scaled_mm), one GPU.

    python -m rooflib.bench.gemm_worker --out gemm.jsonl

Shapes sweep M, N, K over powers of two and a few skinny and tensor-parallel-like shapes, bf16 and fp8 (e4m3,
where the GPU and torch support it). Fresh random normal inputs per shape, warm-up, CUDA events around each
product, median of ``--iters``; each result is checked against an fp32 product on the same inputs (relative
Frobenius error, bf16 < 2e-2, fp8 < 1e-1). Writes JSON Lines (one ``meta``, then one ``gemm`` record per shape).
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
from collections.abc import Callable
from typing import Any

from rooflib.bench.timing import event_times

SHAPES = (
    [(s, s, s) for s in (256, 512, 1024, 2048, 4096, 8192, 16384)]
    + [(m, 8192, 8192) for m in (16, 64, 128, 384, 1000)]
    + [(8192, 8192, k) for k in (128, 512, 2048)]
    + [(16384, 4096, 16384), (4096, 28672, 8192), (8192, 1024, 8192)]
)


def _bf16_product(a: Any, b: Any) -> Callable[[], Any]:
    def product() -> Any:
        return a @ b

    return product


def _fp8_product(torch: Any, a: Any, b: Any) -> Callable[[], Any]:
    one = torch.ones((), device=a.device)

    def product() -> Any:
        return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

    return product


def _copy(torch: Any, dev: Any, warmup: int, iters: int) -> dict[str, Any]:
    """Device-to-device copy of 2 GiB through torch: the HBM rate a framework gets (bytes read + written)."""
    nbytes = 2 << 30
    src = torch.randint(0, 2**31 - 1, (nbytes // 4,), device=dev, dtype=torch.int32)
    dst = torch.empty_like(src)
    times = event_times(torch, lambda: dst.copy_(src), warmup, iters)
    med = statistics.median(times)
    ok = bool(torch.equal(src, dst))
    return {
        "record": "gemm",
        "family": "gemm",
        "name": "torch_copy",
        "bytes": nbytes,
        "bytes_moved": 2 * nbytes,
        "time_s": med,
        "bytes_per_s": 2 * nbytes / med,
        "verified": ok,
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--dtypes", default="bf16,fp8")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--iters", type=int, default=10)
    args = p.parse_args(argv)
    import torch

    dev = torch.device("cuda", 0)
    props = torch.cuda.get_device_properties(dev)
    with open(args.out, "a") as sink:
        meta = {
            "record": "meta",
            "family": "gemm",
            "gpu": props.name,
            "sms": props.multi_processor_count,
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        }
        sink.write(json.dumps(meta) + "\n")
        sink.write(json.dumps(_copy(torch, dev, args.warmup, args.iters)) + "\n")
        for dtype in args.dtypes.split(","):
            for m, n, k in SHAPES:
                a32 = torch.randn(m, k, device=dev)
                b32 = torch.randn(k, n, device=dev)
                if dtype == "bf16":
                    a, b = a32.bfloat16(), b32.bfloat16()
                    fn = _bf16_product(a, b)
                    tol = 2e-2
                else:
                    if not hasattr(torch, "_scaled_mm") or props.major < 9:
                        continue
                    a = a32.to(torch.float8_e4m3fn)
                    b = b32.t().contiguous().to(torch.float8_e4m3fn).t()  # column-major second operand
                    fn = _fp8_product(torch, a, b)
                    tol = 1e-1
                    a32, b32 = a.float(), b.float()
                ref = a32 @ b32
                got = fn().float()
                err = float(torch.linalg.norm(got - ref) / torch.linalg.norm(ref))
                times = event_times(torch, fn, args.warmup, args.iters)
                med = statistics.median(times)
                rec = {
                    "record": "gemm",
                    "family": "gemm",
                    "name": f"gemm_{dtype}",
                    "dtype": dtype,
                    "m": m,
                    "n": n,
                    "k": k,
                    "flops": 2.0 * m * n * k,
                    "time_s": med,
                    "time_p10_s": sorted(times)[len(times) // 10],
                    "time_p90_s": sorted(times)[(9 * len(times)) // 10],
                    "flops_per_s": 2.0 * m * n * k / med,
                    "rel_error": err,
                    "verified": err < tol,
                }
                sink.write(json.dumps(rec) + "\n")
                sink.flush()
                del a, b, a32, b32, ref, got
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
