"""Which reads an earlier call left in the L2 (rooflib.trace.residency): by storage and place in it, with the
bytes touched in between, and the traced storages and offsets it works from."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rooflib.trace import lower
from rooflib.trace.records import Call, TensorMeta
from rooflib.trace.residency import LATER_WARM, traffic, warm_reads

from .conftest import call, tensor, trace_of


def at(t: TensorMeta, storage: int, offset: int = 0) -> TensorMeta:
    return replace(t, storage=storage, offset=offset)


def test_what_a_call_wrote_is_warm_for_the_next_and_inputs_are_cold() -> None:
    a, b, c = at(tensor(1024), 0), at(tensor(1024), 1), at(tensor(1024), 2)
    tr = trace_of(
        call("aten.neg", (b,), frozenset({"pointwise"}), self=a),
        call("aten.add", (c,), frozenset({"pointwise"}), self=b, other=a),
    )
    warm = warm_reads(tr, [1, 1])
    assert 0 not in warm  # a: the program's input, touched by no call before
    share, reuse = warm[1]
    assert share == pytest.approx(2 / 3, abs=1e-3)  # both reads warm; the write is a third of its bytes
    assert reuse == 0.0


def test_slices_of_one_buffer_are_not_warm_for_each_other() -> None:
    x = at(TensorMeta((64, 64), "bfloat16", 2.0, (64, 1), "gpu"), 0)
    left = replace(x, shape=(64, 32))  # x[:, :32], strided
    right = replace(x, shape=(64, 32), offset=32)  # x[:, 32:]
    o1, o2, o3 = (at(tensor(64, 32), s) for s in (1, 2, 3))
    tr = trace_of(
        call("aten.clone", (o1,), self=left),
        call("aten.clone", (o2,), self=right),  # the other half: cold
        call("aten.clone", (o3,), self=left),  # the same view again: warm
    )
    warm = warm_reads(tr, [1, 1, 1])
    assert set(warm) == {2}
    assert warm[2][1] == pytest.approx(2 * o2.nbytes)  # the middle call's read and write in between


def test_a_dense_write_covers_the_views_inside_it() -> None:
    y = at(tensor(8, 128), 0)
    rows = replace(y, shape=(2, 128), offset=256)  # y[2:4]: inside y's span
    src, out = at(tensor(8, 128), 1), at(tensor(2, 128), 2)
    tr = trace_of(call("aten.neg", (y,), self=src), call("aten.clone", (out,), self=rows))
    assert warm_reads(tr, [1, 1])[1][0] == pytest.approx(0.5)


def test_views_that_launch_nothing_touch_nothing() -> None:
    a, b = at(tensor(16), 0), at(tensor(16), 1)
    tr = trace_of(call("aten.view", (a,), self=a), call("aten.neg", (b,), self=a))
    assert warm_reads(tr, [0, 1]) == {}


def test_lowering_marks_memory_bound_pieces_only() -> None:
    a, b, c = at(tensor(256, 256), 0), at(tensor(256, 256), 1), at(tensor(256, 256), 2)
    tr = trace_of(
        call("aten.neg", (b,), frozenset({"pointwise"}), self=a),
        call("aten.mm", (c,), self=b, mat2=b),  # a GEMM: its own model, no L2 figure
        call("aten.exp", (a,), frozenset({"pointwise"}), self=c),
    )
    ops = lower(tr).ops
    assert "l2_warm" not in ops[0].params and "l2_warm" not in ops[1].params
    assert ops[2].params["l2_warm"] == 0.5 and ops[2].params["l2_reuse"] == 0
    # writes: into the block the allocator reuses, warm while one call's bytes fit (the cost decides)
    assert "l2_warm_out" not in ops[1].params  # the GEMM
    assert ops[0].params["l2_warm_out"] == ops[2].params["l2_warm_out"] == 0.5
    assert ops[0].params["l2_reuse_out"] == ops[2].params["l2_reuse_out"] == traffic(tr, [1, 1, 1]) == 6 * a.nbytes  # b read once by the GEMM


def test_traffic_counts_each_calls_distinct_views_once() -> None:
    a, b = at(tensor(1024), 0), at(tensor(1024), 1)
    tr = trace_of(call("aten.add_", (a,), self=a, other=b), call("aten.view", (a,), self=a))
    assert traffic(tr, [1, 0]) == 2 * a.nbytes  # a read and written once, b read; the view launches nothing


def test_a_calls_later_pieces_read_what_its_first_just_touched() -> None:
    x, out = at(tensor(64, 64, dtype="float32"), 0), at(tensor(64, dtype="float32"), 1)
    ops = lower(trace_of(Call(0, "aten.logsumexp", args={"self": x, "dim": [1]}, outputs=(out,)))).ops
    assert len(ops) > 1 and "l2_warm" not in ops[0].params
    assert {op.params["l2_warm"] for op in ops[1:] if "l2_warm" in op.params} == {LATER_WARM}


def test_traced_views_share_their_storage() -> None:
    torch = pytest.importorskip("torch")
    from rooflib.trace import capture_trace

    def program(x: torch.Tensor) -> torch.Tensor:
        return (x[:, :8].contiguous() + x[:, 8:].contiguous()).t().contiguous()

    tr = capture_trace(program, lambda r, w, d: (torch.randn(8, 16, device=d),), world=1)
    reads = [t for c in tr.calls for t in c.inputs if t.shape == (8, 8) and t.stride == (16, 1)]
    assert len(reads) >= 2 and len({t.storage for t in reads}) == 1  # both halves view x's storage
    assert sorted({t.offset for t in reads}) == [0, 8]
    assert all(t.storage >= 0 for c in tr.calls for t in (*c.inputs, *c.outputs))

