"""An MoE layer's expert-parallel dispatch: route tokens to their top-k experts, exchange them with an
all-to-all of variable splits (each rank sends a different number of tokens to each rank), run the local
experts' up projection, and send the results back with the reverse all-to-all.

The splits are data-dependent in a real run (counted on the GPU, then ``.tolist()``); here INPUTS gives them
as Python lists, different on every rank, so the sizes are exact.
"""

from __future__ import annotations

import torch
import torch.distributed as dist


def moe_dispatch(
    x: torch.Tensor,
    w_router: torch.Tensor,
    w_expert: torch.Tensor,
    send_splits: list[int],
    recv_splits: list[int],
    top_k: int,
) -> torch.Tensor:
    logits = x @ w_router
    probs = torch.softmax(logits.float(), dim=-1)
    _, experts = torch.topk(probs, top_k, dim=-1)
    order = torch.argsort(experts.flatten())
    tokens = x.index_select(0, order // top_k)  # one row per (token, expert) choice, grouped by expert
    received = tokens.new_empty(sum(recv_splits), x.shape[1])
    dist.all_to_all_single(received, tokens, output_split_sizes=recv_splits, input_split_sizes=send_splits)
    hidden = received @ w_expert
    back = hidden.new_empty(sum(send_splits), hidden.shape[1])
    dist.all_to_all_single(back, hidden, output_split_sizes=send_splits, input_split_sizes=recv_splits)
    return back


def splits(rank: int, world: int, rows: int) -> tuple[list[int], list[int]]:
    """Uneven splits: rank r sends (1 + (r + j) % world) shares of its rows to rank j."""

    def share(src: int, dst: int) -> int:
        return 1 + (src + dst) % world

    def sent(src: int) -> list[int]:
        total = sum(share(src, j) for j in range(world))
        out = [rows * share(src, j) // total for j in range(world)]
        out[-1] += rows - sum(out)
        return out

    return sent(rank), [sent(src)[rank] for src in range(world)]


def inputs(
    rank: int,
    world: int,
    device: torch.device,
    t: int = 4096,
    h: int = 4096,
    experts: int = 64,
    top_k: int = 2,
    f: int = 1536,
) -> dict[str, object]:
    send, recv = splits(rank, world, t * top_k)
    bf16 = torch.bfloat16
    return {
        "x": torch.randn(t, h, device=device, dtype=bf16),
        "w_router": torch.randn(h, experts, device=device, dtype=bf16),
        "w_expert": torch.randn(h, f, device=device, dtype=bf16),
        "send_splits": send,
        "recv_splits": recv,
        "top_k": top_k,
    }
