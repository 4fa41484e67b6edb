"""Sequence-parallel attention (Megatron-LM sequence parallelism): the sequence arrives split over the ranks,
is all-gathered, goes through a column-parallel QKV projection (heads split over the ranks), causal
grouped-query attention and a row-parallel output projection, and leaves reduce-scattered over the sequence.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F


def sp_attention(
    x: torch.Tensor, w_qkv: torch.Tensor, w_o: torch.Tensor, heads: int, kv_heads: int, head_dim: int
) -> torch.Tensor:
    world = dist.get_world_size()
    t_local, h = x.shape
    full = torch.empty(t_local * world, h, device=x.device, dtype=x.dtype)
    dist.all_gather_into_tensor(full, x)
    qkv = full @ w_qkv  # [T, (heads + 2 kv_heads) head_dim] of this rank's heads
    q, k, v = qkv.split([heads * head_dim, kv_heads * head_dim, kv_heads * head_dim], dim=-1)
    t = full.shape[0]
    q = q.view(t, heads, head_dim).transpose(0, 1).unsqueeze(0)
    k = k.view(t, kv_heads, head_dim).transpose(0, 1).unsqueeze(0)
    v = v.view(t, kv_heads, head_dim).transpose(0, 1).unsqueeze(0)
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=kv_heads != heads)
    o = o.squeeze(0).transpose(0, 1).reshape(t, heads * head_dim)  # a copy: the transpose is not contiguous
    y = o @ w_o
    out = torch.empty(t_local, h, device=x.device, dtype=x.dtype)
    dist.reduce_scatter_tensor(out, y)
    return out


def inputs(
    rank: int, world: int, device: torch.device, t: int = 8192, n_heads: int = 32, n_kv: int = 8, head_dim: int = 128
) -> dict[str, object]:
    h = n_heads * head_dim
    heads, kv_heads = n_heads // world, max(1, n_kv // world)
    bf16 = torch.bfloat16
    return {
        "x": torch.randn(t // world, h, device=device, dtype=bf16),
        "w_qkv": torch.randn(h, (heads + 2 * kv_heads) * head_dim, device=device, dtype=bf16),
        "w_o": torch.randn(heads * head_dim, h, device=device, dtype=bf16),
        "heads": heads,
        "kv_heads": kv_heads,
        "head_dim": head_dim,
    }
