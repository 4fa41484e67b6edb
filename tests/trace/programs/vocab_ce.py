"""Cross-entropy over a large vocabulary: the LM head GEMM and the loss, whole (``cross_entropy``) or
vocabulary-parallel (Megatron-LM): each rank holds V/g columns of the head, and the softmax's max, sum of
exponentials and the target logits are all-reduced (three small all-reduces of T values each)."""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F


def cross_entropy(hidden: torch.Tensor, head: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    logits = hidden @ head
    return F.cross_entropy(logits.float(), target)


def vocab_parallel_cross_entropy(hidden: torch.Tensor, head: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    rank, local_v = dist.get_rank(), head.shape[1]
    logits = (hidden @ head).float()
    top = logits.amax(dim=-1)
    dist.all_reduce(top, op=dist.ReduceOp.MAX)
    shifted = logits - top.unsqueeze(-1)
    sum_exp = shifted.exp().sum(dim=-1)
    dist.all_reduce(sum_exp)
    local = target - rank * local_v
    mine = (local >= 0) & (local < local_v)
    picked = shifted.gather(-1, local.clamp(0, local_v - 1).unsqueeze(-1)).squeeze(-1) * mine
    dist.all_reduce(picked)
    return (sum_exp.log() - picked).mean()


def inputs(
    rank: int, world: int, device: torch.device, t: int = 8192, h: int = 4096, v: int = 131072, parallel: int = 1
) -> tuple[torch.Tensor, ...]:
    cols = v // world if parallel else v
    return (
        torch.randn(t, h, device=device, dtype=torch.bfloat16),
        torch.randn(h, cols, device=device, dtype=torch.bfloat16),
        torch.randint(0, v, (t,), device=device),
    )
