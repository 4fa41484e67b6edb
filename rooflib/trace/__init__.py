"""PyTorch programs to the program IR, with no GPU: run a function under fake tensors and a fake process group,
record its aten and c10d ops, and lower them to a :class:`~rooflib.program.Program`.

torch is an optional extra (``pip install 'rooflib[trace]'``): this package imports without it, and
:func:`trace_program` raises :class:`TorchMissingError` when it is missing.

>>> import torch  # doctest: +SKIP
>>> import torch.distributed as dist  # doctest: +SKIP
>>> def block(x, w):  # doctest: +SKIP
...     y = x @ w
...     dist.all_reduce(y)
...     return y
>>> def inputs(rank, world, device, t=4096, h=8192):  # doctest: +SKIP
...     return (torch.randn(t, h // world, device=device, dtype=torch.bfloat16),
...             torch.randn(h // world, h, device=device, dtype=torch.bfloat16))
>>> p = trace_program(block, inputs, world=8)  # doctest: +SKIP
>>> [(op.name, op.kind) for op in p.ops]  # doctest: +SKIP
[('aten.mm', 'gemm'), ('c10d.allreduce_', 'collective')]

Modules: :mod:`~rooflib.trace.capture` (running a function: fake tensors, the fake process group),
:mod:`~rooflib.trace.recorder` and :mod:`~rooflib.trace.intercept` (the torch modes that record),
:mod:`~rooflib.trace.cuda` (fake streams and events), :mod:`~rooflib.trace.records` (what is recorded);
:mod:`~rooflib.trace.lower` (streams and dependencies), :mod:`~rooflib.trace.rules`,
:mod:`~rooflib.trace.matmul` and :mod:`~rooflib.trace.comm` (what each op becomes); :mod:`~rooflib.trace.load`
(``FILE.py:NAME`` targets and ``--set`` values).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rooflib.program.ir import Program
from rooflib.trace.errors import TORCH_MISSING, TorchMissingError, TraceError
from rooflib.trace.load import convert_value, load_target, parse_sets
from rooflib.trace.lower import lower
from rooflib.trace.records import Call, Group, TensorMeta, Trace

__all__ = [
    "TORCH_MISSING",
    "Call",
    "Group",
    "TensorMeta",
    "TorchMissingError",
    "Trace",
    "TraceError",
    "capture_trace",
    "convert_value",
    "load_target",
    "lower",
    "parse_sets",
    "trace_program",
]


def capture_trace(
    func: Callable[..., Any],
    inputs: Callable[..., Any] | None = None,
    *,
    world: int,
    rank: int = 0,
    params: Mapping[str, Any] | None = None,
    name: str | None = None,
) -> Trace:
    """The :class:`Trace` of ``func``: every op it issued, before lowering (:func:`rooflib.trace.capture.capture`;
    needs torch). ``trace_program`` is ``lower(capture_trace(...))``."""
    from rooflib.trace.capture import capture

    return capture(func, inputs, world=world, rank=rank, params=params, name=name)


def trace_program(
    func: Callable[..., Any],
    inputs: Callable[..., Any] | None = None,
    *,
    world: int,
    params: Mapping[str, Any] | None = None,
    name: str | None = None,
    rank: int = 0,
) -> Program:
    """The program one rank of ``world`` runs when it calls ``func`` on ``inputs(rank, world, device, **params)``.

    ``inputs`` returns a tuple of positional arguments or a dict of keyword arguments (tensors and plain
    values; a lone tensor is one argument); without it ``func`` is called with none. Rank 0 is traced (SPMD
    programs run the same ops on every rank); ``rank`` picks another. See :mod:`rooflib.trace.capture` for how
    the program runs and :mod:`rooflib.trace.lower` for what each op becomes.
    """
    return lower(capture_trace(func, inputs, world=world, rank=rank, params=params, name=name))
