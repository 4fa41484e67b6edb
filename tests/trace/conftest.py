"""Helpers for the tracer's tests: the example programs under ``programs/`` and hand-built trace records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rooflib.trace.records import Call, Device, Group, TensorMeta, Trace

PROGRAMS = Path(__file__).parent / "programs"

_SIZES = {"bfloat16": 2, "float16": 2, "float32": 4, "float64": 8, "int64": 8, "int32": 4, "bool": 1, "int8": 1, "complex64": 8}


def target(spec: str) -> str:
    """``'tp_mlp.py:tp_mlp'`` -> the path of that program, as the CLI takes it."""
    return f"{PROGRAMS / spec.split(':')[0]}:{spec.split(':')[1]}"


def tensor(*shape: int, dtype: str = "bfloat16", device: Device = "gpu") -> TensorMeta:
    strides, acc = [], 1
    for dim in reversed(shape):
        strides.insert(0, acc)
        acc *= dim
    return TensorMeta(tuple(shape), dtype, float(_SIZES[dtype]), tuple(strides), device)


def trace_of(*calls: Call, world: int = 1, rank: int = 0, **kw: Any) -> Trace:
    """A trace of ``calls`` (their ``index`` set in order)."""
    numbered = tuple(
        Call(i, c.name, c.overload, c.args, c.outputs, c.stream, c.after, c.target, c.tags) for i, c in enumerate(calls)
    )
    return Trace("test", world, rank, numbered, **kw)


def call(name: str, outputs: tuple[TensorMeta, ...] = (), tags: frozenset[str] = frozenset(), **args: Any) -> Call:
    return Call(0, name, args=args, outputs=outputs, tags=tags)


def world_group(world: int, rank: int = 0) -> Group:
    return Group(tuple(range(world)), rank)
