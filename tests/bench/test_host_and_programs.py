"""The host and programs families on the CPU: the host worker (its NCCL part through gloo under torchrun, two
ranks), and the six programs against float64 references, each with the inputs function the tracer calls."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rooflib.bench.programs import PROGRAMS
from rooflib.bench.records import read_jsonl

torch = pytest.importorskip("torch")
RUNS = Path(__file__).parents[2] / "docs" / "validation" / "h200" / "runs"

SMALL = {  # fp32 on the CPU, tiny
    "mlp_block": {"tokens": 8, "hidden": 32, "ffn": 64},
    "attention_block": {"batch": 2, "seq": 16, "hidden": 32, "heads": 4, "kv_heads": 2},
    "gemv_chain": {"batch": 2, "hidden": 32, "layers": 3},
    "elementwise_chain": {"elements": 1000},
    "router": {"tokens": 16, "hidden": 32, "experts": 8, "k": 2},
    "cross_entropy": {"tokens": 16, "hidden": 32, "vocab": 100},
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_matches_float64(name: str) -> None:
    from rooflib.bench.programs_worker import check_output

    prog = PROGRAMS[name]
    args = prog.inputs(0, 1, torch.device("cpu"), dtype="fp32", seed=3, **SMALL[name])
    got = prog.fn(*args)
    ref = prog.fn(*(a.double() if hasattr(a, "is_floating_point") and a.is_floating_point() else a for a in args))
    err, ok = check_output(torch, name, got, ref)
    assert ok and err < 1e-5, (name, err)
    again = prog.fn(*prog.inputs(0, 1, torch.device("cpu"), dtype="fp32", seed=3, **SMALL[name]))
    assert check_output(torch, name, again, got)[0] == 0.0  # a seed gives the same inputs
    other = prog.inputs(1, 2, torch.device("cpu"), dtype="fp32", seed=3, **SMALL[name])
    assert not torch.equal(other[0], args[0])  # each rank draws its own data


def test_every_size_the_benchmark_measured_is_listed() -> None:
    recs = read_jsonl(RUNS / "x1-host-programs" / "raw" / "programs.jsonl").records
    points = [r for r in recs if r.get("record") == "point"]
    assert len(points) == 2 * sum(len(p.sizes) for p in PROGRAMS.values())
    kernels = [r for r in recs if r.get("record") == "kernels"]  # named after every timing (no CUPTI during it)
    assert len(kernels) == len(points) // 2 and recs.index(kernels[0]) > recs.index(points[-1])
    assert all(r["verified"] for r in points) and {r["mode"] for r in points} == {"eager", "graph"}
    for r in points:
        assert {k: r[k] for k in PROGRAMS[r["name"]].sizes[0]} in PROGRAMS[r["name"]].sizes


def test_programs_worker_on_the_cpu(tmp_path: Path) -> None:
    from rooflib.bench import programs_worker

    out = tmp_path / "p.jsonl"
    original = PROGRAMS["elementwise_chain"]
    PROGRAMS["elementwise_chain"] = type(original)(original.fn, original.inputs, ({"elements": 4096},))
    try:
        programs_worker.main(["--programs", "elementwise_chain", "--device", "cpu", "--out", str(out)])
    finally:
        PROGRAMS["elementwise_chain"] = original
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    point = [r for r in recs if r["record"] == "point"]
    assert len(point) == 1 and point[0]["mode"] == "eager" and point[0]["verified"] and point[0]["time_s"] > 0
    with pytest.raises(SystemExit, match="unknown program"):
        programs_worker.main(["--programs", "nope", "--out", str(out)])


def test_host_worker_on_the_cpu(tmp_path: Path) -> None:
    from rooflib.bench.host_worker import main

    out = tmp_path / "h.jsonl"
    main(["--device", "cpu", "--calls", "50", "--rounds", "3", "--out", str(out)])
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    names = [r["name"] for r in recs if r["record"] == "point"]
    assert names[:4] == ["kernel", "cublas", "sync", "item"] and names[-1] == "autograd"
    from rooflib.bench.host_ops import PKB_CASES
    from rooflib.bench.host_worker import OP_CASES

    ops = [r["op"] for r in recs if r["record"] == "point" and r["name"] == "op"]
    gpu_only = ("sdpa", "triton")  # SDPA and the Triton launch need the GPU
    assert ops == [op for op in (*OP_CASES, *PKB_CASES) if op not in gpu_only]
    assert all(r["host_s"] > 0 for r in recs if r["record"] == "point")
    assert all(r["verified"] and r["host_s"] > 0 for r in recs if r["record"] == "point")
    from rooflib.bench.host_worker import MIX_EXCLUDED

    (mix,) = [r for r in recs if r["record"] == "point" and r["name"] == "mix"]  # every op case once per round
    assert mix["cases"] == [op for op in ops if op not in MIX_EXCLUDED] and "nonzero" not in mix["cases"]
    alone = {r["op"]: r["host_s"] for r in recs if r["record"] == "point" and r["name"] == "op"}
    assert mix["alone_s"] == pytest.approx(sum(alone[c] for c in mix["cases"]))
    assert mix["ratio"] == pytest.approx(mix["host_s"] / mix["alone_s"])
    (it,) = [r for r in recs if r.get("name") == "iteration"]
    assert it["events"] == "fresh"
    from rooflib.bench.host_autograd import AUTOGRAD_CASES

    grads = {r["case"]: r for r in recs if r.get("name") == "autograd"}
    assert list(grads) == list(AUTOGRAD_CASES)
    counted = {k: (r["records"], r["nodes"], r["backward"]) for k, r in grads.items()}
    assert counted["chain8"] == (0, 0, 0) and counted["chain8_grad"] == (8, 0, 0)
    assert counted["step8"] == (9, 10, 1)  # 8 muls and the sum; their 9 nodes and the leaf's accumulation
    assert counted["mlp_step"] == (6, 10, 1) and counted["mlp"] == (0, 0, 0)
    assert grads["step1"]["aten"] == ["aten.mul", "aten.sum", "aten.ones_like", "aten.mul"]


@pytest.mark.slow
def test_host_nccl_part_runs_under_torchrun_with_two_ranks(tmp_path: Path) -> None:
    out = tmp_path / "n.jsonl"
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node=2",
        "-m",
        "rooflib.bench.host_worker",
        "--part",
        "nccl",
        "--device",
        "cpu",
        "--calls",
        "40",
        "--rounds",
        "2",
        "--out",
        str(out),
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=240, check=False, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    nccl = [r for r in recs if r["record"] == "point"]
    assert [r["bytes"] for r in nccl] == [4, 1 << 20]
    assert all(r["gpus"] == 2 and r["verified"] and r["host_s"] > 0 for r in nccl)


def test_committed_host_records() -> None:
    for run in ("x1-compute", "x1-compute-holdout"):
        recs = read_jsonl(RUNS / run / "raw" / "host.jsonl").records
        points = [r for r in recs if r.get("record") == "point"]
        assert {r["name"] for r in points} == {"launch", "kernel", "cublas", "sync", "item", "graph"}
        assert all(r["verified"] for r in points)
        graphs = sorted((r["nodes"], r["device_s"]) for r in points if r["name"] == "graph")
        assert [n for n, _ in graphs] == [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]
        assert all(b[1] > a[1] for a, b in itertools.pairwise(graphs[2:]))  # more kernels take longer


def test_the_eager_gap_is_paid_on_top_of_every_kernel() -> None:
    """runs/x1-host-queued-3 (``host_worker --part queued``): kernels of 4 B to 16 MiB queued eagerly run
    ``queued_gap`` longer each than in a graph, however long the kernel: the program model adds the gap to every
    eager kernel's curve time (measured 0.56-0.71 us for ``add_``, 0.74 us in x1-host-queued)."""
    import rooflib

    recs = [r for r in read_jsonl(RUNS / "x1-host-queued-3" / "host.jsonl").records if r.get("record") == "point"]
    assert len(recs) == 10 and all(r["verified"] and r["name"] == "queued_sized" for r in recs)
    gap = rooflib.load_system("hgx-h200", gpus=1).device.host.queued_gap
    assert gap is not None
    adds = [r for r in recs if r["kind"] == "add"]
    assert max(r["graph_s"] for r in adds) > 6 * gap.value  # the largest kernel lasts several gaps
    for r in adds:
        assert r["eager_s"] - r["graph_s"] == pytest.approx(gap.value, rel=0.25), r["bytes"]


def test_the_queued_part_needs_a_gpu(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "rooflib.bench.host_worker", "--part", "queued", "--device", "cpu"]
    got = subprocess.run([*cmd, "--out", str(tmp_path / "q.jsonl")], capture_output=True, text=True, check=False)
    assert got.returncode == 2 and "needs a CUDA device" in got.stderr and not (tmp_path / "q.jsonl").exists()


def test_the_ops_part_times_only_the_named_cases(tmp_path: Path) -> None:
    from rooflib.bench.host_worker import main
    from rooflib.calibrate.host import fit_host

    out = tmp_path / "h.jsonl"
    main(
        [
            "--part",
            "ops",
            "--cases",
            "add,sparse_bmm",
            "--device",
            "cpu",
            "--calls",
            "20",
            "--rounds",
            "2",
            "--out",
            str(out),
        ]
    )
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    ops = [r for r in recs if r.get("name") == "op"]
    assert [r["op"] for r in ops] == ["add", "sparse_bmm"] and all(r["verified"] and r["host_s"] > 0 for r in ops)
    assert not any(r.get("name") == "mix" for r in recs)
    fit = fit_host(recs)
    assert "kernel" in fit and set(fit["ops"]) <= {"aten.bmm(sparse)"}  # its own figure when it differs
    cmd = [
        sys.executable,
        "-m",
        "rooflib.bench.host_worker",
        "--part",
        "ops",
        "--cases",
        "add,sparse",
        "--device",
        "cpu",
    ]
    got = subprocess.run([*cmd, "--out", str(tmp_path / "x.jsonl")], capture_output=True, text=True, check=False)
    assert got.returncode == 2 and "sparse" in got.stderr and not (tmp_path / "x.jsonl").exists()
