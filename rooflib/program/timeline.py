"""The host/device timeline of a program: when the host issues each op and when the device runs it.

The host issues the ops in program order; each costs the host its issue time (``HostSpec``: a kernel launch,
a cuBLAS call, an NCCL call through torch.distributed). An op starts on the device when it has been issued
(plus ``kernel_launch`` when the device was idle), when the previous op of its stream has finished, when the ops
it depends on have finished, and when its resource is free: compute ops share the SMs (they run one at a time,
as concurrent kernels would split the SMs between them), communication ops (collectives, send/recv) share the
network and overlap compute only when they are on another stream. A host sync (``.item()``) makes the host wait
until the device is done.

Two modes, both timed as ParallelKernelBench and nccl-tests time (back-to-back iterations, per-iteration
events): ``eager`` runs eight iterations and takes the steady state, the mean time between the ends of the last
four (a loop whose device idles between iterations alternates between paying ``kernel_launch`` and not, so one
interval is not the period), so a host-bound program costs its host time and a device-bound one its device time
(not their sum);
``graph`` replays the program as one captured CUDA graph: one ``graph_launch`` of host time per iteration and no
per-op host cost. In both, a kernel already queued behind another starts ``kernel_gap`` after it (eagerly,
``queued_gap`` where the host spec measures it: eager launches leave a larger gap than a graph's), and an eager
iteration's timing event, recorded after its last op, holds that op's stream ``queued_event`` longer where it is
queued behind the iteration's kernels (measured: 2 us on the H200; an event issued to an idle stream costs
nothing the loop sees). A host sync
cannot be captured in a graph; the timeline charges it as eager does (``HostCosts.wait``: ``sync``, or the
measured whole-call figure of an op that sizes its output from values, ``host_op``).

An op's host cost (``HostCosts.issue``) is its aten op's measured cost where the host spec lists it
(``HostSpec.ops``: traced ops are named by their aten op, e.g. ``aten.topk``), else its kind's (a kernel, a
cuBLAS call, an NCCL call, times the op's ``calls``), plus ``HostSpec.view`` for each call before it that
launched nothing (``host_calls``: views, transposes, splits, set by ``rooflib trace``) and the host-only Python work
before it (``host_extra``: ``python.*`` calls such as entering ``torch.no_grad``, autograd's records and nodes,
``dist.new_group``, each at ``HostSpec.ops[name]``, else ``view``). Each iteration also
costs the host ``HostSpec.iteration`` (the timed loop's per-iteration event record and call), in both modes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from rooflib.program.cost import OpCost
from rooflib.program.ir import Op
from rooflib.specs.devices import HostSpec
from rooflib.specs.figures import Duration
from rooflib.specs.resolve import System

__all__ = ["ITERATIONS", "STEADY", "HostCosts", "Mode", "Slot", "Timeline", "host_costs", "simulate"]

Mode = Literal["eager", "graph"]
ITERATIONS = 8
STEADY = 4  # iterations the steady state is averaged over (the last ones)


@dataclass(frozen=True)
class HostCosts:
    """Seconds the host spends per op kind, and the device-side launch costs (from ``HostSpec``)."""

    kernel: float
    cublas: float
    nccl: float
    sync: float
    graph_launch: float
    kernel_gap: float
    launch_latency: float
    ops: Mapping[str, float] = field(default_factory=dict)  # by aten op name
    view: float = 0.0  # a call that launches nothing
    iteration: float = 0.0  # a timed loop's own cost per iteration
    queued_gap: float | None = None  # an eager stream's kernel_gap, where measured apart from a graph's
    queued_event: float = 0.0  # the device time of the timed loop's event in a queued eager stream

    def issue(self, op: Op) -> float:
        """Host seconds to issue ``op`` eagerly (see the module docstring)."""
        if op.host in ("sync", "none"):
            return 0.0
        if op.name in self.ops:
            base = self.ops[op.name]
        elif op.name.startswith("triton.") and "triton" in self.ops:  # a Triton kernel: its Python launcher
            base = self.ops["triton"]
        elif op.host == "nccl":
            base = self.nccl * int(op.params.get("calls", 1))
        else:
            base = self.cublas if op.host == "cublas" else self.kernel
        return base + self._around(op)

    def _around(self, op: Op) -> float:
        """The host-only work charged to ``op``: the calls that launched nothing and the Python (``python.*``)
        issued since the op before it."""
        extra = sum(self.ops.get(name, self.view) for name in op.params.get("host_extra", ()))
        return self.view * int(op.params.get("host_calls", 0)) + extra

    def wait(self, op: Op, eager: bool = True) -> float:
        """Host seconds a sync costs once the device is done: ``sync``, or for an op that sizes its output from
        values (``host_op``: ``aten.nonzero``, ``aten.index(bool)``, ...) that op's measured host figure, whole
        (its launches and its own wait), else ``sync`` plus ``launches`` kernels' issue; eagerly, the host-only
        work before it as well."""
        host_op = op.params.get("host_op")
        if host_op is None:
            base = self.sync
        else:
            base = self.ops.get(str(host_op), self.sync + self.kernel * int(op.params.get("launches", 1)))
        return base + (self._around(op) if eager else 0.0)


def host_costs(system: System) -> HostCosts:
    """The system's host costs; without a ``host`` block in the device spec, its launch figures stand in."""
    dev, lib = system.device, system.library
    h: HostSpec | None = dev.host
    launch = dev.kernel_launch.value
    if h is None:
        return HostCosts(
            launch, launch, lib.launch_overhead.value, launch, lib.graph_launch_overhead.value, 0.0, launch
        )

    def v(f: Duration | None) -> float:
        return 0.0 if f is None else f.value

    return HostCosts(
        v(h.kernel),
        v(h.cublas),
        v(h.nccl),
        v(h.sync),
        v(h.graph_launch),
        v(h.kernel_gap),
        dev.kernel_launch.value,
        {name: v(f) for name, f in h.ops.items()},
        v(h.view),
        v(h.iteration),
        None if h.queued_gap is None else h.queued_gap.value,
        v(h.queued_event),
    )


@dataclass(frozen=True)
class Slot:
    """One op of the first iteration, run from an idle host and device (times from its first issue)."""

    host_start_s: float
    host_end_s: float
    start_s: float
    end_s: float


@dataclass(frozen=True)
class Timeline:
    mode: Mode
    time_s: float  # steady-state time of one iteration
    host_s: float  # host busy time per iteration (issue costs and sync costs, not waits)
    slots: tuple[Slot, ...]  # one iteration from idle, for the per-op table and the timeline plot


def _resource(op: Op, cost: OpCost) -> str:
    return "net" if op.kind in ("collective", "send_recv") else "sm"


def simulate(ops: Sequence[Op], costs: Sequence[OpCost], hc: HostCosts, mode: Mode = "eager") -> Timeline:
    """Run ``ITERATIONS`` back-to-back iterations of ``ops`` and take the steady state."""
    host = 0.0
    stream_free: dict[str, float] = {}
    resource_free: dict[str, float] = {"sm": 0.0, "net": 0.0}
    device_done = 0.0
    iteration_ends: list[float] = []
    slots: list[Slot] = []
    host_busy = 0.0
    first: list[Slot] = []
    gap = hc.queued_gap if mode == "eager" and hc.queued_gap is not None else hc.kernel_gap
    eager = mode == "eager"
    # what does not change between iterations, once per op: its host cost (a sync's wait), resource and deps
    plan = [
        (
            op.kind == "sync",
            hc.wait(op, eager=eager) if op.kind == "sync" else (hc.issue(op) if eager else 0.0),
            _resource(op, cost),
            op.stream,
            op.deps,
            cost.device_s,
        )
        for op, cost in zip(ops, costs, strict=True)
    ]
    for it in range(ITERATIONS):
        slots = []
        ends: list[float] = []
        begin = host
        host_busy = 0.0
        if mode == "graph":
            host += hc.graph_launch
            host_busy += hc.graph_launch
        for is_sync, host_s, res, stream, deps, device_s in plan:
            h0 = host
            if is_sync:
                host = max(host, device_done) + host_s
                host_busy += host_s
                if it == 0:
                    slots.append(Slot(h0 - begin, host - begin, host - begin, host - begin))
                ends.append(host)
                continue
            if eager:
                host += host_s
                host_busy += host_s
            issued = host
            ready = max(
                stream_free.get(stream, 0.0),
                resource_free[res],
                max([ends[d] for d in deps]) if deps else 0.0,
            )
            start = max(issued + (hc.launch_latency if ready <= issued else 0.0), ready + gap)
            if device_s == 0.0:
                start = max(issued, ready)
            end = start + device_s
            stream_free[stream] = end
            resource_free[res] = end
            device_done = max(device_done, end)
            ends.append(end)
            if it == 0:  # the first iteration's slots are the ones returned
                slots.append(Slot(h0 - begin, host - begin, start - begin, end - begin))
        if mode == "eager" and hc.queued_event and ops:  # the loop's event, recorded after the call's last op
            main = ops[-1].stream
            free = stream_free.get(main, 0.0)
            if free > host:  # queued behind the call's kernels: it takes the stream's time
                stream_free[main] = free + hc.queued_event
                device_done = max(device_done, stream_free[main])
        host += hc.iteration
        host_busy += hc.iteration
        iteration_ends.append(max([device_done, host]))
        if it == 0:
            first = slots
    span = min(STEADY, len(iteration_ends) - 1)
    steady = (iteration_ends[-1] - iteration_ends[-1 - span]) / span if span else iteration_ends[-1]
    return Timeline(mode, steady, host_busy, tuple(first))
