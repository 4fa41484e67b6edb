"""Tensor-parallel GEMM + collective ops as users run them today, one process per GPU, started by torchrun.

    torchrun --standalone --nproc-per-node=2 -m rooflib.bench.tp_worker --out tp.jsonl

Imports only torch and :mod:`rooflib.conventions` (through :mod:`rooflib.bench.tp_harness`, which holds the
process group, inputs, timing and records). Workloads on g GPUs, bf16, over a grid of shapes (M, N, K):

- ``gemm_rs``: each GPU holds A[M, K/g] and W[K/g, N]; C = sum over GPUs of A @ W, reduce-scattered by rows to
  C[M/g, N]. ``sequential`` = torch.mm then dist.reduce_scatter_tensor; ``fused`` =
  torch.ops.symm_mem.fused_matmul_reduce_scatter (PyTorch async TP over symmetric memory).
- ``ag_gemm``: each GPU holds X[M/g, K] and W[K, N/g]; Y = all_gather(X) @ W, [M, N/g]. ``sequential`` =
  dist.all_gather_into_tensor then torch.mm; ``fused`` = torch.ops.symm_mem.fused_all_gather_matmul.
- ``gemm_ar``: as gemm_rs, then all_reduce of the full C[M, N] (``sequential`` only).
- ``ce_pipeline`` (gemm_rs, ag_gemm): the model's inter-SM schedule with the copy engine, written with torch:
  cuBLAS pieces on the main stream, peer-to-peer copies of the other pieces on a side stream
  (:mod:`rooflib.bench.ce_pipeline`, ``--chunks`` pieces per peer).

For every workload the parts are measured too: ``gemm_only`` (the local product) and ``comm_only`` (the collective
alone, on the same number of bytes). Each op is launched from the host on the current stream, CUDA events around
it, after a device-side barrier across the GPUs; warm-up, then the median of ``--iters``; the slowest GPU's median
is reported (``time_s``), the fastest too. Products are checked against a float32 reference computed from all GPUs'
inputs (regenerated locally from their seeds; relative Frobenius error below 2e-2), collectives alone on small
integers exactly. Rank 0 appends JSON Lines: one ``meta`` record (with the symm_mem ops' schemas), then ``tp``
records (and ``skipped`` ones where the fused op is missing or fails). ``bytes`` is the collective's nccl-tests size;
``algbw_bytes_per_s``/``busbw_bytes_per_s`` divide it by the record's whole time (for sequential and fused an
effective rate, GEMM included); ``flops_per_gpu`` and ``flops_per_s`` count the product.

NVLink multicast stays off: NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and NVSHMEM_DISABLE_NVLS=1
are forced before torch is imported.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from rooflib.bench.ce_pipeline import ag_gemm_pipeline, gemm_rs_pipeline
from rooflib.bench.tp_harness import (
    Env,
    Shape,
    agree,
    init,
    rand_normal,
    record,
    rel_error,
    skip,
    small_ints,
    time_op,
)

WORKLOADS = ("gemm_rs", "ag_gemm", "gemm_ar")
IMPLS = ("sequential", "fused", "ce_pipeline", "gemm_only", "comm_only")
DEFAULT_IMPLS = ("sequential", "fused", "gemm_only", "comm_only")  # ce_pipeline on request (--impls)
_SYMM = ("fused", "ce_pipeline")  # impls that need symmetric memory: a failure is a ``skipped`` record
TOLERANCE = 2e-2  # bf16 operands, f32 accumulation, bf16 output (METHOD: 1e-3 .. 1e-2)
Check = Callable[[Any], tuple[float | None, bool]]  # result -> (relative error or None, passed)
Table = dict[str, tuple[Callable[[], Any], Check]]  # impl -> (the op, its check)


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def _run_checked(env: Env, s: Shape, impl: str, fn: Callable[[], Any], check: Check) -> None:
    """Run once and check, time, and record; a fused op that raises becomes a ``skipped`` record."""
    torch = env.torch
    reason = ""
    try:
        err, ok = check(fn())
        torch.cuda.synchronize()
    except Exception as exc:  # the fused ops may be missing or refuse a shape; NCCL errors abort anyway
        if impl not in _SYMM:
            raise
        reason, err, ok = f"{type(exc).__name__}: {exc}", None, False
    if not agree(env, bool(reason)):
        skip(env, s, impl, reason or "failed on another rank")
        return
    times = time_op(env, fn)
    record(env, s, impl, times, err, ok)


def _run_table(env: Env, s: Shape, impls: list[str], table: Table) -> None:
    for impl in impls:
        if impl not in table:
            continue
        if impl in _SYMM and not env.fused_ok:
            skip(env, s, impl, env.fused_reason)
            continue
        fn, check = table[impl]
        _run_checked(env, s, impl, fn, check)


def _lazy(env: Env, build: Callable[[Any], Callable[[], Any]]) -> Callable[[], Any]:
    """An op built on its first call (the checked run, on every rank at once: building rendezvouses)."""
    op: list[Callable[[], Any]] = []

    def run() -> Any:
        if not op:
            import torch.distributed._symmetric_memory as symm_mem

            op.append(build(symm_mem))
        return op[0]()

    return run


def _gemm_rs_or_ar(env: Env, s: Shape, impls: list[str]) -> None:
    torch, dist, r, g = env.torch, env.dist, env.rank, env.world
    kg = s.k // g
    a = [rand_normal(env, (s.m, kg), 10 * q + 1) for q in range(g)]
    w = [rand_normal(env, (kg, s.n), 10 * q + 2) for q in range(g)]
    full = sum(a[q].float() @ w[q].float() for q in range(g))
    rows = s.m // g
    ref = full if s.workload == "gemm_ar" else full[r * rows : (r + 1) * rows]
    local_ref = a[r].float() @ w[r].float()
    c = torch.empty((s.m, s.n), device=env.dev, dtype=torch.bfloat16)
    out = torch.empty((rows, s.n), device=env.dev, dtype=torch.bfloat16)
    ints = [small_ints(env, (s.m, s.n), 10 * q + 3) for q in range(g)]
    ints_sum = sum(x.float() for x in ints)
    ints_ref = ints_sum if s.workload == "gemm_ar" else ints_sum[r * rows : (r + 1) * rows]
    work = ints[r].clone()
    ar = s.workload == "gemm_ar"

    def mm() -> Any:
        return torch.mm(a[r], w[r], out=c)

    def comm() -> Any:
        if ar:  # in place: the first call (the checked one) sums the original integers
            dist.all_reduce(work)
            return work
        dist.reduce_scatter_tensor(out, ints[r])
        return out

    def seq() -> Any:
        torch.mm(a[r], w[r], out=c)
        if ar:
            dist.all_reduce(c)
            return c
        dist.reduce_scatter_tensor(out, c)
        return out

    def fused() -> Any:
        return torch.ops.symm_mem.fused_matmul_reduce_scatter(a[r], w[r], "sum", 0, env.group_name)

    pipeline = _lazy(env, lambda sm: gemm_rs_pipeline(torch, sm, env.group_name, r, g, a[r], w[r], env.chunks))

    def near(want: Any) -> Check:
        def check(got: Any) -> tuple[float | None, bool]:
            err = rel_error(env, got, want)
            return err, err < TOLERANCE

        return check

    def exact(got: Any) -> tuple[float | None, bool]:
        return None, bool(torch.equal(got.float(), ints_ref))

    table: Table = {
        "gemm_only": (mm, near(local_ref)),
        "comm_only": (comm, exact),
        "sequential": (seq, near(ref)),
    }
    if not ar:  # gemm_ar: sequential only
        table["fused"] = (fused, near(ref))
        table["ce_pipeline"] = (pipeline, near(ref))
    del full
    _run_table(env, s, impls, table)


def _ag_gemm(env: Env, s: Shape, impls: list[str]) -> None:
    torch, dist, r, g = env.torch, env.dist, env.rank, env.world
    rows, ng = s.m // g, s.n // g
    x = [rand_normal(env, (rows, s.k), 10 * q + 4) for q in range(g)]
    w = rand_normal(env, (s.k, ng), 10 * r + 5)
    x_full = torch.cat(x)
    ref = x_full.float() @ w.float()
    gathered = torch.empty_like(x_full)
    y = torch.empty((s.m, ng), device=env.dev, dtype=torch.bfloat16)
    ints = [small_ints(env, (rows, s.k), 10 * q + 6) for q in range(g)]
    ints_ref = torch.cat(ints)

    def mm() -> Any:
        return torch.mm(x_full, w, out=y)

    def comm() -> Any:
        dist.all_gather_into_tensor(gathered, ints[r])
        return gathered

    def seq() -> Any:
        dist.all_gather_into_tensor(gathered, x[r])
        return torch.mm(gathered, w, out=y)

    def fused() -> Any:
        _, outs = torch.ops.symm_mem.fused_all_gather_matmul(x[r], [w], 0, env.group_name)
        return outs[0]

    pipeline = _lazy(env, lambda sm: ag_gemm_pipeline(torch, sm, env.group_name, r, g, x[r], w, env.chunks))

    def near(got: Any) -> tuple[float | None, bool]:
        err = rel_error(env, got, ref)
        return err, err < TOLERANCE

    def exact(got: Any) -> tuple[float | None, bool]:
        return None, bool(torch.equal(got, ints_ref))

    table: Table = {
        "gemm_only": (mm, near),
        "comm_only": (comm, exact),
        "sequential": (seq, near),
        "fused": (fused, near),
        "ce_pipeline": (pipeline, near),
    }
    _run_table(env, s, impls, table)


def parser() -> argparse.ArgumentParser:
    """The worker's options."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # option names must not be prefixes of torchrun's own (argparse would take --m for --master-addr, ...)
    p.add_argument("--out", required=True, help="JSON Lines file written by rank 0 (appended)")
    p.add_argument("--workloads", default=",".join(WORKLOADS))
    p.add_argument("--impls", default=",".join(DEFAULT_IMPLS), help=f"of {','.join(IMPLS)}")
    p.add_argument("--ms", default="4096,8192,16384", help="global M values (rows of the activations)")
    p.add_argument("--ns", default="8192", help="N values")
    p.add_argument("--ks", default="1024,4096,8192,16384", help="K values")
    p.add_argument("--chunks", type=int, default=4, help="ce_pipeline: row pieces per peer")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--seed", type=int, default=int(time.time()))
    p.add_argument("--timeout", type=int, default=300, help="process-group timeout in seconds")
    return p


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    workloads = [w for w in args.workloads.split(",") if w]
    impls = [i for i in args.impls.split(",") if i]
    for w in workloads:
        if w not in WORKLOADS:
            raise SystemExit(f"unknown workload {w!r}; workloads: {', '.join(WORKLOADS)}")
    for i in impls:
        if i not in IMPLS:
            raise SystemExit(f"unknown impl {i!r}; impls: {', '.join(IMPLS)}")
    env = init(args)
    for m in _ints(args.ms):
        for n in _ints(args.ns):
            for k in _ints(args.ks):
                for w in workloads:
                    s = Shape(w, m, n, k, env.world)
                    if m % env.world or n % env.world or k % env.world:
                        skip(env, s, "all", f"M, N and K must be multiples of {env.world}")
                        continue
                    (_ag_gemm if w == "ag_gemm" else _gemm_rs_or_ar)(env, s, impls)
                    env.torch.cuda.empty_cache()
    if env.sink is not None:
        env.sink.close()
    env.dist.barrier()
    env.dist.destroy_process_group()


if __name__ == "__main__":
    main()
