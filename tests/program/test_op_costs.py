"""``predict_program``'s op costs, each distinct (kind, name, parameters) costed once: the same costs as costing
every op on its own."""

from __future__ import annotations

import pytest

import rooflib
from rooflib.program import cost, predict
from rooflib.program.ir import Op


def test_repeated_ops_are_costed_once_with_the_same_result(monkeypatch: pytest.MonkeyPatch) -> None:
    system = rooflib.load_system("hgx-h200", gpus=2)
    step = [
        Op("aten.mul", "elementwise", {"reads": 2, "writes": 1, "elements": 4608, "dtype": "fp32"}),
        Op("aten.bmm", "gemm", {"m": 1, "n": 128, "k": 128, "batch": 4608, "dtype": "fp32"}),
        Op("c10d.allreduce_", "collective", {"op": "all_reduce", "bytes": 2**20, "seq_lens": [3, 5]}),
    ]
    other = Op("aten.mul", "elementwise", {"reads": 2, "writes": 1, "elements": 9216, "dtype": "fp32"})
    ops = [*step * 50, other, Op("aten.add", "elementwise", dict(step[0].params))]
    plain = [cost.op_cost(system, op, (0, 1)) for op in ops]
    calls = []
    real = cost.op_cost
    monkeypatch.setattr(predict, "op_cost", lambda s, op, m: calls.append(op) or real(s, op, m))
    assert predict._op_costs(system, ops, (0, 1)) == plain
    assert len(calls) == 5  # three steps' ops, the other size, the other name
    assert plain[-2].device_s > plain[0].device_s  # the larger mul is not the remembered one
