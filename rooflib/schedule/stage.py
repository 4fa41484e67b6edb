"""A stage of a multi-GPU kernel: some compute, some communication, and how finely the two can be interleaved.

A workload (``rooflib.workloads``) is a list of stages. A stage's compute is a function of the SMs it may use
(so an inter-SM schedule can give some SMs to communication); its communication is a collective pattern with
its nccl-tests size, the bytes each GPU must send over the scale-up links when a fused kernel moves them
directly, and the reduction the bytes need (none, into peer memory, or in the switch).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rooflib.compute.cost import ComputeCost
from rooflib.conventions import Op
from rooflib.schedule.pressure import Pipeline
from rooflib.transfer import Reduction

__all__ = ["Comm", "Stage", "direct_egress"]


def direct_egress(op: Op, nbytes: float, n: int, *, switch: bool = False) -> float:
    """Bytes one GPU sends when a fused kernel moves an ``op`` of nccl-tests size ``nbytes`` peer to peer.

    reduce-scatter, all-gather, all-to-all: ``(n-1)/n x S`` (each GPU sends the shards others own); all-reduce:
    ``2 (n-1)/n x S`` (two-shot), or ``(n+1)/n x S`` through NVSwitch reduction (multimem ld_reduce + st);
    send/recv and broadcast from one root: ``S``.
    """
    if n < 2:
        return 0.0
    if op == "all_reduce":
        return nbytes * ((n + 1) / n if switch else 2.0 * (n - 1) / n)
    if op in ("reduce_scatter", "all_gather", "all_to_all", "gather", "scatter"):
        return nbytes * (n - 1) / n
    return float(nbytes)


@dataclass(frozen=True)
class Comm:
    """The communication of a stage."""

    op: Op
    nbytes: float  # nccl-tests size of the collective a sequential implementation calls
    reduction: Reduction = "none"  # what a fused kernel must do with the bytes it receives
    before_compute: bool = False  # True when the bytes feed the compute (all-gather then GEMM)
    calls: int = 1  # separate library calls a sequential implementation makes, nbytes / calls each (buckets, layers)

    def __post_init__(self) -> None:
        if self.calls < 1 or self.nbytes < 0:
            raise ValueError(f"a Comm needs calls >= 1 and nbytes >= 0, got {self}")


@dataclass(frozen=True)
class Stage:
    """One overlappable unit: ``compute(sms)`` on that many SMs, ``comm`` alongside, ``tiles`` work tiles.

    ``tile_bytes`` is what one tile sends (the pipelining grain of a fused kernel). ``steps`` is the pipeline
    depth when it is not set by tiles per SM (ring attention's g steps, DDP's buckets, FSDP's layers): compute
    of one step overlaps the communication of the next, so only one step's worth is exposed.
    ``intra_reuse``: how many SMs need each received byte when the data feeds the compute (an all-gathered row
    block of X is read by every tile of its row): a warp-specialised kernel that fetches its own inputs moves
    the bytes that many times, where dedicated communication SMs fetch them once into local memory.
    ``library_launches`` counts the kernels an unfused implementation launches for the compute part.
    ``send_time``, when given, replaces the transfer model for this stage's bytes: ``send_time(mechanism, sms,
    nbytes)`` in seconds (a kernel's own measured send path, for instance).
    ``pipeline``: the compute kernel's shared-memory mainloop and registers, for the intra-SM pressure checks
    (:mod:`rooflib.schedule.pressure`); None when the compute keeps no operand pipeline.
    ``comm_hbm_bytes``: HBM bytes the communication reads or writes on this GPU beyond what the compute's own
    cost counts; when the compute is memory-bound and the two overlap, they share the HBM, so overlapped
    schedules add these bytes to the compute at its HBM rate (0 for compute-bound stages).
    """

    name: str
    compute: Callable[[int | None], ComputeCost] | None
    comm: Comm | None
    tiles: int = 1
    tile_bytes: float = 0.0
    steps: int | None = None
    intra_reuse: float = 1.0
    library_launches: int = 1
    send_time: Callable[[str, int, float], float] | None = None
    pipeline: Pipeline | None = None
    comm_hbm_bytes: float = 0.0
