"""Host-only work a trace records besides the ops: autograd (records, engine nodes, ``backward()``), process
groups built in the call (``dist.new_group``), and device tensors read by the host in a run with values
(``.tolist()``, ``.cpu()``, ``.numpy()``, ``.to("cpu")``)."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402

from rooflib.trace import capture_trace, lower  # noqa: E402
from rooflib.trace.autograd import BACKWARD, NODE, RECORD, records_node  # noqa: E402
from rooflib.trace.capture import capture  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:.*is deprecated. Please use.*:FutureWarning")


def _inputs(rank: int, world: int, device: Any) -> tuple[Any, ...]:
    return (torch.randn(16, 16, device=device), torch.randn(16, 16, device=device))


def test_records_node_rule() -> None:
    assert records_node("aten.mm", grad_enabled=True, input_requires_grad=True)
    assert not records_node("aten.mm", grad_enabled=False, input_requires_grad=True)
    assert not records_node("aten.mm", grad_enabled=True, input_requires_grad=False)
    assert not records_node("aten.eq", grad_enabled=True, input_requires_grad=True)  # no gradient
    assert not records_node("c10d.allreduce_", grad_enabled=True, input_requires_grad=True)


def test_backward_records_nodes_and_the_engine_start() -> None:
    def step(x: Any, w: Any) -> Any:
        w = w.detach().requires_grad_(True)
        (x @ w).relu().sum().backward()
        return w.grad

    names = [c.name for c in capture_trace(step, _inputs, world=1).calls]
    assert names.count(RECORD) == 3  # mm, relu, sum
    assert names.count(BACKWARD) == 1
    assert names.count(NODE) == 4  # SumBackward0, ReluBackward0, MmBackward0, AccumulateGrad
    assert names.index(BACKWARD) < names.index(NODE)


def test_no_grad_records_no_autograd_work() -> None:
    @torch.no_grad()
    def fwd(x: Any, w: Any) -> Any:
        return (x @ w.requires_grad_(True)).relu()

    names = [c.name for c in capture_trace(fwd, _inputs, world=1).calls]
    assert not {RECORD, NODE, BACKWARD} & set(names)


def test_autograd_work_is_host_extra_of_the_next_kernel() -> None:
    def fwd(x: Any, w: Any) -> Any:
        return x @ w.detach().requires_grad_(True)

    (mm,) = [op for op in lower(capture_trace(fwd, _inputs, world=1)).ops if op.name == "aten.mm"]
    assert mm.params["host_extra"] == (RECORD,)


def test_new_group_in_the_call_is_host_work() -> None:
    def grouped(x: Any, w: Any) -> Any:
        g = dist.new_group([0, 1])
        dist.all_reduce(x, group=g)
        return x

    names = [c.name for c in capture_trace(grouped, _inputs, world=2).calls]
    assert names.count("python.new_group") == 1 and names.index("python.new_group") < names.index("c10d.allreduce_")


@pytest.mark.parametrize("read", ["tolist", "cpu", "numpy", "to_cpu", "to_cpu_async"])
def test_host_reads_in_a_run_with_values_copy_and_wait(read: str) -> None:
    def program(x: Any, w: Any) -> Any:
        s = x.sum(dim=0)
        if read == "to_cpu":
            s.to("cpu")
        elif read == "to_cpu_async":
            s.to(torch.device("cpu"), non_blocking=True)
        else:
            getattr(s, read)()
        return x

    trace = capture(program, _inputs, world=1, values=True)
    (copy,) = [c for c in trace.calls if c.name == "aten._to_copy"]
    assert copy.outputs[0].device == "host" and copy.args["self"].on_gpu and copy.outputs[0].shape == (16,)
    kinds = [op.kind for op in lower(trace).ops]
    assert kinds == (["reduction", "copy"] if read == "to_cpu_async" else ["reduction", "copy", "sync"])


def test_fake_runs_record_no_host_read_of_their_own() -> None:
    def program(x: Any, w: Any) -> Any:
        return x.sum(dim=0).to("cpu")

    copies = [c for c in capture_trace(program, _inputs, world=1).calls if c.name == "aten._to_copy"]
    assert len(copies) == 1  # the dispatched copy only
