"""Collective names and the nccl-tests bandwidth conventions, shared by the model and the benchmark workers.

This module imports only numpy and :mod:`rooflib.errors`, so the torchrun workers can use it on machines
without the rest of rooflib's dependencies.

nccl-tests (doc/PERFORMANCE.md): ``algbw = S / t`` with S the size nccl-tests reports (the full buffer: the
all-reduce buffer, the all-gather output, the reduce-scatter input, each rank's all-to-all buffer), and
``busbw = algbw * factor`` with factor 2(n-1)/n for all-reduce, (n-1)/n for all-gather, reduce-scatter,
all-to-all, gather and scatter, and 1 for broadcast, reduce and send/recv.

>>> bus_factor("all_reduce", 8)
1.75
"""

from __future__ import annotations

from typing import Literal, get_args

import numpy as np
import numpy.typing as npt

from rooflib.errors import GroupError, UnitError, UnknownNameError

__all__ = [
    "ALGORITHMS",
    "MULTICAST_ALGORITHMS",
    "MULTICAST_OFF",
    "OPS",
    "Algorithm",
    "Op",
    "bandwidths",
    "bus_factor",
    "check_algorithm",
    "check_op",
]

MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
"""Environment that keeps NVLink multicast off in NCCL, PyTorch symmetric memory and NVSHMEM (every benchmark
job runs with it unless multicast is asked for explicitly)."""

Op = Literal[
    "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce", "send_recv", "gather", "scatter"
]
Algorithm = Literal["ring", "tree", "direct", "two_shot", "recursive", "nvls", "nvls_tree", "hierarchical"]
OPS: tuple[Op, ...] = get_args(Op)
ALGORITHMS: tuple[Algorithm, ...] = get_args(Algorithm)
MULTICAST_ALGORITHMS: tuple[Algorithm, ...] = ("nvls", "nvls_tree")
"""Algorithms that need NVLink multicast (NVSwitch in-network reduction): off where multicast is forbidden."""


def check_op(name: str) -> Op:
    """``name`` as an :data:`Op` (dashes accepted), or an error listing the valid ops."""
    if not isinstance(name, str):
        raise UnknownNameError("collective", repr(name), OPS)
    op = name.replace("-", "_").lower()
    if op not in OPS:
        raise UnknownNameError("collective", name, OPS)
    return op


def check_algorithm(name: str) -> Algorithm:
    if not isinstance(name, str):
        raise UnknownNameError("algorithm", repr(name), (*ALGORITHMS, "auto", "library"))
    alg = name.replace("-", "_").lower()
    if alg not in ALGORITHMS:
        raise UnknownNameError("algorithm", name, (*ALGORITHMS, "auto", "library"))
    return alg


def _ranks(n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise GroupError(f"a collective runs on n >= 1 ranks (a whole number), got n={n!r}")
    return int(n)


def bus_factor(op: Op, n: int) -> float:
    """nccl-tests busbw / algbw factor for ``op`` on ``n`` ranks.

    ``op`` is checked (:func:`check_op`: an unknown op is an :class:`~rooflib.errors.UnknownNameError`) and ``n``
    must be a whole number >= 1 (:class:`~rooflib.errors.GroupError`). On one rank the factor is 0 for the ops
    whose factor has ``n - 1`` in it (no byte crosses the bus), as nccl-tests reports, and 1 for broadcast,
    reduce and send/recv.

    >>> bus_factor("all_reduce", 1), bus_factor("broadcast", 1)
    (0.0, 1.0)
    """
    the_op = check_op(op)
    ranks = _ranks(n)
    if the_op == "all_reduce":
        return 2.0 * (ranks - 1) / ranks
    if the_op in ("all_gather", "reduce_scatter", "all_to_all", "gather", "scatter"):
        return (ranks - 1) / ranks
    return 1.0


def bandwidths(
    op: Op, n: int, nbytes: npt.ArrayLike, time_s: npt.ArrayLike
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """``(algbw, busbw)`` in B/s for size(s) ``nbytes`` taking ``time_s`` seconds.

    Sizes must be >= 0 and times > 0 (:class:`~rooflib.errors.UnitError`); a NaN time (nothing measured)
    gives NaN bandwidths.
    """
    factor = bus_factor(op, n)
    size = np.asarray(nbytes, dtype=np.float64)
    time = np.asarray(time_s, dtype=np.float64)
    if np.any(size < 0) or np.any(np.isinf(size)):
        raise UnitError(f"sizes must be finite and >= 0 bytes, got {nbytes!r}")
    if np.any(time <= 0):
        raise UnitError(f"times must be > 0 seconds, got {time_s!r}")
    algbw = size / time
    return algbw, algbw * factor
