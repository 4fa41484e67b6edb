"""Programs that go wrong, for the error tests."""

from __future__ import annotations

import torch

NOT_A_FUNCTION = 42


def fine(x: torch.Tensor) -> torch.Tensor:
    return x * 2


def raising(x: torch.Tensor) -> torch.Tensor:
    if (x * 2).shape[0] > 0:
        raise ValueError("the program itself failed")
    return x


def data_dependent(x: torch.Tensor) -> torch.Tensor:
    return torch.repeat_interleave(x, (x[:, 0] > 0).long(), dim=0)


def bounded(x: torch.Tensor) -> torch.Tensor:
    return x[x > 0]


def inputs(rank: int, world: int, device: torch.device, n: int = 16) -> tuple[torch.Tensor]:
    return (torch.randn(n, n, device=device),)


def inputs_raising(rank: int, world: int, device: torch.device) -> tuple[torch.Tensor]:
    raise RuntimeError("INPUTS failed on purpose")


def inputs_not_a_tuple(rank: int, world: int, device: torch.device) -> int:
    return 7
