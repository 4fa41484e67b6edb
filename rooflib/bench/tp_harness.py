"""The tensor-parallel worker's harness: process group, symmetric memory, inputs, timing and records.

Every rank regenerates every rank's inputs from one seed (rank 0's, broadcast), so each can check its result
against a float32 reference; each op is timed after a device-side barrier across the GPUs; rank 0 writes one
JSON record per (workload, shape, impl) with the slowest GPU's median. Imports only torch (inside functions)
and :mod:`rooflib.conventions`. NVLink multicast stays off: ``rooflib.conventions.MULTICAST_OFF`` is set before
torch is imported.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import socket
import statistics
import subprocess
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from rooflib.bench.timing import event_times
from rooflib.conventions import MULTICAST_OFF, Op, bus_factor

__all__ = ["Env", "Shape", "agree", "init", "rand_normal", "record", "rel_error", "skip", "small_ints", "time_op"]

FUSED = {"gemm_rs": "fused_matmul_reduce_scatter", "ag_gemm": "fused_all_gather_matmul"}
_COLLECTIVE: dict[str, Op] = {"gemm_rs": "reduce_scatter", "ag_gemm": "all_gather", "gemm_ar": "all_reduce"}


def _smi() -> list[str]:
    query = "--query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm"
    try:
        out = subprocess.run(
            ["nvidia-smi", query, "--format=csv,noheader"], capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return []
    return out.stdout.strip().splitlines()


@dataclass
class Env:
    """The process group, its symmetric-memory ops, and the output sink (rank 0 only)."""

    torch: Any
    dist: Any
    rank: int
    world: int
    dev: Any
    group_name: str
    warmup: int
    iters: int
    seed: int
    chunks: int = 4
    fused_ok: bool = False
    fused_reason: str = ""
    schemas: dict[str, str] = field(default_factory=dict)
    sink: TextIO | None = None

    def write(self, rec: dict[str, Any]) -> None:
        if self.sink is not None:
            self.sink.write(json.dumps(rec) + "\n")
            self.sink.flush()


def _load_symm_mem(env: Env) -> None:
    """Register torch.ops.symm_mem (importing torch.distributed._symmetric_memory) and enable it for the group."""
    torch = env.torch
    try:
        import torch.distributed._symmetric_memory as symm_mem

        enable = getattr(symm_mem, "enable_symm_mem_for_group", None)
        if enable is not None:  # needed before torch 2.8, deprecated (a no-op) since
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                enable(env.group_name)
        ops = torch.ops.symm_mem
        for name in FUSED.values():
            env.schemas[name] = str(getattr(ops, name).default._schema)
        env.fused_ok = True
    except Exception as exc:  # any failure only means: no fused points
        env.fused_reason = f"torch.ops.symm_mem unavailable: {type(exc).__name__}: {exc}"
        return
    try:
        env.schemas["backend"] = str(symm_mem.get_backend(env.dev))
    except Exception as exc:  # informative only
        env.schemas["backend"] = f"unknown ({type(exc).__name__})"


def _meta(env: Env) -> dict[str, Any]:
    torch = env.torch
    props = torch.cuda.get_device_properties(env.dev)
    nccl = torch.cuda.nccl.version()
    return {
        "record": "meta",
        "family": "tp",
        "gpus": env.world,
        "gpu": props.name,
        "sms": props.multi_processor_count,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "nccl": ".".join(map(str, nccl)) if isinstance(nccl, tuple) else str(nccl),
        "nvidia_smi": _smi(),
        "host": socket.gethostname(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "env": {k: v for k, v in os.environ.items() if k.startswith(("NCCL_", "TORCH_SYMM", "NVSHMEM_", "CUDA_"))},
        "symm_mem_ops": env.schemas,
        "symm_mem_available": env.fused_ok,
        "symm_mem_reason": env.fused_reason,
        "command": " ".join(sys.argv),
    }


def rand_normal(env: Env, shape: tuple[int, int], key: int) -> Any:
    """Random normal bf16 of ``shape`` from a seed any rank can reproduce (``key`` names rank and tensor)."""
    gen = env.torch.Generator(device=env.dev)
    gen.manual_seed(env.seed * 1_000_003 + key)
    return env.torch.randn(shape, generator=gen, device=env.dev, dtype=env.torch.bfloat16)


def small_ints(env: Env, shape: tuple[int, int], key: int) -> Any:
    """Integers in [-8, 8] as bf16: sums over a few GPUs stay exact."""
    gen = env.torch.Generator(device=env.dev)
    gen.manual_seed(env.seed * 1_000_003 + key)
    torch = env.torch
    return torch.randint(-8, 9, shape, generator=gen, device=env.dev, dtype=torch.int32).to(torch.bfloat16)


def rel_error(env: Env, got: Any, ref: Any) -> float:
    torch = env.torch
    diff = torch.linalg.norm(got.float() - ref)
    return float((diff / torch.linalg.norm(ref)).item())


def time_op(env: Env, fn: Callable[[], Any]) -> list[float]:
    """Per-op seconds: a device barrier across GPUs before each op, CUDA events around it."""

    def align() -> None:
        env.dist.barrier()
        env.torch.cuda.synchronize()

    return event_times(env.torch, fn, env.warmup, env.iters, before=align)


@dataclass
class Shape:
    workload: str
    m: int
    n: int
    k: int
    g: int

    def flops(self, impl: str) -> float:
        """Per-GPU FLOPs of the product (0 for the collective alone)."""
        if impl == "comm_only":
            return 0.0
        if self.workload == "ag_gemm":
            return 2.0 * self.m * self.k * (self.n // self.g)
        return 2.0 * self.m * (self.k // self.g) * self.n

    def comm_bytes(self) -> int:
        """nccl-tests size of the collective: reduce-scatter input, all-gather output, all-reduce buffer (bf16)."""
        return 2 * self.m * (self.k if self.workload == "ag_gemm" else self.n)


def record(env: Env, s: Shape, impl: str, times: list[float], err: float | None, ok: bool) -> None:
    torch, dist = env.torch, env.dist
    med = statistics.median(times)
    srt = sorted(times)
    p10, p90 = srt[int(0.1 * (len(srt) - 1))], srt[int(0.9 * (len(srt) - 1))]
    both = torch.tensor([med, -med, p10, p90, 0.0 if ok else 1.0], device=env.dev, dtype=torch.float64)
    dist.all_reduce(both, op=dist.ReduceOp.MAX)
    slow, fast, p10, p90, bad = (float(x) for x in both.tolist())
    flops = s.flops(impl)
    nbytes = s.comm_bytes() if impl != "gemm_only" else 0
    rec: dict[str, Any] = {
        "record": "tp",
        "family": "tp",
        "name": f"{s.workload}/{impl}",
        "workload": s.workload,
        "impl": impl,
        "collective": _COLLECTIVE[s.workload] if impl != "gemm_only" else "",
        "m": s.m,
        "n": s.n,
        "k": s.k,
        "gpus": s.g,
        "dtype": "bf16",
        "time_s": slow,
        "time_s_fastest_gpu": -fast,
        "time_p10_s": p10,
        "time_p90_s": p90,
        "iters": env.iters,
        "warmup": env.warmup,
        "flops_per_gpu": flops,
        "flops_per_s": flops / slow if flops else None,
        "bytes": nbytes,
    }
    if nbytes:
        op = _COLLECTIVE[s.workload]
        rec["algbw_bytes_per_s"] = nbytes / slow
        rec["busbw_bytes_per_s"] = nbytes / slow * bus_factor(op, s.g)
    rec["rel_error"] = err
    rec["verified"] = bad == 0.0
    env.write(rec)
    if env.rank == 0:
        print(f"tp {s.workload:8s} {impl:10s} M={s.m:6d} N={s.n:6d} K={s.k:6d}  {slow * 1e3:9.3f} ms  ok={bad == 0.0}")


def skip(env: Env, s: Shape, impl: str, reason: str) -> None:
    env.write(
        {
            "record": "skipped",
            "family": "tp",
            "workload": s.workload,
            "impl": impl,
            "m": s.m,
            "n": s.n,
            "k": s.k,
            "gpus": s.g,
            "reason": reason,
        }
    )
    if env.rank == 0:
        print(f"tp {s.workload} {impl} M={s.m} K={s.k}: skipped: {reason}")


def agree(env: Env, failed: bool) -> bool:
    """True when no rank failed (every rank must call this at the same point)."""
    flag = env.torch.tensor([1 if failed else 0], device=env.dev, dtype=env.torch.int32)
    env.dist.all_reduce(flag, op=env.dist.ReduceOp.MAX)
    return int(flag.item()) == 0


def init(args: argparse.Namespace) -> Env:
    os.environ.update(MULTICAST_OFF)  # before torch is imported: never NVLink multicast
    import torch
    import torch.distributed as dist

    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=dev, timeout=datetime.timedelta(seconds=args.timeout))
    torch.backends.cuda.matmul.allow_tf32 = False  # the float32 references stay float32
    world = dist.group.WORLD
    if world is None:
        raise RuntimeError("torch.distributed has no WORLD group after init_process_group")
    group_name = world.group_name
    seed = torch.tensor([args.seed], device=dev, dtype=torch.int64)
    dist.broadcast(seed, src=0)  # every rank regenerates every rank's inputs: one seed (the default reads the clock)
    env = Env(
        torch, dist, dist.get_rank(), dist.get_world_size(), dev, group_name, args.warmup, args.iters, int(seed.item())
    )
    env.chunks = max(1, args.chunks)
    _load_symm_mem(env)
    if env.rank == 0:
        env.sink = open(args.out, "a")  # closed in main
        env.write(_meta(env))
    return env
