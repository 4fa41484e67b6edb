"""Per-op kernel records from the profiler: the event-list and Chrome-trace readers agree on one shape."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from rooflib.bench.pkb_profile import kernel_ops, trace_ops


def _trace(durations: list[float]) -> dict[str, Any]:
    """A Chrome trace of one step per duration: a linear (addmm inside) launching a GEMM and a memset, then a
    kernel-less view."""
    evs: list[dict[str, Any]] = []
    for s, dur in enumerate(durations):
        t, ext = 100.0 * s, 10 * s
        evs += [
            {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s + 3}", "ts": t, "dur": 90, "tid": 1},
            {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "ts": t + 1, "dur": 20, "tid": 1,
             "args": {"External id": ext + 1}},
            {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "ts": t + 2, "dur": 10, "tid": 1,
             "args": {"External id": ext + 2, "Input Dims": [[4, 8], [8, 4]]}},
            {"ph": "X", "cat": "cpu_op", "name": "aten::view", "ts": t + 25, "dur": 1, "tid": 1,
             "args": {"External id": ext + 3}},
            {"ph": "X", "cat": "kernel", "name": "gemm", "ts": t + 30, "dur": dur, "tid": 7,
             "args": {"External id": ext + 2}},
            {"ph": "X", "cat": "gpu_memset", "name": "Memset", "ts": t + 40, "dur": 1.0, "tid": 7,
             "args": {"External id": ext + 2}},
            {"ph": "X", "cat": "kernel", "name": "outside", "ts": t + 95, "dur": 50.0, "tid": 7,
             "args": {"External id": 999}},  # no op of the trace launched it
        ]
    return {"traceEvents": evs}


def test_chrome_trace_joins_kernels_to_their_innermost_op_and_takes_medians() -> None:
    got = trace_ops(_trace([5.0, 7.0, 100.0]))
    assert got["calls"] == 3 and got["kernels"] == 2
    ((leaf, top, shapes, kernels),) = got["ops"]  # the view launched nothing; the stray kernel has no op
    assert (leaf, top, shapes) == ("aten::addmm", "aten::linear", "[[4, 8], [8, 4]]")
    assert kernels == [["gemm", pytest.approx(7e-6)], ["Memset", pytest.approx(1e-6)]]
    assert got["kernel_s"] == pytest.approx(8e-6)


def test_a_call_with_another_op_sequence_is_left_out_of_the_medians() -> None:
    trace = _trace([5.0, 7.0, 9.0])
    trace["traceEvents"][-3]["name"] = "gemm_split_k"  # the third call ran another kernel
    got = trace_ops(trace)
    assert got["calls"] == 2 and got["ops"][0][3][0] == ["gemm", pytest.approx(6e-6)]


def test_event_list_reader_matches_the_trace_reader() -> None:
    step = SimpleNamespace(name="ProfilerStep#3", cpu_parent=None, kernels=[])
    top = SimpleNamespace(name="aten::linear", cpu_parent=step, kernels=[])
    leaf = SimpleNamespace(
        name="aten::addmm",
        cpu_parent=top,
        time_range=SimpleNamespace(start=2.0),
        input_shapes=[[4, 8], [8, 4]],
        kernels=[SimpleNamespace(name="gemm", duration=5.0), SimpleNamespace(name="Memset", duration=1.0)],
    )
    got = kernel_ops([step, top, leaf])
    assert got["ops"] == trace_ops(_trace([5.0]))["ops"]
    assert kernel_ops([]) == {"ops": [], "calls": 0, "kernel_s": 0.0, "kernels": 0}
