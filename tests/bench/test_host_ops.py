"""The host family's ParallelKernelBench op cases: every case runs on the CPU and dispatches what it names."""

from __future__ import annotations

import pytest

from rooflib.bench.host_ops import PKB_CASES, pkb_cases

torch = pytest.importorskip("torch")


def test_every_case_runs_and_names_its_op() -> None:
    cases = pkb_cases(torch, torch.device("cpu"))
    assert set(cases) == set(PKB_CASES) - {"triton"}  # Triton only on CUDA
    for name, fn in cases.items():
        assert fn() is not None, name
    traced = {
        name for name, ops in PKB_CASES.items() if all(op.startswith(("aten.", "python.", "triton")) for op in ops)
    }
    assert traced == set(PKB_CASES)


def test_held_host_times_need_the_gpu() -> None:
    from rooflib.bench.torch_timing import held_host_times

    assert held_host_times(torch, torch.device("cpu"), lambda i: i, 3, 1e-5) == {}


def test_the_sparse_cases_compute_the_dense_products() -> None:
    cases = pkb_cases(torch, torch.device("cpu"))
    for name in ("sparse_mm", "sparse_bmm"):
        closure = cases[name].__closure__ or ()
        operands = [c.cell_contents for c in closure if isinstance(c.cell_contents, torch.Tensor)]
        sparse = next(t for t in operands if t.is_sparse)
        dense = next(t for t in operands if not t.is_sparse)
        want = sparse.to_dense() @ dense
        assert torch.allclose(cases[name](), want, rtol=1e-5, atol=1e-5), name
    assert not next(
        c.cell_contents for c in cases["sparse_mm"].__closure__ or () if getattr(c.cell_contents, "is_sparse", False)
    ).is_coalesced()  # built as a program builds it: every product coalesces it again
