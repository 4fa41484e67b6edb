"""The ``host`` family's ``autograd`` cases: what recording a backward graph and running it costs the host.

Each case is timed like the ``op`` cases (back-to-back calls, host seconds per call) and counted once under a
dispatch mode with the rule ``rooflib trace`` uses (:func:`rooflib.trace.autograd.records_node`): the forward
ops that record a node (``records``), the backward nodes the engine runs (``nodes``), the engine starts
(``backward``), and every aten op dispatched (``aten``, views apart). :func:`rooflib.calibrate.host.fit_autograd`
takes each case's twin without autograd (:data:`TWINS`) and the figures of the ops the twin lacks off it, and
fits the three autograd figures on what is left.

- ``chain<L>`` / ``chain<L>_grad``: ``L`` multiplications by a scalar of a 256-element tensor, without and with
  ``requires_grad`` (the second records ``L`` nodes);
- ``step<L>``: ``chain<L>_grad``, a sum and ``backward()`` (``L + 2`` nodes: the sum's, the multiplications',
  the leaf's gradient accumulation), the leaf's ``grad`` reset to ``None`` first;
- ``mlp`` / ``mlp_grad`` / ``mlp_step``: ParallelKernelBench's two-layer training step (linear, ReLU, linear,
  MSE loss on 8 x 32 inputs; problems 40-42), under ``no_grad``, with grad, and with ``backward()``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from rooflib.bench.torch_common import Clocks, Sink
from rooflib.trace.autograd import inputs_require_grad, records_node

__all__ = ["AUTOGRAD_CASES", "TWINS", "autograd_cases", "autograd_part", "count_case"]

AUTOGRAD_CASES = ("chain1", "chain8", "chain1_grad", "chain8_grad", "step1", "step8", "mlp", "mlp_grad", "mlp_step")
TWINS = {
    "chain1_grad": "chain1",
    "chain8_grad": "chain8",
    "step1": "chain1",
    "step8": "chain8",
    "mlp_grad": "mlp",
    "mlp_step": "mlp",
}
"""Each case that does autograd work and the case that does the same forward without it: the fit takes the
twin's measured time off, so that only the autograd work and the ops the twin lacks are left."""


def autograd_cases(torch: Any, dev: Any) -> dict[str, Callable[[], Any]]:
    """The calls of :data:`AUTOGRAD_CASES` on tiny tensors of ``dev`` (fp32)."""
    import torch.nn.functional as F

    plain = torch.randn(256, device=dev)
    leaf = torch.randn(256, device=dev, requires_grad=True)
    x, target = torch.randn(8, 32, device=dev), torch.randn(8, 32, device=dev)
    params = [torch.randn(*s, device=dev, requires_grad=True) for s in ((32, 32), (32,), (32, 32), (32,))]

    def chain(t: Any, n: int) -> Any:
        for _ in range(n):
            t = t * 1.5
        return t

    def step(n: int) -> Any:
        leaf.grad = None
        loss = chain(leaf, n).sum()
        loss.backward()
        return leaf.grad

    def mlp(ps: list[Any]) -> Any:
        h = F.relu(F.linear(x, ps[0], ps[1]))
        return F.mse_loss(F.linear(h, ps[2], ps[3]), target)

    def mlp_plain() -> Any:
        with torch.no_grad():
            return mlp(params)

    def mlp_step() -> Any:
        for p in params:
            p.grad = None
        mlp(params).backward()
        return params[0].grad

    return {
        "chain1": lambda: chain(plain, 1),
        "chain8": lambda: chain(plain, 8),
        "chain1_grad": lambda: chain(leaf, 1),
        "chain8_grad": lambda: chain(leaf, 8),
        "step1": lambda: step(1),
        "step8": lambda: step(8),
        "mlp": mlp_plain,
        "mlp_grad": lambda: mlp(params),
        "mlp_step": mlp_step,
    }


def count_case(torch: Any, fn: Callable[[], Any]) -> dict[str, Any]:
    """One call of ``fn`` counted: ``records``, ``nodes``, ``backward``, ``views`` and the other ``aten`` ops."""
    from torch.utils._python_dispatch import TorchDispatchMode

    counts: dict[str, Any] = {"records": 0, "nodes": 0, "backward": 0, "views": 0, "aten": []}
    last: list[Any] = [None]

    def dispatch(self: Any, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if func.namespace == "aten":
            name = f"aten.{func._opname}"
            node = torch._C._current_autograd_node()
            if node is not None:
                if node is not last[0]:
                    last[0] = node
                    counts["nodes"] += 1
            else:
                last[0] = None
                grad = torch.is_grad_enabled()
                needs = grad and inputs_require_grad(torch.Tensor, args, kwargs)
                if records_node(name, grad_enabled=grad, input_requires_grad=needs):
                    counts["records"] += 1
            if getattr(func, "is_view", False) or name == "aten.detach":
                counts["views"] += 1
            else:
                counts["aten"].append(name)
        return func(*args, **kwargs)

    mode = type("RooflibAutogradCount", (TorchDispatchMode,), {"__torch_dispatch__": dispatch})()
    start = torch.autograd.backward

    def backward(*args: Any, **kwargs: Any) -> Any:
        counts["backward"] += 1
        return start(*args, **kwargs)

    torch.autograd.backward = backward
    try:
        with mode:
            fn()
    finally:
        torch.autograd.backward = start
    return counts


def autograd_part(torch: Any, dev: Any, sink: Sink, args: argparse.Namespace, clocks: Clocks | None) -> None:
    """The ``autograd`` records of the ``host`` family: each case counted once, then timed as the ``op`` cases
    are (:func:`rooflib.bench.host_worker.rounds`, a quarter of ``--calls`` per round)."""
    from rooflib.bench.host_worker import rounds  # host_worker imports this module when it runs the part

    for name, fn in autograd_cases(torch, dev).items():
        counts = count_case(torch, fn)
        calls = max(1, args.calls // 4)
        rec: dict[str, Any] = {"record": "point", "family": "host", "name": "autograd", "case": name, "gpus": 1}
        rec.update(counts, calls=calls)
        rec.update(rounds(torch, dev, fn, calls, args.rounds))
        rec["verified"] = fn() is not None
        rec["sm_mhz"] = clocks.latest_sm_mhz() if clocks else None
        sink.write(rec)
