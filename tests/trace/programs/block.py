"""Tensor-parallel transformer layers (pre-norm, RMSNorm, causal GQA attention, SwiGLU MLP, two all-reduces per
layer): about 15 ops a layer, for timing the tracer and as a larger example."""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn


class Layer(nn.Module):
    def __init__(self, h: int, heads: int, kv_heads: int, f: int, world: int) -> None:
        super().__init__()
        self.heads, self.kv, self.dim = heads // world, max(1, kv_heads // world), h // heads
        self.norm1, self.norm2 = nn.RMSNorm(h), nn.RMSNorm(h)
        self.qkv = nn.Linear(h, (self.heads + 2 * self.kv) * self.dim, bias=False)
        self.o = nn.Linear(self.heads * self.dim, h, bias=False)
        self.gate_up = nn.Linear(h, 2 * f // world, bias=False)
        self.down = nn.Linear(f // world, h, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x.shape[0]
        q, k, v = self.qkv(self.norm1(x)).split([self.heads * self.dim, self.kv * self.dim, self.kv * self.dim], -1)
        q = q.view(t, self.heads, self.dim).transpose(0, 1)
        k = k.view(t, self.kv, self.dim).transpose(0, 1)
        v = v.view(t, self.kv, self.dim).transpose(0, 1)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        a = self.o(a.transpose(0, 1).reshape(t, -1))
        dist.all_reduce(a)
        x = x + a
        gate, up = self.gate_up(self.norm2(x)).chunk(2, dim=-1)
        m = self.down(F.silu(gate) * up)
        dist.all_reduce(m)
        return x + m


def layers(model: nn.ModuleList, x: torch.Tensor) -> torch.Tensor:
    for layer in model:
        x = layer(x)
    return x


def inputs(
    rank: int,
    world: int,
    device: torch.device,
    t: int = 4096,
    h: int = 4096,
    heads: int = 32,
    kv_heads: int = 8,
    f: int = 14336,
    n_layers: int = 2,
) -> tuple[object, ...]:
    model = nn.ModuleList(Layer(h, heads, kv_heads, f, world) for _ in range(n_layers)).to(device, torch.bfloat16)
    return model, torch.randn(t, h, device=device, dtype=torch.bfloat16)
