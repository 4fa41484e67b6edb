"""What a call lowers to before streams and dependencies are assigned: :class:`Piece` s, and the dtypes and
sizes the lowering rules share."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rooflib.program.ir import HostKind, OpKind
from rooflib.trace.records import TensorMeta, tensors_in

__all__ = ["SIZES", "Context", "Piece", "model_dtype", "nbytes", "round_half_up"]


@dataclass(frozen=True)
class Piece:
    """One program op a call lowers to (before streams and dependencies are assigned)."""

    kind: OpKind
    params: Mapping[str, Any]
    name: str
    host: HostKind | None = None
    p2p: tuple[str, int] | None = None  # ("send" | "recv", offset) for point-to-point pairing


@dataclass(frozen=True)
class Context:
    world: int
    rank: int
    float32_matmul: str = "fp32"


SIZES = {"fp64": 8.0, "fp32": 4.0, "tf32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "fp4": 0.5}
_DTYPES = {
    "float64": "fp64",
    "float32": "fp32",
    "bfloat16": "bf16",
    "float16": "fp16",
    "complex64": "fp64",
    "complex32": "fp32",
}


def model_dtype(t: TensorMeta) -> str:
    """The rooflib dtype of a tensor: its float dtype, fp8 for every 8-bit float, else the float of its width."""
    if t.dtype in _DTYPES:
        return _DTYPES[t.dtype]
    if t.dtype.startswith("float8"):
        return "fp8"
    width = {8.0: "fp64", 4.0: "fp32", 2.0: "fp16", 1.0: "fp8"}
    return width.get(t.itemsize, "fp8" if t.itemsize < 1 else "fp64")


def nbytes(ts: Any) -> float:
    return sum(t.nbytes for t in tensors_in(ts))


def round_half_up(x: float) -> int:
    return math.floor(x + 0.5)
