"""A tensor-parallel MLP block (Megatron-LM): column-parallel up projection, GELU, row-parallel down projection,
all-reduce of the output. Each rank holds F/g columns of the up weight and F/g rows of the down weight.

    rooflib trace tests/trace/programs/tp_mlp.py:tp_mlp --inputs tests/trace/programs/tp_mlp.py:inputs \\
        --system hgx-h100 --gpus 8 --set t=4096 --set h=8192 --set f=28672
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


class TPMLP(nn.Module):
    def __init__(self, h: int, f: int, world: int, dtype: torch.dtype) -> None:
        super().__init__()
        self.up = nn.Linear(h, f // world, bias=False, dtype=dtype)
        self.down = nn.Linear(f // world, h, bias=False, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.gelu(self.up(x), approximate="tanh"))


def tp_mlp(model: TPMLP, x: torch.Tensor) -> torch.Tensor:
    y = model(x)
    dist.all_reduce(y)
    return y


def inputs(
    rank: int, world: int, device: torch.device, t: int = 4096, h: int = 8192, f: int = 28672, dtype: str = "bf16"
) -> tuple[TPMLP, torch.Tensor]:
    model = TPMLP(h, f, world, DTYPES[dtype]).to(device)
    return model, torch.randn(t, h, device=device, dtype=DTYPES[dtype])
