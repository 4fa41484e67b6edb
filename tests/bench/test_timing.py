from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from rooflib.bench.timing import event_times


class _Event:
    clock = 0.0

    def __init__(self, enable_timing: bool) -> None:
        assert enable_timing
        self.t = 0.0

    def record(self) -> None:
        self.t = _Event.clock

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, other: _Event) -> float:
        return (other.t - self.t) * 1e3  # ms, as torch


def _fake_torch() -> Any:
    return SimpleNamespace(cuda=SimpleNamespace(Event=_Event, synchronize=lambda: None))


def test_event_times_counts_only_the_timed_calls() -> None:
    calls: list[str] = []

    def op() -> None:
        calls.append("op")
        _Event.clock += 0.002  # each call takes 2 ms of "device" time

    times = event_times(_fake_torch(), op, warmup=3, iters=4, per_call=2, before=lambda: calls.append("barrier"))
    assert times == pytest.approx([0.001] * 4)  # 2 ms per call, two ops per call
    assert calls[:3] == ["op"] * 3 and calls[3:].count("barrier") == 4 and calls.count("op") == 7


def test_loop_host_time_is_the_median_round_per_call() -> None:
    from rooflib.bench.torch_timing import loop_host_time

    syncs: list[int] = []
    calls: list[int] = []
    torch = SimpleNamespace(cuda=SimpleNamespace(synchronize=lambda: syncs.append(1)))
    per = loop_host_time(torch, lambda: calls.append(1), calls=10, count=3)
    assert len(calls) == 50 + 3 * 10 and len(syncs) == 1 + 3  # warm-up, then every round synchronised
    assert 0 < per < 1e-3
