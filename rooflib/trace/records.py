"""What a trace records: every dispatched op with its tensors' shapes, dtypes, strides and devices, in issue
order, on the stream it was issued to. Plain data (no torch objects), so lowering needs no torch.

A :class:`Call` is one aten or c10d op as the dispatcher saw it (``aten.mm``, ``c10d.allreduce_``,
``_c10d_functional.all_gather_into_tensor``), or one of a few events the tracer adds itself:

- ``aten.scaled_dot_product_attention`` and ``aten.rms_norm``: recorded whole (a GPU build runs them as one
  fused kernel; a CPU-only build would decompose them into a math path, which is not recorded);
- ``c10d.wait``: ``Work.wait()`` of an earlier collective (``target``); ``_c10d_functional.wait_tensor`` points
  at its collective the same way;
- ``cuda.synchronize``: a host wait (``torch.cuda.synchronize``, ``Stream.synchronize``, ``Event.synchronize``)
  for the calls in ``after``.

``args`` are the op's arguments by their schema names; tensors become :class:`TensorMeta`, lists of tensors
tuples of them, process groups :class:`Group`, other values stay plain (ints, floats, bools, strings, lists).

>>> t = TensorMeta((8, 16), "bfloat16", 2.0, (16, 1), "gpu")
>>> t.numel, t.nbytes
(128, 256.0)
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any, Literal

__all__ = ["Call", "Device", "Group", "TensorMeta", "Trace", "tensors_in"]

Device = Literal["gpu", "host"]


@dataclass(frozen=True)
class TensorMeta:
    """A tensor's metadata: ``shape``, torch ``dtype`` name (``bfloat16``), bytes per element, strides (in
    elements) and whether it lives on the GPU or the host; ``storage`` names the memory it views (tensors of one
    trace with the same number share it; -1: not known) and ``offset`` where in it the view starts (elements).
    Those two are identity, not shape: equality ignores them."""

    shape: tuple[int, ...]
    dtype: str
    itemsize: float
    stride: tuple[int, ...]
    device: Device
    storage: int = field(default=-1, compare=False, repr=False)
    offset: int = field(default=0, compare=False, repr=False)

    @cached_property
    def numel(self) -> int:
        return math.prod(self.shape)

    @cached_property
    def nbytes(self) -> float:
        return self.numel * self.itemsize

    @property
    def on_gpu(self) -> bool:
        return self.device == "gpu"


@dataclass(frozen=True)
class Group:
    """A process group: the program ranks in it (global ranks, in group-rank order) and this rank's place."""

    ranks: tuple[int, ...]
    rank: int
    name: str = ""

    @property
    def size(self) -> int:
        return len(self.ranks)


@dataclass(frozen=True)
class Call:
    """One recorded op; ``after`` lists earlier calls it waits for beyond its stream's order (stream and event
    waits), ``target`` the collective a wait is for."""

    index: int
    name: str
    overload: str = "default"
    args: Mapping[str, Any] = field(default_factory=dict)
    outputs: tuple[TensorMeta, ...] = ()
    stream: str = "compute"
    after: tuple[int, ...] = ()
    target: int | None = None
    tags: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        object.__setattr__(self, "args", MappingProxyType(dict(self.args)))

    @cached_property
    def inputs(self) -> tuple[TensorMeta, ...]:
        """Every tensor among the arguments, in order (lists flattened)."""
        return tuple(tensors_in(tuple(self.args.values())))

    @cached_property
    def on_gpu(self) -> bool:
        """Whether any tensor it reads or writes is on the GPU (host-only calls are not device work)."""
        return any(t.on_gpu for t in self.inputs) or any(t.on_gpu for t in self.outputs)

    def arg(self, name: str, default: Any = None) -> Any:
        return self.args.get(name, default)


def tensors_in(values: Any) -> Iterator[TensorMeta]:
    """The :class:`TensorMeta` in a value, a list or tuple of values, or nested lists."""
    if isinstance(values, TensorMeta):
        yield values
    elif isinstance(values, list | tuple):
        for v in values:
            yield from tensors_in(v)


@dataclass(frozen=True)
class Trace:
    """The calls one rank (``rank`` of ``world``) issued running the traced function.

    ``float32_matmul`` is the dtype fp32 matmuls run in (``tf32`` when PyTorch allows TF32 for matmuls,
    ``torch.get_float32_matmul_precision() != "highest"``, else ``fp32``).
    """

    name: str
    world: int
    rank: int
    calls: tuple[Call, ...]
    source: str = ""
    float32_matmul: Literal["fp32", "tf32"] = "fp32"
    notes: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.calls)

    def names(self) -> list[str]:
        return [c.name for c in self.calls]
