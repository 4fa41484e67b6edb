"""Public entry point of the collective model: :func:`predict_collective`.

>>> from rooflib.specs import load_system
>>> r = predict_collective("all_reduce", load_system("hgx-h100"), nbytes=1 << 30)
>>> r.algorithm[0], round(r.busbw[0] / 1e9)    # doctest: +SKIP
('nvls', 478)
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from rooflib.collectives.group import Group
from rooflib.collectives.model import LAUNCHES, Launch, PlanCost, cost_plan, plan_time
from rooflib.collectives.plans import ALGORITHMS_FOR, NotApplicable, build_plan
from rooflib.conventions import MULTICAST_ALGORITHMS, Algorithm, Op, bandwidths, check_algorithm, check_op
from rooflib.errors import GroupError, UnitError, UnknownNameError
from rooflib.specs.resolve import System
from rooflib.topology.links import LINK_CLASSES
from rooflib.topology.topology import Topology, topology_of

__all__ = ["CollectiveResult", "LinkLoad", "back_to_back", "plan_costs", "predict_collective"]

FloatArray = npt.NDArray[np.float64]
_COSTS: weakref.WeakKeyDictionary[System, dict[tuple[str, str, tuple[int, ...]], PlanCost | str]] = (
    weakref.WeakKeyDictionary()
)


MULTIMEM_REDUCE_DTYPES = frozenset(
    ("fp16", "half", "float16", "bf16", "bfloat16", "fp32", "float", "float32", "fp64", "double", "float64")
) | frozenset(("int32", "uint32", "int64", "uint64"))
"""Element types NVLink multicast reductions take (PTX ``multimem.ld_reduce``: 16-bit and wider floats, 32- and
64-bit integers; NCCL runs NVLS reductions for these only)."""
NARROW_DTYPES = frozenset(("int8", "uint8", "fp8", "fp8_e4m3", "fp8_e5m2", "e4m3", "e5m2"))
"""8-bit element types: reducing collectives on them cannot use the switch's multicast reduction."""
REDUCING_OPS: frozenset[str] = frozenset(("all_reduce", "reduce_scatter", "reduce"))


def check_dtype(dtype: str | None) -> str | None:
    """``dtype`` lower-cased, or an error naming the valid ones (None: not given, no restriction)."""
    if dtype is None:
        return None
    name = str(dtype).lower()
    if name not in MULTIMEM_REDUCE_DTYPES | NARROW_DTYPES:
        raise UnknownNameError("dtype", str(dtype), MULTIMEM_REDUCE_DTYPES | NARROW_DTYPES)
    return name


def _dtype_reason(op: Op, alg: Algorithm, dtype: str | None) -> str | None:
    """Why ``alg`` cannot run ``op`` on ``dtype`` elements (None: it can)."""
    if dtype is None or alg not in MULTICAST_ALGORITHMS or op not in REDUCING_OPS:
        return None
    if dtype in MULTIMEM_REDUCE_DTYPES:
        return None
    return f"NVLink multicast reductions take 16-bit and wider floats or 32/64-bit integers, not {dtype}"


def _cost(system: System, op: Op, alg: Algorithm, members: tuple[int, ...]) -> PlanCost | str:
    cache = _COSTS.setdefault(system, {})
    key = (op, alg, members)
    if key not in cache:
        topo = topology_of(system)
        try:
            plan = build_plan(op, alg, Group(topo.links, members))
            cache[key] = cost_plan(plan, system, topo.links)
        except NotApplicable as exc:
            cache[key] = str(exc)
    return cache[key]


def plan_costs(
    system: System,
    op: str,
    gpus: int | Iterable[int] | None = None,
    algorithm: str = "auto",
    dtype: str | None = None,
) -> dict[str, PlanCost]:
    """The routed plans (:class:`PlanCost`) of every applicable algorithm, for calibration and inspection."""
    the_op = check_op(op)
    members = system.group(gpus)
    kind = check_dtype(dtype)
    out: dict[str, PlanCost] = {}
    for alg in _candidates(system, the_op, algorithm):
        if _dtype_reason(the_op, alg, kind) is not None:
            continue
        cost = _cost(system, the_op, alg, members)
        if not isinstance(cost, str):
            out[alg] = cost
    return out


def _candidates(system: System, op: Op, algorithm: str) -> tuple[Algorithm, ...]:
    if algorithm == "auto":
        return ALGORITHMS_FOR[op]
    if algorithm == "library":
        native = system.library.native_algorithms.get(op, ())
        return tuple(a for a in ALGORITHMS_FOR[op] if a in native)
    return (check_algorithm(algorithm),)


@dataclass(frozen=True)
class LinkLoad:
    source: str
    target: str
    cls: str
    bytes: float
    utilization: float  # busy share of the collective's time at the link's raw peak


@dataclass(frozen=True)
class CollectiveResult:
    """Predictions for one op on one group, at every size of ``nbytes`` (arrays, aligned)."""

    op: Op
    system: str
    gpus: int
    nbytes: FloatArray
    time_s: FloatArray
    algbw: FloatArray
    busbw: FloatArray
    algorithm: list[str]
    protocol: list[str]
    candidates: dict[str, FloatArray]
    not_applicable: dict[str, str]
    _costs: dict[str, PlanCost] = field(repr=False)
    _topology: Topology = field(repr=False)

    def to_frame(self) -> Any:
        """One row per size (pandas DataFrame): bytes, the chosen algorithm and protocol, time, algbw, busbw, and
        each candidate algorithm's time as ``time_s[<algorithm>]``."""
        import pandas as pd

        frame = pd.DataFrame(
            {
                "op": self.op,
                "system": self.system,
                "gpus": self.gpus,
                "bytes": self.nbytes,
                "algorithm": self.algorithm,
                "protocol": self.protocol,
                "time_s": self.time_s,
                "algbw_bytes_per_s": self.algbw,
                "busbw_bytes_per_s": self.busbw,
            }
        )
        for alg, times in self.candidates.items():
            frame[f"time_s[{alg}]"] = times
        return frame

    def link_loads(self, index: int = 0, *, top: int | None = 10) -> list[LinkLoad]:
        """Links used by the chosen algorithm at size ``nbytes[index]``, highest utilisation first."""
        cost = self._costs[self.algorithm[index]]
        table = self._topology.links
        total = sum((ph.loads for ph in cost.phases), np.zeros(table.size)) * float(self.nbytes[index])
        util = total / table.bandwidth / float(self.time_s[index])
        order = np.argsort(-util)
        order = order[total[order] > 0][:top]
        return [
            LinkLoad(*table.endpoints(int(i)), LINK_CLASSES[int(table.cls[i])], float(total[i]), float(util[i]))
            for i in order
        ]

    def class_loads(self, index: int = 0) -> dict[str, float]:
        """Largest per-link bytes in each link class for the chosen algorithm at ``nbytes[index]``."""
        cost = self._costs[self.algorithm[index]]
        table = self._topology.links
        total = sum((ph.loads for ph in cost.phases), np.zeros(table.size)) * float(self.nbytes[index])
        return {
            name: float(total[table.cls == i].max()) for i, name in enumerate(LINK_CLASSES) if (table.cls == i).any()
        }


def back_to_back(system: System, device_s: FloatArray) -> FloatArray:
    """Seconds per call of back-to-back library calls taking ``device_s`` each on the device: the host's issue
    overlaps the previous call, and a queued kernel starts the eager gap (``HostSpec.eager_gap``) after the one
    before it (the program timeline's steady state). The issue is the library's own call from C
    (``LibrarySpec.host_call``: nccl-tests' loop); without it the device's ``HostSpec.nccl`` (a torch.distributed
    call), or the library's ``launch_overhead`` without a host block."""
    host = system.device.host
    lib = system.library
    if lib.host_call is not None:
        issue = lib.host_call.value
    else:
        issue = host.nccl.value if host is not None else lib.launch_overhead.value
    gap = host.eager_gap if host is not None else 0.0
    return np.maximum(issue, np.asarray(device_s, dtype=np.float64) + gap)


def predict_collective(
    op: str,
    system: System,
    *,
    nbytes: npt.ArrayLike,
    gpus: int | Iterable[int] | None = None,
    algorithm: str = "auto",
    launch: Launch = "stream",
    dtype: str | None = None,
) -> CollectiveResult:
    """Predict ``op`` on ``gpus`` of ``system`` (``None``: all; ``n``: the first n; or explicit indices).

    ``nbytes`` is the nccl-tests size (scalar or array, bytes). ``algorithm="auto"`` takes the fastest
    applicable algorithm at each size (custom symmetric-memory kernels included: what a kernel writer could
    reach); ``"library"`` only those the collective library itself runs (NCCL: what plain PyTorch + NCCL
    gets); a named one is used alone (an error says why when it cannot run).
    ``launch`` says how the calls are timed:

    - ``"stream"``: back-to-back calls from the host, the steady state (how nccl-tests times): each call costs
      ``max(host issue, device time + kernel_gap)``, the library's call from C (``LibrarySpec.host_call``, else
      the device's ``HostSpec.nccl``) overlapping the previous call's device time, as the program timeline runs
      them (:mod:`rooflib.program.timeline`, which adds PyTorch's own host costs itself);
    - ``"isolated"``: one call from an idle host and device, CUDA events around it (``rooflib bench nccl``'s
      ``stream`` mode): the library's ``launch_overhead`` plus the device time;
    - ``"graph"``: inside a replayed CUDA graph: the device time;
    - ``"device"``: the device's time alone (the program timeline adds the host's issue cost itself).

    The device time of a call includes the library kernel's start (``graph_launch_overhead``, what a call costs
    inside a replayed graph beyond its algorithm). ``dtype`` (the element type, e.g. ``bf16``, ``int8``; None:
    any) matters for reductions: NVLink multicast (NVLS) reduces 16-bit and wider types only, so an 8-bit
    all-reduce or reduce-scatter runs a ring or tree (as NCCL does).
    """
    the_op = check_op(op)
    members = system.group(gpus)
    if launch not in LAUNCHES:
        raise UnknownNameError("launch", str(launch), LAUNCHES)
    try:
        sizes = np.atleast_1d(np.asarray(nbytes, dtype=np.float64))
    except (TypeError, ValueError):
        raise UnitError(f"nbytes must be a size or a 1-D array of sizes in bytes, got {nbytes!r}") from None
    if sizes.ndim != 1:
        raise UnitError(f"nbytes must be a size or a 1-D array of sizes, got an array of shape {sizes.shape}")
    if (sizes < 0).any() or not np.isfinite(sizes).all():
        raise UnitError(f"nbytes must be finite and >= 0, got {nbytes!r}")
    names = _candidates(system, the_op, algorithm)
    kind = check_dtype(dtype)
    lib = system.library
    # a library kernel's start inside the device (measured inside a replayed graph) is part of its device time
    launch_s = lib.launch_overhead.value if launch == "isolated" else lib.graph_launch_overhead.value
    costs: dict[str, PlanCost] = {}
    reasons: dict[str, str] = {}
    for alg in names:
        c = _dtype_reason(the_op, alg, kind) or _cost(system, the_op, alg, members)
        if isinstance(c, str):
            reasons[alg] = c
        else:
            costs[alg] = c
    if not costs:
        detail = "; ".join(f"{k}: {v}" for k, v in reasons.items())
        raise GroupError(f"no algorithm can run {the_op} on {len(members)} GPUs of {system.name}: {detail}")
    times: dict[str, FloatArray] = {}
    protos: dict[str, list[str]] = {}
    for name, c in costs.items():
        times[name], protos[name] = plan_time(c, sizes, launch_s)
        if launch == "stream":
            times[name] = back_to_back(system, times[name])
    stacked = np.vstack(list(times.values()))
    pick = np.argmin(stacked, axis=0)
    algs = list(times)
    time_s = stacked[pick, np.arange(sizes.size)]
    algbw, busbw = bandwidths(the_op, len(members), sizes, time_s)
    return CollectiveResult(
        op=the_op,
        system=system.name,
        gpus=len(members),
        nbytes=sizes,
        time_s=time_s,
        algbw=algbw,
        busbw=busbw,
        algorithm=[algs[i] for i in pick],
        protocol=[protos[algs[i]][j] for j, i in enumerate(pick)],
        candidates=times,
        not_applicable=reasons,
        _costs=costs,
        _topology=topology_of(system),
    )
