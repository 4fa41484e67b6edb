"""A chain of elementwise ops (what torch.compile would fuse into one kernel; eager runs one kernel each)."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def chain(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    y = x + bias  # broadcast over rows
    y = F.silu(y)
    y = y * 2.0
    y = torch.where(y > 0, y, torch.zeros_like(y))
    return torch.exp(y).to(torch.float32)


def inputs(rank: int, world: int, device: torch.device, rows: int = 4096, cols: int = 8192) -> tuple[torch.Tensor, ...]:
    return (
        torch.randn(rows, cols, device=device, dtype=torch.bfloat16),
        torch.randn(cols, device=device, dtype=torch.bfloat16),
    )


@torch.no_grad()
def chain_no_grad(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """The chain under a ``@torch.no_grad()`` decorator, and a second grad-mode block inside it."""
    y = F.silu(x + bias)
    with torch.enable_grad():
        y = y * 2.0
    return y
