"""Ops whose output size depends on values (``rooflib.trace.value_sized.value_sized``): each starts with a host sync that
is charged the op's own measured host figure, and its kernels cost the host nothing more."""

from __future__ import annotations

import pytest

from rooflib.program import host_costs, simulate
from rooflib.trace import lower
from rooflib.trace.records import TensorMeta
from rooflib.trace.value_sized import value_sized

from .conftest import call, tensor, trace_of


def test_boolean_mask_indexing_waits_and_integer_indexing_does_not() -> None:
    x, mask, idx = tensor(256), tensor(256, dtype="bool"), tensor(64, dtype="int64")
    sized = call("aten.index", (tensor(100),), self=x, indices=(mask,))
    assert value_sized(sized) == ("aten.index(bool)", 2)
    assert value_sized(call("aten.index", (tensor(64),), self=x, indices=(idx,))) is None
    put = call("aten.index_put_", (x,), self=x, indices=(mask,), values=tensor(()))
    assert value_sized(put) == ("aten.index_put(bool)", 2)
    ops = lower(trace_of(sized)).ops
    assert [(o.kind, o.host) for o in ops] == [("sync", "sync"), ("index", "none")]
    assert ops[0].params["host_op"] == "aten.index(bool)"


def test_the_value_sized_ops() -> None:
    x, counts = tensor(256), tensor(64, dtype="int64")
    assert value_sized(call("aten.nonzero", (tensor(10, 1, dtype="int64"),), self=x))[0] == "aten.nonzero"
    assert value_sized(call("aten.masked_select", (tensor(10),), self=x, mask=tensor(256, dtype="bool")))
    assert value_sized(call("aten._unique2", (tensor(10),), self=x))[0] == "aten._unique2"
    assert value_sized(call("aten.repeat_interleave", (tensor(100, dtype="int64"),), repeats=counts))
    given = call("aten.repeat_interleave", (tensor(100, dtype="int64"),), repeats=counts, output_size=100)
    assert value_sized(given) is None  # the size is given: no wait
    assert value_sized(call("aten.add", (x,), self=x, other=x)) is None


@pytest.mark.parametrize("measured", [True, False])
def test_the_sync_costs_the_measured_figure_or_a_default(measured: bool) -> None:
    from dataclasses import replace

    import rooflib
    from rooflib.program import ProgramBuilder
    from rooflib.program.cost import op_cost

    h200 = rooflib.load_system("hgx-h200", gpus=1)
    hc = host_costs(h200)
    if not measured:
        hc = replace(hc, ops={k: v for k, v in hc.ops.items() if k != "aten.masked_select"})
    b = ProgramBuilder("p", world=1)
    b.add("sync", {"host_op": "aten.masked_select", "launches": 3}, name="aten.masked_select")
    b.elementwise("add", 256)
    ops = b.build().ops
    want = hc.ops["aten.masked_select"] if measured else hc.sync + 3 * hc.kernel
    assert hc.wait(ops[0]) == pytest.approx(want)
    plain = ProgramBuilder("q", world=1)
    plain.sync()
    assert hc.wait(plain.build().ops[0]) == pytest.approx(hc.sync)  # .item(): the plain sync
    t = simulate(ops, [op_cost(h200, op, (0,)) for op in ops], hc)
    assert t.host_s == pytest.approx(want + hc.issue(ops[1]) + hc.iteration)


def _sparse(*shape: int) -> TensorMeta:
    return TensorMeta(tuple(shape), "float32", 4.0, (), "gpu")  # a sparse COO tensor has no strides


def test_sparse_dense_products_wait_and_bmm_of_a_sparse_operand_is_no_dense_gemm() -> None:
    coo, dense = _sparse(3, 128, 2048), tensor(3, 2048, 64, dtype="float32")
    bmm = call("aten.bmm", (tensor(3, 128, 64, dtype="float32"),), self=coo, mat2=dense)
    assert value_sized(bmm) == ("aten.bmm(sparse)", 4)
    ops = lower(trace_of(bmm)).ops
    assert [(o.kind, o.host) for o in ops] == [("sync", "sync"), ("index", "none")]
    assert ops[1].params["bytes"] == dense.nbytes + 3 * 128 * 64 * 4  # the dense operand and the output, no GEMM
    plain = call("aten.bmm", (tensor(3, 128, 64),), self=tensor(3, 128, 2048), mat2=tensor(3, 2048, 64))
    assert value_sized(plain) is None and [o.kind for o in lower(trace_of(plain)).ops] == ["gemm"]
    mm = call(
        "aten._sparse_addmm", (tensor(256, 64),), self=tensor(256, 64), mat1=_sparse(256, 1024), mat2=tensor(1024, 64)
    )
    assert value_sized(mm) == ("aten._sparse_addmm", 4)
    scalar = call("aten.mul", (tensor(256),), self=tensor(256), other=tensor())  # a 0-d tensor is not sparse
    assert value_sized(scalar) is None


def test_every_waiting_call_the_host_family_times_is_a_waiting_host_op() -> None:
    """The host family's cases that wait (``SYNC_CASES``) are the ops ``value_sized`` charges a wait to, under
    the same names: what the lease model keeps out of the mix factor (tools/pkb_report.py)."""
    from rooflib.bench.host_ops import PKB_CASES, SYNC_CASES
    from rooflib.trace.value_sized import WAITING_HOST_OPS

    timed = {PKB_CASES[c][0] for c in SYNC_CASES}
    assert timed <= WAITING_HOST_OPS
    x, mask = tensor(256), tensor(256, dtype="bool")
    named = {
        value_sized(call("aten.nonzero", (tensor(10, 1, dtype="int64"),), self=x))[0],  # type: ignore[index]
        value_sized(call("aten.index", (tensor(100),), self=x, indices=(mask,)))[0],  # type: ignore[index]
        value_sized(call("aten.bmm", (tensor(3, 8, 4),), self=_sparse(3, 8, 16), mat2=tensor(3, 16, 4)))[0],  # type: ignore[index]
    }
    assert named <= WAITING_HOST_OPS and "aten.add" not in WAITING_HOST_OPS
