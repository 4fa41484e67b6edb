"""The program IR: the ops one rank of a multi-GPU program runs, with streams and dependencies.

A program is SPMD: every rank of its group runs the same ops on shapes of its own (per-rank shapes). Each op
has a ``kind`` that decides which model costs it, its ``params`` (shapes, dtype, bytes), the ``stream`` it runs
on (ops of one stream run in order; different streams overlap), the ops it waits for beyond its stream
(``deps``, by index) and the host cost it pays when issued (``host``: a kernel launch, a cuBLAS call, an NCCL
call through torch.distributed, a host sync, or nothing).

>>> b = ProgramBuilder("mlp", world=8)
>>> up = b.gemm(8192, 3584, 4096, name="up")
>>> act = b.elementwise("gelu", 8192 * 3584, name="gelu")
>>> down = b.gemm(8192, 4096, 3584, name="down")
>>> _ = b.collective("all_reduce", 8192 * 4096 * 2, name="allreduce")
>>> p = b.build()
>>> [op.kind for op in p.ops], p.world
(['gemm', 'elementwise', 'gemm', 'collective'], 8)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, get_args

from rooflib.conventions import check_op
from rooflib.errors import RooflibError, UnknownNameError

__all__ = ["HOST_KINDS", "OP_KINDS", "HostKind", "Op", "OpKind", "Program", "ProgramBuilder", "ProgramError"]

OpKind = Literal[
    "gemm",
    "attention",
    "elementwise",
    "norm",
    "reduction",
    "copy",
    "index",
    "sort",
    "collective",
    "send_recv",
    "sync",
    "unmodelled",
]
OP_KINDS: tuple[OpKind, ...] = get_args(OpKind)
HostKind = Literal["kernel", "cublas", "nccl", "sync", "none"]
HOST_KINDS: tuple[HostKind, ...] = get_args(HostKind)
_DEFAULT_HOST: dict[str, HostKind] = {
    "gemm": "cublas",
    "collective": "nccl",
    "send_recv": "nccl",
    "sync": "sync",
}


class ProgramError(RooflibError, ValueError):
    """A program that cannot be right: an unknown op kind, a negative size, a dependency on a later op."""


@dataclass(frozen=True)
class Op:
    """One op of a rank's program. ``params`` by kind (all sizes per rank, bytes in bytes):

    - ``gemm``: ``m, n, k`` (``batch`` = 1, ``dtype`` = bf16);
    - ``attention``: ``batch, heads, seq_q, seq_kv, head_dim`` (``kv_heads``, ``causal``, ``dtype``,
      ``backward``); variable lengths: ``seq_lens`` (each sequence's length, self-attention; then no batch or
      seq), or ``varlen`` (lengths unknown: ``batch`` sequences of at most ``seq_q`` each);
    - ``elementwise``: ``op`` (add, mul, gelu, silu, swiglu, copy) or ``reads, writes, flops_per_element``,
      ``elements``, ``dtype``; a kernel of many small programs (a Triton grid) also ``programs`` and ``warps``
      (= 4): no faster than the device's program floor (``compute.programs``);
    - ``norm``: ``op`` (rmsnorm, layernorm, softmax), ``rows, cols``, ``dtype``;
    - ``reduction``: ``elements`` in, ``outputs`` out, ``dtype`` (sum, mean, max, cross-entropy's log-sum-exp);
    - ``copy``: ``bytes`` read and written once (casts, cat, contiguous, clone);
    - ``index``: ``bytes`` gathered or scattered (index_select, gather, scatter_add, embedding);
    - ``sort``: ``elements``, ``dtype`` (sort, argsort, top-k);
    - ``collective``: ``op`` (all_reduce, ...), ``bytes`` (nccl-tests size, all calls together), ``group``
      (ranks, or absent for all of the program's ranks), ``calls`` (= 1: separate library calls of
      ``bytes / calls`` each, as DDP buckets or FSDP layers), ``overlaps`` (the name of a compute op the
      collective does not wait for: the fused plans may overlap them, :mod:`rooflib.program.regions`); a traced
      one also ``integer`` where its tensors are integer or boolean (what a harness that fills them acts on);
    - ``send_recv``: ``bytes`` to the next rank (``offset`` = 1, ``calls``, ``overlaps`` as for collectives);
    - ``sync``: a host wait for the device (``.item()``, ``.cpu()``);
    - ``unmodelled``: ``bytes`` touched by an op no model knows (costed at HBM speed and reported).

    Memory-bound kinds (elementwise, norm, reduction, copy) may also carry ``l2_warm`` (the share of their bytes
    read from what an earlier op left in L2) and ``l2_reuse`` (bytes touched since), ``l2_warm_out`` (their
    writes' share, into a reused block) and ``l2_reuse_out`` (one call's bytes): :mod:`rooflib.program.cost`.
    """

    name: str
    kind: OpKind
    params: Mapping[str, Any] = field(default_factory=dict)
    stream: str = "compute"
    deps: tuple[int, ...] = ()
    host: HostKind = "kernel"


@dataclass(frozen=True)
class Program:
    """``ops`` of one rank, in the order the host issues them, on a group of ``world`` ranks."""

    name: str
    world: int
    ops: tuple[Op, ...]
    source: str = ""

    def __post_init__(self) -> None:
        if self.world < 1:
            raise ProgramError(f"program {self.name!r}: world must be >= 1, got {self.world}")
        for i, op in enumerate(self.ops):
            if op.kind not in OP_KINDS:
                raise UnknownNameError("op kind", str(op.kind), OP_KINDS)
            if op.host not in HOST_KINDS:
                raise UnknownNameError("host cost kind", str(op.host), HOST_KINDS)
            bad = [d for d in op.deps if not 0 <= d < i]
            if bad:
                raise ProgramError(f"program {self.name!r}: op {i} ({op.name}) depends on ops {bad}, not earlier ones")


def _size(name: str, value: object, *, zero: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ProgramError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
        raise ProgramError(f"{name} must be finite and {'>= 0' if zero else '> 0'}, got {value!r}")
    return float(value)


def _comm_extras(calls: int, overlaps: str | None) -> dict[str, Any]:
    if isinstance(calls, bool) or not isinstance(calls, int) or calls < 1:
        raise ProgramError(f"calls must be a whole number >= 1, got {calls!r}")
    out: dict[str, Any] = {"calls": calls} if calls != 1 else {}
    if overlaps is not None:
        out["overlaps"] = str(overlaps)
    return out


class ProgramBuilder:
    """Build a :class:`Program` op by op; each method returns the op's index (for ``after=``)."""

    def __init__(self, name: str, world: int = 1) -> None:
        self.name, self.world = name, world
        self._ops: list[Op] = []

    def add(
        self,
        kind: OpKind,
        params: Mapping[str, Any],
        *,
        name: str | None = None,
        stream: str = "compute",
        after: Sequence[int] = (),
        host: HostKind | None = None,
    ) -> int:
        """Append any op; the typed helpers below call this."""
        if kind not in OP_KINDS:
            raise UnknownNameError("op kind", str(kind), OP_KINDS)
        op = Op(
            name or f"{kind}{len(self._ops)}",
            kind,
            MappingProxyType(dict(params)),
            stream,
            tuple(after),
            host or _DEFAULT_HOST.get(kind, "kernel"),
        )
        self._ops.append(op)
        return len(self._ops) - 1

    def gemm(self, m: int, n: int, k: int, dtype: str = "bf16", *, batch: int = 1, **kw: Any) -> int:
        for dim, v in (("m", m), ("n", n), ("k", k), ("batch", batch)):
            _size(f"gemm {dim}", v, zero=False)
        return self.add("gemm", {"m": m, "n": n, "k": k, "batch": batch, "dtype": dtype}, **kw)

    def attention(
        self,
        batch: int,
        heads: int,
        seq_q: int,
        seq_kv: int,
        head_dim: int,
        dtype: str = "bf16",
        *,
        kv_heads: int | None = None,
        causal: bool = False,
        backward: bool = False,
        **kw: Any,
    ) -> int:
        params = {"batch": batch, "heads": heads, "seq_q": seq_q, "seq_kv": seq_kv, "head_dim": head_dim}
        for dim, v in params.items():
            _size(f"attention {dim}", v, zero=False)
        extra = {"dtype": dtype, "causal": causal, "kv_heads": kv_heads or heads, "backward": backward}
        return self.add("attention", {**params, **extra}, **kw)

    def varlen_attention(
        self,
        seq_lens: Sequence[int],
        heads: int,
        head_dim: int,
        dtype: str = "bf16",
        *,
        kv_heads: int | None = None,
        causal: bool = True,
        backward: bool = False,
        **kw: Any,
    ) -> int:
        """Self-attention of packed sequences of lengths ``seq_lens`` (``flash_attn_varlen_func``)."""
        lens = tuple(int(_size("attention seq_lens", v, zero=False)) for v in seq_lens)
        if not lens:
            raise ProgramError("varlen attention needs at least one sequence length")
        params = {"seq_lens": lens, "heads": heads, "head_dim": head_dim, "kv_heads": kv_heads or heads}
        extra = {"dtype": dtype, "causal": causal, "backward": backward}
        return self.add("attention", {**params, **extra}, **kw)

    def elementwise(self, op: str, elements: int, dtype: str = "bf16", **kw: Any) -> int:
        _size("elementwise elements", elements)
        return self.add("elementwise", {"op": op, "elements": elements, "dtype": dtype}, **kw)

    def norm(self, op: str, rows: int, cols: int, dtype: str = "bf16", **kw: Any) -> int:
        _size("norm rows", rows, zero=False)
        _size("norm cols", cols, zero=False)
        return self.add("norm", {"op": op, "rows": rows, "cols": cols, "dtype": dtype}, **kw)

    def reduction(self, elements: int, outputs: int = 1, dtype: str = "bf16", **kw: Any) -> int:
        _size("reduction elements", elements)
        _size("reduction outputs", outputs)
        return self.add("reduction", {"elements": elements, "outputs": outputs, "dtype": dtype}, **kw)

    def copy(self, nbytes: float, **kw: Any) -> int:
        return self.add("copy", {"bytes": _size("copy bytes", nbytes)}, **kw)

    def index(self, nbytes: float, **kw: Any) -> int:
        return self.add("index", {"bytes": _size("index bytes", nbytes)}, **kw)

    def sort(self, elements: int, dtype: str = "fp32", **kw: Any) -> int:
        _size("sort elements", elements)
        return self.add("sort", {"elements": elements, "dtype": dtype}, **kw)

    def collective(
        self,
        op: str,
        nbytes: float,
        *,
        group: Sequence[int] | None = None,
        calls: int = 1,
        overlaps: str | None = None,
        stream: str = "compute",
        **kw: Any,
    ) -> int:
        params: dict[str, Any] = {"op": check_op(op), "bytes": _size("collective bytes", nbytes)}
        if group is not None:
            params["group"] = tuple(int(g) for g in group)
        params.update(_comm_extras(calls, overlaps))
        return self.add("collective", params, stream=stream, **kw)

    def send_recv(
        self,
        nbytes: float,
        *,
        offset: int = 1,
        calls: int = 1,
        overlaps: str | None = None,
        stream: str = "compute",
        **kw: Any,
    ) -> int:
        params = {"bytes": _size("send_recv bytes", nbytes), "offset": offset, **_comm_extras(calls, overlaps)}
        return self.add("send_recv", params, stream=stream, **kw)

    def sync(self, **kw: Any) -> int:
        return self.add("sync", {}, **kw)

    def unmodelled(self, name: str, nbytes: float, **kw: Any) -> int:
        return self.add("unmodelled", {"bytes": _size("unmodelled bytes", nbytes), "op": name}, name=name, **kw)

    def build(self) -> Program:
        return Program(self.name, self.world, tuple(self._ops))
