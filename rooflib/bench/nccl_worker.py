"""NCCL collective sweep, one process per GPU, started by torchrun (needs torch; imports nothing else of rooflib).

    torchrun --standalone --nproc-per-node=2 -m rooflib.bench.nccl_worker --out nccl.jsonl

Every op the model has (all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce, send_recv,
gather, scatter), sizes from ``--min-bytes`` to ``--max-bytes`` (powers of two, nccl-tests size convention),
timed two ways: ``stream`` (each op launched from the host, CUDA events around each op) and ``graph`` (a CUDA
graph of ``--graph-ops`` back-to-back ops replayed, events around each replay: device time without host launch
overhead). Inputs are fresh random small integers in float32 drawn per size and rank (so sums are exact); after
timing, one more run on fresh data is checked element by element against the expected result computed locally.
Rank 0 writes JSON Lines: one ``meta`` record, then one ``nccl`` record per (op, size, mode).

NVLink multicast (NVLS) stays off: NCCL_NVLS_ENABLE=0 is forced unless ``--allow-multicast`` is given and the
environment sets NCCL_NVLS_ENABLE to a plain nonzero integer (``false`` or ``no`` are not requests).
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
import time
from collections.abc import Callable
from typing import Any

from rooflib.bench.multicast import keep_multicast_off, multicast_requested
from rooflib.bench.timing import event_times
from rooflib.conventions import MULTICAST_OFF, OPS, bus_factor


def _guard_multicast(allow: bool) -> None:
    """Keep multicast off unless ``--allow-multicast`` came with an explicit request (NCCL_NVLS_ENABLE a plain
    nonzero integer); anything that does not clearly keep it off is replaced (rooflib.bench.multicast)."""
    if allow and multicast_requested(os.environ):
        for name in ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"):
            os.environ.setdefault(name, MULTICAST_OFF[name])
        return
    env, _ = keep_multicast_off(os.environ)
    os.environ.update(env)


def _parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().removesuffix("IB").removesuffix("B")
    return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)


def _meta(torch: Any, world: int) -> dict[str, Any]:
    props = torch.cuda.get_device_properties(0)
    try:
        smi = (
            subprocess.run(
                [
                    "nvidia-smi",
                    "--query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm",
                    "--format=csv,noheader",
                ],
                capture_output=True,
                text=True,
                timeout=20,
                check=False,
            )
            .stdout.strip()
            .splitlines()
        )
    except (OSError, subprocess.SubprocessError):
        smi = []
    nccl = torch.cuda.nccl.version()
    return {
        "record": "meta",
        "family": "nccl",
        "gpus": world,
        "gpu": props.name,
        "sms": props.multi_processor_count,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "nccl": ".".join(map(str, nccl)) if isinstance(nccl, tuple) else str(nccl),
        "nvidia_smi": smi,
        "host": socket.gethostname(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "env": {k: v for k, v in os.environ.items() if k.startswith(("NCCL_", "TORCH_SYMM", "NVSHMEM_"))},
        "command": " ".join(sys.argv),
    }


class Case:
    """Buffers and the call for one (op, size) on this rank; ``expected()`` recomputes the correct output."""

    def __init__(self, torch: Any, dist: Any, op: str, nbytes: int, rank: int, world: int, seed: int) -> None:
        self.torch, self.dist, self.op, self.rank, self.world = torch, dist, op, rank, world
        self.elems = max(world, nbytes // 4 // world * world)  # float32, divisible by the group
        self.seed = seed
        self.dev = torch.device("cuda", torch.cuda.current_device())
        self.inp = self._data(rank)
        n, e = world, self.elems
        per = e // n
        if op in ("all_reduce", "broadcast", "reduce"):
            self.out = self.inp
        elif op == "all_gather":
            self.inp = self.inp[:per].clone()
            self.out = torch.empty(e, device=self.dev)
        elif op in ("reduce_scatter", "scatter"):
            self.out = torch.empty(per, device=self.dev)
        elif op == "gather":
            self.inp = self.inp[:per].clone()
            self.out = torch.empty(e, device=self.dev)
        elif op in ("all_to_all", "send_recv"):
            self.out = torch.empty(e, device=self.dev)
        self.original = self.inp.clone()

    def _data(self, rank: int) -> Any:
        gen = self.torch.Generator(device=self.dev)
        gen.manual_seed(self.seed * 1009 + rank)
        return self.torch.randint(-8, 9, (self.elems,), generator=gen, device=self.dev, dtype=self.torch.int32).float()

    def call(self) -> Callable[[], None]:
        d, op, inp, out = self.dist, self.op, self.inp, self.out
        n, r = self.world, self.rank
        if op == "all_reduce":
            return lambda: d.all_reduce(inp)
        if op == "all_gather":
            return lambda: d.all_gather_into_tensor(out, inp)
        if op == "reduce_scatter":
            return lambda: d.reduce_scatter_tensor(out, inp)
        if op == "all_to_all":
            return lambda: d.all_to_all_single(out, inp)
        if op == "broadcast":
            return lambda: d.broadcast(inp, src=0)
        if op == "reduce":
            return lambda: d.reduce(inp, dst=0)
        if op == "gather":
            outs = list(out.chunk(n)) if r == 0 else None
            return lambda: d.gather(inp, gather_list=outs, dst=0)
        if op == "scatter":
            ins = list(inp.chunk(n)) if r == 0 else None
            return lambda: d.scatter(out, scatter_list=ins, src=0)

        def send_recv() -> None:  # every rank sends to rank+1 and receives from rank-1, as nccl-tests sendrecv
            reqs = d.batch_isend_irecv([d.P2POp(d.isend, inp, (r + 1) % n), d.P2POp(d.irecv, out, (r - 1) % n)])
            for req in reqs:
                req.wait()

        return send_recv

    def reset(self) -> None:
        self.inp.copy_(self.original)

    def check(self) -> tuple[bool, int]:
        """Run once more on the original inputs and compare every element with the expected output."""
        torch, n, r = self.torch, self.world, self.rank
        self.reset()
        self.out.fill_(float("nan")) if self.out is not self.inp else None
        self.call()()
        torch.cuda.synchronize()
        full = [self._data(k) for k in range(n)]
        per = self.elems // n
        op = self.op
        if op == "all_reduce" or (op == "reduce" and r == 0):
            got, want = self.out, torch.stack(full).sum(0)
        elif op == "reduce":
            return True, 0  # non-root buffers are unspecified after reduce
        elif op == "broadcast":
            got, want = self.out, full[0]
        elif op == "all_gather" or (op == "gather" and r == 0):
            got, want = self.out, torch.cat([f[:per] for f in full])
        elif op == "gather":
            return True, 0
        elif op == "reduce_scatter":
            got, want = self.out, torch.stack(full).sum(0)[r * per : (r + 1) * per]
        elif op == "scatter":
            got, want = self.out, full[0][r * per : (r + 1) * per]
        elif op == "all_to_all":
            got, want = self.out, torch.cat([f[r * per : (r + 1) * per] for f in full])
        else:  # send_recv
            got, want = self.out, full[(r - 1) % n]
        bad = int((got != want).sum().item())
        return bad == 0, bad


def _time_graph(torch: Any, fn: Callable[[], None], ops: int, warmup: int, iters: int) -> list[float]:
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(ops):
            fn()
    out = event_times(torch, graph.replay, warmup, iters, per_call=ops)
    del graph
    return out


def _quantiles(xs: list[float]) -> tuple[float, float, float]:
    s = sorted(xs)
    return statistics.median(s), s[max(0, int(0.1 * (len(s) - 1)))], s[int(0.9 * (len(s) - 1))]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="JSON Lines file written by rank 0 (appended)")
    p.add_argument("--ops", default=",".join(OPS))
    p.add_argument("--min-bytes", default="1K")
    p.add_argument("--max-bytes", default="1G")
    p.add_argument("--modes", default="stream,graph")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--graph-ops", type=int, default=0, help="ops per captured graph (0: 16 small, 2 large)")
    p.add_argument("--skip", default="", help="file of 'op,bytes,mode' lines already measured (resume)")
    p.add_argument("--seed", type=int, default=int(time.time()))
    p.add_argument("--allow-multicast", action="store_true")
    args = p.parse_args(argv)
    _guard_multicast(args.allow_multicast)

    import torch
    import torch.distributed as dist

    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    rank, world = dist.get_rank(), dist.get_world_size()
    done = set()
    if args.skip and os.path.exists(args.skip):
        with open(args.skip) as fh:
            done = {line.strip() for line in fh if line.strip()}
    sink = open(args.out, "a") if rank == 0 else None
    if sink is not None:
        sink.write(json.dumps(_meta(torch, world)) + "\n")
        sink.flush()
    sizes = []
    s = _parse_size(args.min_bytes)
    while s <= _parse_size(args.max_bytes):
        sizes.append(s)
        s *= 2
    for op in [o for o in args.ops.split(",") if o]:
        if op not in OPS:
            raise SystemExit(f"unknown op {op!r}; ops: {', '.join(OPS)}")
        for nbytes in sizes:
            modes = [m for m in args.modes.split(",") if f"{op},{nbytes},{m}" not in done]
            if not modes:
                continue
            case = Case(torch, dist, op, nbytes, rank, world, args.seed + nbytes)
            fn = case.call()
            size = case.elems * 4  # nccl-tests size: the full buffer (all-gather output, reduce-scatter input)
            for mode in modes:
                dist.barrier()
                if mode == "stream":
                    times = event_times(torch, fn, args.warmup, args.iters)
                else:
                    k = args.graph_ops or (16 if nbytes <= (1 << 20) else 2)
                    times = _time_graph(torch, fn, k, 2, args.iters)
                med, p10, p90 = _quantiles(times)
                stats = torch.tensor([med, p10, p90], device=case.dev, dtype=torch.float64)
                dist.all_reduce(stats, op=dist.ReduceOp.MAX)  # the slowest rank sets the time, as nccl-tests
                ok, bad = case.check()
                flags = torch.tensor([0 if ok else 1, bad], device=case.dev, dtype=torch.int64)
                dist.all_reduce(flags)
                if sink is not None:
                    med, p10, p90 = (float(x) for x in stats.tolist())
                    algbw = size / med
                    rec = {
                        "record": "nccl",
                        "family": "nccl",
                        "op": op,
                        "mode": mode,
                        "gpus": world,
                        "bytes": size,
                        "requested_bytes": nbytes,
                        "dtype": "float32",
                        "time_s": med,
                        "time_p10_s": p10,
                        "time_p90_s": p90,
                        "iters": args.iters,
                        "algbw_bytes_per_s": algbw,
                        "busbw_bytes_per_s": algbw * bus_factor(op, world),
                        "verified": int(flags[0].item()) == 0,
                        "mismatches": int(flags[1].item()),
                    }
                    sink.write(json.dumps(rec) + "\n")
                    sink.flush()
            del case, fn
            torch.cuda.empty_cache()
    if sink is not None:
        sink.close()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
