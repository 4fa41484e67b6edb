"""Catalog-wide invariants: every system of the catalog at many GPU counts (single boards, NVL72 racks, the 576-GPU
pod, 16-256-GPU InfiniBand clusters, 1,440 and 4,096 GPUs), every workload and every collective.

- workloads: the bound is below every schedule, the best schedule is never slower than the PyTorch + NCCL
  baseline (which is one of the schedules), nothing is NaN or infinite;
- collectives: ``auto`` (the fastest modelled kernel) is never slower than ``library`` (what NCCL runs); time
  never falls as the size grows; no time beats the slowest resource on the path: the communication lower bound
  at raw link rates, the HBM traffic every rank must do, and the NVSwitch reduction rate for NVLS.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import rooflib
from rooflib.collectives import ALGORITHMS_FOR, predict_collective
from rooflib.collectives.model import hbm_floor
from rooflib.schedule.traffic import comm_lower_bound
from rooflib.topology import topology_of
from rooflib.workloads import load_workloads, predict_workload

CASES = [
    ("hgx-a100", 2),
    ("hgx-a100", 8),
    ("hgx-h100", 2),
    ("hgx-h100", 4),
    ("hgx-h100", 8),
    ("hgx-h200", 2),
    ("hgx-h200", 8),
    ("hgx-b200", 8),
    ("gb200-nvl72", 4),
    ("gb200-nvl72", 72),
    ("nvl576", 144),
    ("nvl576", 576),
    ("dgx-h100-superpod", 3),
    ("dgx-h100-superpod", 12),
    ("dgx-h100-superpod", 100),
    ("dgx-h100-superpod", 16),
    ("dgx-h100-superpod", 64),
    ("dgx-h100-superpod", 256),
    ("dgx-h100-superpod", 4096),
    ("gb200-nvl72-superpod", 144),
    ("gb200-nvl72-superpod", 150),
    ("gb200-nvl72-superpod", 1440),
]
WORKLOADS = sorted(load_workloads())
SIZES = np.asarray([0, 1, 4096, 65536, 2**20, 16 * 2**20, 2**28, 2**30, 2**33], dtype=np.float64)
_SYSTEMS: dict[tuple[str, int], rooflib.System] = {}


def _system(name: str, gpus: int) -> rooflib.System:
    key = (name, gpus)
    if key not in _SYSTEMS:
        _SYSTEMS[key] = rooflib.load_system(name, gpus=gpus)
    return _SYSTEMS[key]


@pytest.mark.parametrize(("name", "gpus"), CASES)
def test_bound_best_baseline_for_every_workload(name: str, gpus: int) -> None:
    system = _system(name, gpus)
    for workload in WORKLOADS:
        p = predict_workload(workload, system, gpus=gpus)
        times = [p.bound_time_s, p.baseline_time_s, *(c.time_s for c in p.schedules)]
        assert all(math.isfinite(t) and t >= 0 for t in times), (workload, times)
        where = f"{workload} on {gpus} GPUs of {name}"
        assert p.bound_time_s > 0, where
        assert all(p.bound_time_s <= c.time_s * (1 + 1e-9) for c in p.schedules), where
        assert p.best.time_s <= p.baseline_time_s * (1 + 1e-9), where
        assert any(c.mechanism == "library" and c.time_s == pytest.approx(p.baseline_time_s) for c in p.schedules)


def _lower_bound(system: rooflib.System, op: str, members: tuple[int, ...], nbytes: np.ndarray) -> np.ndarray:
    per = system.domain_gpus
    sizes = list(np.unique(np.asarray(members) // per, return_counts=True)[1])
    topo = topology_of(system)
    net = topo.bottleneck(members[0], members[0] + per) if len(sizes) > 1 else math.inf
    switch = system.switch.in_network_reduction and system.switch.multicast
    per_byte = comm_lower_bound(
        op, 1.0, len(members), sizes, nvlink_bps=system.nvlink_bandwidth, network_bps=net, switch=switch
    )
    return nbytes * max(per_byte, hbm_floor(system, op, len(members)))


@pytest.mark.parametrize(("name", "gpus"), CASES)
def test_collectives_within_resources_and_monotone(name: str, gpus: int) -> None:
    system = _system(name, gpus)
    members = system.group(gpus)
    for op in ALGORITHMS_FOR:
        auto = predict_collective(op, system, nbytes=SIZES, gpus=gpus)
        library = predict_collective(op, system, nbytes=SIZES, gpus=gpus, algorithm="library")
        where = f"{op} on {gpus} GPUs of {name}"
        for r in (auto, library):
            assert np.isfinite(r.time_s).all() and (r.time_s > 0).all(), where
            assert (np.diff(r.time_s) >= -1e-15).all(), f"{where}: time falls as bytes grow"
            assert (r.time_s >= _lower_bound(system, op, members, SIZES) * (1 - 1e-9)).all(), where
        assert (auto.time_s <= library.time_s * (1 + 1e-12)).all(), where
        if "nvls" in auto.candidates and system.switch.reduction_bandwidth is not None and op == "all_reduce":
            engine = SIZES / system.switch.reduction_bandwidth.value
            assert (auto.candidates["nvls"] >= engine * (1 - 1e-9)).all(), where


def test_a_fast_profile_link_cannot_beat_hbm(tmp_path: object) -> None:
    """A calibrated link of 2,500 GB/s per direction: all-reduce busbw stays below what HBM reads and writes allow."""
    from pathlib import Path

    folder = Path(str(tmp_path))
    (folder / "fast.yaml").write_text(
        "kind: profile\nname: fast\nsystem: hgx-h100\n"
        "provenance: {date: '2026-12-01', command: test}\n"
        "overrides:\n"
        "  interconnect.nvlink4.per_link_bandwidth: {value: 139 GB/s, source: 'measured: test'}\n"
    )
    cat = rooflib.Catalog.load([folder])
    system = rooflib.load_system("hgx-h100", profile="fast", catalog=cat)
    assert system.nvlink_bandwidth == pytest.approx(18 * 139e9)
    r = predict_collective("all_reduce", system, nbytes=2**33)
    dev = system.device
    hbm = dev.hbm_bandwidth.value * dev.hbm_efficiency.value
    assert float(r.algbw[0]) <= hbm / 2 * (1 + 1e-9)  # every rank reads S and writes S
    assert float(r.busbw[0]) < dev.hbm_bandwidth.value
