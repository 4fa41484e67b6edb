"""Stand-in outputs for the heavy ops of a run with values (:func:`rooflib.trace.capture.capture`, ``values``).

A run with values executes the program on host tensors so that sizes computed from values come out right; the
large matrix products and attentions in it cost minutes on a CPU (bf16 attention above all) and almost never
decide a size. An op of :data:`HEAVY` whose FLOPs exceed :data:`STAND_IN_FLOPS` is not computed: its output
shapes come from the op's meta kernel and its values are standard-normal draws (floats; zeros otherwise), the
values a random input of PKB's builder would give up to scale. Sizes read from such an output (a router's
top-k over a large logits GEMM) are then those of random routing, as the values of the run are plausible, not
real, anyway (:mod:`rooflib.trace.values`).

>>> heavy_flops("mm", ((_Shape((4096, 4096)), _Shape((4096, 4096))), {}))
137438953472.0
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["HEAVY", "STAND_IN_FLOPS", "heavy_flops", "stand_in"]

STAND_IN_FLOPS = 1e8
"""FLOPs above which a heavy op of a run with values is stood in for (about 10 ms of CPU bf16 work)."""

HEAVY = (
    "mm",
    "addmm",
    "bmm",
    "baddbmm",
    "_scaled_dot_product_flash_attention_for_cpu",
    "_scaled_dot_product_attention_math",
)
"""The aten ops (by name) that may be stood in for."""


class _Shape:  # doctest helper: a thing with a shape
    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape


def _dims(t: Any) -> tuple[int, ...]:
    return tuple(int(d) for d in getattr(t, "shape", ()))


def heavy_flops(name: str, call: tuple[tuple[Any, ...], Mapping[str, Any]]) -> float:
    """FLOPs of the heavy op ``name`` on ``call`` = (args, kwargs) (0 for any other op): 2 m n k for the matrix
    products (batched: times the batch), 4 x (query elements) x (keys) for attention."""
    args, _ = call
    if name not in HEAVY or not args:
        return 0.0
    first = 1 if name in ("addmm", "baddbmm") else 0
    if name.startswith("_scaled_dot_product"):
        q, k = _dims(args[0]), _dims(args[1]) if len(args) > 1 else ()
        return 4.0 * math.prod(q) * (k[-2] if len(k) >= 2 else 1) if q else 0.0
    if len(args) < first + 2:
        return 0.0
    a, b = _dims(args[first]), _dims(args[first + 1])
    if len(a) < 2 or len(b) < 2:
        return 0.0
    return 2.0 * math.prod(a) * b[-1]


def stand_in(torch: Any, func: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
    """``func``'s outputs, shaped by its meta kernel, filled with standard-normal floats (zeros for integers)."""
    from torch.utils._pytree import tree_map_only

    meta_args, meta_kwargs = tree_map_only(torch.Tensor, lambda t: t.to("meta"), (args, dict(kwargs)))
    out = func(*meta_args, **meta_kwargs)

    def fill(t: Any) -> Any:
        if t.dtype.is_floating_point:
            return torch.randn(t.shape, dtype=t.dtype)
        return torch.zeros(t.shape, dtype=t.dtype)

    return tree_map_only(torch.Tensor, fill, out)
