"""Fitting the autograd figures (``python.autograd_record``, ``python.autograd_node``, ``python.backward``) from
the ``host`` family's ``autograd`` cases, and the trace counting the same work the fit means."""

from __future__ import annotations

from typing import Any

import pytest

from rooflib.calibrate.host import fit_autograd, fit_host

KERNEL, VIEW = 10e-6, 2e-6


def _case(name: str, aten: list[str], views: int, records: int, nodes: int, backward: int, truth: dict[str, float],
          base: float = 0.0) -> dict[str, Any]:  # fmt: skip
    host = base + KERNEL * len(aten) + VIEW * views
    host += records * truth["r"] + nodes * truth["n"] + backward * truth["b"]
    return {"record": "point", "family": "host", "name": "autograd", "case": name, "aten": aten, "views": views,
            "records": records, "nodes": nodes, "backward": backward, "host_s": host, "verified": True}  # fmt: skip


def _cases(truth: dict[str, float]) -> list[dict[str, Any]]:
    mul, extra = ["aten.mul"], 3e-6  # the twins' own Python, which the fit must not take for autograd work
    mlp = ["aten.addmm", "aten.relu", "aten.addmm", "aten.mse_loss"]
    back = ["aten.ones_like", "aten.mse_loss_backward", "aten.mm", "aten.mm", "aten.sum", "aten.threshold_backward"]
    return [
        _case("chain1", mul, 0, 0, 0, 0, truth, extra),
        _case("chain8", mul * 8, 0, 0, 0, 0, truth, extra),
        _case("chain1_grad", mul, 0, 1, 0, 0, truth, extra),
        _case("chain8_grad", mul * 8, 0, 8, 0, 0, truth, extra),
        _case("step1", [*mul, "aten.sum", "aten.ones_like", *mul], 2, 2, 3, 1, truth, extra),
        _case("step8", [*mul * 8, "aten.sum", "aten.ones_like", *mul * 8], 2, 9, 10, 1, truth, extra),
        _case("mlp", mlp, 2, 0, 0, 0, truth, 2 * extra),
        _case("mlp_grad", mlp, 3, 6, 0, 0, truth, 2 * extra),
        _case("mlp_step", [*mlp, *back], 17, 6, 10, 1, truth, 2 * extra),
    ]


def test_fit_recovers_the_figures_the_cases_were_made_with() -> None:
    truth = {"r": 1.5e-6, "n": 25e-6, "b": 50e-6}
    got = fit_autograd(_cases(truth), {"kernel": KERNEL, "cublas": KERNEL, "view": VIEW, "ops": {}})
    assert got["python.autograd_record"] == pytest.approx(truth["r"])
    assert got["python.autograd_node"] == pytest.approx(truth["n"])
    assert got["python.backward"] == pytest.approx(truth["b"])


def test_a_negative_figure_is_dropped_and_the_rest_refitted() -> None:
    truth = {"r": -4e-6, "n": 20e-6, "b": 30e-6}  # records that cost less than nothing: noise, not a figure
    got = fit_autograd(_cases(truth), {"kernel": KERNEL, "cublas": KERNEL, "view": VIEW, "ops": {}})
    assert got["python.autograd_record"] == 0.0
    assert got["python.autograd_node"] > 0 and got["python.backward"] >= 0


def test_without_the_cases_nothing_is_fitted() -> None:
    assert fit_autograd([], {"kernel": KERNEL}) == {}
    ops = fit_host(_cases({"r": 1e-6, "n": 20e-6, "b": 40e-6}))["ops"]  # no kernel figure: the cases alone
    assert "python.autograd_node" not in ops


def test_the_trace_counts_what_the_worker_counts() -> None:
    """The worker's count (:func:`rooflib.bench.host_autograd.count_case`) and the trace's host-only calls
    agree on the two-layer training step, so a fitted figure is charged for the work it was fitted on."""
    torch = pytest.importorskip("torch")
    from rooflib.bench.host_autograd import autograd_cases, count_case
    from rooflib.trace import capture_trace

    counted = count_case(torch, autograd_cases(torch, torch.device("cpu"))["mlp_step"])
    F = torch.nn.functional

    def step(x: Any, target: Any, w1: Any, b1: Any, w2: Any, b2: Any) -> Any:
        ps = [t.detach().requires_grad_(True) for t in (w1, b1, w2, b2)]
        loss = F.mse_loss(F.linear(F.relu(F.linear(x, ps[0], ps[1])), ps[2], ps[3]), target)
        loss.backward()
        return ps[0].grad

    def inputs(rank: int, world: int, device: Any) -> tuple[Any, ...]:
        shapes = ((8, 32), (8, 32), (32, 32), (32,), (32, 32), (32,))
        return tuple(torch.randn(*s, device=device) for s in shapes)

    names = [c.name for c in capture_trace(step, inputs, world=1).calls]
    assert names.count("python.autograd_record") == counted["records"] == 6
    assert names.count("python.autograd_node") == counted["nodes"] == 10
    assert names.count("python.backward") == counted["backward"] == 1
