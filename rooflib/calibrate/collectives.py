"""Fitting the collective library's parameters to NCCL measurements (stream and CUDA-graph launches).

The model keeps its structure (routed plans of the library's own algorithms, protocol regimes); the fit moves
its numbers: stream and graph launch costs, a per-op latency and bandwidth share, the achievable NVLink
share, each protocol's per-hop latency and bandwidth share, and a message-size efficiency table, by least squares on
``log(predicted / measured)`` over every verified point (scipy ``least_squares``, soft-L1 loss).

Only NVLink-class parameters are fitted: a single-node run says nothing about InfiniBand.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rooflib.calibrate.data import Fit, nccl_key, robust_fit
from rooflib.collectives.api import plan_costs
from rooflib.collectives.model import PlanCost, plan_time
from rooflib.conventions import MULTICAST_ALGORITHMS
from rooflib.specs.resolve import System

__all__ = ["fit_collectives"]

PROTOCOLS = ("ll", "ll128", "simple")
CURVE_SIZES = tuple(float(2**k) for k in range(10, 32, 3))  # 1 KiB .. 2 GiB per-transfer messages


@dataclass
class _Point:
    op: str
    graph: bool
    sizes: np.ndarray
    measured: np.ndarray
    costs: dict[str, PlanCost]


@dataclass(frozen=True)
class _Params:
    launch_graph: float
    launch_stream: float
    eff: float
    lat: dict[str, float]
    share: dict[str, float]
    op: dict[str, float]
    op_eff: dict[str, float]
    curve: tuple[tuple[float, float], ...]


class _Model:
    """Parameter vector <-> predictions. Layout: launch_graph, stream_extra, nv_eff, lat x3, share x2,
    op latency x n, op efficiency x n, curve x len(CURVE_SIZES)."""

    def __init__(self, system: System, points: list[_Point]) -> None:
        self.system, self.points = system, points
        self.ops = sorted({p.op for p in points})
        self.eff0 = system.library.link_efficiency["nvlink"].value
        lib = system.library
        # an op measured at one GPU count n: its fitted share is the whole per-op bus share there (op_efficiency x
        # rank_efficiency(n)); written back as the rank curve's point at n (the catalog's op share and the curve's
        # other points stay, so the profile carries to other counts). Measured at several counts: the per-op
        # share alone, the catalog's rank curve held.
        counts: dict[str, set[int]] = {}
        for pt in points:
            counts.setdefault(pt.op, set()).update(c.n for c in pt.costs.values())
        self.count = {op: next(iter(ns)) if len(ns) == 1 else None for op, ns in counts.items()}
        self.cat_op = {op: (lambda e: 1.0 if e is None else e.value)(lib.op_efficiency.get(op)) for op in self.ops}
        lat = [lib.protocols[p].hop_latency["nvlink"].value if p in lib.protocols else 2e-6 for p in PROTOCOLS]
        share = [lib.protocols[p].bandwidth_fraction.value if p in lib.protocols else 0.9 for p in PROTOCOLS[:2]]
        self.x0 = np.array(
            [
                lib.graph_launch_overhead.value,
                max(0.0, lib.launch_overhead.value - lib.graph_launch_overhead.value),
                self.eff0,
                *lat,
                *share,
                *[1e-6] * len(self.ops),
                *[self._share0(op) for op in self.ops],
                *[0.01] * len(CURVE_SIZES),
            ]
        )
        n_op, n_c = len(self.ops), len(CURVE_SIZES)
        # the size curve is parametrised by log-decrements d_j >= 0: eff_k = exp(-sum_{j >= k} d_j) grows with
        # size, and d_j <= ln 8 keeps time non-decreasing between points 8x apart
        self.lower = np.array([0, 0, 0.3, 0, 0, 0, 0.05, 0.3, *[0] * n_op, *[0.3] * n_op, *[0.0] * n_c])
        top = [self.cat_op[op] if self.count[op] is not None else 1.0 for op in self.ops]  # rank point <= 1
        self.upper = np.array([1e-4, 1e-4, 1.0, 2e-5, 2e-5, 4e-5, 1.0, 1.0, *[1e-4] * n_op, *top, *[2.0] * n_c])
        self.x0 = np.minimum(self.x0, self.upper)
        self.scale = np.array(
            [1e-6, 1e-6, 0.1, 1e-6, 1e-6, 1e-6, 0.1, 0.1, *[1e-6] * n_op, *[0.1] * n_op, *[0.1] * n_c]
        )

    def starts(self) -> list[np.ndarray]:
        """Starting points of the fit (the lowest-cost result wins: the protocol figures make it non-convex): the
        catalog's figures, then the same with the protocols' per-hop latencies 4x and their bandwidth shares
        halved or raised to 0.9 (regimes the catalog's start can get stuck out of)."""
        out = [self.x0.copy()]
        for lat, share in ((4.0, 0.5), (4.0, None), (0.25, None)):
            x = self.x0.copy()
            x[3:6] = np.clip(x[3:6] * lat, self.lower[3:6], self.upper[3:6])
            x[6:8] = np.clip(x[6:8] * share if share else np.full(2, 0.9), self.lower[6:8], self.upper[6:8])
            out.append(x)
        return out

    def _share0(self, op: str) -> float:
        n = self.count.get(op)
        return 1.0 if n is None else self.cat_op[op] * self.system.library.rank_factor(op, n)

    def unpack(self, x: np.ndarray) -> _Params:
        n_op = len(self.ops)
        effs = np.exp(-np.cumsum(x[8 + 2 * n_op :][::-1])[::-1])
        return _Params(
            launch_graph=float(x[0]),
            launch_stream=float(x[0] + x[1]),
            eff=float(x[2]),
            lat={name: float(v) for name, v in zip(PROTOCOLS, x[3:6], strict=True)},
            share={"ll": float(x[6]), "ll128": float(x[7]), "simple": 1.0},
            op={name: float(v) for name, v in zip(self.ops, x[8 : 8 + n_op], strict=True)},
            op_eff={name: float(v) for name, v in zip(self.ops, x[8 + n_op : 8 + 2 * n_op], strict=True)},
            curve=tuple((s, float(e)) for s, e in zip(CURVE_SIZES, effs, strict=True)),
        )

    def _recost(self, cost: PlanCost, p: _Params, op: str) -> PlanCost:
        regimes = tuple(
            dataclasses.replace(r, lat_nv=p.lat[r.name], bw_fraction=p.share[r.name]) if r.name in PROTOCOLS else r
            for r in cost.regimes
        )
        # the routed cost carries the catalog's link and per-op shares (and, for an op measured at one count, its
        # rank factor there): divide them out, put the fitted ones in
        held = self.cat_op[op]
        if self.count.get(op) is not None:
            held *= self.system.library.rank_factor(op, cost.n)
        scale = self.eff0 * held / (p.eff * p.op_eff[op])
        phases = tuple(dataclasses.replace(ph, beta=ph.beta * scale) for ph in cost.phases)
        return dataclasses.replace(
            cost, regimes=regimes, phases=phases, base_latency=p.op[op], size_curve_points=p.curve
        )

    def predict(self, x: np.ndarray, point: _Point) -> np.ndarray:
        p = self.unpack(x)
        launch = p.launch_graph if point.graph else p.launch_stream
        times = [plan_time(self._recost(c, p, point.op), point.sizes, launch)[0] for c in point.costs.values()]
        return np.asarray(np.min(np.vstack(times), axis=0))

    def residuals(self, x: np.ndarray) -> np.ndarray:
        return np.concatenate([np.log(self.predict(x, pt) / pt.measured) for pt in self.points])


def _points(frame: pd.DataFrame, system: System, native_only: dict[str, tuple[str, ...]]) -> list[_Point]:
    rows = frame[(frame["family"] == "nccl") & frame["verified"] & frame["variant"].isin(["stream", "graph"])]
    out = []
    for key, grp in rows.groupby(["name", "gpus", "variant"]):
        op, gpus, mode = nccl_key(key)
        if not 2 <= gpus <= system.gpus:
            continue
        costs = plan_costs(system, op, gpus, algorithm="library")
        costs = {a: c for a, c in costs.items() if a in native_only.get(op, tuple(costs))}
        if not costs:
            continue
        grp = grp.sort_values("bytes")
        out.append(
            _Point(
                str(op),
                mode == "graph",
                grp["bytes"].astype(float).to_numpy(),
                grp["time_s"].astype(float).to_numpy(),
                costs,
            )
        )
    return out


def _solve(model: _Model, x0: np.ndarray) -> Any:
    return robust_fit(model.residuals, x0, model.lower, model.upper, model.scale, 400)


def _rank_points(system: System, op: str, n: int, value: float) -> list[list[float]]:
    """The catalog's rank curve of ``op`` with its point at ``n`` ranks set to ``value`` (8 ranks: 1 when the
    catalog has no curve)."""
    curve = system.library.rank_efficiency.get(op) or system.library.rank_efficiency.get("default")
    points = {float(r): float(e) for r, e in (curve.points if curve is not None else ((8.0, 1.0),))}
    points[float(n)] = round(value, 4)
    return [[int(r) if float(r).is_integer() else r, e] for r, e in sorted(points.items())]


def fit_collectives(frame: pd.DataFrame, system: System, source: str, *, nvls_enabled: bool = False) -> Fit:
    """Profile overrides for ``library.*`` from the NCCL sweep in ``frame``."""
    fit = Fit()
    native = {
        op: tuple(a for a in algs if nvls_enabled or a not in MULTICAST_ALGORITHMS)
        for op, algs in system.library.native_algorithms.items()
    }
    points = _points(frame, system, native)
    if not points:
        return fit
    model = _Model(system, points)
    res = min((_solve(model, x0) for x0 in model.starts()), key=lambda r: float(r.cost))
    p = model.unpack(res.x)
    fit.set("library.launch_overhead", p.launch_stream * 1e6, source, "us")
    fit.set("library.graph_launch_overhead", p.launch_graph * 1e6, source, "us")
    fit.overrides["library.link_efficiency.nvlink"] = {"value": round(p.eff, 4), "source": source}
    for name in PROTOCOLS:
        if name in system.library.protocols:
            us = {"value": f"{p.lat[name] * 1e6:.4g} us", "source": source}
            fit.overrides[f"library.protocols.{name}.hop_latency.nvlink"] = us
            if name != "simple":
                share = {"value": round(p.share[name], 4), "source": source}
                fit.overrides[f"library.protocols.{name}.bandwidth_fraction"] = share
    for alg in sorted({a for algs in native.values() for a in algs}):
        folded = {"value": "0 us", "source": f"{source} (folded into op_latency)"}
        fit.overrides[f"library.algorithm_latency.{alg}"] = folded
    fit.overrides["library.op_latency"] = {
        op: {"value": f"{v * 1e6:.4g} us", "source": source} for op, v in p.op.items()
    }
    several = {op: v for op, v in p.op_eff.items() if model.count[op] is None}
    if several:
        fit.overrides["library.op_efficiency"] = {
            op: {"value": round(v, 4), "source": source} for op, v in several.items()
        }
    for op, op_share in p.op_eff.items():
        n = model.count[op]
        if n is not None:
            fit.overrides[f"library.rank_efficiency.{op}"] = {
                "points": _rank_points(system, op, n, min(1.0, op_share / model.cat_op[op])),
                "source": source,
                "note": f"the point at {n} ranks fitted (the op's bus share there over its op_efficiency)",
            }
    curve = [[size, round(e, 4)] for size, e in p.curve]
    fit.overrides["library.link_size_efficiency"] = {"points": curve, "source": source}
    fit.overrides["library.native_algorithms"] = {op: list(a) for op, a in native.items()}
    err = np.abs(np.exp(model.residuals(res.x)) - 1) * 100
    fit.quality.append(
        {
            "family": "nccl",
            "name": "fit",
            "n": int(err.size),
            "median_abs_pct": float(np.median(err)),
            "max_abs_pct": float(np.max(err)),
            "cost": float(res.cost),
        }
    )
    return fit
