"""What autograd costs the host, as a trace records it (no torch needed here).

An eager op on tensors that require grad, with grad mode on, also records a node of the backward graph
(``python.autograd_record``); ``backward()`` (or ``torch.autograd.grad``) starts the engine once
(``python.backward``) and then runs each node of the graph, which costs the host its own Python-free C++ work
besides the kernels the node launches (``python.autograd_node``). The three are host-only calls: lowering
charges each to the next op that launches a kernel, at ``HostSpec.ops[name]``, measured by the ``host``
family's ``autograd`` cases (:mod:`rooflib.bench.host_autograd`) and fitted by
:func:`rooflib.calibrate.host.fit_autograd`.

The trace and the measurement count with the same rule (:func:`records_node`), so that a fitted figure means
what the trace charges it for.

>>> records_node("aten.mul", grad_enabled=True, input_requires_grad=True)
True
>>> records_node("aten.ones_like", grad_enabled=True, input_requires_grad=True)
False
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["BACKWARD", "NODE", "NOT_DIFFERENTIABLE", "RECORD", "inputs_require_grad", "records_node"]

RECORD = "python.autograd_record"
NODE = "python.autograd_node"
BACKWARD = "python.backward"

NOT_DIFFERENTIABLE = frozenset(
    {
        "aten.detach",
        "aten.alias",
        "aten.ones_like",
        "aten.zeros_like",
        "aten.empty_like",
        "aten.full_like",
        "aten.rand_like",
        "aten.randn_like",
        "aten.new_empty",
        "aten.new_zeros",
        "aten.new_ones",
        "aten.new_full",
        "aten.eq",
        "aten.ne",
        "aten.lt",
        "aten.le",
        "aten.gt",
        "aten.ge",
        "aten.argmax",
        "aten.argmin",
        "aten.argsort",
        "aten.isnan",
        "aten.isinf",
        "aten.sign",
        "aten.logical_not",
        "aten.logical_and",
        "aten.logical_or",
        "aten.bitwise_and",
        "aten.bitwise_or",
        "aten.bitwise_not",
        "aten._local_scalar_dense",
        "aten.is_nonzero",
        "aten.equal",
        "aten.lift_fresh",
    }
)
"""Ops that record no backward node even on inputs that require grad (their outputs carry no gradient)."""


def records_node(name: str, *, grad_enabled: bool, input_requires_grad: bool) -> bool:
    """Whether the eager op ``name`` (``aten.mul``) records a backward node: grad mode on, an input that
    requires grad, and an op with a gradient."""
    return grad_enabled and input_requires_grad and name.startswith("aten.") and name not in NOT_DIFFERENTIABLE


def inputs_require_grad(tensor_type: type, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> bool:
    """Whether any tensor among an op's arguments (lists and tuples of them included) requires grad."""
    for v in (*args, *kwargs.values()):
        for t in v if isinstance(v, list | tuple) else (v,):
            if isinstance(t, tensor_type) and getattr(t, "requires_grad", False):
                return True
    return False
