"""The host family's ``c10d`` part on the CPU (torch's fake process group), and its committed H200 records
against the host costs the H200 spec carries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
RUNS = Path(__file__).parents[2] / "docs" / "validation" / "h200" / "runs"


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_c10d_part_times_every_case_at_each_world(tmp_path: Path) -> None:
    from rooflib.bench.host_dist import ALLOC_CASES, C10D_CASES
    from rooflib.bench.host_worker import main

    out = tmp_path / "c.jsonl"
    main(["--part", "c10d", "--device", "cpu", "--worlds", "2,4", "--calls", "20", "--rounds", "2", "--out", str(out)])
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    points = [r for r in recs if r["record"] == "point"]
    got = {(r["case"], r["world"]) for r in points if r["name"] == "c10d"}
    assert got == {(c, w) for c in C10D_CASES for w in (2, 4)}  # the fake backend takes every call kind
    assert [r["case"] for r in points if r["name"] == "alloc"] == list(ALLOC_CASES)
    assert [r["world"] for r in points if r["name"] == "new_group"] == [2, 4]
    assert all(r["host_s"] > 0 and r["verified"] for r in points)
    assert recs[-1]["phase"] == "end"


def test_committed_c10d_records_back_the_h200_host_ops() -> None:
    from rooflib.specs import load_system

    recs = [json.loads(line) for line in (RUNS / "x1-host-c10d" / "host-c10d.jsonl").read_text().splitlines()]
    by = {(r["case"], r.get("world")): r["host_s"] for r in recs if r["record"] == "point"}
    ops = load_system("hgx-h200", gpus=1).device.host.ops  # type: ignore[union-attr]
    assert ops["fake.c10d._allgather_base_@w8"].value == pytest.approx(by[("all_gather_into_tensor", 8)], rel=1e-3)
    assert ops["fake.c10d.alltoall_@w4"].value == pytest.approx(by[("all_to_all", 4)], rel=1e-3)
    # the fake all-gather copies into every part: its host cost grows with the world, the all-reduce's does not
    assert by[("all_gather", 8)] > 2 * by[("all_gather", 2)] and by[("all_reduce", 8)] < 1.2 * by[("all_reduce", 2)]
    nccl = load_system("hgx-h200", gpus=1).device.host.nccl.value  # type: ignore[union-attr]
    assert nccl >= ops["fake.c10d.allreduce_"].value  # the fake call is a lower bound of the NCCL call
