"""Point-to-point: a ring exchange with ``batch_isend_irecv`` (send to the next rank, receive from the previous
one: one SPMD transfer), and a pipeline stage that sends its activations on (``dist.send``)."""

from __future__ import annotations

import torch
import torch.distributed as dist


def ring_exchange(x: torch.Tensor) -> torch.Tensor:
    rank, world = dist.get_rank(), dist.get_world_size()
    out = torch.empty_like(x)
    ops = [dist.P2POp(dist.isend, x, (rank + 1) % world), dist.P2POp(dist.irecv, out, (rank - 1) % world)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    return out


def pipeline_send(x: torch.Tensor, w: torch.Tensor) -> None:
    y = x @ w
    dist.send(y, dst=dist.get_rank() + 1)


def ring_inputs(rank: int, world: int, device: torch.device, t: int = 1024, h: int = 4096) -> tuple[torch.Tensor]:
    return (torch.randn(t, h, device=device, dtype=torch.bfloat16),)


def inputs(rank: int, world: int, device: torch.device, t: int = 1024, h: int = 4096) -> tuple[torch.Tensor, ...]:
    return torch.randn(t, h, device=device, dtype=torch.bfloat16), torch.randn(
        h, h, device=device, dtype=torch.bfloat16
    )
