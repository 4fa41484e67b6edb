"""The ``host`` family's process-group parts: what torch.distributed calls cost the host (see
:mod:`rooflib.bench.host_worker` for the records): ``--part nccl`` under torchrun at any world size (real NCCL, or
gloo on the CPU for tests) and ``--part c10d`` in one process through torch's ``fake`` process group.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from functools import partial
from typing import Any

from rooflib.bench.host_worker import rounds
from rooflib.bench.torch_common import Clocks, Sink, finish, meta_record

__all__ = ["ALLOC_CASES", "C10D_CASES", "c10d_part", "nccl_part"]


def nccl_part(torch: Any, args: argparse.Namespace) -> None:
    import datetime

    import torch.distributed as dist

    local = int(os.environ.get("LOCAL_RANK", "0"))
    timeout = datetime.timedelta(seconds=args.timeout)
    if args.device == "cpu":  # tests: the same calls through gloo
        dev = torch.device("cpu")
        dist.init_process_group("gloo", timeout=timeout)
    else:
        torch.cuda.set_device(local)
        dev = torch.device("cuda", local)
        dist.init_process_group("nccl", device_id=dev, timeout=timeout)
    rank, world = dist.get_rank(), dist.get_world_size()
    sink = Sink(args.out) if rank == 0 else None
    if sink is not None:
        nccl = torch.cuda.nccl.version() if dev.type == "cuda" else None
        version = ".".join(map(str, nccl)) if isinstance(nccl, tuple) else str(nccl)
        sink.write(meta_record(torch, dev, "host", part="nccl", gpus=world, nccl=version))
    try:
        for nbytes in (4, 1 << 20):
            buf = torch.ones(nbytes // 4, device=dev)
            dist.barrier()
            got = rounds(torch, dev, partial(dist.all_reduce, buf), max(1, args.calls // 4), args.rounds)
            buf.fill_(1.0)
            dist.all_reduce(buf)
            ok = bool(torch.all(buf == world).item())
            vals = torch.tensor(
                [got["host_s"], got["time_s"], got.get("device_s", 0.0), 0.0 if ok else 1.0],
                device=dev,
                dtype=torch.float64,
            )
            dist.all_reduce(vals, op=dist.ReduceOp.MAX)
            host_s, time_s, device_s, bad = (float(v) for v in vals.tolist())
            if sink is not None:
                rec = {
                    "record": "point",
                    "family": "host",
                    "name": "nccl",
                    "op": "all_reduce",
                    "gpus": world,
                    "bytes": nbytes,
                    "calls": max(1, args.calls // 4),
                    "host_s": host_s,
                    "time_s": time_s,
                    "device_s": device_s,
                    "verified": bad == 0.0,
                }
                sink.write(rec)
    finally:
        if sink is not None:
            sink.close()
        dist.destroy_process_group()


C10D_CASES: dict[str, tuple[str, ...]] = {
    "all_reduce": ("c10d.allreduce_",),
    "all_reduce_async_wait": ("c10d.allreduce_",),
    "all_gather_into_tensor": ("c10d._allgather_base_",),
    "all_gather": ("c10d.allgather_",),
    "reduce_scatter_tensor": ("c10d._reduce_scatter_base_",),
    "all_to_all_single": ("c10d.alltoall_base_",),
    "all_to_all_single_splits": ("c10d.alltoall_base_",),
    "all_to_all": ("c10d.alltoall_",),
    "broadcast": ("c10d.broadcast_",),
    "reduce": ("c10d.reduce_",),
    "gather": ("c10d.gather_",),
    "scatter": ("c10d.scatter_",),
    "send": ("c10d.send",),
    "recv": ("c10d.recv_",),
    "isend_wait": ("c10d.send",),
    "irecv_wait": ("c10d.recv_",),
    "batch_isend_irecv": ("c10d.send", "c10d.recv_"),
    "barrier": ("c10d.barrier",),
    "all_gather_object": ("c10d.allgather_", "c10d.allgather_"),
    "get_rank": (),
    "get_world_size": (),
}
"""Each ``c10d`` case and the c10d ops one call of it dispatches (as ``rooflib trace`` records them)."""

ALLOC_CASES: dict[str, tuple[str, ...]] = {
    "empty": ("aten.empty",),
    "empty_like": ("aten.empty_like",),
    "new_empty": ("aten.new_empty",),
    "zeros": ("aten.zeros",),
    "tensor_list": ("aten.lift_fresh",),
    "cat": ("aten.cat",),
    "stack": ("aten.cat",),
    "contiguous": (),
}
"""Each ``alloc`` case and the aten op one call of it dispatches."""


def _c10d_cases(torch: Any, dist: Any, dev: Any, world: int) -> dict[str, Callable[[], Any]]:
    n = 256 * world  # elements of the whole buffer (bf16 on the GPU): tiny, the host bounds every call
    dt = torch.bfloat16 if dev.type == "cuda" else torch.float32
    whole, part = torch.ones(n, device=dev, dtype=dt), torch.ones(n // world, device=dev, dtype=dt)
    parts = [torch.ones(n // world, device=dev, dtype=dt) for _ in range(world)]
    out = torch.empty(n, device=dev, dtype=dt)
    uneven = [n // world + (1 if r % 2 == 0 else -1) for r in range(world)]  # sums to n (world is even)
    even = [n // world] * world
    peer = 1 % world

    def batch() -> Any:
        ops = [dist.P2POp(dist.isend, part, peer), dist.P2POp(dist.irecv, parts[0], (world - 1) % world)]
        return [w.wait() for w in dist.batch_isend_irecv(ops)]

    return {
        "all_reduce": lambda: dist.all_reduce(whole),
        "all_reduce_async_wait": lambda: dist.all_reduce(whole, async_op=True).wait(),
        "all_gather_into_tensor": lambda: dist.all_gather_into_tensor(out, part),
        "all_gather": lambda: dist.all_gather(parts, part),
        "reduce_scatter_tensor": lambda: dist.reduce_scatter_tensor(part, whole),
        "all_to_all_single": lambda: dist.all_to_all_single(out, whole),
        "all_to_all_single_splits": lambda: dist.all_to_all_single(out, whole, even, uneven),
        "all_to_all": lambda: dist.all_to_all(parts, parts),
        "broadcast": lambda: dist.broadcast(whole, src=0),
        "reduce": lambda: dist.reduce(whole, dst=0),
        "gather": lambda: dist.gather(part, parts, dst=0),
        "scatter": lambda: dist.scatter(part, parts, src=0),
        "send": lambda: dist.send(part, peer),
        "recv": lambda: dist.recv(part, peer),
        "isend_wait": lambda: dist.isend(part, peer).wait(),
        "irecv_wait": lambda: dist.irecv(part, peer).wait(),
        "batch_isend_irecv": batch,
        "barrier": dist.barrier,
        "all_gather_object": lambda: dist.all_gather_object([None] * world, {"shape": (128, 64)}),
        "get_rank": dist.get_rank,
        "get_world_size": dist.get_world_size,
    }


def _alloc_cases(torch: Any, dev: Any) -> dict[str, Callable[[], Any]]:
    dt = torch.bfloat16 if dev.type == "cuda" else torch.float32
    a = torch.ones(64, 64, device=dev, dtype=dt)
    few = [torch.ones(64, device=dev, dtype=dt) for _ in range(8)]
    return {
        "empty": lambda: torch.empty(64, 64, device=dev, dtype=dt),
        "empty_like": lambda: torch.empty_like(a),
        "new_empty": lambda: a.new_empty((64, 64)),
        "zeros": lambda: torch.zeros(64, 64, device=dev, dtype=dt),
        "tensor_list": lambda: torch.tensor([1, 2, 3, 4], device=dev),
        "cat": lambda: torch.cat(few),
        "stack": lambda: torch.stack(few),
        "contiguous": lambda: a.contiguous(),
    }


def _new_group_record(
    torch: Any, dist: Any, dev: Any, world: int, args: argparse.Namespace, clocks: Clocks | None
) -> dict[str, Any]:
    """``new_group``: one ``dist.new_group`` of two ranks (rank 0 among them) on the fake group of ``world``,
    as problems that build their groups in every call pay it (``python.new_group``); few calls, as each
    makes a group that lives on."""
    rec: dict[str, Any] = {"record": "point", "family": "host", "name": "new_group", "world": world, "gpus": 1}
    made: list[Any] = []
    rec.update(calls=25, **rounds(torch, dev, lambda: made.append(dist.new_group([0, 1])), 25, min(args.rounds, 3)))
    rec["verified"] = all(g is not None for g in made)
    rec["sm_mhz"] = clocks.latest_sm_mhz() if clocks else None
    return rec


def c10d_part(torch: Any, args: argparse.Namespace) -> None:
    """The ``c10d`` part (module docstring): one process, the fake process group at each world size."""
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore

    dev = torch.device("cuda", 0) if args.device == "cuda" else torch.device("cpu")
    sink = Sink(args.out)
    clocks = Clocks(0) if dev.type == "cuda" else None
    sink.write(meta_record(torch, dev, "host", part="c10d"))
    calls = max(1, args.calls // 4)
    try:
        for world in (int(w) for w in args.worlds.split(",")):
            dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world)
            try:
                for case, fn in _c10d_cases(torch, dist, dev, world).items():
                    rec: dict[str, Any] = {"record": "point", "family": "host", "name": "c10d", "case": case}
                    rec.update({"world": world, "gpus": 1, "c10d": list(C10D_CASES[case]), "calls": calls})
                    try:
                        rec.update(rounds(torch, dev, fn, calls, args.rounds))
                    except Exception as exc:  # a call the fake backend refuses: recorded, the rest stands
                        sink.write({**rec, "record": "skipped", "reason": f"{type(exc).__name__}: {exc}"[:300]})
                        continue
                    rec["bytes"] = 2 * 256 * world if dev.type == "cuda" else 4 * 256 * world
                    rec["verified"] = True  # nothing to check: the fake backend moves nothing, by design
                    rec["sm_mhz"] = clocks.latest_sm_mhz() if clocks else None
                    sink.write(rec)
                sink.write(_new_group_record(torch, dist, dev, world, args, clocks))
            finally:
                dist.destroy_process_group()
        for case, fn in _alloc_cases(torch, dev).items():
            rec = {"record": "point", "family": "host", "name": "alloc", "case": case, "gpus": 1}
            rec.update({"aten": list(ALLOC_CASES[case]), "calls": calls})
            rec.update(rounds(torch, dev, fn, calls, args.rounds))
            rec["verified"] = fn() is not None
            rec["sm_mhz"] = clocks.latest_sm_mhz() if clocks else None
            sink.write(rec)
    finally:
        finish(sink, clocks, {"record": "meta", "family": "host", "part": "c10d", "phase": "end"})
