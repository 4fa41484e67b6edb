"""The device time, FLOPs and bytes of each program op, from the compute, collective and transfer models.

Each op is costed once, twice over: at achievable rates (``device_s``, what the timeline runs) and at datasheet
peaks with no quantisation (``ideal_*``, what the bound adds up). Collectives are predicted on the program's
group of GPUs with NCCL's own algorithm and no launch cost (``launch="device"``: the timeline charges the host's
issue itself). Ops no model knows cost the bytes they touch at the HBM rate and are flagged ``unmodelled``.

Assumptions beyond the compute models (each says where it comes from):

- ``copy``: every byte read once and written once; ``index``: gathered or scattered bytes read and written
  once (random access at the streaming rate, an optimistic floor);
- ``sort``: a radix sort of 32-bit keys in 4 passes, each reading and writing the keys (CUB's onesweep
  radix sort uses 4 passes of 8 bits for 32-bit keys); a top-k on a device with a measured ``topk`` curve takes
  that curve's time (its bytes stay the sort's);
- on a device with the measured curves of the op classes of :mod:`rooflib.compute.kernels`, the time is the
  curve's (the bytes and the bound stay as above): an ``index`` op whose ``op`` names a gather or scatter class
  (``index_select``, ``gather``, ``index_add``, ``scatter_add``, ``scatter_add_rows``, ``index_put``;
  ``index_bytes``: its indices), a
  ``sort`` that is not a top-k (rows of ``cols`` up to 4096 sorted in place, longer ones by CUB), a ``copy`` with
  ``layout: transpose`` (``elements``), ``cast_up``, ``cast_down`` or ``strided_copy`` (input and output once),
  and an ``elementwise`` op with ``curve`` (``fill``, ``cumsum``, ``fft``, ``rfft``, ``rfft_dim0``) and
  ``curve_bytes``;
- ``l2_warm`` (a share of the bytes a memory-bound op reads that an earlier op touched, set by ``rooflib trace``:
  :mod:`rooflib.trace.residency`) and ``l2_reuse`` (bytes touched since): counted where those plus the op's own
  bytes fit in ``l2_size``; ``l2_warm_out`` (its writes' share, into a block the allocator reused) where
  ``l2_reuse_out`` (the bytes one call of the program touches) fits. The time is scaled by
  ``1 - warm x (1 - ratio)``, ``warm`` the sum of the shares counted, ``ratio`` the device's measured time from
  L2 over the time from HBM for the op's class (``l2_resident`` curves; copies by layout, reductions as ``sum``,
  norms by kind, elementwise ops by name or else as ``add``), never below the op's ideal time; devices without
  those curves are unchanged;
- ``reduction``: every input read once and every output written once; on a device with measured ``sum``
  curves the time is theirs (rows = outputs, row length = elements / outputs), and a ``copy`` takes the measured
  ``copy`` curve's time (small copies and reductions then cost a kernel's floor, not their bytes at full rate).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace

from rooflib.collectives import predict_collective
from rooflib.compute import (
    ELEMENTWISE_OPS,
    ComputeCost,
    attention,
    bytes_per_element,
    elementwise,
    elementwise_op,
    gemm,
    normalization,
    reduction,
)
from rooflib.compute.kernels import (
    GATHERS,
    SCATTERS,
    SORT_ROW_MAX,
    kernel_time,
    moved_bytes,
    sort_bytes,
)
from rooflib.compute.memory import l2_ratio, memory_time
from rooflib.errors import UnknownNameError
from rooflib.program.ir import Op, ProgramError
from rooflib.schedule.stage import direct_egress
from rooflib.schedule.traffic import comm_lower_bound
from rooflib.specs.compute_models import KERNEL_OP_KINDS, program_floor
from rooflib.specs.resolve import System
from rooflib.topology import topology_of

__all__ = ["SORT_PASSES", "OpCost", "op_cost"]

SORT_PASSES = 4


@dataclass(frozen=True)
class OpCost:
    """One op's costs on one rank (SI units)."""

    device_s: float  # at achievable rates: what the timeline runs
    flops: float
    hbm_bytes: float
    net_bytes: float  # bytes this rank sends to other GPUs
    ideal_compute_s: float  # FLOPs at the datasheet peak
    ideal_memory_s: float  # HBM bytes at the datasheet rate
    ideal_comm_s: float  # the communication lower bound (rooflib.schedule.traffic)
    unmodelled: bool = False
    algorithm: str = ""  # the collective algorithm, for collectives

    @property
    def network(self) -> bool:
        return self.ideal_comm_s > 0 or self.net_bytes > 0


def _compute(c: ComputeCost, ideal: ComputeCost, system: System) -> OpCost:
    hbm = system.device.hbm_bandwidth.value
    return OpCost(c.time_s, c.flops, c.hbm_bytes, 0.0, ideal.compute_s, ideal.hbm_bytes / hbm, 0.0)


def _bytes(system: System, nbytes: float, *, unmodelled: bool = False) -> OpCost:
    dev = system.device
    rate = dev.hbm_bandwidth.value * dev.hbm_efficiency.value
    return OpCost(nbytes / rate, 0.0, nbytes, 0.0, 0.0, nbytes / dev.hbm_bandwidth.value, 0.0, unmodelled)


def _p(op: Op, key: str, default: object = None) -> object:
    value = op.params.get(key, default)
    if value is None:
        raise ProgramError(f"op {op.name!r} ({op.kind}) needs the parameter {key!r}")
    return value


def _int(op: Op, key: str, default: int | None = None) -> int:
    value = _p(op, key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise ProgramError(f"op {op.name!r}: {key} must be a whole number, got {value!r}")
    return int(value)


def _dtype(op: Op) -> str:
    return str(op.params.get("dtype", "bf16"))


def _members(system: System, op: Op, members: tuple[int, ...]) -> tuple[int, ...]:
    group = op.params.get("group")
    if group is None:
        return members
    ranks = tuple(int(r) for r in group)
    bad = [r for r in ranks if not 0 <= r < len(members)]
    if bad:
        raise ProgramError(f"op {op.name!r}: group ranks {bad} are outside the program's {len(members)} ranks")
    return tuple(members[r] for r in ranks)


def _collective(system: System, op: Op, members: tuple[int, ...], coll: str, nbytes: float) -> OpCost:
    group = _members(system, op, members)
    n = len(group)
    if n < 2 or nbytes == 0:
        return OpCost(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    calls = _int(op, "calls", 1)
    if calls < 1:
        raise ProgramError(f"op {op.name!r}: calls must be >= 1, got {calls}")
    r = predict_collective(coll, system, nbytes=nbytes / calls, gpus=group, algorithm="library", launch="device")
    per = system.domain_gpus
    sizes = list({g // per: sum(1 for h in group if h // per == g // per) for g in group}.values())
    net = math.inf
    remote = [g for g in group if g // per != group[0] // per]
    if remote:
        net = topology_of(system).bottleneck(group[0], remote[0])
    switch = system.switch.in_network_reduction and system.switch.multicast
    bound = comm_lower_bound(
        coll,  # type: ignore[arg-type]
        nbytes,
        n,
        sizes,
        nvlink_bps=system.nvlink_bandwidth,
        network_bps=net,
        switch=switch,
    )
    egress = direct_egress(coll, nbytes, n)  # type: ignore[arg-type]
    return OpCost(calls * float(r.time_s[0]), 0.0, 0.0, egress, 0.0, 0.0, bound, algorithm=r.algorithm[0])


def _gemm(system: System, op: Op) -> OpCost:
    """A GEMM; ``k_pad`` (an implicit GEMM of a convolution, :mod:`rooflib.compute.conv`): the K the kernel
    runs, padded per filter tap, while the bound keeps the true ``k``; ``a_bytes``: the bytes its ``A`` operand
    really is (a convolution's input tensor, which the kernel reads tap by tap, not an unfolded ``m x k``
    matrix), the op's and the bound's HBM bytes."""
    dims = (_int(op, "m"), _int(op, "n"), _int(op, "k"))
    batch, dt = _int(op, "batch", 1), _dtype(op)
    dev = system.device
    k_pad = max(dims[2], _int(op, "k_pad", dims[2]))
    real = gemm(dev, dims[0], dims[1], k_pad, dt, batch=batch)
    ideal = gemm(dev, *dims, dt, batch=batch, ideal=True, derate=False)
    if k_pad > dims[2]:  # the padded K's extra FLOPs are time, not work: the op counts the true FLOPs
        real = replace(real, flops=ideal.flops, hbm_bytes=ideal.hbm_bytes)
    if "a_bytes" in op.params:  # an implicit GEMM reads its input tensor, not an m x k matrix: the bound's bytes
        unfolded = float(dims[0]) * dims[2] * batch * bytes_per_element(dt)
        true = max(0.0, ideal.hbm_bytes - unfolded) + _int(op, "a_bytes")
        ideal = replace(ideal, hbm_bytes=min(true, ideal.hbm_bytes))
        real = replace(real, hbm_bytes=ideal.hbm_bytes)
    return _compute(real, ideal, system)


def _attention(system: System, op: Op) -> OpCost:
    """Flash attention, forward or (``backward``) backward. Variable lengths: ``seq_lens`` (self-attention of
    each sequence, costed one length at a time), or ``varlen`` (lengths unknown, only the longest: the time runs
    ``batch`` sequences of the longest, the bound only one of them, the least work those tokens can be)."""
    h, d = _int(op, "heads"), _int(op, "head_dim")
    kv = _int(op, "kv_heads", h)
    dev, dt = system.device, _dtype(op)
    causal, backward = bool(op.params.get("causal", False)), bool(op.params.get("backward", False))

    def cost(b: int, sq: int, skv: int, derate: bool) -> ComputeCost:
        return attention(dev, b, h, sq, skv, d, dt, kv_heads=kv, causal=causal, backward=backward, derate=derate)

    lens = op.params.get("seq_lens")
    if lens is not None:
        counts = Counter(int(x) for x in lens)
        if not counts or min(counts) < 1:
            raise ProgramError(f"op {op.name!r}: seq_lens must list positive lengths, got {lens!r}")
        parts = [_compute(cost(n, n_, n_, True), cost(n, n_, n_, False), system) for n_, n in sorted(counts.items())]
        return OpCost(*(sum(getattr(c, f) for c in parts) for f in _SUMMED))
    b, sq, skv = (_int(op, k) for k in ("batch", "seq_q", "seq_kv"))
    return _compute(cost(b, sq, skv, True), cost(1 if op.params.get("varlen") else b, sq, skv, False), system)


_SUMMED = ("device_s", "flops", "hbm_bytes", "net_bytes", "ideal_compute_s", "ideal_memory_s", "ideal_comm_s")


def _elementwise(system: System, op: Op) -> OpCost:
    dev, dt, n = system.device, _dtype(op), _int(op, "elements")
    if n == 0:
        return OpCost(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    name = op.params.get("op")
    if name is not None and name in ELEMENTWISE_OPS:
        return _compute(
            elementwise_op(dev, name, n, dt),
            elementwise_op(dev, name, n, dt, derate=False),
            system,
        )
    reads, writes = _int(op, "reads", 1), _int(op, "writes", 1)
    flops = float(op.params.get("flops_per_element", 1.0))
    real = elementwise(dev, n, dt, reads=reads, writes=writes, flops_per_element=flops)
    ideal = elementwise(dev, n, dt, reads=reads, writes=writes, flops_per_element=flops, derate=False)
    cost = _with_program_floor(system, op, _compute(real, ideal, system))
    curve = op.params.get("curve")
    if curve is not None:  # a measured op class (fill, scan, FFT): its curve's time at the bytes it counts
        if curve not in KERNEL_OP_KINDS:
            raise ProgramError(f"op {op.name!r}: unknown curve {curve!r}; valid: {', '.join(KERNEL_OP_KINDS)}")
        moved = float(op.params.get("curve_bytes", real.hbm_bytes))
        got = kernel_time(dev, str(curve), moved)
        if got is not None:
            return replace(cost, device_s=max(got, real.compute_s))
    return cost


def _with_program_floor(system: System, op: Op, cost: OpCost) -> OpCost:
    """``cost`` no faster than its launch's program floor (``programs``, a Triton kernel's grid:
    :func:`rooflib.specs.compute_models.program_floor`), where the op and the device give one; ``warps`` is checked
    and kept, and does not change the floor (1-4 warps measured alike)."""
    models = system.device.compute
    if op.params.get("programs") is None or models is None or models.programs is None:
        return cost
    programs, warps = _int(op, "programs"), _int(op, "warps", 4)
    if programs < 0 or warps < 1:
        raise ProgramError(f"op {op.name!r}: programs must be >= 0 and warps >= 1, got {programs}, {warps}")
    floor = program_floor(models.programs, int(system.device.sms.value), programs)
    return replace(cost, device_s=max(cost.device_s, floor))


def _norm(system: System, op: Op) -> OpCost:
    dev, dt = system.device, _dtype(op)
    kind = str(op.params.get("op", "rmsnorm"))
    rows, cols = _int(op, "rows"), _int(op, "cols")
    real = normalization(dev, rows, cols, dt, kind=kind)  # type: ignore[arg-type]
    ideal = normalization(dev, rows, cols, dt, kind=kind, derate=False)  # type: ignore[arg-type]
    return _compute(real, ideal, system)


def _measured(system: System, kind: str) -> bool:
    """Whether the device has a measured memory curve for ``kind`` (:mod:`rooflib.compute.memory`)."""
    models = system.device.compute
    return models is not None and models.memory_ops is not None and bool(models.memory_ops.curves(kind))


def _reduction(system: System, op: Op) -> OpCost:
    size = bytes_per_element(_dtype(op))
    elements, outputs = _int(op, "elements"), _int(op, "outputs", 1)
    cost = _bytes(system, (elements + outputs) * size)
    if elements > 0 and outputs > 0 and _measured(system, "sum"):  # measured: the ``sum`` curves, by row length
        rows, cols = outputs, max(1, round(elements / outputs))
        return replace(cost, device_s=reduction(system.device, rows, cols, _dtype(op)).time_s)
    return cost


_COPY_CLASSES = frozenset(
    {"transpose", "cast_up", "cast_down", "strided_copy", "conv_input", "conv_filter", "conv_output"}
)


def _copy(system: System, op: Op) -> OpCost:
    nbytes = 2.0 * float(_p(op, "bytes"))  # type: ignore[arg-type]
    cost = _bytes(system, nbytes)
    if nbytes <= 0:
        return cost
    cls = op.params.get("op") if op.kind == "index" else None
    if cls in GATHERS or cls in SCATTERS:  # measured: the gather or scatter class's curve
        moved = moved_bytes(str(cls), nbytes / 2.0, index_bytes=float(op.params.get("index_bytes", 0.0)))
        got = kernel_time(system.device, str(cls), moved)
        return cost if got is None else replace(cost, device_s=got)
    layout = op.params.get("layout") if op.kind == "copy" else None
    if layout in _COPY_CLASSES:  # measured: the layout's class curve (transposes and strided copies by element)
        elements = _int(op, "elements", None if layout == "transpose" else 0)
        got = kernel_time(system.device, str(layout), moved_bytes(str(layout), nbytes, elements=elements))
        if got is not None:
            return replace(cost, device_s=got)
    if op.kind == "copy" and _measured(system, "copy"):  # measured: the ``copy`` curve
        return replace(cost, device_s=float(memory_time(system.device, "copy", nbytes)[()]))
    return cost


def _l2_class(op: Op) -> str | None:
    """The measured L2 curve a memory-bound op takes (module docstring); None: no L2 effect is modelled."""
    if op.kind == "copy":
        layout = op.params.get("layout")
        return str(layout) if layout in _COPY_CLASSES else "copy"
    if op.kind == "reduction":
        return "sum"
    if op.kind == "norm":
        return str(op.params.get("op", "rmsnorm"))
    if op.kind == "elementwise" and op.params.get("curve") is None:
        return str(op.params.get("op") or "add")
    return None


def _warm(system: System, op: Op, cost: OpCost) -> OpCost:
    """``cost`` with the share ``l2_warm`` of the op's bytes (warm reads) served from L2 where they can still be
    there (``l2_reuse`` bytes touched since, plus the op's own, within ``l2_size``), and ``l2_warm_out`` (writes
    into a reused block) where one call's traffic ``l2_reuse_out`` fits: the time scaled by
    ``1 - warm x (1 - ratio)``, ``ratio`` the measured L2 curve's at the op's bytes (an elementwise op without
    its own curve takes ``add``'s), never below the op's ideal time."""
    l2 = system.device.l2_size.value
    warm = float(op.params.get("l2_warm", 0.0))
    if float(op.params.get("l2_reuse", 0.0)) + cost.hbm_bytes > l2:
        warm = 0.0
    if 0.0 < float(op.params.get("l2_reuse_out", 0.0)) <= l2:
        warm += float(op.params.get("l2_warm_out", 0.0))
    cls = _l2_class(op)
    if warm <= 0.0 or cls is None or cost.device_s <= 0.0:
        return cost
    ratio = l2_ratio(system.device, cls, cost.hbm_bytes)
    if ratio is None:
        ratio = l2_ratio(system.device, "add", cost.hbm_bytes) if op.kind == "elementwise" else None
    if ratio is None:
        return cost
    floor = max(cost.ideal_compute_s, cost.ideal_memory_s)
    return replace(cost, device_s=max(floor, cost.device_s * (1.0 - min(warm, 1.0) * (1.0 - ratio))))


def _named_topk(op: Op) -> bool:
    """A top-k: ``op: topk``, or traced ``aten.topk``."""
    return str(op.params.get("op", op.name.removeprefix("aten."))) == "topk"


def _is_topk(system: System, op: Op) -> bool:
    """A top-k on a device with a measured ``topk`` curve."""
    models = system.device.compute
    has = models is not None and models.memory_ops is not None and bool(models.memory_ops.curves("topk"))
    return _named_topk(op) and has


def _sort(system: System, op: Op) -> OpCost:
    keys = _int(op, "elements") * bytes_per_element(_dtype(op))
    cost = _bytes(system, 2.0 * SORT_PASSES * keys)
    if _is_topk(system, op):  # measured: rooflib.compute.memory's ``topk`` curve, input bytes once
        return replace(cost, device_s=float(memory_time(system.device, "topk", keys)[()]))
    if _named_topk(op) or keys <= 0:
        return cost
    cols = _int(op, "cols", _int(op, "elements"))  # measured: in-place rows, or CUB's radix sort
    cls = "sort_rows" if cols <= SORT_ROW_MAX else "sort"
    got = kernel_time(system.device, cls, sort_bytes(_int(op, "elements"), bytes_per_element(_dtype(op))))
    return cost if got is None else replace(cost, device_s=got)


def op_cost(system: System, op: Op, members: tuple[int, ...]) -> OpCost:
    """The costs of ``op`` on one rank of a program running on GPUs ``members`` of ``system``."""
    kind = op.kind
    if kind == "gemm":
        return _gemm(system, op)
    if kind == "attention":
        return _attention(system, op)
    if kind == "elementwise":
        return _warm(system, op, _elementwise(system, op))
    if kind == "norm":
        return _warm(system, op, _norm(system, op))
    if kind == "reduction":
        return _warm(system, op, _reduction(system, op))
    if kind in ("copy", "index"):
        return _warm(system, op, _copy(system, op))
    if kind == "sort":
        return _sort(system, op)
    if kind == "collective":
        return _collective(system, op, members, str(_p(op, "op")), float(_p(op, "bytes")))  # type: ignore[arg-type]
    if kind == "send_recv":
        return _collective(system, op, members, "send_recv", float(_p(op, "bytes")))  # type: ignore[arg-type]
    if kind == "sync":
        return OpCost(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    if kind == "unmodelled":
        return _bytes(system, float(_p(op, "bytes")), unmodelled=True)  # type: ignore[arg-type]
    raise UnknownNameError("op kind", kind, ())
