"""CUDA-event timing shared by the torch workers (imports nothing but the standard library)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["event_times"]


def event_times(
    torch: Any,
    fn: Callable[[], Any],
    warmup: int,
    iters: int,
    *,
    per_call: int = 1,
    before: Callable[[], Any] | None = None,
) -> list[float]:
    """Seconds of each of ``iters`` timed calls of ``fn`` after ``warmup`` untimed ones (CUDA events around each
    call on the current stream), divided by ``per_call`` when one call runs several ops (a replayed graph).
    ``before`` runs ahead of each timed call, outside the events (e.g. a barrier across GPUs)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(iters):
        if before is not None:
            before()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b) * 1e-3 / per_call)
    return out
