"""Aligning a part's CUPTI-timed ops with its predicted ops (no PKB, no torch: hand-built records)."""

from __future__ import annotations

import pytest

from rooflib.validate.pkb_kernels import align_names, measured_side, op_class, op_pairs, predicted_side, summarise


def _rows(*ops: tuple[str, str, float]) -> list[dict[str, object]]:
    return [{"name": n, "kind": k, "device_time_s": t} for n, k, t in ops]


def test_names_align_in_order_and_runs_of_one_name_pair_as_a_whole() -> None:
    pairs = align_names(["aten.mm", "aten.add", "aten.cat"], ["aten.mm", "aten.add", "aten.cat"])
    assert len(pairs) == 3
    pred = predicted_side(_rows(("aten.cat", "copy", 1e-6)), [{}])
    meas = measured_side(
        [["aten::cat", "aten::cat", "[]", [["k1", 2e-6]]], ["aten::cat", "aten::cat", "[]", [["k2", 3e-6]]]], []
    )
    rec = {"ops": [["aten::cat", "aten::cat", "[]", [["k1", 2e-6]]], ["aten::cat", "aten::cat", "[]", [["k2", 3e-6]]]]}
    got = op_pairs(rec, _rows(("aten.cat", "copy", 1e-6)), [{}])
    assert [p.name for p in pred] == ["aten::cat"] and len(meas) == 2
    assert (
        len(got) == 1 and got[0].matched and got[0].measured_s == pytest.approx(5e-6) and got[0].kernels == ("k1", "k2")
    )


def test_outer_names_fake_copies_and_unmatched_ops() -> None:
    rows = _rows(
        ("aten.addmm", "gemm", 4e-6),
        ("fake.c10d._allgather_base_@w8", "copy", 1e-6),
        ("fake.c10d._allgather_base_@w8.part", "copy", 1e-6),  # the second part joins its call
        ("aten.sync", "sync", 0.0),
        ("aten.clone", "copy", 2e-6),
        ("aten.topk", "sort", 5e-6),
    )
    params = [{}, {}, {}, {}, {"layout": "transpose"}, {}]
    rec = {
        "ops": [
            ["aten::addmm", "aten::linear", "[]", [["gemm", 5e-6]]],  # the traced name is the inner one here
            ["aten::copy_", "c10d::_allgather_base_", "[]", [["Memcpy", 1e-6]]],
            ["aten::copy_", "c10d::_allgather_base_", "[]", [["Memcpy", 1e-6]]],
            ["aten::copy_", "aten::clone", "[]", [["transpose", 4e-6]]],
            ["aten::fill_", "aten::zeros", "[]", [["fill", 1e-6]]],  # not traced
        ]
    }
    got = op_pairs(rec, rows, params)
    by = {p.name: p for p in got}
    assert by["aten::addmm"].matched and by["aten::addmm"].measured_s == 5e-6
    fake = by["fake.c10d._allgather_base_"]
    assert fake.matched and fake.predicted_s == 2e-6 and fake.measured_s == 2e-6
    assert by["aten::copy_"].op_class == "copy:transpose" and by["aten::copy_"].measured_s == 4e-6
    assert not by["aten::fill_"].matched and not by["aten::topk"].matched
    table = {r["class"]: r for r in summarise(got)}
    assert table["gemm"]["ratio_median"] == pytest.approx(0.8)
    assert table["unmatched, measured only"]["n"] == 1 and table["unmatched, predicted only"]["n"] == 1


def test_op_class_names_the_measured_curve() -> None:
    assert op_class("index", {"op": "scatter_add"}) == "index:scatter_add"
    assert op_class("sort", {"cols": 64}) == "sort:rows" and op_class("sort", {"elements": 9}) == "sort:flat"
    assert op_class("elementwise", {"curve": "fill"}) == "elementwise:fill" and op_class("gemm", {}) == "gemm"
