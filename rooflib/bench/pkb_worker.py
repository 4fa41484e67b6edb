"""The ``pkb`` benchmark: ParallelKernelBench problems timed on GPUs with PKB's own convention.

    python -m rooflib.bench.pkb_worker --pkb ROOT --out local.jsonl --mode local --worlds 2,8      # one GPU
    torchrun --nproc-per-node 8 -m rooflib.bench.pkb_worker --pkb ROOT --out dist.jsonl --mode dist  # any world

PKB (read by path, never copied) supplies each problem's inputs (``utils/input_output_tensors.py``,
``create_input_tensor``) and its reference ``solution`` (``reference/<id>_<name>.py``); ``--solution DIR`` times
``DIR/<stem>*.py`` candidates instead, checked against the reference.

- ``--mode local`` (one GPU): the **single-GPU part** of each problem: rank 0's inputs at world size ``w`` (PKB's
  builder, ``w`` from ``--worlds``), the solution run with torch's ``fake`` process group of ``w`` ranks, so its
  collectives return at once and move nothing: what is timed is the rank's local compute alone, on the shapes it
  has at world ``w``. Integer outputs of the collectives are filled as if every rank held rank 0's data
  (:mod:`rooflib.bench.pkb_symmetric`: split sizes, counts, gathered shapes come out as ``rooflib trace``
  assumes); floating-point buffers keep what they held (the values stay finite: PKB's inputs), so the output
  is checked against the same program run on the host (float32 upcasts excluded: the
  same dtypes, on the CPU; ``verified``), where the reference runs there (Triton kernels do not: ``check: none``)
  and within ``--check-seconds`` (large sizes: past them the point is kept, timed and not checked).
- ``--mode profile`` (one GPU): the single-GPU part as ``local`` runs it, under ``torch.profiler`` (host
  activity only) instead of timed: where a call's host time goes, op by op, and the Python between the ops. Run
  it last in a process: the profiler slows later launches (pytorch/pytorch#144455), so no timing follows it.
- ``--mode kernels`` (one GPU): the single-GPU part under ``torch.profiler`` with CUDA activity: every kernel
  each op launched, timed on the device by CUPTI, in launch order (:func:`rooflib.bench.pkb_profile.
  device_profile`; ``ops``, ``kernel_s``): what the prediction's per-op device times are checked against.
- ``--mode dist`` (under torchrun, NCCL): the whole problem; every rank times it and checks its output against
  the reference's on the same inputs (with a candidate), or against a second reference call on fresh copies of
  the inputs (reference alone: run-to-run agreement).

Timing is PKB's (``utils/performance.py``): the inputs cloned into input groups until they exceed 3x the L2 (at
most :data:`PKB_MAX_GROUPS`, PKB's cap), a
warm-up, then back-to-back calls cycling the groups with a CUDA event after each and one synchronisation at the
end (:func:`rooflib.bench.torch_timing.chained_times`). Fresh random data: PKB's builder with ``trial`` (a new
seed per run, ``--trial``).

Records (JSON Lines, ``family: pkb``): ``record: point`` with ``problem`` (stem), ``id``, ``mode``, ``world``,
``rank``, ``size`` ([M, N]), ``dtype``, ``groups``, ``input_bytes``, ``time_s`` (median), ``time_p10_s``,
``time_p90_s``, ``time_mean_s`` (PKB reports the mean), ``time_n``, ``warmup``, ``host_s`` (median host time of
a call issued while a sleep kernel holds the GPU: its issue cost alone, ``host_waits`` when a call synced;
:func:`rooflib.bench.torch_timing.held_host_times`, ``--host-calls``), ``verified`` (true / false /
null), ``check`` (host / reference / repeat / none), ``max_abs_error``; in ``local`` mode also ``queued_s`` (the
device time of a held call, all of them queued: ``held_host_times``; the held calls read the input groups from
``held_from`` on, the ones the timing touched longest ago; ``queued_first_s`` with ``--held-first``), ``fills`` (outputs
the symmetric fill wrote in one call) and ``fill_s`` (their host seconds per call, queue waits included), and
``probe_s`` / ``probe_after_s`` (:func:`rooflib.bench.torch_timing.host_probe` just before and after the
problem: the host's speed then); ``record: skipped`` with ``reason``.
Resumable: a (problem, mode, world, rank, size, dtype, solution) already written (point or skipped) is not run
again, so a killed run continues where it stopped without losing or repeating a record. Each problem is
``record: started`` first; one started and never finished (the process died in it: a device-side assert) is
recorded as skipped on the next run, one interrupted (``record: aborted``, a time limit) is run again.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rooflib.bench import pkb_values as values
from rooflib.bench.pkb_profile import device_profile, host_profile
from rooflib.bench.pkb_symmetric import install as install_fills
from rooflib.bench.torch_common import Clocks, Sink, family_records, finish, l2_bytes, meta_record, recorded_keys
from rooflib.bench.torch_timing import chained_times, groups_for, held_host_times, host_probe, stats

__all__ = ["died_keys", "done_keys", "main", "parser", "record_key"]

MULTICAST_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
KEY_FIELDS = ("problem", "mode", "world", "rank", "size", "dtype", "solution")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pkb", required=True, help="the ParallelKernelBench checkout")
    p.add_argument("--out", required=True, help="JSON Lines output (appended; resumable)")
    p.add_argument("--mode", choices=("local", "dist", "profile", "kernels"), default="local")
    p.add_argument("--worlds", default="8", help="local mode: world sizes whose rank-0 shapes are timed")
    p.add_argument("--problems", default="all", help="ids, e.g. 1,16,54 (default all)")
    p.add_argument("--size", default="1024x1024", help="PKB's base shape MxN")
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--solution", default="", help="a folder of candidate solutions (default: the reference)")
    p.add_argument("--warmup", type=int, default=20, help="warm-up calls (PKB uses 500)")
    p.add_argument("--iters", type=int, default=50, help="timed calls (PKB uses 100)")
    p.add_argument(
        "--host-calls", type=int, default=10, help="calls timed on the host with the GPU held busy (0: none)"
    )
    p.add_argument(
        "--held-first",
        action="store_true",
        help="also time the held calls on the first input groups, as runs before session 15 did (queued_first_s)",
    )
    p.add_argument("--trial", type=int, default=1, help="PKB's trial index: the random inputs' seed")
    p.add_argument("--atol", type=float, default=1e-2)
    p.add_argument("--rtol", type=float, default=1e-2)
    p.add_argument("--device", default="cuda", help="cuda (default) or cpu (tests)")
    p.add_argument("--problem-seconds", type=float, default=120.0, help="skip a problem running longer (0: never)")
    p.add_argument("--max-seconds", type=float, default=0.0, help="stop starting problems after this long")
    p.add_argument(
        "--check-seconds",
        type=float,
        default=0.0,
        help="local mode: seconds for the host check of a timed problem (past them: timed, not checked; 0: the "
        "problem's own budget)",
    )
    return p


def record_key(rec: dict[str, Any]) -> tuple[str, ...]:
    """The identity of a measurement (what resuming skips)."""
    return tuple(json.dumps(rec.get(k), sort_keys=True) for k in KEY_FIELDS)


def done_keys(path: str) -> set[tuple[str, ...]]:
    """Keys of the points and skips already in ``path`` (a torn last line is ignored)."""
    return recorded_keys(path, "pkb", record_key)


class ContextLost(RuntimeError):
    """A CUDA error left the context unusable: the problem is recorded as skipped and the process ends."""


class _Overtime(Exception):
    """A problem ran past ``--problem-seconds``."""


def _overtime(signum: int, frame: Any) -> None:
    raise _Overtime("ran past its budget (--problem-seconds, or --check-seconds for the host check)")


def died_keys(path: str) -> set[tuple[str, ...]]:
    """Keys ``started`` in ``path`` and never finished (no point, skip or ``aborted`` after it): the process ended
    inside that problem (a CUDA error poisons the context; the kernel's device-side assert kills it). A resumed
    run records them as skipped instead of dying on them again."""
    open_: set[tuple[str, ...]] = set()
    for rec in family_records(path, "pkb"):
        if rec.get("record") == "started":
            open_.add(record_key(rec))
        elif rec.get("record") in ("point", "skipped", "aborted"):
            open_.discard(record_key(rec))
    return open_


def _import(path: Path, name: str, root: Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(root))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(root))
    return module


def _problems(root: Path, wanted: str) -> list[tuple[int, str, Path]]:
    found = []
    for path in (root / "reference").glob("*.py"):
        head = path.stem.split("_", 1)[0]
        if head.isdigit():
            found.append((int(head), path.stem, path))
    found.sort()
    if wanted != "all":
        ids = {int(x) for x in wanted.split(",") if x.strip()}
        found = [p for p in found if p[0] in ids]
    return found


PKB_MAX_GROUPS = 128
"""PKB's cap on input groups (``utils/performance.py``): with it, cycling them reads 3x the L2 down to inputs of
1.4 MiB on an H200 (runs before session 15 capped at 64: 2.1x the L2 at 2 MiB)."""


def _time(torch: Any, dev: Any, fn: Callable[..., Any], args: tuple[Any, ...], a: argparse.Namespace) -> dict[str, Any]:
    """PKB's timing over the input groups; then the held calls (``--host-calls``), on the groups the timing
    touched longest ago (from group ``iters`` on: cold in the L2, as PKB's timing makes every input), and with
    ``--held-first`` once more on groups 0, 1, ... (``queued_first_s``: the order runs before session 15 used,
    whose first groups the timing had touched 10-30 calls before)."""
    groups = groups_for(values.nbytes(torch, args), l2_bytes(torch, dev), cap=PKB_MAX_GROUPS)
    copies = [args] + [values.clone(torch, args) for _ in range(groups - 1)]
    samples = chained_times(torch, dev, lambda i: fn(*copies[i % groups]), a.warmup, a.iters)
    rec = {"groups": groups, "input_bytes": values.nbytes(torch, args), **stats(samples), "warmup": a.warmup}
    if a.host_calls and rec["time_s"]:
        first = a.iters
        held = held_host_times(torch, dev, lambda i: fn(*copies[(first + i) % groups]), a.host_calls, rec["time_s"])
        rec.update(held, held_from=first % groups)
        if a.held_first:
            again = held_host_times(torch, dev, lambda i: fn(*copies[i % groups]), a.host_calls, rec["time_s"])
            rec.update(queued_first_s=again.get("queued_s"), host_first_s=again.get("host_s"))
    return rec


def _local(torch: Any, a: argparse.Namespace, build: Any, pid: int, fn: Any, ref_fn: Any, world: int) -> dict[str, Any]:
    """One problem's single-GPU part at world ``world`` (the module docstring); needs the fake process group.
    ``--mode profile``: the same part, profiled on the host instead of timed and checked
    (:func:`rooflib.bench.pkb_profile.host_profile`)."""
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore

    dev = torch.device(a.device)
    size = tuple(int(x) for x in a.size.lower().split("x"))
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world)
    fills, restore = install_fills(torch, dist)
    try:
        args = tuple(build(0, world, pid, size, getattr(torch, a.dtype), a.trial, dev))
        if a.mode == "profile":
            return host_profile(torch, dev, lambda: fn(*args), a.warmup, a.iters)
        if a.mode == "kernels":  # PKB's input groups, cycled as the timing cycles them (cold L2)
            groups = groups_for(values.nbytes(torch, args), l2_bytes(torch, dev), cap=PKB_MAX_GROUPS)
            copies = [args] + [values.clone(torch, args) for _ in range(groups - 1)]
            got = device_profile(torch, dev, lambda i: fn(*copies[i % groups]), a.warmup, a.iters)
            return {"groups": groups, "input_bytes": values.nbytes(torch, args), **got}
        host_args = values.clone(torch, args, torch.device("cpu"))
        fills.reset()
        out = fn(*values.clone(torch, args))  # as PKB calls it: the references that need no autograd say so
        per_call = fills.count
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        fills.reset()
        probe = host_probe(torch, dev)
        rec = _time(torch, dev, fn, args, a)
        rec.update(probe_s=probe, probe_after_s=host_probe(torch, dev))
        rec.update(fills=per_call, fill_s=fills.seconds / fills.count * per_call if fills.count else 0.0)
        try:
            if a.check_seconds and a.device == "cuda":  # the host check's own budget: the timing is kept past it
                signal.alarm(max(1, int(a.check_seconds)))
            ref = ref_fn(*host_args)
            ok, err = values.compare(torch, out, ref, a.atol, a.rtol)
            rec.update(verified=ok, check="host", max_abs_error=err)
        except Exception as exc:  # the reference cannot run on the host (Triton kernels): timed, not checked
            rec.update(verified=None, check="none", check_reason=f"{type(exc).__name__}: {exc}"[:200])
        return rec
    finally:
        restore()
        dist.destroy_process_group()


def _dist(torch: Any, a: argparse.Namespace, build: Any, pid: int, fn: Any, ref_fn: Any) -> dict[str, Any]:
    """One problem whole, under torchrun (the process group is already up)."""
    import torch.distributed as dist

    rank, world = dist.get_rank(), dist.get_world_size()
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", rank))) if a.device == "cuda" else torch.device("cpu")
    size = tuple(int(x) for x in a.size.lower().split("x"))
    args = tuple(build(rank, world, pid, size, getattr(torch, a.dtype), a.trial, dev))
    out = fn(*values.clone(torch, args))
    ref = ref_fn(*values.clone(torch, args))
    ok, err = values.compare(torch, out, ref, a.atol, a.rtol)
    dist.barrier()
    rec = _time(torch, dev, fn, args, a)
    check = "reference" if fn is not ref_fn else "repeat"
    return {**rec, "rank": rank, "world": world, "verified": ok, "check": check, "max_abs_error": err}


def _run(
    torch: Any, a: argparse.Namespace, build: Any, base: dict[str, Any], path: Path, world: int, dev: Any
) -> dict[str, Any]:
    """One measurement: a point, or a skip saying why (one problem's failure does not end the run)."""
    pid, stem = int(base["id"]), str(base["problem"])
    try:
        ref_fn = _import(path, f"_pkb_ref_{pid}_{world}", path.parent).solution
        fn = ref_fn
        if a.solution:
            cands = sorted(Path(a.solution).glob(f"{stem}*.py"))
            if not cands:
                raise FileNotFoundError(f"no {stem}*.py under {a.solution}")
            fn = _import(cands[0], f"_pkb_sol_{pid}_{world}", cands[0].parent).solution
        if a.mode in ("local", "profile", "kernels"):
            return {"record": "point", **base, **_local(torch, a, build, pid, fn, ref_fn, world)}
        return {"record": "point", **base, **_dist(torch, a, build, pid, fn, ref_fn)}
    except Exception as exc:  # _Overtime included
        reason = f"{type(exc).__name__}: {exc}"[:300]
        if dev.type == "cuda":
            if "CUDA error" in str(exc) or type(exc).__name__ == "AcceleratorError":
                raise ContextLost(reason) from exc  # the context is unusable: the next run goes on
            torch.cuda.empty_cache()
        return {"record": "skipped", **base, "reason": reason}


def _guarded(
    torch: Any, a: argparse.Namespace, build: Any, base: dict[str, Any], path: Path, world: int, dev: Any, sink: Sink
) -> dict[str, Any] | None:
    """:func:`_run` between a ``started`` record and its result, under ``--problem-seconds``; None when a CUDA
    error lost the context (recorded as skipped: the process must end)."""
    sink.write({"record": "started", **base})
    if a.problem_seconds:
        signal.alarm(int(a.problem_seconds))
    try:
        return _run(torch, a, build, base, path, world, dev)
    except KeyboardInterrupt:  # a time limit: this problem is retried when the run resumes
        sink.write({"record": "aborted", **base})
        raise
    except ContextLost as exc:
        sink.write({"record": "skipped", **base, "reason": str(exc)})
        return None
    finally:
        signal.alarm(0)


def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(argv)
    os.environ.update(MULTICAST_ENV)  # never NVLink multicast (rooflib.conventions.MULTICAST_OFF)
    if a.problem_seconds:
        signal.signal(signal.SIGALRM, _overtime)
    import torch

    root = Path(a.pkb).resolve()
    build = _import(root / "utils" / "input_output_tensors.py", "_pkb_inputs", root).create_input_tensor
    rank = 0
    if a.mode == "dist":
        import torch.distributed as dist

        dist.init_process_group("nccl" if a.device == "cuda" else "gloo")
        rank = dist.get_rank()
        if a.device == "cuda":
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    out = a.out if a.mode != "dist" else f"{a.out.removesuffix('.jsonl')}.rank{rank}.jsonl"
    done, died, sink = done_keys(out), died_keys(out), Sink(out)
    dev = torch.device(a.device)
    clocks = Clocks() if dev.type == "cuda" and rank == 0 else None
    sink.write(meta_record(torch, dev, "pkb", mode=a.mode, pkb=str(root)))
    start = time.monotonic()
    worlds = [int(w) for w in a.worlds.split(",")] if a.mode != "dist" else [0]
    size = [int(x) for x in a.size.lower().split("x")]
    jobs = [(world, *problem) for world in worlds for problem in _problems(root, a.problems)]
    for world, pid, stem, path in jobs:  # every problem at the first world size, then the next
        if a.max_seconds and time.monotonic() - start > a.max_seconds:
            break
        base = {"family": "pkb", "problem": stem, "id": pid, "mode": a.mode, "size": size, "dtype": a.dtype}
        base.update(world=world or None, rank=rank, solution=a.solution or "reference")
        if a.mode == "dist":
            base["world"] = torch.distributed.get_world_size()
        if record_key(base) in done:
            continue
        if record_key(base) in died:
            sink.write({"record": "skipped", **base, "reason": "the process ended during this problem (CUDA error)"})
            continue
        rec = _guarded(torch, a, build, base, path, world, dev, sink)
        if rec is None:
            return 3
        if clocks is not None and rec["record"] == "point":
            rec["sm_mhz"] = clocks.latest_sm_mhz()
        sink.write(rec)
        if rank == 0:
            shown = f"{rec['time_s'] * 1e6:9.1f} us" if rec.get("time_s") else rec.get("reason", "")[:80]
            print(f"{stem:45s} w={base['world']} {shown} verified={rec.get('verified')}", flush=True)
    finish(sink, clocks, {"record": "meta", "family": "pkb", "end": True}, start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
