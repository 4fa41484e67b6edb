"""Copy-engine pipelines for the tensor-parallel ops: the model's inter-SM schedule with no communication SMs.

The bytes move by copy engine (``copy_`` from a peer's symmetric-memory buffer, a peer-to-peer DMA) on a side
stream while cuBLAS computes on the main stream, in ``chunks`` row pieces per peer. Symmetric memory comes from
``torch.distributed._symmetric_memory`` (no multicast: the worker forces TORCH_SYMM_MEM_DISABLE_MULTICAST=1).
Every rank runs the same steps in the same order, so a device-side barrier across ranks (``hdl.barrier`` on the
side stream) tells every rank that its peers have finished the piece it is about to pull.

- ``ag_gemm`` (X[M/g, K] per rank, W[K, N/g]): the side stream pulls every peer's rows of X, piece by piece,
  into the gathered buffer; the main stream multiplies the local rows first, then each piece as it lands.
- ``gemm_rs`` (A[M, K/g], W[K/g, N]): the main stream computes, piece by piece, the partial rows each peer owns
  into this rank's symmetric buffer (peer at distance 1 first), then its own rows; after each piece a barrier,
  then every rank pulls the matching piece of its own rows from the peer at that distance; finally the main
  stream adds what arrived (the copy engine cannot reduce).

Imports nothing but what the caller passes (torch and the rendezvous function), so the worker stays the only
module that imports torch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["ag_gemm_pipeline", "gemm_rs_pipeline"]


def _pieces(rows: int, chunks: int) -> list[tuple[int, int]]:
    """``chunks`` row ranges [start, stop) covering ``rows`` (the last may be shorter)."""
    step = -(-rows // max(1, chunks))
    return [(s, min(rows, s + step)) for s in range(0, rows, step)]


def ag_gemm_pipeline(
    torch: Any, symm_mem: Any, group_name: str, rank: int, world: int, x_local: Any, w: Any, chunks: int
) -> Callable[[], Any]:
    """Y = all_gather(X) @ W with copy-engine pulls overlapped with the products; returns the op."""
    rows, k = x_local.shape
    src = symm_mem.empty((rows, k), dtype=x_local.dtype, device=x_local.device)
    src.copy_(x_local)
    hdl = symm_mem.rendezvous(src, group_name)
    peers = {q: hdl.get_buffer(q, (rows, k), x_local.dtype) for q in range(world) if q != rank}
    gathered = torch.empty((rows * world, k), dtype=x_local.dtype, device=x_local.device)
    y = torch.empty((rows * world, w.shape[1]), dtype=w.dtype, device=w.device)
    side = torch.cuda.Stream(device=x_local.device)
    pieces = _pieces(rows, chunks)
    order = [(rank - d) % world for d in range(1, world)]  # pull the nearest peers first

    def run() -> Any:
        main = torch.cuda.current_stream()
        side.wait_stream(main)
        landed = []
        with torch.cuda.stream(side):
            hdl.barrier(channel=0)  # every rank's X is in place
            for q in order:
                for a, b in pieces:
                    gathered[q * rows + a : q * rows + b].copy_(peers[q][a:b], non_blocking=True)
                    ev = torch.cuda.Event()
                    ev.record(side)
                    landed.append((q, a, b, ev))
        torch.mm(x_local, w, out=y[rank * rows : (rank + 1) * rows])
        for q, a, b, ev in landed:
            main.wait_event(ev)
            torch.mm(gathered[q * rows + a : q * rows + b], w, out=y[q * rows + a : q * rows + b])
        main.wait_stream(side)
        return y

    return run


def gemm_rs_pipeline(
    torch: Any, symm_mem: Any, group_name: str, rank: int, world: int, a: Any, w: Any, chunks: int
) -> Callable[[], Any]:
    """The reduce-scattered rows of sum_ranks(A @ W) with copy-engine pulls of the partials; returns the op."""
    m, n = a.shape[0], w.shape[1]
    rows = m // world
    part = symm_mem.empty((m, n), dtype=w.dtype, device=w.device)
    hdl = symm_mem.rendezvous(part, group_name)
    peers = {q: hdl.get_buffer(q, (m, n), w.dtype) for q in range(world) if q != rank}
    own = torch.empty((rows, n), dtype=w.dtype, device=w.device)
    recv = torch.empty((world - 1, rows, n), dtype=w.dtype, device=w.device)
    side = torch.cuda.Stream(device=w.device)
    pieces = _pieces(rows, chunks)

    def run() -> Any:
        main = torch.cuda.current_stream()
        side.wait_stream(main)
        for d in range(1, world):
            q = (rank + d) % world  # this rank's partial of q's rows: q pulls it at step d
            src = (rank - d) % world  # the rank whose partial of this rank's rows is pulled at step d
            for lo, hi in pieces:
                torch.mm(a[q * rows + lo : q * rows + hi], w, out=part[q * rows + lo : q * rows + hi])
                ev = torch.cuda.Event()
                ev.record(main)
                side.wait_event(ev)
                with torch.cuda.stream(side):
                    hdl.barrier(channel=0)  # every rank has computed this piece
                    peer_rows = peers[src][rank * rows + lo : rank * rows + hi]
                    recv[d - 1, lo:hi].copy_(peer_rows, non_blocking=True)
        torch.mm(a[rank * rows : (rank + 1) * rows], w, out=own)
        with torch.cuda.stream(side):
            hdl.barrier(channel=0)  # peers are done reading this rank's partials before they change
        main.wait_stream(side)
        for d in range(world - 1):
            own.add_(recv[d])
        return own

    return run
