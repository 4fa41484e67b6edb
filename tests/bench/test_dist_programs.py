"""The distributed validation programs: traced by rooflib trace, and run by their worker under torchrun (gloo)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import rooflib  # noqa: E402
from rooflib.bench.dist_programs import DIST_PROGRAMS  # noqa: E402
from rooflib.bench.dist_programs_worker import done_keys, record_key  # noqa: E402
from rooflib.trace import trace_program  # noqa: E402

INPUTS = {"tp_mlp": "tp_mlp", "sp_attention": "sp_attention", "moe_dispatch_combine": "moe"}


@pytest.mark.filterwarnings("ignore::FutureWarning")  # torch 2.13 renames all_gather_into_tensor
@pytest.mark.parametrize(
    ("name", "pattern"),
    [("tp_mlp", "gemm_ar"), ("sp_attention", "ag_attention"), ("moe_dispatch_combine", "a2a_gemm")],
)
def test_traced_programs_have_their_fusable_region(name: str, pattern: str) -> None:
    import rooflib.bench.dist_programs as dp

    prog = DIST_PROGRAMS[name]
    program = trace_program(prog.fn, getattr(dp, f"{INPUTS[name]}_inputs"), world=8)
    p = rooflib.predict_program(program, rooflib.load_system("hgx-h200"))
    assert pattern in {r["pattern"] for r in p.best["fused"]}
    assert p.bound_time_s <= p.best["time_s"] < p.baseline_time_s


def test_worker_checks_every_output_and_reruns_add_nothing(tmp_path: Path) -> None:
    out = tmp_path / "dp.jsonl"
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
        "-m", "rooflib.bench.dist_programs_worker", "--device", "cpu", "--out", str(out), "--sizes", "0",
        "--iters", "2", "--warmup", "1", "--set", "tokens=64", "--set", "hidden=128", "--set", "ffn=256",
        "--set", "seq=64", "--set", "heads=4",
    ]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    points = [r for r in recs if r["record"] == "point"]
    assert {r["name"] for r in points} == set(DIST_PROGRAMS)
    assert all(r["verified"] and r["rel_error"] < 0.02 and r["world"] == 2 and r["time_s"] > 0 for r in points)
    before = len(done_keys(str(out)))
    subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    again = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(done_keys(str(out))) == before == len(points)
    assert sum(r["record"] == "point" for r in again) == len(points)  # nothing measured twice
    assert record_key(points[0]) in done_keys(str(out))


def test_a_wrong_output_is_not_verified() -> None:
    prog = DIST_PROGRAMS["moe_dispatch_combine"]
    args = [prog.inputs(r, 2, torch.device("cpu"), tokens=8, hidden=16, ffn=8, seed=3) for r in range(2)]
    ref = prog.reference(2, args, 0)
    from rooflib.bench.torch_common import rel_error

    assert rel_error(torch, ref, ref) == 0.0
    assert rel_error(torch, ref * 1.1, ref) > prog.tolerance
