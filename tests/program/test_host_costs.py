"""Host costs by kind (HostSpec ops, views, the timed loop's iteration) and their fit from the host family."""

from __future__ import annotations

import dataclasses
import json
import statistics
from dataclasses import replace
from pathlib import Path

import pytest

import rooflib
from rooflib.calibrate.host import fit_host, host_checks, host_yaml
from rooflib.program import ProgramBuilder, host_costs, simulate
from rooflib.program.cost import op_cost
from rooflib.program.ir import Op

RUN = Path(__file__).parents[2] / "docs" / "validation" / "h200" / "runs" / "x1-host-programs" / "raw"


@pytest.fixture(scope="module")
def h200() -> rooflib.System:
    return rooflib.load_system("hgx-h200", gpus=1)


def test_issue_by_aten_op_views_and_calls(h200: rooflib.System) -> None:
    hc = host_costs(h200)
    assert hc.ops["aten.topk"] > 2 * hc.kernel  # a top-k costs the host more than an elementwise op
    assert hc.issue(Op("aten.topk", "sort", {"elements": 8})) == hc.ops["aten.topk"]
    assert hc.issue(Op("gelu", "elementwise", {"host_calls": 3})) == pytest.approx(hc.kernel + 3 * hc.view)
    assert hc.issue(Op("up", "gemm", {}, host="cublas")) == hc.cublas
    ar = Op("ar", "collective", {"op": "all_reduce", "bytes": 4, "calls": 3}, host="nccl")
    assert hc.issue(ar) == pytest.approx(3 * hc.nccl)
    assert hc.issue(Op("wait", "sync", {}, host="sync")) == 0.0


def test_the_loop_costs_each_iteration_in_both_modes(h200: rooflib.System) -> None:
    hc = host_costs(h200)
    b = ProgramBuilder("tiny", world=1)
    for _ in range(4):
        b.elementwise("add", 256)
    ops = b.build().ops
    costs = [op_cost(h200, op, (0,)) for op in ops]
    eager = simulate(ops, costs, hc, "eager")
    assert eager.time_s == pytest.approx(4 * hc.kernel + hc.iteration)  # host-bound
    none = simulate(ops, costs, replace(hc, iteration=0.0), "eager")
    assert eager.time_s - none.time_s == pytest.approx(hc.iteration)
    graph = simulate(ops, costs, hc, "graph")
    assert graph.host_s == pytest.approx(hc.graph_launch + hc.iteration)


def test_fit_from_the_committed_host_run() -> None:
    recs = [json.loads(line) for line in (RUN / "host.jsonl").read_text().splitlines()]
    fit = fit_host(recs)
    assert 5e-6 < fit["kernel"] < fit["cublas"] < 3e-5 and 0 < fit["view"] < fit["kernel"] / 2
    assert fit["ops"]["aten.topk"] > 2 * fit["kernel"] and "aten.gelu" not in fit["ops"]
    held = [r for r in host_checks(recs, fit) if r["case"] in ("matmul3d", "cross_entropy", "chain")]
    assert len(held) == 3 and all(abs(r["error_pct"]) < 20 for r in held)  # compositions from single calls
    after = [r for r in recs if r.get("after_profiler")]
    before = {r["op"]: r["host_s"] for r in recs if r.get("name") == "op" and not r.get("after_profiler")}
    assert after and all(r["host_s"] > 1.2 * before[r["op"]] for r in after)  # CUPTI slows launches
    block = host_yaml(fit, "measured: test")
    assert block["kernel"]["value"].endswith(" us") and "aten.topk" in block["ops"]


def test_shipped_h200_host_block_is_the_fit(h200: rooflib.System) -> None:
    recs = [json.loads(line) for line in (RUN / "host.jsonl").read_text().splitlines()]
    fit = fit_host(recs)
    host = h200.device.host
    assert host is not None and host.iteration is not None and host.view is not None
    assert host.kernel.value == pytest.approx(fit["kernel"], rel=1e-3)
    assert "iteration" not in fit  # that run's loop reused its events: PKB's loop pays a fresh one's first record
    loops = [json.loads((RUN.parents[1] / "x1-host-loop" / f"loop-{i}.json").read_text()) for i in (1, 2)]
    assert host.iteration.value == pytest.approx(statistics.median(r["empty"]["events_s"] for r in loops), rel=1e-3)
    assert {k: host.ops[k].value for k in fit["ops"]} == pytest.approx(fit["ops"], rel=1e-3)
    lease = RUN.parents[3] / "pkb" / "runs" / "x1-lease-6" / "host.jsonl"
    waiting = fit_host(json.loads(line) for line in lease.read_text().splitlines())["ops"]
    sized = {k for k in host.ops if "x1-lease-6" in host.ops[k].source}  # the ops that size outputs from values
    assert sized == {
        "aten.nonzero",
        "aten.masked_select",
        "aten.index(bool)",
        "aten.index_put(bool)",
        "aten._unique2",
        "aten.bincount",
        "aten.repeat_interleave",
    }
    assert {k: host.ops[k].value for k in sized} == pytest.approx({k: waiting[k] for k in sized}, rel=1e-3)
    autograd = {"python.autograd_record", "python.autograd_node", "python.backward"}  # mean of two leases' fits
    leases = [RUN.parents[3] / "pkb" / "runs" / f"x1-lease-{i}" for i in (7, 8)]
    fits = [fit_host(json.loads(line) for line in (p / "host.jsonl").read_text().splitlines())["ops"] for p in leases]
    assert {k: host.ops[k].value for k in autograd} == pytest.approx(
        {k: statistics.mean(f[k] for f in fits) for k in autograd}, rel=1e-2, abs=1e-8
    )
    from rooflib.calibrate.host import fit_c10d

    c10d_8 = fit_c10d(json.loads(line) for line in (leases[1] / "host-c10d.jsonl").read_text().splitlines())
    assert host.ops["python.new_group"].value == pytest.approx(c10d_8["python.new_group"], rel=1e-2)
    carried = {k for k in host.ops if "runs/x1-gaps" in host.ops[k].source}  # measured on an H100 lease's host
    assert carried == {"aten._sparse_addmm", "aten.bmm(sparse)"}
    h100 = RUN.parents[3] / "h100" / "runs" / "x1-gaps" / "raw" / "host-sparse.jsonl"
    there = fit_host(json.loads(line) for line in h100.read_text().splitlines())
    scale = host.kernel.value / there["kernel"]  # the two hosts' elementwise issue cost
    assert {k: host.ops[k].value for k in carried} == pytest.approx(
        {k: there["ops"][k] * scale for k in carried}, rel=1e-3
    )
    others = set(host.ops) - set(fit["ops"]) - {"python.no_grad", "python.new_group"} - sized - autograd - carried
    assert others and all("x1-host-c10d" in host.ops[k].source for k in others)
    c10d = RUN.parents[1] / "x1-host-c10d" / "host-c10d.jsonl"
    measured = fit_c10d(json.loads(line) for line in c10d.read_text().splitlines())
    shipped = {k: host.ops[k].value for k in others if k in measured and "@w" in k}  # per-world: one median
    assert len(shipped) >= 9 and shipped == pytest.approx({k: measured[k] for k in shipped}, rel=1e-3)
    nograd = RUN.parents[1] / "x1-host-nograd" / "host.jsonl"
    later = fit_host(json.loads(line) for line in nograd.read_text().splitlines())
    assert host.ops["python.no_grad"].value == pytest.approx(later["ops"]["python.no_grad"], rel=1e-3)


def test_a_host_bound_graph_loop_runs_at_its_host_period(h200: rooflib.System) -> None:
    """Six tiny kernels replayed as a graph, the timed loop's own cost set so that the device (~12 us, plus the
    launch latency when it idles) is shorter than the host's replay and loop only every other iteration; the steady state is the host's period,
    not one interval of that alternation."""
    hc = host_costs(h200)
    b = ProgramBuilder("chain", world=1)
    for _ in range(6):
        b.elementwise("add", 65536)
    ops = b.build().ops
    costs = [op_cost(h200, op, (0,)) for op in ops]
    device = sum(c.device_s for c in costs)
    hc = dataclasses.replace(hc, iteration=device + hc.launch_latency / 2 - hc.graph_launch)  # a loop this long
    host = hc.graph_launch + hc.iteration
    assert device < host < device + hc.launch_latency  # the alternating regime
    steady = simulate(ops, costs, hc, "graph").time_s
    assert steady == pytest.approx(host, rel=0.05)  # the mean of the last four intervals
    assert steady > device + hc.launch_latency / 4  # not the device-bound interval (one of the alternation's)


def test_host_extra_python_work_and_triton_launches(h200: rooflib.System) -> None:
    hc = host_costs(h200)
    nograd = hc.ops["python.no_grad"]
    op = Op("aten.add", "elementwise", {"host_extra": ("python.no_grad", "python.no_grad")})
    assert hc.issue(op) == pytest.approx(hc.kernel + 2 * nograd)
    unknown = Op("aten.add", "elementwise", {"host_extra": ("python.other",)})
    assert hc.issue(unknown) == pytest.approx(hc.kernel + hc.view)  # not measured: a dispatch
    tri = Op("triton.my_kernel", "elementwise", {})
    assert hc.issue(tri) == hc.kernel  # no triton figure shipped: an eager kernel's
    with_tri = replace(hc, ops={**hc.ops, "triton": 2e-5})
    assert with_tri.issue(tri) == 2e-5
