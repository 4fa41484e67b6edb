"""Overlap written by hand: an asynchronous all-reduce waited for later, and a side stream that the main stream
waits for (``wait_stream``); plus the functional collectives (``torch.distributed._functional_collectives``)."""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol


def overlapped(a: torch.Tensor, b: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    work = dist.all_reduce(a, async_op=True)  # overlaps the GEMM below
    y = b @ w
    work.wait()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        z = y * 2
    torch.cuda.current_stream().wait_stream(side)
    return a + z


def functional(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    gathered = funcol.all_gather_tensor(x, 0, dist.group.WORLD)
    y = gathered @ w
    return funcol.reduce_scatter_tensor(y, "sum", 0, dist.group.WORLD)


def inputs(rank: int, world: int, device: torch.device, t: int = 2048, h: int = 4096) -> tuple[torch.Tensor, ...]:
    bf16 = torch.bfloat16
    return (
        torch.randn(t, h, device=device, dtype=bf16),
        torch.randn(t, h, device=device, dtype=bf16),
        torch.randn(h, h, device=device, dtype=bf16),
    )


def functional_inputs(
    rank: int, world: int, device: torch.device, t: int = 2048, h: int = 4096
) -> tuple[torch.Tensor, ...]:
    bf16 = torch.bfloat16
    return torch.randn(t // world, h, device=device, dtype=bf16), torch.randn(h, h, device=device, dtype=bf16)
