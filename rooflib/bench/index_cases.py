"""Gathers and scatters, for the ``kernels`` part of the ``compute`` family (torch passed in).

- ``index_select``: rows of a table picked by index (``embedding`` and ``x[idx]`` run the same kernel family);
- ``gather``: ``torch.gather`` along the last dimension, one index per element;
- ``index_add``: ``index_add_`` of rows at random indices (atomics);
- ``scatter_add``: ``scatter_add_`` of fp32 elements at random positions (atomics);
- ``scatter_add_rows``: ``scatter_add_`` of rows, its index one per row expanded along the row (the MoE combine's
  ``out.scatter_add_(0, idx.expand(-1, h), tokens)``: an elementwise kernel with atomics that fall on consecutive
  addresses, where ``index_add_`` runs ATen's index kernel);
- ``index_put``: ``x[idx] = v`` at distinct positions, without accumulation.

``bytes_moved`` counts what the op reads and writes (:func:`rooflib.compute.kernels.moved_bytes`: the rows or
elements moved twice for a gather, three times for a scatter, and the int64 indices). Each check compares the
first call's output on a slice with a float64 reference; a scatter's atomics add in any order, so its tolerance
is its dtype's rounding of a few additions.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from rooflib.bench.compute_ops import CHECK, ROW, Case, row_shape
from rooflib.bench.torch_common import rel_error

__all__ = ["INDEX_OPS", "index_case"]

INDEX_OPS = ("index_select", "gather", "index_add", "scatter_add", "scatter_add_rows", "index_put")
_ATOMIC_TOLERANCE = {2: 2e-2, 4: 1e-5}
"""Relative error allowed a scatter with atomics, by element bytes: bf16 rounds each addition (about one
addition per position here), fp32 only the order of a few."""


def index_case(torch: Any, dev: Any, op: str, dt: Any, size: int, n: int) -> Case:
    """``op`` moving ``n`` elements of ``dt`` (``size`` bytes each; ``scatter_add`` always fp32)."""
    builders: dict[str, Callable[..., Case]] = {
        "index_select": _index_select,
        "gather": _gather,
        "index_add": partial(_row_add, expanded=False),
        "scatter_add": _scatter_add,
        "scatter_add_rows": partial(_row_add, expanded=True),
        "index_put": _index_put,
    }
    if op not in builders:
        raise ValueError(f"unknown index op {op!r}; valid: {', '.join(INDEX_OPS)}")
    return builders[op](torch, dev, dt, size, n)


def _index_select(torch: Any, dev: Any, dt: Any, size: int, n: int) -> Case:
    """Gather ``rows`` rows of ``ROW`` elements out of a table twice as tall (``n``: the output's elements)."""
    rows, cols = row_shape(n, ROW)
    table = 2 * rows

    def make(i: int) -> Any:
        return (torch.randn(table, cols, device=dev, dtype=dt), torch.randint(0, table, (rows,), device=dev))

    def check(g: Any, out: Any) -> float:
        r = min(rows, 64)
        return rel_error(torch, out[:r], g[0][g[1][:r]])

    moved = 2 * rows * cols * size + rows * 8
    extra = {"rows": rows, "cols": cols, "elements": rows * cols}
    call = lambda g: torch.index_select(g[0], 0, g[1])  # noqa: E731
    return Case(make, call, check, float(moved), float(rows * cols * size), 0.0, extra=extra)


def _gather(torch: Any, dev: Any, dt: Any, size: int, n: int) -> Case:
    """``torch.gather`` along the last dimension: one int64 index per output element, from rows twice as long."""
    rows, cols = row_shape(n, ROW)

    def make(i: int) -> Any:
        data = torch.randn(rows, 2 * cols, device=dev, dtype=dt)
        return (data, torch.randint(0, 2 * cols, (rows, cols), device=dev))

    def check(g: Any, out: Any) -> float:
        r = min(rows, 16)
        return rel_error(torch, out[:r], torch.gather(g[0][:r].double(), 1, g[1][:r]))

    moved = 2 * rows * cols * size + rows * cols * 8
    extra = {"rows": rows, "cols": cols, "elements": rows * cols}
    call = lambda g: torch.gather(g[0], 1, g[1])  # noqa: E731
    return Case(make, call, check, float(moved), float(rows * cols * size), 0.0, extra=extra)


def _row_add(torch: Any, dev: Any, dt: Any, size: int, n: int, *, expanded: bool) -> Case:
    """``rows`` source rows of ``ROW`` added into a table of as many rows at random rows: ``out.index_add_(0, idx,
    src)``, or (``expanded``) ``out.scatter_add_(0, idx.expand(-1, ROW), src)``, one int64 index per row (stride 0
    along it)."""
    rows, cols = row_shape(n, ROW)

    def make(i: int) -> Any:
        src = torch.randn(rows, cols, device=dev, dtype=dt)
        idx = torch.randint(0, rows, (rows, 1) if expanded else (rows,), device=dev)
        return (torch.zeros(rows, cols, device=dev, dtype=dt), idx.expand(rows, cols) if expanded else idx, src)

    def check(g: Any, out: Any) -> float:  # the first rows against the same sums in float64
        r = min(rows, 64)
        first = g[1][:, 0] if expanded else g[1]
        hit = first < r
        want = torch.zeros(r, cols, device=out.device, dtype=torch.float64)
        want.index_add_(0, first[hit], g[2][hit].double())
        return rel_error(torch, out[:r], want) if out.shape == (rows, cols) else 1.0

    def call(g: Any) -> Any:
        return g[0].scatter_add_(0, g[1], g[2]) if expanded else g[0].index_add_(0, g[1], g[2])

    moved = 3 * rows * cols * size + rows * 8
    extra = {"rows": rows, "cols": cols, "elements": rows * cols}
    tol = _ATOMIC_TOLERANCE.get(size, 2e-2)
    return Case(make, call, check, float(moved), float(rows * cols * size), tol, extra=extra)


def _scatter_add(torch: Any, dev: Any, dt: Any, size: int, n: int) -> Case:
    """``out.scatter_add_(0, idx, src)`` over ``n`` fp32 elements at random positions (fp32: atomics; ``n``
    counted in the record's dtype, as the committed runs measured it)."""
    del dt, size  # always fp32

    def make(i: int) -> Any:
        src = torch.randn(n, device=dev, dtype=torch.float32)
        return (torch.zeros(n, device=dev, dtype=torch.float32), torch.randint(0, n, (n,), device=dev), src)

    def check(g: Any, out: Any) -> float:  # the first positions against the same sums in float64
        k = min(n, CHECK)
        hit = g[1] < k
        want = torch.zeros(k, device=out.device, dtype=torch.float64)
        want.index_add_(0, g[1][hit], g[2][hit].double())
        return rel_error(torch, out[:k], want)

    moved = 3 * n * 4 + n * 8
    call = lambda g: g[0].scatter_add_(0, g[1], g[2])  # noqa: E731
    return Case(make, call, check, float(moved), float(n * 4), _ATOMIC_TOLERANCE[4], extra={"elements": n})


def _index_put(torch: Any, dev: Any, dt: Any, size: int, n: int) -> Case:
    """``x[idx] = v`` (``index_put_`` without accumulation) of ``n`` elements at distinct random positions."""

    def make(i: int) -> Any:
        idx = torch.randperm(n, device=dev)
        return (torch.zeros(n, device=dev, dtype=dt), idx, torch.randn(n, device=dev, dtype=dt))

    def check(g: Any, out: Any) -> float:
        k = min(n, CHECK)
        return rel_error(torch, out[g[1][:k]], g[2][:k])

    moved = 3 * n * size + n * 8
    call = lambda g: g[0].index_put_((g[1],), g[2])  # noqa: E731
    return Case(make, call, check, float(moved), float(n * size), 0.0, extra={"elements": n})
