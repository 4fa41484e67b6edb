"""Host costs from the ``host`` family (rooflib/bench/host_worker.py): the ``HostSpec`` figures of a device.

Every figure is a measured per-call host time, not an intercept: ``kernel`` is the median of the out-of-place
elementwise calls (``add``, ``mul`` by a scalar, ``gelu``, ``silu``, ``tanh``, ``div``: each allocates its
output and launches one kernel), ``cublas`` the 64 x 64 x 64 ``mm``, ``view`` the median of ``view``,
``transpose`` and ``reshape`` (dispatch, no launch), ``iteration`` the timed loop's own cost, ``graph_launch``
a one-kernel graph's replay, ``kernel_gap`` the slope of a replayed graph's device time over its one-element
kernels less such a kernel's own run (profiler), ``queued_gap`` the same slope of eagerly launched kernels all
queued behind a sleep kernel (the ``queued`` case), ``sync`` a round trip less its parts. ``ops`` keeps, by aten
op, the single-op calls whose cost differs from their kind's by more than ``OWN_COST`` (top-k, casts, sums,
SDPA, ...).

The compositions (``matmul3d``, ``cross_entropy``, ``chain``) and the calls taken into ``kernel`` by their median
are not fitted one by one: :func:`host_checks` predicts them from the fitted figures (held out).

>>> recs = [{"record": "point", "family": "host", "name": "op", "op": "add", "aten": ["aten.add"],
...          "host_s": 9e-6, "verified": True}]
>>> fit_host(recs)["kernel"]
9e-06
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from rooflib.bench.host_ops import PKB_CASES

__all__ = [
    "KERNEL_CASES",
    "OWN_COST",
    "VIEW_CASES",
    "fit_autograd",
    "fit_c10d",
    "fit_host",
    "host_checks",
    "host_yaml",
    "lease_host",
    "mix_ratio",
    "probe_reference",
    "scaled_host",
]

KERNEL_CASES = ("add", "mul_scalar", "gelu", "silu", "tanh", "div")
VIEW_CASES = ("view", "transpose", "reshape")
SINGLE_CASES = ("cast", "softmax", "log_softmax", "sum_dim", "topk", "nll_loss", "sdpa", "split")
COMPOSED = ("matmul3d", "cross_entropy", "chain")
OWN_COST = 0.10
"""A single-op call keeps its own figure when it is this much (relative) off its kind's."""


def _points(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [
        r
        for r in records
        if r.get("family") == "host"
        and r.get("record") == "point"
        and r.get("verified")
        and not r.get("after_profiler")
    ]


def _case(points: list[Mapping[str, Any]], op: str) -> float | None:
    vals = [float(r["host_s"]) for r in points if r.get("name") == "op" and r.get("op") == op]
    return statistics.median(vals) if vals else None


def _named(points: list[Mapping[str, Any]], name: str, key: str = "host_s") -> float | None:
    vals = [float(r[key]) for r in points if r.get("name") == name and key in r]
    return statistics.median(vals) if vals else None


def _slope(recs: list[Mapping[str, Any]]) -> float:
    """Device seconds per kernel: the least-squares slope of ``device_s`` over ``nodes``."""
    return float(np.polyfit([float(r["nodes"]) for r in recs], [float(r["device_s"]) for r in recs], 1)[0])


def _gaps(pts: list[Mapping[str, Any]], run: float | None) -> dict[str, float]:
    """``kernel_gap`` and ``graph_launch`` from the ``graph`` records, ``queued_gap`` from the ``queued`` ones."""
    out: dict[str, float] = {}
    graph = [r for r in pts if r.get("name") == "graph"]
    if len(graph) >= 3:
        out["kernel_gap"] = max(0.0, _slope([r for r in graph if float(r["nodes"]) >= 10]) - (run or 0.0))
        one = [float(r["host_s"]) for r in graph if float(r["nodes"]) == 1]
        if one:
            out["graph_launch"] = statistics.median(one)
    queued = [r for r in pts if r.get("name") == "queued"]
    if len(queued) >= 3 and run is not None:  # eager kernels all queued behind a sleep: slope less a kernel's run
        out["queued_gap"] = max(0.0, _slope(queued) - run)
    events = [r for r in pts if r.get("name") == "queued_event"]
    if len(queued) >= 3 and len(events) >= 3:  # the same with a timing event after each kernel: the event's share
        out["queued_event"] = max(0.0, _slope(events) - _slope(queued))
    return out


def fit_host(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """``{figure: seconds}`` and ``ops: {aten name: seconds}`` (see the module docstring); absent when not measured."""
    pts = _points(records)
    out: dict[str, Any] = {}
    kern = [v for v in (_case(pts, c) for c in KERNEL_CASES) if v is not None]
    if kern:
        out["kernel"] = statistics.median(kern)
    mm = _case(pts, "mm")
    if mm is not None:
        out["cublas"] = mm
    views = [v for v in (_case(pts, c) for c in VIEW_CASES) if v is not None]
    if views:
        out["view"] = statistics.median(views)
    fresh = [r for r in pts if r.get("name") == "iteration" and r.get("events") == "fresh"]
    if fresh:  # a loop that reused its events (records before 2026-12) measured less than PKB's loop pays
        out["iteration"] = statistics.median(float(r["host_s"]) for r in fresh)
    run = _named(pts, "kernel_run", "device_s")
    out.update(_gaps(pts, run))
    round_trip, kernel = _named(pts, "sync", "time_s"), _named(pts, "kernel")
    if round_trip is not None and kernel is not None:
        out["sync"] = max(0.0, round_trip - kernel - (run or 0.0))
    ops: dict[str, float] = {}
    base = out.get("kernel")
    for case in (*SINGLE_CASES, *PKB_CASES):
        v = _case(pts, case)
        rec = next((r for r in pts if r.get("op") == case), None)
        if v is None or rec is None or base is None:
            continue
        if case == "split":
            ops[str(rec["aten"][0])] = v
        elif abs(v / base - 1.0) > OWN_COST:
            ops[str(rec["aten"][0])] = v
    out["ops"] = ops
    ops.update(fit_autograd(pts, out))
    return out


def fit_autograd(records: Iterable[Mapping[str, Any]], fit: Mapping[str, Any]) -> dict[str, float]:
    """``HostSpec.ops`` entries for autograd (:mod:`rooflib.trace.autograd`) from the ``autograd`` cases
    (:mod:`rooflib.bench.host_autograd`): each case's host time less its twin's (the same forward without
    autograd) and less the fitted figures (``fit``) of the aten ops and views the twin lacks, least squares on
    the counted ``records``, ``nodes`` and ``backward``; a figure that comes out negative is dropped (0) and
    the rest refitted. Empty without enough cases or without a ``kernel`` figure."""
    from collections import Counter

    from rooflib.bench.host_autograd import TWINS

    if "kernel" not in fit:  # the ops' own figures are what the fit takes off
        return {}
    cases = {str(r["case"]): r for r in records if r.get("name") == "autograd" and "host_s" in r}
    cols = ["records", "nodes", "backward"]
    rows, rhs = [], []
    for name, twin_name in TWINS.items():
        case, twin = cases.get(name), cases.get(twin_name)
        if case is None or twin is None:
            continue
        extra = Counter(case.get("aten", ())) - Counter(twin.get("aten", ()))
        views = int(case.get("views", 0)) - int(twin.get("views", 0))
        own = _predict(fit, list(extra.elements())) + fit.get("view", 0.0) * max(0, views)
        rows.append([float(case.get(c, 0)) for c in cols])
        rhs.append(float(case["host_s"]) - float(twin["host_s"]) - own)
    names = dict(zip(cols, ("python.autograd_record", "python.autograd_node", "python.backward"), strict=True))
    keep = list(range(len(cols)))
    while keep:
        a = np.array([[row[i] for i in keep] for row in rows], dtype=float)
        if len(rows) < len(keep) or np.linalg.matrix_rank(a) < len(keep):
            return {}
        sol = np.linalg.lstsq(a, np.array(rhs), rcond=None)[0]
        if (sol >= 0).all():
            out = dict.fromkeys(names.values(), 0.0)
            out.update({names[cols[i]]: float(v) for i, v in zip(keep, sol, strict=True)})
            return out
        keep.pop(int(np.argmin(sol)))
    return {}


FAKE_ALLOCS = ("zeros", "cat")
"""``alloc`` cases whose cost differs from a view's and that the fake runs charge by aten op."""


def fit_c10d(records: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """``HostSpec.ops`` entries from the ``c10d`` part (``rooflib.bench.host_dist.c10d_part``): each c10d call
    through torch's fake process group, ``fake.<op>@w<world>`` (median over the cases that dispatch it) and
    ``fake.<op>`` (median over worlds); a send and a receive as one ``fake.c10d.send_recv`` (what
    ``batch_isend_irecv`` of both costs); the ``zeros`` and ``cat`` allocations by aten op.

    >>> fit_c10d([{"record": "point", "family": "host", "name": "c10d", "case": "all_reduce", "world": 2,
    ...            "c10d": ["c10d.allreduce_"], "host_s": 6e-06, "verified": True}])
    {'fake.c10d.allreduce_@w2': 6e-06, 'fake.c10d.allreduce_': 6e-06}
    """
    pts = _points(records)
    by: dict[tuple[str, int], list[float]] = {}
    for r in pts:
        if r.get("name") != "c10d" or not r.get("c10d"):
            continue
        ops = list(r["c10d"])
        if len(ops) != 1 and r.get("case") != "batch_isend_irecv":
            continue  # composite calls (all_gather_object): not one op's cost
        name = "c10d.send_recv" if r.get("case") == "batch_isend_irecv" else str(ops[0])
        if name in ("c10d.send", "c10d.recv_"):
            continue  # a lone send or receive: the traced pair is charged as batch_isend_irecv
        by.setdefault((name, int(r["world"])), []).append(float(r["host_s"]))
    out: dict[str, float] = {}
    for name in sorted({n for n, _ in by}):
        per_world = {w: statistics.median(v) for (n, w), v in sorted(by.items()) if n == name}
        for w, v in per_world.items():
            out[f"fake.{name}@w{w}"] = v
        out[f"fake.{name}"] = statistics.median(per_world.values())
    groups = [float(r["host_s"]) for r in pts if r.get("name") == "new_group"]
    if groups:
        out["python.new_group"] = statistics.median(groups)
    for case in FAKE_ALLOCS:
        vals = [float(r["host_s"]) for r in pts if r.get("name") == "alloc" and r.get("case") == case]
        if vals:
            out[f"aten.{case}"] = statistics.median(vals)
    return out


def lease_host(host: Any, records: Iterable[Mapping[str, Any]], source: str) -> Any:
    """``host`` (a ``HostSpec``) with every figure the ``host`` family's records measure replaced by its measured
    value (:func:`fit_host`, :func:`fit_c10d`), sourced ``source``; the rest (``nccl``, ops not measured) stays.
    For predicting runs made on the same machine: a lent host's speed differs between leases."""
    from rooflib.specs.figures import Duration

    recs = list(records)
    fit = fit_host(recs)
    measured = {**fit.pop("ops", {}), **fit_c10d(recs)}
    ops = {**host.ops, **{k: Duration(value=v, source=source) for k, v in measured.items()}}
    fields = {k: Duration(value=v, source=source) for k, v in fit.items() if k in type(host).model_fields}
    return host.model_copy(update={**fields, "ops": ops})


HOST_SIDE = ("kernel", "cublas", "nccl", "sync", "graph_launch", "view", "iteration")
"""The ``HostSpec`` figures that are host work (``kernel_gap`` is the device's): what :func:`scaled_host` scales."""


def probe_reference(records: Iterable[Mapping[str, Any]]) -> float | None:
    """The host family's probes (``name: probe``: at its start and end, and from x1-lease-12 on before each op
    case; ``rooflib.bench.torch_timing.host_probe``): their median, the host's speed while the figures were
    measured; None without probes.

    >>> probe_reference([{"record": "point", "name": "probe", "host_s": v} for v in (4e-5, 6e-5, 9e-5)])
    6e-05
    """
    vals = [float(r["host_s"]) for r in records if r.get("record") == "point" and r.get("name") == "probe"]
    return statistics.median(vals) if vals else None


def mix_ratio(records: Iterable[Mapping[str, Any]]) -> float | None:
    """The host family's ``mix`` record: every op case once per round, over the same cases each in its own loop
    (``ratio``): how much more this host charges for a sequence of different ops than its tight loops say;
    None where the run has no mix.

    >>> mix_ratio([{"record": "point", "family": "host", "name": "mix", "ratio": 2.1, "verified": True}])
    2.1
    """
    vals = [float(r["ratio"]) for r in _points(records) if r.get("name") == "mix" and r.get("ratio")]
    return sum(vals) / len(vals) if vals else None


def scaled_host(host: Any, factor: float, source: str, *, waits: float | None = None) -> Any:
    """``host`` (a ``HostSpec``) with every host-side figure and op (:data:`HOST_SIDE`) times ``factor``: the same
    host at another speed, as two probes' ratio measures it (``factor`` = the probe taken before a problem over
    :func:`probe_reference`). ``waits``: the factor of the ops that wait for the device instead
    (:data:`rooflib.trace.value_sized.WAITING_HOST_OPS`; ``factor`` when None)."""
    from rooflib.specs.figures import Duration
    from rooflib.trace.value_sized import WAITING_HOST_OPS

    for f in (factor, factor if waits is None else waits):
        if not f > 0 or f != f or f == float("inf"):
            raise ValueError(f"a host speed factor must be a positive number, got {f!r}")

    def times(d: Any, by: float = factor) -> Any:
        return None if d is None else Duration(value=d.value * by, source=f"{d.source}; x {by:.3g} ({source})")

    fields = {k: times(getattr(host, k)) for k in HOST_SIDE if k in type(host).model_fields}
    by = {k: factor if waits is None or k not in WAITING_HOST_OPS else waits for k in host.ops}
    return host.model_copy(update={**fields, "ops": {k: times(v, by[k]) for k, v in host.ops.items()}})


def _predict(fit: Mapping[str, Any], aten: Iterable[str]) -> float:
    ops: Mapping[str, float] = fit.get("ops", {})
    total = 0.0
    for name in aten:
        if name in ops:
            total += ops[name]
        elif name in ("aten.view", "aten._unsafe_view", "aten.transpose"):
            total += fit.get("view", 0.0)
        elif name == "aten.mm":
            total += fit.get("cublas", 0.0)
        else:
            total += fit.get("kernel", 0.0)
    return total


def host_checks(records: Iterable[Mapping[str, Any]], fit: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each ``op`` case predicted from the fitted figures against its measured host time: the compositions and
    the calls the figures take a median of are held out (``fitted`` says which are not)."""
    pts = _points(records)
    rows = []
    for r in pts:
        if r.get("name") != "op":
            continue
        case = str(r["op"])
        pred = _predict(fit, r["aten"])
        single = case in SINGLE_CASES or case in PKB_CASES
        fitted = case in ("mm",) or (single and str(r["aten"][0]) in fit.get("ops", {}))
        rows.append(
            {
                "case": case,
                "aten": " + ".join(str(a).removeprefix("aten.") for a in r["aten"]),
                "measured_s": float(r["host_s"]),
                "predicted_s": pred,
                "error_pct": (pred / float(r["host_s"]) - 1.0) * 100.0,
                "fitted": fitted,
            }
        )
    return rows


def host_yaml(fit: Mapping[str, Any], source: str) -> dict[str, Any]:
    """The fitted figures as a device YAML ``host:`` block (``nccl`` is not measured on one GPU: left out)."""
    notes = {
        "kernel": "median of one eager out-of-place elementwise call (add, mul, gelu, silu, tanh, div), tiny tensors",
        "cublas": "one eager 64 x 64 x 64 bf16 mm",
        "view": "median of one view, transpose, reshape call (dispatch, no launch)",
        "iteration": "a timed loop's pick of the next input group, call and CUDA event record",
        "kernel_gap": "graph device-time slope over 10-1000 one-element kernels less such a kernel's run (profiler)",
        "queued_gap": "eager device-time slope over 10-500 one-element kernels queued behind a sleep, less one's run",
        "queued_event": "the same slope with a timing CUDA event recorded after each kernel, less the slope without",
        "graph_launch": "host time of one replay of a one-kernel graph, back to back",
        "sync": "a round trip (add, synchronize) less the add's issue and its kernel's run",
    }
    out: dict[str, Any] = {}
    for key, note in notes.items():
        if key in fit:
            out[key] = {"value": f"{fit[key] * 1e6:.4g} us", "source": source, "note": note}
    if fit.get("ops"):
        out["ops"] = {k: {"value": f"{v * 1e6:.4g} us", "source": source} for k, v in sorted(fit["ops"].items())}
    return out
