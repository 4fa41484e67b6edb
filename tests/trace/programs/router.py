"""An MoE router: softmax over the experts, top-k, the load of the busiest expert read back with ``.item()`` (a
host sync) and the per-expert counts with ``.tolist()`` (one more sync)."""

from __future__ import annotations

import torch


def router(logits: torch.Tensor, top_k: int) -> tuple[torch.Tensor, int]:
    probs = torch.softmax(logits, dim=-1)
    weights, experts = torch.topk(probs, top_k, dim=-1)
    weights = weights / weights.sum(dim=-1, keepdim=True)
    counts = torch.zeros(logits.shape[-1], device=logits.device, dtype=torch.long)
    counts.scatter_add_(0, experts.flatten(), torch.ones_like(experts.flatten()))
    busiest = int(counts.max().item())
    per_expert = counts.tolist()
    return weights, busiest + len(per_expert)


def inputs(
    rank: int, world: int, device: torch.device, t: int = 8192, experts: int = 64, top_k: int = 8
) -> tuple[object, ...]:
    return torch.randn(t, experts, device=device, dtype=torch.float32), top_k
