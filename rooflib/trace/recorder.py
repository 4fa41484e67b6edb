"""The dispatch side of a trace: every aten and c10d op the traced function issues becomes a
:class:`~rooflib.trace.records.Call` (its arguments by schema name, tensors as metadata), issued to the current
stream; ``Work.wait()`` and ``wait_tensor`` are tied to their collective; ``.item()`` and data-dependent shapes
get stand-in values (:mod:`rooflib.trace.capture` says which)."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from rooflib.trace.autograd import NODE, RECORD, inputs_require_grad, records_node
from rooflib.trace.cuda import Streams
from rooflib.trace.errors import TraceError
from rooflib.trace.fastfake import MISS, FastMeta
from rooflib.trace.records import Call, Device, Group, TensorMeta
from rooflib.trace.standin import STAND_IN_FLOPS, heavy_flops, stand_in
from rooflib.trace.storages import StorageNumbers
from rooflib.trace.values import fill_outputs

__all__ = ["Recorder", "active_recorder"]

_GPU_DEVICES = ("meta", "cuda")
_FUNCTIONAL = ("_c10d_functional", "_c10d_functional_autograd")


_ACTIVE: list[Recorder] = []


def active_recorder() -> Recorder | None:
    """The recorder of the trace now running (for launches torch does not dispatch: Triton kernels)."""
    return _ACTIVE[-1] if _ACTIVE else None


class Recorder:
    """The dispatch side of a trace: records each op as a :class:`Call` (see the module docstring)."""

    def __init__(
        self,
        torch: Any,
        world: int,
        rank: int,
        *,
        values: bool = False,
        stop_on_values: bool = False,
        fake_mode: Any = None,
    ) -> None:
        from torch._subclasses.fake_tensor import DataDependentOutputException, DynamicOutputShapeException, FakeTensor
        from torch.utils._mode_utils import no_dispatch

        self.torch, self.world, self.rank = torch, world, rank
        self.values = values  # a run with values: host tensors are the GPU's, collectives fill their outputs
        self.stop_on_values = stop_on_values  # a fake run ends at its first read of a device value (see _scalar)
        self._gpu_types = (*_GPU_DEVICES, "cpu") if values else _GPU_DEVICES
        self.calls: list[Call] = []
        self.notes: list[str] = []
        self.streams = Streams()
        self.active = False
        self.suppress = 0
        self._dynamic = DynamicOutputShapeException
        self._data_dependent = DataDependentOutputException
        self._fake, self._no_dispatch = FakeTensor, no_dispatch
        self._item = torch.ops.aten._local_scalar_dense.default
        self._record_stream = torch.ops.aten.record_stream.default
        self._works: dict[int, int] = {}
        self._tensor_owner: dict[int, int] = {}
        self._keep: list[Any] = []
        self.storages = StorageNumbers()
        self._groups: dict[int, Group] = {}
        self._schemas: dict[Any, tuple[list[tuple[str, Any]], str, str, frozenset[str]]] = {}
        self._c10d = torch._C._distributed_c10d
        self._node: Any = None  # the backward node now running (autograd engine), if any
        # the fake run's short cut to meta kernels (rooflib.trace.fastfake); none in a run with values
        self.fast = FastMeta(torch, fake_mode) if fake_mode is not None and not values else None

    # --- values ------------------------------------------------------------------------------------------------
    def meta(self, t: Any) -> TensorMeta:
        try:  # a fake sparse tensor reports zero strides: no strides, as a real one
            stride = () if t.is_sparse else tuple(int(s) for s in t.stride())
        except (RuntimeError, NotImplementedError):  # other unstrided layouts
            stride = ()
        device: Device = "gpu" if t.device.type in self._gpu_types else "host"
        itemsize = float(t.element_size())
        shape = tuple(int(s) for s in t.shape)
        try:
            offset = int(t.storage_offset())
        except (RuntimeError, NotImplementedError):
            offset = 0
        dtype = str(t.dtype).removeprefix("torch.")
        return TensorMeta(shape, dtype, itemsize, stride, device, self.storages.number(t), offset)

    def convert(self, value: Any) -> Any:
        torch = self.torch
        if isinstance(value, torch.Tensor):
            return self.meta(value)
        if value is None or isinstance(value, bool | int | float | str):
            return value
        if isinstance(value, list | tuple):
            return tuple(self.convert(v) for v in value)
        if isinstance(value, dict):
            return {str(k): self.convert(v) for k, v in value.items()}
        if isinstance(value, torch.SymInt | torch.SymFloat | torch.SymBool):
            return value.node.maybe_as_int() if isinstance(value, torch.SymInt) else str(value)
        if isinstance(value, torch.ScriptObject):
            return self._script(value)
        if isinstance(value, torch.dtype):
            return str(value).removeprefix("torch.")
        return str(value)

    def outputs(self, out: Any) -> tuple[TensorMeta, ...]:
        torch = self.torch
        if isinstance(out, torch.Tensor):
            return (self.meta(out),)
        if isinstance(out, list | tuple):
            return tuple(m for o in out for m in self.outputs(o))
        return ()

    def group(self, pg: Any) -> Group:
        key = id(pg)
        if key not in self._groups:
            import torch.distributed as dist

            ranks = tuple(int(r) for r in dist.get_process_group_ranks(pg))
            self._groups[key] = Group(ranks, int(pg.rank()), str(getattr(pg, "group_name", "")))
            self._keep.append(pg)
        return self._groups[key]

    def _script(self, obj: Any) -> Any:
        try:
            return self.group(self._c10d.ProcessGroup.unbox(obj))
        except RuntimeError:
            return type(obj).__name__

    def _group_named(self, name: Any) -> Any:
        if isinstance(name, Group):
            return name
        try:
            return self.group(self._c10d._resolve_process_group(str(name)))
        except (RuntimeError, ValueError, KeyError):
            return None

    # --- recording ---------------------------------------------------------------------------------------------
    def _schema(self, func: Any) -> tuple[list[tuple[str, Any]], str, str, frozenset[str]]:
        if func not in self._schemas:
            names = []
            for a in func._schema.arguments:
                default = self.convert(a.default_value) if a.has_default_value() else inspect.Parameter.empty
                names.append((a.name, default))
            tags = {t.name for t in getattr(func, "tags", ())}
            if getattr(func, "is_view", False):
                tags.add("view")
            self._schemas[func] = (names, f"{func.namespace}.{func._opname}", func._overloadname, frozenset(tags))
        return self._schemas[func]

    def add(
        self,
        name: str,
        args: Mapping[str, Any],
        out: Any = None,
        *,
        overload: str = "default",
        tags: frozenset[str] = frozenset(),
        target: int | None = None,
        after: tuple[int, ...] = (),
    ) -> int:
        """Record one call issued to the current stream; returns its index."""
        index = len(self.calls)
        stream, waits = self.streams.issue(index)
        deps = tuple(sorted({*waits, *after}))
        self.calls.append(Call(index, name, overload, args, self.outputs(out), stream, deps, target, tags))
        return index

    def _autograd(self, func: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
        """The host-only autograd work before ``func`` (:mod:`rooflib.trace.autograd`): the first op of each
        backward node the engine runs adds a node; a forward op on inputs that require grad records one."""
        if func.namespace != "aten":
            return
        node = self.torch._C._current_autograd_node()
        if node is not None:
            if node is not self._node:
                self._node = node
                self.add(NODE, {})
            return
        self._node = None
        grad = self.torch.is_grad_enabled()
        needs = grad and inputs_require_grad(self.torch.Tensor, args, kwargs)
        if records_node(self._schema(func)[1], grad_enabled=grad, input_requires_grad=needs):
            self.add(RECORD, {})

    def record(self, func: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any], out: Any) -> int:
        names, name, overload, tags = self._schema(func)
        self._autograd(func, args, kwargs)
        bound = {n: self.convert(v) for (n, _), v in zip(names, args, strict=False)}
        bound.update({k: self.convert(v) for k, v in kwargs.items()})
        for n, default in names:
            if n not in bound and default is not inspect.Parameter.empty:
                bound[n] = default
        target = None
        if func.namespace in _FUNCTIONAL:
            if "group_name" in bound:
                bound["group"] = self._group_named(bound["group_name"])
            if func._opname == "wait_tensor":
                target = self._tensor_owner.get(id(args[0]))
        index = self.add(name, bound, out, overload=overload, tags=tags, target=target)
        if func.namespace == "c10d":
            self._remember_work(out, index)
        elif func.namespace in _FUNCTIONAL and func._opname != "wait_tensor":
            for t in out if isinstance(out, list | tuple) else (out,):
                self._tensor_owner[id(t)] = index
                self._keep.append(t)
        return index

    def _remember_work(self, out: Any, index: int) -> None:
        items = out if isinstance(out, list | tuple) else (out,)
        for item in items:
            if isinstance(item, self.torch.ScriptObject):
                try:
                    work = self._c10d.Work.unbox(item)
                except RuntimeError:
                    continue
                self._works[id(work)] = index
                self._keep.append(work)

    def host_read(self, t: Any, non_blocking: bool = False) -> None:
        """A device tensor the host reads in a run with values (``.tolist()``, ``.cpu()``, ``.numpy()``,
        ``.to("cpu")``: a host tensor stands for it, so nothing dispatches): a copy to the host, which the
        host waits for unless ``non_blocking``."""
        if not self.active or self.suppress or not isinstance(t, self.torch.Tensor):
            return
        src = self.meta(t)
        if src.on_gpu:
            dst = TensorMeta(src.shape, src.dtype, src.itemsize, src.stride, "host")
            index = self.add("aten._to_copy", {"self": src, "non_blocking": non_blocking})
            self.calls[index] = replace(self.calls[index], outputs=(dst,))

    def launch(
        self, kernel: str, args: tuple[Any, ...], kwargs: Mapping[str, Any], programs: int | None = None
    ) -> None:
        """A kernel launch torch does not see (``triton.kernel``: its tensors and values, and how many programs
        its grid runs where known)."""
        if self.active and not self.suppress:
            params = {"kernel": kernel, "args": self.convert(args), **self.convert(dict(kwargs))}
            if programs is not None:
                params["programs"] = programs
            self.add("triton.kernel", params)

    def wait_work(self, work: Any) -> None:
        """``Work.wait()`` of an earlier collective (patched onto the fake process group's work objects)."""
        if self.active and not self.suppress:
            self.add("c10d.wait", {}, target=self._works.get(id(work)))

    def host_sync(self, calls: tuple[int | None, ...]) -> None:
        if self.active and not self.suppress:
            self.add("cuda.synchronize", {}, after=tuple(c for c in calls if c is not None))

    # --- the dispatch mode's body ------------------------------------------------------------------------------
    def dispatch(self, func: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
        if func.namespace == "prim":
            return func(*args, **kwargs)
        if func is self._item:
            return self._scalar(func, args, kwargs)
        if func is self._record_stream:
            return None
        if self.suppress or not self.active:  # inside a recorded call (an intercepted function), or setup
            return (
                self._run_with_values(func, args, kwargs)
                if self.values and self.active
                else self._run(func, args, kwargs)
            )
        if self.values:
            out = self._run_with_values(func, args, kwargs)
            if func.namespace in ("c10d", *_FUNCTIONAL):
                names = [n for n, _ in self._schema(func)[0]]
                fill_outputs(self.torch, func._opname, {**dict(zip(names, args, strict=False)), **kwargs}, out, self)
            self.record(func, args, kwargs, out)
            return out
        try:
            out = self._run(func, args, kwargs)
        except self._dynamic:
            out = self._bounded(func, args, kwargs)
        except self._data_dependent as exc:
            raise TraceError(
                f"{func} needs tensor values, which a trace does not have (fake tensors); pass the values it "
                "depends on as Python numbers from INPUTS"
            ) from exc
        self.record(func, args, kwargs, out)
        return out

    def _run(self, func: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
        """``func``'s outputs in a fake run: from its meta kernel where the short cut applies, else the mode's."""
        if self.fast is not None:
            out = self.fast.run(func, args, dict(kwargs))
            if out is not MISS:
                return out
        return func(*args, **kwargs)

    def _run_with_values(self, func: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
        """``func``'s outputs in a run with values; large products and attentions stood in for (standin)."""
        if heavy_flops(func._opname, (args, kwargs)) > STAND_IN_FLOPS:
            try:
                out = stand_in(self.torch, func, args, kwargs)
            except (RuntimeError, NotImplementedError, TypeError):  # no meta kernel: compute it
                return func(*args, **kwargs)
            note = "large matrix products and attentions stood in for in the run with values (random outputs)"
            if note not in self.notes:
                self.notes.append(note)
            return out
        return func(*args, **kwargs)

    def _scalar(self, func: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
        torch, t = self.torch, args[0]
        if self.values:  # a real tensor standing for a GPU one: its value is known, reading it syncs
            if self.active and not self.suppress:
                self.record(func, args, kwargs, None)
            return func(*args, **kwargs)
        constant = getattr(t, "constant", None)
        if constant is not None:
            return constant.item()
        if t.device.type not in _GPU_DEVICES and not isinstance(t, self._fake):
            with self._no_dispatch():  # a real host tensor: its value is known
                return func(*args, **kwargs)
        if self.active and not self.suppress and t.device.type in _GPU_DEVICES:
            self.record(func, args, kwargs, None)
            if self.stop_on_values:  # the caller reruns with values: the rest of this run would be thrown away
                raise TraceError(f"{func} reads a device value (stopping: a run with values follows)")
        if t.dtype == torch.bool:
            return True
        return 1.0 if t.dtype.is_floating_point else (1 + 0j if t.dtype.is_complex else 1)

    def _bounded(self, func: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
        """The output of a data-dependent-shape op at its largest (see the module docstring)."""
        torch, name = self.torch, func._opname
        x = args[0]
        empty = torch.empty
        if name == "nonzero":
            out: Any = empty((x.numel(), x.dim()), dtype=torch.long, device=x.device)
        elif name == "masked_select":
            shape = torch.broadcast_shapes(x.shape, args[1].shape)
            out = empty((int(torch.Size(shape).numel()),), dtype=x.dtype, device=x.device)
        elif name in ("_unique2", "unique_consecutive", "unique_dim", "_unique"):
            n = x.numel()
            values = empty((n,), dtype=x.dtype, device=x.device)
            inverse = empty(x.shape, dtype=torch.long, device=x.device)
            counts = empty((n,), dtype=torch.long, device=x.device)
            out = (values, inverse) if name == "_unique" else (values, inverse, counts)
        elif name == "bincount" and int(kwargs.get("minlength", args[2] if len(args) > 2 else 0)) > 0:
            bins = int(kwargs.get("minlength", args[2] if len(args) > 2 else 0))
            weights = kwargs.get("weights", args[1] if len(args) > 1 else None)
            out = empty((bins,), dtype=torch.double if weights is not None else torch.long, device=x.device)
        elif name == "index":
            indices = []
            for ix in args[1]:
                if ix is not None and ix.dtype in (torch.bool, torch.uint8):
                    indices += [empty((ix.numel(),), dtype=torch.long, device=ix.device)] * ix.dim()
                else:
                    indices.append(ix)
            out = func(x, indices)
        else:
            raise TraceError(
                f"{func} has an output shape that depends on tensor values, which a trace does not have; "
                "give its size explicitly (e.g. output_size=, minlength=, or a Python number from INPUTS)"
            )
        self.notes.append(f"{func}: data-dependent output shape taken at its upper bound")
        if self.stop_on_values:
            raise TraceError(f"{func} has a data-dependent output shape (stopping: a run with values follows)")
        return out
