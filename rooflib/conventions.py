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

from rooflib.errors import UnknownNameError

__all__ = [
    "ALGORITHMS",
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
Algorithm = Literal["ring", "tree", "direct", "two_shot", "recursive", "nvls", "hierarchical"]
OPS: tuple[Op, ...] = get_args(Op)
ALGORITHMS: tuple[Algorithm, ...] = get_args(Algorithm)


def check_op(name: str) -> Op:
    """``name`` as an :data:`Op` (dashes accepted), or an error listing the valid ops."""
    op = name.replace("-", "_").lower()
    if op not in OPS:
        raise UnknownNameError("collective", name, OPS)
    return op


def check_algorithm(name: str) -> Algorithm:
    alg = name.replace("-", "_").lower()
    if alg not in ALGORITHMS:
        raise UnknownNameError("algorithm", name, (*ALGORITHMS, "auto", "library"))
    return alg


def bus_factor(op: Op, n: int) -> float:
    """nccl-tests busbw / algbw factor for ``op`` on ``n`` ranks."""
    if op == "all_reduce":
        return 2.0 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter", "all_to_all", "gather", "scatter"):
        return (n - 1) / n
    return 1.0


def bandwidths(
    op: Op, n: int, nbytes: npt.ArrayLike, time_s: npt.ArrayLike
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """``(algbw, busbw)`` in B/s for size(s) ``nbytes`` taking ``time_s`` seconds."""
    algbw = np.asarray(nbytes, dtype=np.float64) / np.asarray(time_s, dtype=np.float64)
    return algbw, algbw * bus_factor(op, n)
