"""The ``dist_programs`` benchmark family: the distributed programs of :mod:`rooflib.bench.dist_programs` under
torchrun at any world size, eager and as CUDA graphs.

    torchrun --standalone --nproc-per-node=N -m rooflib.bench.dist_programs_worker --out dist_programs.jsonl

Per (program, parameter set): every rank draws fresh inputs (as many groups as it takes to cycle through more than
3x the L2, at most 16), runs the program, all-gathers every rank's arguments and checks its own output against the
float32 reference of the whole program (relative Frobenius error within the program's tolerance); then it is timed
with ParallelKernelBench's convention (a barrier, back-to-back iterations cycling the groups, a CUDA event after
every iteration, one synchronisation at the end) ``eager`` and as one captured CUDA graph per group (``graph``,
NCCL calls captured; on the CPU with gloo only ``eager``). Each rank's median goes through an all-reduce MAX: the
slowest rank sets the time, as nccl-tests reports it. Rank 0 writes the records (``record: point``, ``family:
dist_programs``, ``name``, ``mode``, ``world``, the parameters, ``groups``, ``time_s`` median and the other
statistics of :func:`rooflib.bench.torch_timing.stats` from rank 0, ``rel_error`` (the largest over ranks),
``verified``); a (program, parameters, mode, world) already in ``--out`` is not measured again, so a rerun after an
interruption neither loses nor repeats a record. NVLink multicast stays off (NCCL_NVLS_ENABLE=0 and friends).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any

from rooflib.bench.dist_programs import DIST_PROGRAMS
from rooflib.bench.torch_common import Sink, finish, l2_bytes, meta_record, recorded_keys, rel_error
from rooflib.bench.torch_timing import capture_graphs, chained_times, groups_for, stats
from rooflib.conventions import MULTICAST_OFF

__all__ = ["done_keys", "main", "parser", "record_key"]

MAX_GROUPS = 16
FAMILY = "dist_programs"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--programs", default=",".join(DIST_PROGRAMS), help="comma-separated program names")
    p.add_argument("--sizes", default="", help="indices of the parameter sets (default: all)")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help="cpu: gloo, eager only (tests)")
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--seed", type=int, default=None, help="fixed inputs (tests); default fresh random inputs")
    p.add_argument("--set", dest="sets", action="append", default=[], help="KEY=INT overriding every size (tests)")
    return p


def record_key(rec: dict[str, Any]) -> tuple[str, ...]:
    params = {k: rec[k] for k in sorted(rec) if k in _PARAM_KEYS}
    return (str(rec.get("name")), str(rec.get("mode")), str(rec.get("world")), json.dumps(params, sort_keys=True))


_PARAM_KEYS = {"tokens", "hidden", "ffn", "batch", "seq", "heads"}


def done_keys(path: str) -> set[tuple[str, ...]]:
    """Keys of the points and skips already in ``path``."""
    return recorded_keys(path, FAMILY, record_key)


def _nbytes(args: tuple[Any, ...]) -> int:
    return sum(int(a.numel() * a.element_size()) for a in args if hasattr(a, "numel"))


def _gather_args(torch: Any, dist: Any, args: tuple[Any, ...], world: int) -> list[tuple[Any, ...]]:
    """Every rank's arguments (tensors all-gathered, plain values as they are: the same on every rank)."""
    per_rank: list[list[Any]] = [[] for _ in range(world)]
    for a in args:
        if hasattr(a, "numel"):
            parts = [torch.empty_like(a) for _ in range(world)]
            dist.all_gather(parts, a.contiguous())
            for r in range(world):
                per_rank[r].append(parts[r])
        else:
            for r in range(world):
                per_rank[r].append(a)
    return [tuple(p) for p in per_rank]


def _seed(torch: Any, dist: Any, dev: Any, given: int | None) -> int:
    """``given``, or a fresh random seed drawn on rank 0 and broadcast (every rank must agree on it)."""
    t = torch.tensor([given if given is not None else int.from_bytes(os.urandom(4), "little") & 0x7FFFFFFF], device=dev)
    dist.broadcast(t, 0)
    return int(t.item())


def _slowest(torch: Any, dist: Any, dev: Any, value: float) -> float:
    t = torch.tensor([value], dtype=torch.float64, device=dev)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t.item())


def _measure(
    torch: Any, dist: Any, dev: Any, a: argparse.Namespace, name: str, params: dict[str, int], todo: set[str]
) -> list[dict[str, Any]]:
    prog, rank, world = DIST_PROGRAMS[name], dist.get_rank(), dist.get_world_size()
    seed = _seed(torch, dist, dev, a.seed)
    first = prog.inputs(rank, world, dev, **params, seed=seed)
    count = min(MAX_GROUPS, groups_for(_nbytes(first), l2_bytes(torch, dev)))
    groups = [first, *(prog.inputs(rank, world, dev, **params, seed=seed + g) for g in range(1, count))]
    got = prog.fn(*groups[0])
    ref = prog.reference(world, _gather_args(torch, dist, groups[0], world), rank)
    err = _slowest(torch, dist, dev, rel_error(torch, got, ref))
    ok = err <= prog.tolerance  # NaN (non-finite output) fails
    del got, ref
    base = {"record": "point", "family": FAMILY, "name": name, "world": world, "gpus": world, **params}
    base.update({"groups": count, "rel_error": err, "verified": ok})
    out = []

    def eager(i: int) -> Any:
        return prog.fn(*groups[i % count])

    if "eager" in todo:
        dist.barrier()
        samples = chained_times(torch, dev, eager, a.warmup, a.iters)
        out.append(
            {
                **base,
                "mode": "eager",
                **stats(samples),
                "time_s": _slowest(torch, dist, dev, statistics.median(samples)),
            }
        )
    if "graph" in todo and dev.type == "cuda":
        graphs = capture_graphs(torch, dev, prog.fn, groups)
        dist.barrier()
        samples = chained_times(torch, dev, lambda i: graphs[i % count].replay(), a.warmup, a.iters)
        out.append(
            {
                **base,
                "mode": "graph",
                **stats(samples),
                "time_s": _slowest(torch, dist, dev, statistics.median(samples)),
            }
        )
        del graphs
    return out


def _sizes(a: argparse.Namespace, name: str) -> list[dict[str, int]]:
    sizes = list(DIST_PROGRAMS[name].sizes)
    chosen = [int(s) for s in a.sizes.split(",") if s]
    picked = [sizes[i] for i in chosen] if chosen else sizes
    overrides = {k: int(v) for k, _, v in (s.partition("=") for s in a.sets)}
    return [{**p, **{k: v for k, v in overrides.items() if k in p}} for p in picked]


def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(argv)
    unknown = [n for n in a.programs.split(",") if n and n not in DIST_PROGRAMS]
    if unknown:
        raise SystemExit(f"unknown program(s) {', '.join(unknown)}; programs: {', '.join(DIST_PROGRAMS)}")
    os.environ.update(MULTICAST_OFF)
    import torch
    import torch.distributed as dist

    local = int(os.environ.get("LOCAL_RANK", "0"))
    if a.device == "cuda":
        dev = torch.device("cuda", local)
        torch.cuda.set_device(dev)
        torch.backends.cuda.matmul.allow_tf32 = False
        dist.init_process_group("nccl", device_id=dev)
    else:
        dev = torch.device("cpu")
        dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    done = done_keys(a.out) if rank == 0 else set()
    sink = Sink(a.out) if rank == 0 else None
    if sink is not None:
        sink.write(meta_record(torch, dev, FAMILY, world=world, backend=dist.get_backend()))
    start = time.monotonic()
    try:
        for name in (n for n in a.programs.split(",") if n):
            for params in _sizes(a, name):
                key_base = {"name": name, "world": world, **params}
                modes = ["eager", "graph"] if dev.type == "cuda" else ["eager"]
                flags = torch.tensor([0 if record_key({**key_base, "mode": m}) in done else 1 for m in modes]).to(dev)
                dist.broadcast(flags, 0)  # rank 0 knows what the output already holds
                todo = {m for m, f in zip(modes, flags.tolist(), strict=True) if f}
                if not todo:
                    continue
                try:
                    recs = _measure(torch, dist, dev, a, name, params, todo)
                except (RuntimeError, ValueError) as exc:
                    recs = [
                        {
                            "record": "skipped",
                            "family": FAMILY,
                            **key_base,
                            "mode": m,
                            "reason": f"{type(exc).__name__}: {exc}"[:300],
                        }
                        for m in sorted(todo)
                    ]
                if sink is not None:
                    for rec in recs:
                        sink.write(rec)
    finally:
        if sink is not None:
            finish(sink, None, {"record": "meta", "family": FAMILY, "end": True}, start)
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
