"""Does an op's host cost depend on its tensors' size? One H200, the fake process group (device tool):

    python3 benchmarks/device/host_size_probe.py OUT.jsonl

Per call host time (perf_counter over 500 back-to-back calls, median of 7 rounds) of clone, add, all_reduce (fake
group, world 8) and the 1_allreduce-shaped function (``@torch.no_grad()``, clone, all_reduce) on bf16 tensors of
256 elements (the host family's cases) up to 1024 x 1024 (ParallelKernelBench's size): the caching allocator
serves blocks up to 1 MiB from its small pool and larger ones from its large pool.
"""

# ruff: noqa: B023  (each lambda runs in the iteration that made it)
from __future__ import annotations

import json
import statistics
import sys


def main() -> None:
    import torch
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore

    from rooflib.bench.torch_timing import loop_host_time

    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=8)
    dev = torch.device("cuda")

    @torch.no_grad()
    def allreduce_problem(t: torch.Tensor) -> torch.Tensor:
        out = t.clone()
        dist.all_reduce(out, op=dist.ReduceOp.SUM)
        return out

    with open(sys.argv[1], "w") as fh:
        for elements in (256, 65536, 262144, 524288, 1 << 20):
            x = torch.randn(elements, device=dev, dtype=torch.bfloat16)
            y = torch.randn(elements, device=dev, dtype=torch.bfloat16)
            groups = [torch.randn(elements, device=dev, dtype=torch.bfloat16) for _ in range(16)]
            it = iter(range(1 << 30))
            cases = {
                "clone": lambda: x.clone(),
                "add": lambda: x + y,
                "all_reduce": lambda: dist.all_reduce(x),
                "problem_1": lambda: allreduce_problem(x),
                "problem_1_groups": lambda: allreduce_problem(groups[next(it) % 16]),
            }
            for name, fn in cases.items():
                rec = {"case": name, "elements": elements, "bytes": 2 * elements, "host_s": loop_host_time(torch, fn)}
                fh.write(json.dumps(rec) + "\n")
                print(f"{name:18s} {2 * elements:>9d} B {rec['host_s'] * 1e6:7.2f} us", flush=True)
        # the 1_allreduce-shaped function at PKB's size, timed as PKB times it (events chained, 16 input
        # groups), on the host with the GPU held busy, and the timed loop's own cost (an empty call)
        from rooflib.bench.torch_timing import chained_times, held_host_times

        groups = [torch.randn(1 << 20, device=dev, dtype=torch.bfloat16) for _ in range(16)]
        loop = {
            "pkb_timed": lambda: chained_times(torch, dev, lambda i: allreduce_problem(groups[i % 16]), 50, 200),
            "pkb_timed_empty": lambda: chained_times(torch, dev, lambda i: groups[i % 16], 50, 200),
        }
        for name, fn in loop.items():
            for rep in range(3):
                rec = {"case": name, "rep": rep, "host_s": statistics.median(fn())}
                fh.write(json.dumps(rec) + "\n")
                print(f"{name:18s} rep {rep} {rec['host_s'] * 1e6:7.2f} us", flush=True)
        for rep in range(3):
            held = held_host_times(torch, dev, lambda i: allreduce_problem(groups[i % 16]), 10, 40e-6)
            fh.write(json.dumps({"case": "pkb_held", "rep": rep, **held}) + "\n")
            print(f"pkb_held           rep {rep} {held['host_s'] * 1e6:7.2f} us waits={held['host_waits']}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
