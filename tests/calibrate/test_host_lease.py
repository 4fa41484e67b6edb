"""The c10d part's fit (fake process-group calls by op and world) and a device's host figures from one lease."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import rooflib
from rooflib.calibrate.host import fit_c10d, fit_host, lease_host

RUNS = Path(__file__).parents[2] / "docs" / "validation"


def _c10d(case: str, world: int, ops: list[str], host_s: float) -> dict[str, object]:
    return {"record": "point", "family": "host", "name": "c10d", "case": case, "world": world, "c10d": ops,
            "host_s": host_s, "verified": True}  # fmt: skip


def test_fit_c10d_by_op_and_world() -> None:
    recs = [
        _c10d("all_reduce", 2, ["c10d.allreduce_"], 4e-6),
        _c10d("all_reduce_async_wait", 2, ["c10d.allreduce_"], 6e-6),
        _c10d("all_reduce", 8, ["c10d.allreduce_"], 9e-6),
        _c10d("batch_isend_irecv", 2, ["c10d.send", "c10d.recv_"], 12e-6),
        _c10d("send", 2, ["c10d.send"], 3e-6),  # a lone send: the traced pair is the batch
        _c10d("all_gather_object", 2, ["c10d.allgather_", "c10d.allgather_"], 99e-6),  # composite: left out
        {**_c10d("all_reduce", 4, ["c10d.allreduce_"], 1.0), "verified": False},  # unverified: left out
        {"record": "point", "family": "host", "name": "alloc", "case": "zeros", "host_s": 8e-6, "verified": True},
    ]
    fit = fit_c10d(recs)
    assert fit["fake.c10d.allreduce_@w2"] == pytest.approx(5e-6)  # median of the two cases
    assert fit["fake.c10d.allreduce_@w8"] == pytest.approx(9e-6)
    assert fit["fake.c10d.allreduce_"] == pytest.approx(7e-6)  # median over worlds
    assert fit["fake.c10d.send_recv@w2"] == pytest.approx(12e-6)
    assert "fake.c10d.send" not in fit and "fake.c10d.allgather_" not in fit
    assert fit["aten.zeros"] == pytest.approx(8e-6)


def test_lease_host_replaces_what_the_run_measured() -> None:
    run = RUNS / "pkb" / "runs" / "x1-lease-2"
    recs = [json.loads(x) for f in ("host.jsonl", "host-c10d.jsonl") for x in (run / f).read_text().splitlines()]
    catalog = rooflib.load_system("hgx-h200", gpus=1).device.host
    assert catalog is not None
    lease = lease_host(catalog, recs, "measured: test lease")
    fit = fit_host(recs)
    assert lease.kernel.value == pytest.approx(fit["kernel"]) and lease.kernel.source == "measured: test lease"
    assert lease.nccl == catalog.nccl  # not measured on one GPU: kept
    assert lease.ops["aten.sort"].value == pytest.approx(fit["ops"]["aten.sort"])
    assert lease.ops["fake.c10d.allreduce_@w4"].source == "measured: test lease"
    assert lease.ops["python.no_grad"] == catalog.ops["python.no_grad"]  # this lease did not measure it
    assert lease.kernel.value != catalog.kernel.value  # another lease, another host


def test_a_host_at_another_speed_scales_its_host_work_only() -> None:
    from rooflib.calibrate.host import probe_reference, scaled_host

    catalog = rooflib.load_system("hgx-h200", gpus=1).device.host
    assert catalog is not None
    fast = scaled_host(catalog, 0.5, "test probe")
    assert fast.kernel.value == pytest.approx(catalog.kernel.value / 2) and "x 0.5 (test probe)" in fast.kernel.source
    assert fast.ops["aten._to_copy"].value == pytest.approx(catalog.ops["aten._to_copy"].value / 2)
    assert fast.iteration is not None and catalog.iteration is not None
    assert fast.iteration.value == pytest.approx(catalog.iteration.value / 2)
    assert fast.kernel_gap == catalog.kernel_gap  # the device's gap between kernels is not host work
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="positive"):
            scaled_host(catalog, bad, "test probe")
    run = RUNS / "pkb" / "runs" / "x1-lease-10"
    recs = [json.loads(x) for x in (run / "host.jsonl").read_text().splitlines()]
    probes = [r["host_s"] for r in recs if r.get("name") == "probe"]
    assert len(probes) == 2 and probe_reference(recs) == pytest.approx(sum(probes) / 2)
    assert probe_reference([r for r in recs if r.get("name") != "probe"]) is None  # runs before the probe


def test_queued_gap_is_the_eager_slope_less_a_kernels_run() -> None:
    from rooflib.calibrate.host import fit_host

    def rec(name: str, **kw: float) -> dict[str, object]:
        return {"record": "point", "family": "host", "name": name, "verified": True, **kw}

    run, graph_gap, eager_gap = 1.5e-6, 0.05e-6, 1.2e-6
    recs = [rec("kernel_run", device_s=run)]
    recs += [rec("graph", nodes=n, device_s=3e-6 + n * (run + graph_gap), host_s=4e-6) for n in (1, 10, 100, 1000)]
    recs += [rec("queued", nodes=n, device_s=2e-6 + n * (run + eager_gap)) for n in (10, 50, 200)]
    fit = fit_host(recs)
    assert fit["kernel_gap"] == pytest.approx(graph_gap, rel=1e-6)
    assert fit["queued_gap"] == pytest.approx(eager_gap, rel=1e-6)
    assert "queued_gap" not in fit_host(recs[:5])  # no queued case: no eager figure


def test_an_eager_timeline_uses_the_queued_gap() -> None:
    import dataclasses

    from rooflib.program import ProgramBuilder, predict_program
    from rooflib.specs import load_system
    from rooflib.specs.figures import Duration

    system = load_system("hgx-h200", gpus=1)
    host = system.device.host
    assert host is not None
    gap = Duration(value=5e-6, source="assumption: test")
    queued = dataclasses.replace(
        system, device=system.device.model_copy(update={"host": host.model_copy(update={"queued_gap": gap})})
    )
    b = ProgramBuilder("two", world=1)
    b.gemm(8192, 8192, 8192)
    b.gemm(8192, 8192, 8192)
    plain, slow = predict_program(b.build(), system), predict_program(b.build(), queued)
    step = 5e-6 - (host.queued_gap or host.kernel_gap).value  # the catalog's eager gap, measured
    assert slow.baseline_time_s == pytest.approx(plain.baseline_time_s + 2 * step, rel=1e-6)  # device-bound
    assert slow.graph_time_s == pytest.approx(plain.graph_time_s)  # a graph keeps its own gap
