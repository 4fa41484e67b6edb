"""Workload models: parameters -> stages of compute and communication, per GPU, for ``g`` GPUs.

Tensor-parallel conventions (global shapes, ``g`` GPUs; ParallelKittens section 5, Megatron-LM):

- ``gemm_rs``: each GPU holds A[M, K/g] and W[K/g, N], computes the partial C[M, N], reduce-scatters rows into
  C[M/g, N]. Communication: reduce-scatter of M x N elements (partial sums: the receiver adds).
- ``ag_gemm``: each GPU holds X[M/g, K] and W[K, N/g], all-gathers X, computes Y[M, N/g].
- ``gemm_ar``: A[M, K/g] @ W[K/g, N], all-reduce C[M, N] (in the switch where it can, else into peers).
- ``gemm_ag``: X[M/g, K] @ W[K, N] -> Y[M/g, N], all-gather Y.
- ``ring_attention``: sequence split over g GPUs; g-1 steps pass K/V blocks to the next GPU while attention of
  the local queries runs on the block in hand (Liu et al., 2023).
- ``ulysses_attention``: all-to-all Q, K, V from sequence- to head-sharding, attention on h/g heads, all-to-all
  the output back (DeepSpeed-Ulysses, Jacobs et al., 2023).
- ``moe``: tokens routed to top-k of E experts spread over g GPUs: all-to-all dispatch, grouped GEMMs (up and
  down projections), all-to-all combine.
- ``ddp_allreduce``: backward of a P-parameter model on T tokens per GPU (4 P T FLOPs) overlapped with the
  gradient all-reduce in buckets.
- ``fsdp``: ZeRO-3 step: all-gather parameters before forward (2 P T) and backward (4 P T), reduce-scatter
  gradients after backward.
- ``pipeline_sendrecv``: one pipeline stage of L layers of a hidden-size-h transformer on ``microbatches``
  micro-batches, sending each micro-batch's activations to the next stage while it computes the next one.
- ``collective``: one plain collective, no compute.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

from rooflib.compute import attention, bytes_per_element, gemm
from rooflib.compute.cost import ComputeCost
from rooflib.conventions import check_op
from rooflib.errors import GroupError
from rooflib.schedule.pressure import gemm_pipeline
from rooflib.schedule.stage import Comm, Stage
from rooflib.specs.resolve import System

__all__ = ["MODELS", "Model"]

Model = Callable[[dict[str, Any], System, int], list[Stage]]


def _split(value: int, g: int, what: str) -> int:
    if value % g:
        raise GroupError(f"{what} = {value} is not divisible by the {g} GPUs of the group")
    return value // g


def _gemm(system: System, m: int, n: int, k: int, dtype: str, sms: int | None) -> ComputeCost:
    return gemm(system.device, m, n, k, dtype, sms=sms)


def _tiles(system: System, m: int, n: int) -> tuple[int, float]:
    t = system.device.gemm_tile
    return math.ceil(m / t.m) * math.ceil(n / t.n), float(t.m * t.n)


def gemm_rs(p: dict[str, Any], system: System, g: int) -> list[Stage]:
    m, n, k, dt = p["m"], p["n"], p["k"], p["dtype"]
    kk = _split(k, g, "k")
    _split(m, g, "m")
    tiles, elems = _tiles(system, m, n)
    eb = bytes_per_element(dt)
    comm = Comm("reduce_scatter", m * n * eb, "peer")
    stage = Stage("gemm_rs", partial(_gemm, system, m, n, kk, dt), comm, tiles, elems * eb)
    return [replace(stage, pipeline=gemm_pipeline(system, eb))]


def ag_gemm(p: dict[str, Any], system: System, g: int) -> list[Stage]:
    m, n, k, dt = p["m"], p["n"], p["k"], p["dtype"]
    nn = _split(n, g, "n")
    _split(m, g, "m")
    tiles, _ = _tiles(system, m, nn)
    eb = bytes_per_element(dt)
    comm = Comm("all_gather", m * k * eb, "none", before_compute=True)
    reuse = math.ceil(nn / system.device.gemm_tile.n)  # every column tile of a row block reads the gathered rows
    stage = Stage("ag_gemm", partial(_gemm, system, m, nn, k, dt), comm, tiles, m * k * eb / max(1, tiles))
    return [replace(stage, intra_reuse=float(reuse), pipeline=gemm_pipeline(system, eb))]


def gemm_ar(p: dict[str, Any], system: System, g: int) -> list[Stage]:
    m, n, k, dt = p["m"], p["n"], p["k"], p["dtype"]
    kk = _split(k, g, "k")
    tiles, elems = _tiles(system, m, n)
    eb = bytes_per_element(dt)
    reduction = "switch" if system.switch.in_network_reduction and system.switch.multicast else "peer"
    comm = Comm("all_reduce", m * n * eb, reduction)  # type: ignore[arg-type]
    stage = Stage("gemm_ar", partial(_gemm, system, m, n, kk, dt), comm, tiles, elems * eb)
    return [replace(stage, pipeline=gemm_pipeline(system, eb))]


def gemm_ag(p: dict[str, Any], system: System, g: int) -> list[Stage]:
    m, n, k, dt = p["m"], p["n"], p["k"], p["dtype"]
    mm = _split(m, g, "m")
    tiles, elems = _tiles(system, mm, n)
    eb = bytes_per_element(dt)
    comm = Comm("all_gather", m * n * eb, "none")
    stage = Stage("gemm_ag", partial(_gemm, system, mm, n, k, dt), comm, tiles, elems * eb)
    return [replace(stage, pipeline=gemm_pipeline(system, eb))]


def _attn(
    system: System, b: int, h: int, sq: int, skv: int, d: int, dt: str, causal: bool, sms: int | None
) -> ComputeCost:
    return attention(system.device, b, h, sq, skv, d, dt, causal=causal, sms=sms)


def ring_attention(p: dict[str, Any], system: System, g: int) -> list[Stage]:
    b, h, s, d, dt, causal = p["batch"], p["heads"], p["seq"], p["head_dim"], p["dtype"], p["causal"]
    local = _split(s, g, "seq")
    kv_block = 2 * b * h * local * d * bytes_per_element(dt)
    comm = Comm("send_recv", (g - 1) * kv_block, "none", before_compute=True, calls=max(1, g - 1))
    compute = partial(_attn, system, b, h, local, s, d, dt, causal)
    q_tiles = h * b * math.ceil(local / 128)  # every query tile reads the whole K/V block in hand
    return [Stage("ring_attention", compute, comm, g, kv_block, steps=g, intra_reuse=float(q_tiles) / h / b)]


def ulysses_attention(p: dict[str, Any], system: System, g: int) -> list[Stage]:
    b, h, s, d, dt, causal = p["batch"], p["heads"], p["seq"], p["head_dim"], p["dtype"], p["causal"]
    hh = _split(h, g, "heads")
    local = _split(s, g, "seq")
    per_tensor = b * local * h * d * bytes_per_element(dt)  # one rank's slice of Q, K, V or O
    comm = Comm("all_to_all", 4 * per_tensor, "none", before_compute=True, calls=4)
    compute = partial(_attn, system, b, hh, s, s, d, dt, causal)
    reuse = float(math.ceil(s / 128))  # K/V of a head are read by each of its query tiles
    return [Stage("ulysses_attention", compute, comm, hh, 4 * per_tensor / hh, steps=hh, intra_reuse=reuse)]


def moe(p: dict[str, Any], system: System, g: int) -> list[Stage]:
    t, hid, ffn, topk, dt = p["tokens"], p["hidden"], p["ffn"], p["topk"], p["dtype"]
    _split(p["experts"], g, "experts")
    if topk > p["experts"]:
        raise GroupError(f"topk = {topk} exceeds experts = {p['experts']}: a token visits distinct experts")
    routed = t * topk  # tokens each GPU hands to experts; uniform routing brings as many back
    eb = bytes_per_element(dt)
    dispatch = Comm("all_to_all", routed * hid * eb, "none", before_compute=True)
    combine = Comm("all_to_all", routed * hid * eb, "none")
    tiles_up, _ = _tiles(system, routed, ffn)
    tiles_down, _ = _tiles(system, routed, hid)
    return [
        Stage(
            "moe_dispatch_up",
            partial(_gemm, system, routed, ffn, hid, dt),
            dispatch,
            tiles_up,
            hid * eb * 128,
            intra_reuse=float(math.ceil(ffn / system.device.gemm_tile.n)),
        ),
        Stage("moe_down_combine", partial(_gemm, system, routed, hid, ffn, dt), combine, tiles_down, hid * eb * 128),
    ]


def _dense(system: System, flops: float, dt: str, sms: int | None) -> ComputeCost:
    """A transformer pass as one large GEMM of the same FLOPs (square-ish, K = 8192) for rate and quantisation."""
    k = 8192
    m = max(1, int(math.sqrt(flops / (2 * k))))
    return gemm(system.device, m, m, k, dt, sms=sms)


def ddp_allreduce(p: dict[str, Any], system: System, g: int) -> list[Stage]:
    params, tokens, dt, bucket = p["params"], p["tokens"], p["dtype"], p["bucket_bytes"]
    element = bytes_per_element(p["grad_dtype"])
    if bucket < element:
        raise GroupError(f"bucket_bytes = {bucket} is smaller than one {p['grad_dtype']} gradient ({element:g} bytes)")
    grads = params * element
    buckets = max(1, math.ceil(grads / bucket))
    comm = Comm("all_reduce", grads, "peer", calls=buckets)  # DDP all-reduces each bucket as it fills
    compute = partial(_dense, system, 4.0 * params * tokens, dt)
    return [Stage("backward_allreduce", compute, comm, buckets, float(bucket), steps=buckets)]


def fsdp(p: dict[str, Any], system: System, g: int) -> list[Stage]:
    params, tokens, dt = p["params"], p["tokens"], p["dtype"]
    shards = params * bytes_per_element(dt)
    layers = p["layers"]
    if layers > params:
        raise GroupError(f"layers = {layers} exceeds params = {params}: every layer holds at least one parameter")
    gather = Comm("all_gather", shards, "none", before_compute=True, calls=layers)  # one all-gather per layer
    scatter = Comm("reduce_scatter", params * bytes_per_element(p["grad_dtype"]), "peer", calls=layers)
    fwd = partial(_dense, system, 2.0 * params * tokens, dt)
    bwd = partial(_dense, system, 4.0 * params * tokens, dt)
    return [
        Stage("forward_allgather", fwd, gather, layers, shards / layers, steps=layers),
        Stage("backward_allgather", bwd, gather, layers, shards / layers, steps=layers),
        Stage("gradient_reducescatter", None, scatter, layers, shards / layers, steps=layers),
    ]


def pipeline_sendrecv(p: dict[str, Any], system: System, g: int) -> list[Stage]:
    tokens, hidden, layers, dt, mb = p["tokens"], p["hidden"], p["layers"], p["dtype"], p["microbatches"]
    flops = 24.0 * tokens * hidden * hidden * layers * mb  # forward of L layers (attention + MLP projections)
    acts = tokens * hidden * bytes_per_element(dt)  # one micro-batch's activations
    comm = Comm("send_recv", mb * acts, "none", calls=mb)
    return [Stage("stage_forward_send", partial(_dense, system, flops, dt), comm, mb, acts, steps=mb)]


def collective(p: dict[str, Any], system: System, g: int) -> list[Stage]:
    op = check_op(p["op"])
    return [Stage(op, None, Comm(op, float(p["bytes"]), "none"))]


MODELS: dict[str, Model] = {
    f.__name__: f
    for f in (
        gemm_rs,
        ag_gemm,
        gemm_ar,
        gemm_ag,
        ring_attention,
        ulysses_attention,
        moe,
        ddp_allreduce,
        fsdp,
        pipeline_sendrecv,
        collective,
    )
}
