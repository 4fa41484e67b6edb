"""The model a library table fit evaluates: NCCL rows grouped by op and rank count, each with the plans the library
routes (:func:`_groups`), and the parameter vector that maps the portable library figures onto their predicted
times (:class:`_Model`). :mod:`rooflib.calibrate.library_tables` fits it.

The routed plans keep the catalog's efficiencies divided out (``_Alg.base0``), so the same rows give the same model
whatever library figures a system was routed with, up to the regimes (the protocols and algorithms the library's
tuning offers per size).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from rooflib.collectives.api import plan_costs
from rooflib.collectives.model import P2P_OPS, P2PCap, PlanCost, block_time, size_eff
from rooflib.conventions import MULTICAST_ALGORITHMS
from rooflib.specs.figures import log_interp
from rooflib.specs.resolve import System

FloatArray = npt.NDArray[np.float64]
PROTOCOLS = ("ll", "ll128", "simple")
ALGS = ("ring", "tree", "nvls", "direct")
OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")
RANKS = (2.0, 4.0)  # rank-curve points fitted below the anchor (8 ranks: 1 there and beyond)
BANDWIDTH_BYTES = float(64 << 20)
BANDWIDTH_WEIGHT = 10.0
CURVE_SIZES = tuple(float(2**k) for k in range(8, 27, 3))  # 256 B .. 64 MiB per-transfer messages (1 past it)
PRIOR_WEIGHT = 0.3
"""Weight of the fit's pull toward its generic start (one residual ``w * log(x / x0)`` per free figure with a
positive lower bound: the shares, efficiencies and the block rate). The least-squares problem has many nearby
minima of almost equal cost; the pull picks among them. Chosen among 0, 0.1, 0.3 and 1 by fitting each of A100,
H100 and H200 on its 2-GPU rows and predicting its 4-GPU rows (rows inside every fit set; the median over the
three systems of the lowest-cost fit's median error: 24.1, 23.3, 14.8 and 15.8 %;
docs/validation/generalization/prior_weight.md, ``python tools/prior_weight.py``)."""
CTA0 = 18.0  # starting point of the point-to-point block rate, GB/s (the vector keeps every entry near 1)
CTA_STARTS = (10.0, 20.0)
"""Starts of the block rate (GB/s); the fit keeps the lowest cost. From one start it can settle where the blocks
never bind (A100, 2 and 4 GPUs: 160 GB/s, cost 1.81) when binding fits better (13.8 GB/s, cost 1.43)."""


@dataclass
class _Alg:
    name: str
    nvls: bool
    base0: float  # the catalog's beta scale this cost was routed with (divided out)
    phases: list[tuple[float, int, float, float]]  # (link beta, hops, msg, switch reduction engine's beta)
    hbm_beta: float
    max_bytes: dict[str, float]
    p2p: P2PCap | None = None


@dataclass
class _Group:
    op: str
    n: int
    sizes: FloatArray  # unique sizes
    index: npt.NDArray[np.int64]  # row -> unique size
    measured: FloatArray
    algs: list[_Alg]
    gap: float
    lat_scale: float = 1.0  # the system's latency_scale: its device latencies over the fit's (Hopper's) unit


def _f0(system: System, op: str, n: int, cost: PlanCost) -> float:
    lib = system.library
    eff = lib.link_efficiency["nvlink"].value if "nvlink" in lib.link_efficiency else 1.0
    op_eff = lib.op_efficiency.get(op)
    f = eff * (1.0 if op_eff is None else op_eff.value) * (lib.rank_factor(op, n) if cost.p2p is None else 1.0)
    if cost.algorithm in MULTICAST_ALGORITHMS and lib.nvls_efficiency is not None:
        f *= lib.nvls_efficiency.value
    return f


def _groups(datasets: Sequence[tuple[System, pd.DataFrame]]) -> list[_Group]:
    out = []
    for system, rows in datasets:
        bare = dataclasses.replace(system, switch=system.switch.model_copy(update={"reduction_bandwidth": None}))
        host = system.device.host
        gap = host.eager_gap if host is not None else 0.0  # stream launches: the eager gap between queued kernels
        dtypes = rows["dtype"].fillna("") if "dtype" in rows else pd.Series("", index=rows.index)
        for (op, gpus, dtype), grp in rows.groupby([rows["op"], rows["gpus"], dtypes]):
            n = int(str(gpus))
            if str(op) not in OPS or not 2 <= n <= system.gpus:
                continue
            # the rows' element type: an 8-bit reduction cannot use NVLS (NCCL runs a ring or tree)
            costs = plan_costs(system, str(op), n, algorithm="library", dtype=str(dtype) or None)
            # the links' beta alone (the switch's reduction engine, which no share scales, kept apart): routed
            # without the engine; the engine's beta where it binds
            links = plan_costs(bare, str(op), n, algorithm="library", dtype=str(dtype) or None)
            algs = []
            for name, c in costs.items():
                phases = [
                    (lk.beta, ph.hops_nv + ph.hops_net, ph.msg, ph.beta if ph.bottleneck == -1 else 0.0)
                    for ph, lk in zip(c.phases, links[name].phases, strict=True)
                ]
                limits = {r.name: r.max_bytes for r in c.regimes}
                f0 = _f0(system, str(op), n, c)
                algs.append(_Alg(name, name in MULTICAST_ALGORITHMS, f0, phases, c.hbm_beta, limits, c.p2p))
            sizes, index = np.unique(grp["bytes"].to_numpy(dtype=np.float64), return_inverse=True)
            measured = grp["time_s"].to_numpy(dtype=np.float64)
            scale = system.library.latency_factor
            out.append(_Group(str(op), n, sizes.astype(np.float64), index, measured, algs, gap, scale))
    return out


@dataclass(frozen=True)
class _Params:
    start: float
    host: float
    base: dict[str, float]
    lat: dict[str, float]
    share: dict[str, float]
    eff: float
    op_eff: dict[str, float]
    rank: dict[str, tuple[float, ...]]
    nvls: float
    curve: tuple[tuple[float, float], ...]
    cta: float


class _Model:
    """Parameter vector <-> predictions. Layout: start, host, base x4, lat x3, share x2, eff, op_eff x4,
    rank x (4 x len(RANKS)), nvls, curve log-decrements x len(CURVE_SIZES), point-to-point block rate (GB/s)."""

    def __init__(self, groups: list[_Group], ranks: bool, prior: float = PRIOR_WEIGHT) -> None:
        self.groups = groups
        self.fit_ranks = ranks
        self.prior = prior
        # the curve is 1 at 8 ranks and beyond (a node's worth: NCCL's channel count saturates), also when only 2
        # and 4 ranks are fitted (anchoring at the largest fitted count instead predicted 8 GPUs worse: 22.7 %
        # against 16.7 % median on H100)
        self.anchor = 8.0
        nr = len(OPS) * len(RANKS)
        nc = len(CURVE_SIZES)
        x0 = [3e-6, 3e-6, *[1e-6] * 4, 0.8e-6, 1.5e-6, 3e-6, 0.25, 0.9, 0.8, *[1.0] * 4, *[0.8] * nr, 0.85]
        lo = [0.0, 0.0, *[0.0] * 4, 0.0, 0.0, 0.0, 0.05, 0.2, 0.3, *[0.3] * 4, *[0.2] * nr, 0.3]
        hi = [2e-5, 3e-5, *[3e-5] * 4, 1e-5, 1e-5, 2e-5, 1.0, 1.0, 1.0, *[1.0] * 4, *[1.0] * nr, 1.0]
        sc = [1e-6, 1e-6, *[1e-6] * 4, 1e-7, 1e-7, 1e-6, 0.1, 0.1, 0.1, *[0.1] * 4, *[0.1] * nr, 0.1]
        self.x0 = np.array([*x0, *[0.05] * nc, CTA0])
        self.lower = np.array([*lo, *[0.0] * nc, 1.0])
        self.upper = np.array([*hi, *[2.0] * nc, 200.0])
        self.scale = np.array([*sc, *[0.1] * nc, 1.0])
        self.fit_p2p = any(a.p2p is not None for g in groups for a in g.algs)
        if not self.fit_p2p:  # no point-to-point rows under the block rule: the rate is not fitted
            self.lower[-1] = CTA0 * (1 - 1e-9)
            self.upper[-1] = CTA0
        self.rank_ops = tuple(op for op in OPS if not (self.fit_p2p and op in P2P_OPS))
        for i, op in enumerate(OPS):  # under the block rule the blocks carry the rank count, not a bus curve
            if op not in self.rank_ops:
                for j in range(16 + i * len(RANKS), 16 + (i + 1) * len(RANKS)):
                    self.x0[j], self.lower[j], self.upper[j] = 1.0, 1.0 - 1e-9, 1.0
        for k, r in enumerate(RANKS):  # points at or past the anchor (or one rank count): held at 1
            if not ranks or r >= self.anchor:
                for i in range(16 + k, 16 + nr, len(RANKS)):
                    self.x0[i] = 1.0
                    self.lower[i] = 1.0 - 1e-9

    def unpack(self, x: FloatArray) -> _Params:
        nr = len(RANKS)
        rank = {op: tuple(float(v) for v in x[16 + i * nr : 16 + (i + 1) * nr]) for i, op in enumerate(OPS)}
        c0 = 17 + len(OPS) * nr
        effs = np.exp(-np.cumsum(x[c0 : c0 + len(CURVE_SIZES)][::-1])[::-1])
        return _Params(
            start=float(x[0]),
            host=float(x[1]),
            base={a: float(v) for a, v in zip(ALGS, x[2:6], strict=True)},
            lat={p: float(v) for p, v in zip(PROTOCOLS, x[6:9], strict=True)},
            share={"ll": float(x[9]), "ll128": float(x[10]), "simple": 1.0},
            eff=float(x[11]),
            op_eff={op: float(v) for op, v in zip(OPS, x[12:16], strict=True)},
            rank=rank,
            nvls=float(x[c0 - 1]),
            curve=tuple((s, float(e)) for s, e in zip(CURVE_SIZES, effs, strict=True)),
            cta=float(x[-1]) * 1e9,
        )

    def points(self, p: _Params, op: str) -> tuple[tuple[float, float], ...]:
        below = [(r, v) for r, v in zip(RANKS, p.rank[op], strict=True) if r < self.anchor]
        return (*below, (self.anchor, 1.0))

    def rank_factor(self, p: _Params, op: str, n: int) -> float:
        return float(log_interp(self.points(p, op), n))

    def predict(self, p: _Params, g: _Group) -> FloatArray:
        s = g.sizes
        best = np.full(s.shape, np.inf)
        f_new = p.eff * p.op_eff[g.op]
        for a in g.algs:
            f = f_new * (p.nvls if a.nvls else 1.0) * (self.rank_factor(p, g.op, g.n) if a.p2p is None else 1.0)
            scale = a.base0 / f
            cta = None if a.p2p is None else block_time(a.p2p, s, p.cta, p.curve)
            protos = ("simple",) if a.nvls else tuple(p_ for p_ in PROTOCOLS if p_ in a.max_bytes)
            for proto in protos:
                fixed = p.start + p.base.get(a.name, 0.0) + sum(h * p.lat[proto] for _, h, _, _ in a.phases)
                fixed *= g.lat_scale
                link = np.zeros(s.shape)
                for beta, _, msg, engine in a.phases:
                    link = link + s * np.maximum(beta * scale, engine) / (p.share[proto] * size_eff(p.curve, msg * s))
                if cta is not None:
                    link = np.maximum(link, cta / p.share[proto])
                t = fixed + np.maximum(link, s * a.hbm_beta)
                limit = a.max_bytes.get(proto, np.inf)
                if limit < np.inf:
                    t = np.where(s <= limit, t, np.inf)
                best = np.minimum(best, t)
        return np.maximum(p.host, best + g.gap)

    def residuals(self, x: FloatArray) -> FloatArray:
        p = self.unpack(x)
        fit = [np.log(self.predict(p, g)[g.index] / g.measured) * self.weight(g) for g in self.groups]
        if self.prior > 0:  # the pull toward the generic start (PRIOR_WEIGHT)
            free = (self.lower > 0) & (self.upper - self.lower > 1e-6 * np.abs(self.upper))
            fit.append(self.prior * np.log(x[free] / self.x0[free]))
        return np.concatenate(fit)

    def weight(self, g: _Group) -> FloatArray:
        """Rows of the bandwidth regime (past ``BANDWIDTH_BYTES``) count ``BANDWIDTH_WEIGHT`` times: they are few
        (sizes double from 512 B) but set the bus bandwidth every large-message prediction rests on."""
        return np.where(g.sizes[g.index] >= BANDWIDTH_BYTES, BANDWIDTH_WEIGHT, 1.0)
