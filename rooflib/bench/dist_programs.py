"""Distributed validation programs (torch + torch.distributed), traced by ``rooflib trace`` and timed by
:mod:`rooflib.bench.dist_programs_worker` under torchrun at any world size.

Each program ``f(*args)`` runs on every rank of the default process group; ``<name>_inputs(rank, world, device,
**params)`` returns that rank's arguments, following the tracer's SPMD convention: random values from ``seed``
(the worker draws a fresh one per input group on rank 0 and broadcasts it), each rank's own tensors from its
stream of the seed and tensors that are the same on every rank (a replicated activation or weight) from a stream
every rank shares;
``<name>_reference(world, args_of_every_rank, rank)`` computes the rank's expected output in float32 from every
rank's arguments (the worker all-gathers them), so every output is checked.

- ``tp_mlp``: Megatron tensor-parallel MLP: ``x`` replicated, ``w1`` split by columns, ``w2`` by rows;
  ``all_reduce(gelu(x @ w1) @ w2)`` (Shoeybi et al., 2019).
- ``sp_attention``: sequence-parallel attention: each rank holds ``seq / world`` tokens, projects Q, K, V, all-gathers
  K and V along the sequence and attends its queries to the whole sequence, then the output projection.
- ``moe_dispatch_combine``: one expert per rank, balanced routing (chunk ``j`` of every rank's tokens goes to
  expert ``j``): all-to-all dispatch, the expert's MLP, all-to-all combine (the EP pattern of DeepEP / Megatron).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rooflib.bench.programs import _gen, _randn

__all__ = ["DIST_PROGRAMS", "DistProgram"]


# --- the programs ---------------------------------------------------------------------------------------------


def tp_mlp(x: Any, w1: Any, w2: Any) -> Any:
    """``all_reduce(gelu_tanh(x @ w1) @ w2)``: ``x [tokens, hidden]``, ``w1 [hidden, ffn / world]``, ``w2 [ffn /
    world, hidden]``."""
    import torch.distributed as dist
    import torch.nn.functional as F

    y = F.gelu(x @ w1, approximate="tanh") @ w2
    dist.all_reduce(y)
    return y


def sp_attention(x: Any, wqkv: Any, wo: Any, heads: int) -> Any:
    """``x [batch, seq / world, hidden]`` (this rank's tokens), ``wqkv [hidden, 3 hidden]``, ``wo [hidden, hidden]``:
    K and V all-gathered along the sequence, non-causal attention of the local queries, output projection."""
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F

    world = dist.get_world_size()
    b, s, hidden = x.shape
    d = hidden // heads
    q, k, v = (x @ wqkv).split([hidden, hidden, hidden], dim=-1)
    kv = torch.stack([k, v]).contiguous()  # [2, b, s, hidden]
    flat = torch.empty((world * 2, b, s, hidden), dtype=kv.dtype, device=kv.device)
    dist.all_gather_into_tensor(flat, kv)  # concatenated along dim 0, as every backend takes it
    full = flat.view(world, 2, b, s, hidden)
    k_all = full[:, 0].transpose(0, 1).reshape(b, world * s, heads, d).transpose(1, 2)
    v_all = full[:, 1].transpose(0, 1).reshape(b, world * s, heads, d).transpose(1, 2)
    o = F.scaled_dot_product_attention(q.view(b, s, heads, d).transpose(1, 2), k_all, v_all)
    return o.transpose(1, 2).reshape(b, s, hidden) @ wo


def moe_dispatch_combine(x: Any, w_up: Any, w_down: Any) -> Any:
    """``x [tokens, hidden]``; this rank's expert ``w_up [hidden, ffn]``, ``w_down [ffn, hidden]``; chunk ``j`` of
    the tokens goes to rank ``j``'s expert and comes back in place."""
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F

    received = torch.empty_like(x)
    dist.all_to_all_single(received, x)
    y = F.gelu(received @ w_up, approximate="tanh") @ w_down
    out = torch.empty_like(y)
    dist.all_to_all_single(out, y)
    return out


# --- their inputs -------------------------------------------------------------------------------------------


def tp_mlp_inputs(
    rank: int,
    world: int,
    device: Any,
    *,
    tokens: int = 4096,
    hidden: int = 4096,
    ffn: int = 14336,
    dtype: str = "bf16",
    seed: int | None = None,
) -> tuple[Any, ...]:
    if ffn % world:
        raise ValueError(f"ffn = {ffn} is not divisible by world = {world}")
    shared, own = _gen(device, 0, seed), _gen(device, rank + 1, seed)
    x = _randn((tokens, hidden), shared, device, dtype)
    w1 = _randn((hidden, ffn // world), own, device, dtype, 1 / math.sqrt(hidden))
    w2 = _randn((ffn // world, hidden), own, device, dtype, 1 / math.sqrt(ffn))
    return x, w1, w2


def sp_attention_inputs(
    rank: int,
    world: int,
    device: Any,
    *,
    batch: int = 1,
    seq: int = 8192,
    hidden: int = 4096,
    heads: int = 32,
    dtype: str = "bf16",
    seed: int | None = None,
) -> tuple[Any, ...]:
    if seq % world or hidden % heads:
        raise ValueError(f"seq = {seq} must divide by world = {world} and hidden = {hidden} by heads = {heads}")
    shared, own = _gen(device, 0, seed), _gen(device, rank + 1, seed)
    wqkv = _randn((hidden, 3 * hidden), shared, device, dtype, 1 / math.sqrt(hidden))
    wo = _randn((hidden, hidden), shared, device, dtype, 1 / math.sqrt(hidden))
    return _randn((batch, seq // world, hidden), own, device, dtype), wqkv, wo, heads


def moe_inputs(
    rank: int,
    world: int,
    device: Any,
    *,
    tokens: int = 8192,
    hidden: int = 4096,
    ffn: int = 2048,
    dtype: str = "bf16",
    seed: int | None = None,
) -> tuple[Any, ...]:
    if tokens % world:
        raise ValueError(f"tokens = {tokens} is not divisible by world = {world}")
    own = _gen(device, rank + 1, seed)
    x = _randn((tokens, hidden), own, device, dtype)
    w_up = _randn((hidden, ffn), own, device, dtype, 1 / math.sqrt(hidden))
    w_down = _randn((ffn, hidden), own, device, dtype, 1 / math.sqrt(ffn))
    return x, w_up, w_down


# --- float32 references from every rank's arguments -------------------------------------------------------------


def _f32(t: Any) -> Any:
    return t.float()


def tp_mlp_reference(world: int, args: Sequence[tuple[Any, ...]], rank: int) -> Any:
    import torch
    import torch.nn.functional as F

    x = _f32(args[0][0])
    w1 = torch.cat([_f32(a[1]) for a in args], dim=1)
    w2 = torch.cat([_f32(a[2]) for a in args], dim=0)
    return F.gelu(x @ w1, approximate="tanh") @ w2


def sp_attention_reference(world: int, args: Sequence[tuple[Any, ...]], rank: int) -> Any:
    import torch
    import torch.nn.functional as F

    x = torch.cat([_f32(a[0]) for a in args], dim=1)
    wqkv, wo, heads = _f32(args[0][1]), _f32(args[0][2]), int(args[0][3])
    b, s, hidden = x.shape
    d = hidden // heads
    q, k, v = (t.view(b, s, heads, d).transpose(1, 2) for t in (x @ wqkv).split([hidden] * 3, dim=-1))
    o = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, s, hidden) @ wo
    local = s // world
    return o[:, rank * local : (rank + 1) * local]


def moe_reference(world: int, args: Sequence[tuple[Any, ...]], rank: int) -> Any:
    import torch
    import torch.nn.functional as F

    x = _f32(args[rank][0])
    chunk = x.shape[0] // world
    parts = []
    for j in range(world):  # chunk j went to rank j's expert
        up, down = _f32(args[j][1]), _f32(args[j][2])
        parts.append(F.gelu(x[j * chunk : (j + 1) * chunk] @ up, approximate="tanh") @ down)
    return torch.cat(parts)


@dataclass(frozen=True)
class DistProgram:
    """A distributed program, its inputs, its float32 reference and the parameter sets the benchmark measures."""

    fn: Callable[..., Any]
    inputs: Callable[..., tuple[Any, ...]]
    reference: Callable[[int, Sequence[tuple[Any, ...]], int], Any]
    sizes: tuple[dict[str, int], ...]
    tolerance: float = 0.02  # relative Frobenius error of bf16 operands against the float32 reference


DIST_PROGRAMS: dict[str, DistProgram] = {
    "tp_mlp": DistProgram(
        tp_mlp,
        tp_mlp_inputs,
        tp_mlp_reference,
        (
            {"tokens": 256, "hidden": 2048, "ffn": 8192},
            {"tokens": 4096, "hidden": 4096, "ffn": 14336},
            {"tokens": 8192, "hidden": 8192, "ffn": 28672},
        ),
    ),
    "sp_attention": DistProgram(
        sp_attention,
        sp_attention_inputs,
        sp_attention_reference,
        (
            {"batch": 1, "seq": 2048, "hidden": 2048, "heads": 16},
            {"batch": 1, "seq": 16384, "hidden": 4096, "heads": 32},
        ),
    ),
    "moe_dispatch_combine": DistProgram(
        moe_dispatch_combine,
        moe_inputs,
        moe_reference,
        (
            {"tokens": 1024, "hidden": 2048, "ffn": 1024},
            {"tokens": 8192, "hidden": 4096, "ffn": 2048},
        ),
    ),
}
