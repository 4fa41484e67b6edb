"""Fitting the portable library figures to measured nccl-tests tables of one or more systems at once.

:func:`fit_library_tables` takes NCCL rows (``op``, ``gpus``, ``bytes``, ``time_s``; back-to-back stream launches,
as nccl-tests and aiconfigurator's collector time them) of several systems and fits one set of the library's
portable figures (:data:`rooflib.specs.systems.PORTABLE_LIBRARY`) shared by all of them: hardware stays the
datasheet's (link rates, the topology), so one fit predicts other GPU counts and other generations with their own
rates. Fitted, by least squares on ``log(predicted / measured)`` (scipy ``least_squares``, soft-L1 loss):

- the kernel start inside the device (``graph_launch_overhead``) and the library's host call from C
  (``host_call``, the floor of back-to-back calls);
- a base latency per algorithm (``algorithm_latency``: ring, tree, nvls, direct) and each protocol's per-hop
  latency over NVLink (``protocols.*.hop_latency.nvlink``): latency grows with rank count through the hop count;
- the achievable NVLink share (``link_efficiency.nvlink``), a share per op (``op_efficiency``), a bus efficiency
  against rank count per op (``rank_efficiency``, 1 at 8 ranks and beyond), NVLS's share (``nvls_efficiency``),
  LL's and LL128's bandwidth shares and a per-transfer message-size curve (``link_size_efficiency``);
- the rate of one thread block of the point-to-point kernel (``p2p_cta_bandwidth``), where the rows hold
  all-to-alls and the library sets NCCL's per-peer block rule (:class:`rooflib.collectives.model.P2PCap`).

:func:`apply_library` puts the fitted figures onto another system's library (a new :class:`System`).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rooflib.calibrate.data import Fit, robust_fit
from rooflib.calibrate.library_model import (
    ALGS,
    CTA_STARTS,
    PRIOR_WEIGHT,
    PROTOCOLS,
    RANKS,
    FloatArray,
    _groups,
    _Model,
)
from rooflib.specs.catalog import validate
from rooflib.specs.figures import Ratio
from rooflib.specs.resolve import System
from rooflib.specs.systems import scale_latency

__all__ = [
    "RANKS",
    "STARTS",
    "TableFit",
    "apply_library",
    "fit_latency_scale",
    "fit_library_starts",
    "fit_library_tables",
    "nccl_tuning_held",
]


@dataclass(frozen=True)
class TableFit:
    """The fitted figures as ``library.*`` profile overrides, and the fit's quality: the rows' median and p90
    |error| (percent) and the least-squares cost the fit minimised (soft-L1 of the weighted log residuals)."""

    overrides: dict[str, Any]
    n: int
    median_abs_pct: float
    p90_abs_pct: float
    cost: float = float("nan")


def _us(v: float) -> str:
    return f"{v * 1e6:.4g} us"


HELD = {"algorithm_latency.nvls": 4}  # figures a fit may hold instead of fitting: their index in the vector


_HELD_NOTE = "held at this figure by the fit, not fitted (rooflib.calibrate.library_tables.nccl_tuning_held)"


def nccl_tuning_held() -> dict[str, tuple[float, str]]:
    """The figures fits hold at NCCL's own tuning figures: NVLS's base latency (the catalog library figure sourced
    ``nccl-tuning``). Fitted on 2 and 4 GPUs it went to 1-2 us, where NCCL does not pick NVLS for small messages,
    and 8 GPUs, where it does, came out 14-17 % median; held, 8-12 %."""
    from rooflib.specs import default_catalog

    catalog = default_catalog()
    for name in catalog.names("library"):
        fig = catalog.library(name).algorithm_latency.get("nvls")
        if fig is not None and fig.source == "nccl-tuning":
            return {"algorithm_latency.nvls": (fig.value, "nccl-tuning")}
    return {}


STARTS = 4
"""Starts of a fit where its spread over starts matters (the defaults tool, the generalisation scenarios)."""

JITTER = 0.3
"""Spread of the extra starts of a fit (:func:`fit_library_starts`): each figure of the default start times
``exp(N(0, JITTER))``, inside its bounds."""


def fit_library_tables(
    datasets: Sequence[tuple[System, pd.DataFrame]],
    source: str,
    *,
    max_nfev: int = 300,
    held: dict[str, tuple[float, str]] | None = None,
    starts: int = 1,
) -> TableFit:
    """Fit the portable library figures to NCCL rows (stream launches) of every ``(system, rows)`` together.

    ``rows`` needs ``op``, ``gpus``, ``bytes`` and ``time_s`` (seconds), and may name the element type
    (``dtype``: 8-bit reductions are not NVLS's). Only the library's own algorithms are
    evaluated (``algorithm="library"``); the rank curve is fitted when the rows hold more than one GPU count.
    With ``starts > 1`` the fit runs from that many starts (:func:`fit_library_starts`) and keeps the one of
    lowest cost.
    """
    return fit_library_starts(datasets, source, max_nfev=max_nfev, held=held, starts=starts)[0]


def fit_library_starts(
    datasets: Sequence[tuple[System, pd.DataFrame]],
    source: str,
    *,
    max_nfev: int = 300,
    held: dict[str, tuple[float, str]] | None = None,
    starts: int = STARTS,
    seed: int = 0,
    prior: float = PRIOR_WEIGHT,
) -> list[TableFit]:
    """:func:`fit_library_tables` from ``starts`` starting points, lowest cost first.

    The least-squares problem has many nearby minima of almost equal cost: from the default start and from
    input rows changed by 1e-4 (the catalog figures a system was routed with), the same H100 rows settled at
    costs 8.92 and 8.90 and their figures predicted the B200 tables at 7.3 and 10.4 % median. The first start is
    the default one; the others multiply each free figure by ``exp(N(0, JITTER))`` (``numpy`` generator
    ``seed``), clipped to its bounds. The spread of what the fits predict is the answer's sensitivity to where
    its fit started. ``prior``: the pull toward the generic start
    (:data:`~rooflib.calibrate.library_model.PRIOR_WEIGHT`).
    """
    if starts < 1:
        raise ValueError(f"starts: {starts} (at least 1)")
    groups = _groups(datasets)
    if not groups:
        raise ValueError("no NCCL rows of a known op at a GPU count the systems have")
    model = _Model(groups, ranks=len({g.n for g in groups}) > 1, prior=prior)
    unknown = sorted(set(held or {}) - set(HELD))
    if unknown:
        raise ValueError(f"held: {unknown[0]!r} is not a figure a fit can hold ({', '.join(HELD)})")
    if not any(a.nvls for g in groups for a in g.algs):  # no NVLS among the rows' algorithms: nothing to hold
        held = None
    for key, (value, _) in (held or {}).items():
        i = HELD[key]
        model.x0[i], model.lower[i], model.upper[i] = value, value * (1 - 1e-9), value
    rng = np.random.default_rng(seed)
    free = model.upper - model.lower > 1e-6 * np.maximum(np.abs(model.upper), 1e-30)
    fits = []
    for k in range(starts):
        start = model.x0.copy()
        if k:
            jittered = start * np.exp(rng.normal(0.0, JITTER, start.size))
            start = np.where(free, np.clip(jittered, model.lower, model.upper), start)
        fits.append(_fit_from(model, start, source, max_nfev, held))
    return sorted(fits, key=lambda f: f.cost)


def _fit_from(
    model: _Model, x0: FloatArray, source: str, max_nfev: int, held: dict[str, tuple[float, str]] | None
) -> TableFit:
    res = None
    for cta in CTA_STARTS if model.fit_p2p else (float(x0[-1]),):  # the block rate has two basins: binding or not
        start = x0.copy()
        start[-1] = cta
        trial = robust_fit(model.residuals, start, model.lower, model.upper, model.scale, max_nfev)
        if res is None or trial.cost < res.cost:
            res = trial
    assert res is not None
    p = model.unpack(res.x)
    fit = Fit()
    o = fit.overrides
    o["library.graph_launch_overhead"] = {"value": _us(p.start), "source": source}
    o["library.host_call"] = {"value": _us(p.host), "source": source}
    for alg in ALGS:
        fixed = (held or {}).get(f"algorithm_latency.{alg}")
        figure = {"value": _us(p.base[alg]), "source": source if fixed is None else fixed[1]}
        o[f"library.algorithm_latency.{alg}"] = figure if fixed is None else {**figure, "note": _HELD_NOTE}
    for name in PROTOCOLS:
        o[f"library.protocols.{name}.hop_latency.nvlink"] = {"value": _us(p.lat[name]), "source": source}
        if name != "simple":
            o[f"library.protocols.{name}.bandwidth_fraction"] = {"value": round(p.share[name], 4), "source": source}
    o["library.link_efficiency.nvlink"] = {"value": round(p.eff, 4), "source": source}
    o["library.op_efficiency"] = {op: {"value": round(v, 4), "source": source} for op, v in p.op_eff.items()}
    if model.fit_ranks:
        o["library.rank_efficiency"] = {
            op: {"points": [[int(r), round(v, 4)] for r, v in model.points(p, op)], "source": source}
            for op in model.rank_ops
        }
    o["library.nvls_efficiency"] = {"value": round(p.nvls, 4), "source": source}
    o["library.link_size_efficiency"] = {"points": [[s, round(e, 4)] for s, e in p.curve], "source": source}
    if model.fit_p2p:
        o["library.p2p_cta_bandwidth"] = {"value": f"{p.cta / 1e9:.4g} GB/s", "source": source}
    groups = model.groups
    err = np.abs(np.exp(np.concatenate([np.log(model.predict(p, g)[g.index] / g.measured) for g in groups])) - 1.0)
    err = err * 100.0
    return TableFit(o, int(err.size), float(np.median(err)), float(np.percentile(err, 90)), float(res.cost))


def _set(data: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node = data
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = copy.deepcopy(value)


def apply_library(system: System, overrides: dict[str, Any], *, keep_nvls: bool = True) -> System:
    """``system`` with ``library.*`` ``overrides`` (as :func:`fit_library_tables` returns them) on its library.

    Device latencies (:data:`rooflib.specs.systems.LATENCY_FIGURES`) are fitted in Hopper's unit: they are
    multiplied by the target library's ``latency_scale`` (1 on Hopper). ``keep_nvls``: leave the library's own NVLS
    figures (``nvls_efficiency``, ``nvls_size_efficiency``) where it has them, e.g. Blackwell's, taken from NVL72
    measurements."""
    data = system.library.model_dump(mode="json", exclude_none=True)
    scale = system.library.latency_factor
    for path, value in overrides.items():
        head, _, rest = path.partition(".")
        if head != "library":
            continue
        if keep_nvls and rest == "nvls_efficiency" and "nvls_size_efficiency" in data:
            continue
        _set(data, rest, scale_latency(rest, value, scale))
    lib = validate("library", data, f"{system.library.name} (with fitted figures)")
    return dataclasses.replace(system, library=lib)


def fit_latency_scale(
    system: System, overrides: dict[str, Any], rows: pd.DataFrame, *, algorithm: str = "library"
) -> float:
    """The ``latency_scale`` that makes ``system`` with the (Hopper-unit) ``overrides`` best predict ``rows``
    (``op``, ``gpus``, ``bytes``, ``time_s``; stream launches, as nccl-tests runs them) run with ``algorithm``:
    the scale minimising the squared log error (bounded, 0.25-4). Meant for rows of small messages, where the
    latency figures set the time."""
    from scipy.optimize import minimize_scalar

    from rooflib.collectives import predict_collective

    groups = [(str(op), int(str(n)), g) for (op, n), g in rows.groupby(["op", "gpus"])]

    def loss(k: float) -> float:
        lib = system.library.model_copy(update={"latency_scale": Ratio(value=k, source="fit")})
        scaled = apply_library(dataclasses.replace(system, library=lib), overrides)
        err = []
        for op, n, g in groups:
            sizes = g["bytes"].to_numpy(dtype=np.float64)
            t = predict_collective(op, scaled, gpus=n, nbytes=sizes, algorithm=algorithm, launch="stream").time_s
            err.append(np.log(t / g["time_s"].to_numpy(dtype=np.float64)))
        e = np.concatenate(err)
        return float(np.mean(e * e))

    res = minimize_scalar(loss, bounds=(0.25, 4.0), method="bounded", options={"xatol": 1e-4})
    return float(res.x)
