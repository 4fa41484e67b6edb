"""Regions of a program that one fused kernel could run: a compute op and the communication that feeds or drains it.

The schedule model (:mod:`rooflib.schedule`) prices a region as a :class:`~rooflib.schedule.Stage`: sequential,
intra-SM or inter-SM, by each transfer mechanism, against the library's own collective. A region is found
from the op sequence (consecutive ops of one stream whose bytes match) or named in the program (a
communication op's ``overlaps`` parameter names the compute op it may overlap). Patterns:

- ``gemm_rs`` / ``gemm_ar``: a GEMM, then a reduce-scatter / all-reduce of exactly its output (partial sums);
  here and in the two GEMM patterns below, copies of the moved tensor in between (a ``clone`` of the output, a
  ``cat`` of gathered pieces) belong to the region: the fused kernel writes or reads the tensor in place;
- ``gemm_ag``: a GEMM, then an all-gather of its output from every rank;
- ``ag_gemm``: an all-gather of exactly a GEMM's input, then the GEMM;
- ``a2a_gemm`` / ``gemm_a2a``: an all-to-all delivering a GEMM's input (MoE dispatch + expert GEMM) / moving
  its output (expert GEMM + combine);
- ``ring_attention``: send/recv of K/V blocks, then attention on the blocks (Liu et al., 2023): one step per
  block;
- ``ag_attention``: an all-gather of K and V along the sequence, then attention of the local queries over them
  (context parallelism by all-gather, Llama 3's choice): a fused kernel pulls each peer's block as it computes,
  as ring attention does, one step per rank;
- ``ulysses_attention``: all-to-all, attention, all-to-all (sequence to head sharding and back; DeepSpeed-Ulysses);
- ``map_comm`` / ``comm_map``: a memory-bound op (elementwise, normalisation, reduction) whose output the
  collective after it moves / which reads the collective's output (quantise then all-gather, dequantise then
  all-to-all, reduce-scatter then scale, partial sums then all-reduce): the op and the collective move the same
  number of elements (in 1-, 2- or 4-byte elements: a cast may sit in the op); a fused kernel sends each chunk
  as it computes it, or computes on each chunk as it lands, and shares the HBM with the transfer's own reads
  and writes (``Stage.comm_hbm_bytes``);
- ``overlap``: a compute op and a collective it does not wait for, in ``calls`` steps (DDP buckets, FSDP layers,
  pipeline micro-batches): compute of one step overlaps communication of the next;
- ``collective``: a collective or send/recv with no compute to fuse with (the library's algorithm against the
  fastest modelled kernel).

Tile sizes, pipelining grain and reuse follow the device's GEMM tile (``DeviceSpec.gemm_tile``) and flash
attention's 128-row query tiles; a memory-bound region's chunk is one GEMM output tile's bytes in bf16.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import partial

from rooflib.compute import attention, bytes_per_element, gemm
from rooflib.compute.cost import ComputeCost
from rooflib.program.ir import Op, Program, ProgramError
from rooflib.program.memory_stage import memory_stage
from rooflib.schedule import Comm, Stage, gemm_pipeline
from rooflib.specs.resolve import System

__all__ = ["COMM_KINDS", "PATTERNS", "Region", "find_regions", "region_stage"]

COMM_KINDS = ("collective", "send_recv")
PATTERNS = (
    "gemm_rs",
    "gemm_ar",
    "gemm_ag",
    "ag_gemm",
    "a2a_gemm",
    "gemm_a2a",
    "ring_attention",
    "ag_attention",
    "ulysses_attention",
    "map_comm",
    "comm_map",
    "overlap",
    "collective",
)
MEMORY_KINDS = ("elementwise", "norm", "reduction")
"""Op kinds a ``map_comm`` / ``comm_map`` region fuses with a collective (memory-bound: HBM sets their time)."""
_MAPPED = ("all_reduce", "reduce_scatter", "all_gather", "all_to_all")
_ELEMENT_SIZES = (1.0, 2.0, 4.0)
_AFTER_GEMM = {"all_reduce": "gemm_ar", "reduce_scatter": "gemm_rs", "all_to_all": "gemm_a2a"}
_QUERY_TILE = 128  # rows of queries per flash-attention tile (FlashAttention-2/3 forward)


@dataclass(frozen=True)
class Region:
    """``pattern`` over the op at index ``compute`` (None: communication alone) and the ``comms`` ops."""

    pattern: str
    compute: int | None
    comms: tuple[int, ...]
    glue: tuple[int, ...] = ()  # copies between them of the moved tensor (clone, cat): a fused kernel skips them

    @property
    def ops(self) -> tuple[int, ...]:
        return tuple(sorted((*(() if self.compute is None else (self.compute,)), *self.comms, *self.glue)))


def _f(op: Op, key: str, default: float | None = None) -> float:
    value = op.params.get(key, default)
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        raise ProgramError(f"op {op.name!r} ({op.kind}) needs a number for {key!r}, got {value!r}")
    return float(value)


def _eb(op: Op) -> float:
    return bytes_per_element(str(op.params.get("dtype", "bf16")))


def gemm_bytes(op: Op, which: str) -> float:
    """Bytes of a GEMM's output (``out``: m x n) or its row operand (``in``: m x k), over the batch."""
    cols = _f(op, "n") if which == "out" else _f(op, "k")
    return _f(op, "m") * cols * _f(op, "batch", 1) * _eb(op)


def _comm_op(op: Op) -> str:
    return "send_recv" if op.kind == "send_recv" else str(op.params.get("op"))


def _calls(op: Op) -> int:
    return int(_f(op, "calls", 1))


def _group_size(op: Op, world: int) -> int:
    group = op.params.get("group")
    return world if group is None else len(group)


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9)


_FILLS = ("zeros", "ones", "full", "fill", "zero_", "empty")  # buffers a fused kernel writes without filling


def _glue_bytes(op: Op) -> float | None:
    """Bytes of a copy (clone, cat, contiguous) or of a fill of a fresh buffer (``zeros_like``); None otherwise."""
    if op.kind == "copy":
        return _f(op, "bytes")
    if op.kind == "elementwise" and any(f in op.name for f in _FILLS) and "elements" in op.params:
        return _f(op, "elements") * _eb(op)
    return None


def _skip_glue(program: Program, start: int, stream: str, sizes: tuple[float, ...], stop: int | None = None) -> int:
    """The first op at or after ``start`` (before ``stop``) that is not glue of ``sizes`` bytes: a copy of the
    moved tensor or a fill of a buffer it lands in."""
    j, end = start, len(program.ops) - 1 if stop is None else stop
    while j < end:
        op, size = program.ops[j], _glue_bytes(program.ops[j])
        if size is None or op.stream != stream or not any(_close(size, b) for b in sizes):
            break
        j += 1
    return j


def _gemm_pair(program: Program, i: int) -> Region | None:
    """A GEMM and the collective of its output after it, or a collective of its input before it (copies of the
    moved tensor in between allowed)."""
    ops, op = program.ops, program.ops[i]
    size = gemm_bytes(op, "out") if op.kind == "gemm" else _f(op, "bytes")
    j = _skip_glue(program, i + 1, op.stream, (size,))
    nxt, glue = ops[j], tuple(range(i + 1, j))
    if nxt.stream != op.stream or "group" in op.params or "group" in nxt.params:
        return None
    if op.kind == "gemm" and nxt.kind == "collective":
        coll, nbytes = _comm_op(nxt), _f(nxt, "bytes")
        if coll in _AFTER_GEMM and _close(nbytes, gemm_bytes(op, "out")):
            return Region(_AFTER_GEMM[coll], i, (j,), glue)
        if coll == "all_gather" and _close(nbytes, gemm_bytes(op, "out") * program.world):
            after = _skip_glue(program, j + 1, op.stream, (nbytes,), stop=len(ops))  # the cat of the pieces
            return Region("gemm_ag", i, (j,), (*glue, *range(j + 1, after)))
    if op.kind == "collective" and nxt.kind == "gemm":
        coll, nbytes = _comm_op(op), _f(op, "bytes")
        if coll in ("all_gather", "all_to_all") and _close(nbytes, gemm_bytes(nxt, "in")):
            return Region("ag_gemm" if coll == "all_gather" else "a2a_gemm", j, (i,), glue)
    return None


def _kv_bytes(op: Op) -> float:
    """Bytes of an attention op's K and V."""
    kv = _f(op, "kv_heads", _f(op, "heads"))
    return 2.0 * _f(op, "batch") * kv * _f(op, "seq_kv") * _f(op, "head_dim") * _eb(op)


def _gathered_attention(program: Program, i: int) -> Region | None:
    """An all-gather of exactly K and V (copies of them in between allowed), then the attention that reads them."""
    op = program.ops[i]
    if op.kind != "collective" or _comm_op(op) != "all_gather" or "group" in op.params:
        return None
    nbytes = _f(op, "bytes")
    j = _skip_glue(program, i + 1, op.stream, (nbytes, nbytes / 2))
    nxt = program.ops[j]
    if nxt.kind == "attention" and nxt.stream == op.stream and "seq_lens" not in nxt.params:
        if _close(_kv_bytes(nxt), nbytes):
            return Region("ag_attention", j, (i,), tuple(range(i + 1, j)))
    return None


def _attention_pair(program: Program, i: int) -> Region | None:
    """Ring attention (send/recv, attention) or Ulysses (all-to-all, attention, all-to-all) starting at ``i``."""
    gathered = _gathered_attention(program, i)
    if gathered is not None:
        return gathered
    ops, op = program.ops, program.ops[i]
    nxt = ops[i + 1]
    if nxt.stream != op.stream or nxt.kind != "attention" or "seq_lens" in nxt.params:  # packed: no fused model
        return None
    if op.kind == "send_recv":
        return Region("ring_attention", i + 1, (i,))
    if op.kind == "collective" and _comm_op(op) == "all_to_all" and i + 2 < len(ops):
        last = ops[i + 2]
        if last.kind == "collective" and _comm_op(last) == "all_to_all" and last.stream == op.stream:
            return Region("ulysses_attention", i + 1, (i, i + 2))
    return None


def _elements(op: Op, side: str) -> float | None:
    """Elements a memory-bound op writes (``out``) or reads per input (``in``); None for other ops and fills."""
    if op.kind not in MEMORY_KINDS or _glue_bytes(op) is not None or op.params.get("curve") is not None:
        return None
    if op.kind == "norm":
        return _f(op, "rows") * _f(op, "cols")
    if op.kind == "reduction" and side == "out":
        return _f(op, "outputs", 1)
    return _f(op, "elements")


def _moved(op: Op, world: int, side: str) -> float:
    """Bytes of a collective's input (``in``) or output (``out``) on one rank (``bytes`` is nccl-tests' size)."""
    nbytes = _f(op, "bytes")
    coll = _comm_op(op)
    if (coll == "all_gather" and side == "in") or (coll == "reduce_scatter" and side == "out"):
        return nbytes / world
    return nbytes


def _same_elements(nbytes: float, elements: float | None) -> bool:
    """``nbytes`` holds exactly ``elements`` elements of 1, 2 or 4 bytes."""
    return elements is not None and elements > 0 and any(_close(nbytes, elements * e) for e in _ELEMENT_SIZES)


def _mapped(op: Op) -> bool:
    return op.kind == "collective" and _comm_op(op) in _MAPPED and "group" not in op.params


def _map_pair(program: Program, i: int) -> Region | None:
    """A memory-bound op, then a collective of its output (``map_comm``); or a collective, then a memory-bound op
    of its output (``comm_map``). Copies of the moved tensor in between are glue. A collective that feeds a
    GEMM or an attention op is left to that op's pattern."""
    ops, op = program.ops, program.ops[i]
    if _mapped(op):
        size = _moved(op, program.world, "out")
        j = _skip_glue(program, i + 1, op.stream, (size,))
        nxt = ops[j]
        if nxt.stream == op.stream and _same_elements(size, _elements(nxt, "in")):
            return Region("comm_map", j, (i,), tuple(range(i + 1, j)))
        return None
    out = _elements(op, "out")
    if out is None:
        return None
    j = _skip_glue(program, i + 1, op.stream, tuple(out * e for e in _ELEMENT_SIZES))
    nxt = ops[j]
    if nxt.stream != op.stream or not _mapped(nxt):
        return None
    size = _moved(nxt, program.world, "in")
    glue = tuple(range(i + 1, j))
    if not _same_elements(size, out) or any(not _close(_glue_bytes(ops[k]) or 0.0, size) for k in glue):
        return None
    if j + 1 < len(ops) and ops[j + 1].kind in ("gemm", "attention"):
        after = _pair(program, j)  # the collective feeds a GEMM or an attention op: that region is worth more
        if after is not None and after.pattern not in ("map_comm", "comm_map"):
            return None
    return Region("map_comm", i, (j,), glue)


def _pair(program: Program, i: int) -> Region | None:
    """The operand-matched region starting at op ``i``, if any."""
    kind = program.ops[i].kind
    if kind in ("gemm", "collective"):
        found = _gemm_pair(program, i)
        if found is not None:
            return found
    if kind in COMM_KINDS:
        found = _attention_pair(program, i)
        if found is not None:
            return found
    return _map_pair(program, i) if kind in ("collective", *MEMORY_KINDS) else None


def _named(program: Program, taken: set[int]) -> list[Region]:
    """Regions a communication op names with ``overlaps``: the compute op it may overlap."""
    index = {op.name: i for i, op in enumerate(program.ops)}
    out = []
    for i, op in enumerate(program.ops):
        target = op.params.get("overlaps")
        if target is None or op.kind not in COMM_KINDS:
            continue
        j = index.get(str(target))
        if j is None or program.ops[j].kind in COMM_KINDS:
            raise ProgramError(f"op {op.name!r}: overlaps = {target!r} names no compute op of the program")
        if j in taken or i in taken:
            raise ProgramError(f"op {op.name!r}: overlaps {target!r}, which is already in a fused region")
        taken.update((i, j))
        out.append(Region("overlap", j, (i,)))
    return out


def find_regions(program: Program) -> list[Region]:
    """The fusable regions of ``program`` (each op in at most one), then every other communication op alone."""
    taken: set[int] = set()
    regions = _named(program, taken)
    i = 0
    while i < len(program.ops) - 1:
        region = _pair(program, i) if i not in taken else None
        if region is not None and not taken.intersection(region.ops):
            regions.append(region)
            taken.update(region.ops)
            i = max(region.ops) + 1
            continue
        i += 1
    for i, op in enumerate(program.ops):
        if op.kind in COMM_KINDS and i not in taken:
            regions.append(Region("collective", None, (i,)))
    return sorted(regions, key=lambda r: r.ops[0])


def _gemm_cost(system: System, op: Op, sms: int | None) -> ComputeCost:
    dims = (int(_f(op, "m")), int(_f(op, "n")), int(_f(op, "k")))
    return gemm(system.device, *dims, str(op.params.get("dtype", "bf16")), batch=int(_f(op, "batch", 1)), sms=sms)


def _attention_cost(system: System, op: Op, sms: int | None) -> ComputeCost:
    b, h, sq, skv, d = (int(_f(op, k)) for k in ("batch", "heads", "seq_q", "seq_kv", "head_dim"))
    kv = int(_f(op, "kv_heads", h))
    dt, causal = str(op.params.get("dtype", "bf16")), bool(op.params.get("causal", False))
    back = bool(op.params.get("backward", False))
    return attention(system.device, b, h, sq, skv, d, dt, kv_heads=kv, causal=causal, backward=back, sms=sms)


def _reduction(system: System, coll: str) -> str:
    if coll == "all_reduce" and system.switch.in_network_reduction and system.switch.multicast:
        return "switch"
    return "peer" if coll in ("all_reduce", "reduce_scatter") else "none"


def _comm(system: System, ops: list[Op], before: bool) -> Comm:
    coll = _comm_op(ops[0])
    nbytes = sum(_f(o, "bytes") for o in ops)
    calls = sum(_calls(o) for o in ops)
    return Comm(coll, nbytes, _reduction(system, coll), before_compute=before, calls=calls)  # type: ignore[arg-type]


def _tiles(system: System, op: Op) -> int:
    t = system.device.gemm_tile
    return math.ceil(_f(op, "m") / t.m) * math.ceil(_f(op, "n") / t.n) * int(_f(op, "batch", 1))


def _attention_stage(system: System, program: Program, region: Region, name: str, op: Op, comm: Comm) -> Stage:
    """The stage of an attention region: a step pipeline (overlap, ring, all-gathered K/V) or Ulysses's heads."""
    cost = partial(_attention_cost, system, op)
    if region.pattern == "overlap":
        steps = comm.calls
        return Stage(name, cost, comm, steps, comm.nbytes / steps, steps=steps)
    q_tiles = float(math.ceil(_f(op, "seq_q") / _QUERY_TILE))
    if region.pattern in ("ring_attention", "ag_attention"):
        steps = comm.calls + 1 if region.pattern == "ring_attention" else program.world
        tile = comm.nbytes / (comm.calls if region.pattern == "ring_attention" else steps)
        return Stage(name, cost, comm, steps, tile, steps=steps, intra_reuse=q_tiles)
    if region.pattern == "ulysses_attention":
        heads = int(_f(op, "heads"))
        reuse = float(math.ceil(_f(op, "seq_kv") / _QUERY_TILE))
        return Stage(name, cost, comm, heads, comm.nbytes / heads, steps=heads, intra_reuse=reuse)
    raise ProgramError(f"region {name!r}: pattern {region.pattern!r} does not fit an attention op")


def region_stage(system: System, program: Program, region: Region) -> Stage:
    """The schedule model's stage for ``region`` of ``program`` on ``system``."""
    ops = program.ops
    comms = [ops[i] for i in region.comms]
    name = "+".join(ops[i].name for i in region.ops if i not in region.glue)
    if region.compute is None:
        return Stage(name, None, _comm(system, comms, False))
    op = ops[region.compute]
    before = region.comms[0] < region.compute
    comm = _comm(system, comms, before)
    if region.pattern in ("map_comm", "comm_map"):
        return memory_stage(system, program.world, name, op, comm)
    if op.kind not in ("gemm", "attention"):
        raise ProgramError(f"region {name!r}: a fused region computes a gemm or an attention op, not {op.kind}")
    if op.kind == "attention":
        return _attention_stage(system, program, region, name, op, comm)
    cost = partial(_gemm_cost, system, op)
    if region.pattern == "overlap":
        steps = comm.calls
        return Stage(name, cost, comm, steps, comm.nbytes / steps, steps=steps)
    t, eb, tiles = system.device.gemm_tile, _eb(op), _tiles(system, op)
    col_tiles = float(math.ceil(_f(op, "n") / t.n))
    pipe = gemm_pipeline(system, eb)
    if region.pattern in ("gemm_rs", "gemm_ar", "gemm_ag"):
        return replace(Stage(name, cost, comm, tiles, t.m * t.n * eb), pipeline=pipe)
    if region.pattern == "ag_gemm":
        return replace(Stage(name, cost, comm, tiles, comm.nbytes / tiles, intra_reuse=col_tiles), pipeline=pipe)
    if region.pattern == "a2a_gemm":
        return Stage(name, cost, comm, tiles, _f(op, "k") * eb * t.m, intra_reuse=col_tiles)
    if region.pattern == "gemm_a2a":
        return Stage(name, cost, comm, tiles, _f(op, "n") * eb * t.m)
    raise ProgramError(f"region {name!r}: pattern {region.pattern!r} does not fit a {op.kind} op")
