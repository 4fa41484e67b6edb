"""A short cut through ``FakeTensorMode`` for the ops it would only hand to their meta kernel.

``FakeTensorMode`` answers each op in Python: a cache key built from every argument, constant propagation,
decompositions, device checks. For most aten ops on fake tensors that hold no constant, it ends by running the
op's meta kernel and wrapping the outputs as fake tensors. :class:`FastMeta` does only that last step, for the ops
where the mode would do nothing else, and leaves every other call to the mode. A recurrence that issues tens of
thousands of small ops (ParallelKernelBench's problems 74 and 75 at 72 ranks) traces several times faster; the
calls recorded are the same (tests/trace/test_fastfake.py compares both ways).

An op takes the short cut when, as ``FakeTensorMode._dispatch_impl`` (torch 2.13) reads:

- it is an aten op that the mode would not decompose (it has a Python meta function or a C++ meta kernel, or no
  decomposition and no CompositeImplicitAutograd kernel), has no fake-tensor implementation of its own
  (``op_implementations_checks``, a registered fake kernel), no dynamic or data-dependent output, and a meta
  kernel. ``select``, ``slice`` and ``copy_`` take it too: their fake implementations differ from the meta kernels
  only for symbolic sizes (``select`` and ``slice`` as ``as_strided``) and across devices (``copy_``), neither of
  which reaches the short cut. ``view`` does not: its meta kernel gives size-1 dimensions other strides than the
  fake implementation does;
- every tensor argument is a fake tensor of this mode on the meta device, with no constant and no symbolic size;
  no argument is symbolic.

Outputs are remembered. A meta kernel's outputs depend only on its arguments' sizes, strides, dtypes and other
values, and many are Python references (elementwise type promotion and stride rules: about 0.2 ms a call), so
for an op that writes no argument and returns new tensors (``fresh`` in its schema) the second call with the
same key gets new meta tensors of the remembered sizes, strides and dtypes. ``view`` goes through the mode (its
fake implementation, torch's reshape reference, about 2 ms a call, was the slowest step of a recurrence's trace)
once per key; later calls get the remembered sizes and strides through ``as_strided`` on the input's storage at
the remembered offset from the input's (a view like the mode's). Other views' meta kernels are quicker than
that rebuild, and are not remembered. ParallelKernelBench's problem 75 at 72 ranks (4,608 steps, 100,000 ops)
traces in 16 s instead of 37 s.

Where torch lacks any of the internals read here, the short cut is off and every op goes through the mode.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MISS", "FastMeta"]

MISS = object()
"""What :meth:`FastMeta.run` returns when the op must go through ``FakeTensorMode``."""


class FastMeta:
    """Runs eligible ops of a fake-tensor trace on their meta kernels (see the module docstring)."""

    def __init__(self, torch: Any, mode: Any) -> None:
        self.torch, self.mode = torch, mode
        self._eligible: dict[Any, bool] = {}
        self._kinds: dict[Any, str] = {}
        self._known: dict[tuple[Any, ...], Any] = {}
        try:
            from torch._decomp import decomposition_table, meta_table
            from torch._subclasses import fake_impls
            from torch._subclasses import fake_tensor as ft

            self._ft = ft
            self._tables = (meta_table, decomposition_table)
            registered = fake_impls.op_implementations_dict
            self._checks = tuple(check for check, _ in fake_impls.op_implementations_checks)
            aten = torch.ops.aten
            shape_only = (aten.select.int, aten.slice.Tensor)  # not view: its meta kernel restrides size-1 dims
            self._shape_only = frozenset(
                f for f in (*shape_only, aten.copy_.default, aten.copy.default) if f in registered
            )
            self._registered = registered
            self._special = (ft._DISPATCH_META_HANDLERS, ft._DISPATCH_HANDLE_DIRECTLY, mode.lift_fns)
            self._fake, self._enter = ft.FakeTensor, ft.in_kernel_invocation_manager
            self._has_meta = fake_impls.has_meta
            self._registry = torch._library.simple_registry.singleton
            self._composite = torch._C.DispatchKey.CompositeImplicitAutograd
            self._other = (
                torch.SymInt,
                torch.SymFloat,
                torch.SymBool,
                list,
                tuple,
            )  # symbolic, or nested a level deeper
            self._meta = torch.device("meta")
            self._view, self._as_strided = aten.view.default, aten.as_strided.default
            self.on = mode is not None
        except (ImportError, AttributeError):
            self.on = False

    def eligible(self, func: Any) -> bool:
        """Whether ``FakeTensorMode`` would run ``func`` straight on its meta kernel (decided once per op)."""
        known = self._eligible.get(func)
        if known is None:
            try:
                known = self._decide(func)
            except (AttributeError, RuntimeError, TypeError):
                known = False
            self._eligible[func] = known
        return known

    def _decide(self, func: Any) -> bool:
        torch, ft = self.torch, self._ft
        if not isinstance(func, torch._ops.OpOverload) or func.namespace != "aten":
            return False
        tags = set(func.tags)
        if torch.Tag.dynamic_output_shape in tags or torch.Tag.data_dependent_output in tags:
            return False
        if any(func in table for table in self._special):
            return False
        meta_table, decompositions = self._tables
        if func not in meta_table and not self.mode.cpp_meta_supports_symint(func):  # the mode would decompose it
            if func in decompositions and ft.torch_decomp_decompositions(func):
                return False
            composite = self._composite
            if composite in func.py_kernels or torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), composite):
                return False
        profiles = getattr(torch._dynamo.config, "_custom_ops_profile", None)
        if profiles is not None and func in profiles.data:
            return False
        if self._registry.find(func.name()).fake_impl.kernel is not None:
            return False
        if func in self._shape_only:  # its own fake kernel differs from the meta one only for symbolic sizes
            return not any(check(func) for check in self._checks if check != self._registered.__contains__)
        if any(check(func) for check in self._checks):
            return False
        return bool(self._has_meta(func))

    def run(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """``func``'s fake outputs from its meta kernel, or :data:`MISS` where the mode must answer."""
        if not self.on:
            return MISS
        is_view = func is self._view
        if not is_view and not self.eligible(func):
            return MISS
        flat = self._plain(args, kwargs)
        if flat is None:
            return MISS
        kind = self._kind(func)
        if kind == "view" and not is_view:  # other views' meta kernels are quicker than rebuilding their outputs
            kind = ""
        key = self._key(func, args, kwargs) if kind else None
        known = self._known.get(key) if key is not None else None
        if known is not None:
            with self._enter(self.mode):
                out = self._rebuild(kind, known, args[0] if args else None)
        elif is_view:
            out = func(*args, **kwargs)  # the mode's own answer (or its error), remembered below
            if key is not None:
                self._known[key] = self._shapes(kind, out, args[0])
            return out
        else:
            try:
                with self._enter(self.mode):
                    out = func(*args, **kwargs)
            except NotImplementedError:
                return MISS
            if key is not None:
                self._known[key] = self._shapes(kind, out, args[0] if args else None)
        return self.mode.wrap_meta_outputs_with_default_device_logic(out, func, flat, device=kwargs.get("device"))

    def _kind(self, func: Any) -> str:
        """``fresh`` (no argument written, every output a new tensor), ``view`` (one output, a view of the first
        argument, nothing written) or ``""`` (neither: not remembered); read once per op from its schema."""
        kind = self._kinds.get(func)
        if kind is None:
            kind = ""
            try:
                schema = func._schema
                tensor = self.torch._C.TensorType.get()
                rets, params = schema.returns, schema.arguments
                written = any(a.alias_info is not None and a.alias_info.is_write for a in params)
                if rets and not written and all(r.type == tensor for r in rets):
                    if all(r.alias_info is None for r in rets):
                        kind = "fresh"
                    elif (
                        len(rets) == 1
                        and params
                        and params[0].alias_info is not None
                        and rets[0].alias_info.before_set == params[0].alias_info.before_set
                    ):
                        kind = "view"
            except (AttributeError, RuntimeError):
                kind = ""
            self._kinds[func] = kind
        return kind

    def _key(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...] | None:
        """What a meta kernel's outputs depend on: each tensor's sizes, strides and dtype (not its storage offset:
        a view's output offset is remembered relative to its input's), each other argument's type and value; None
        where an argument is not hashable."""
        parts: list[Any] = [func]
        tensor = self.torch.Tensor
        for value in (*args, *sorted(kwargs.items())):
            if isinstance(value, tensor):
                if value.dtype.is_complex:
                    return None  # conjugate and negative bits: left to the meta kernel each time
                parts.append((value.shape, value.stride(), value.dtype))
            elif isinstance(value, list | tuple):
                parts.append(tuple((type(v), v) if not isinstance(v, tensor) else None for v in value))
                if None in parts[-1]:
                    return None
            else:
                parts.append((type(value), value))
        key = tuple(parts)
        try:
            hash(key)
        except TypeError:
            return None
        return key

    def _shapes(self, kind: str, out: Any, base: Any) -> tuple[Any, ...] | None:
        """The outputs' sizes, strides, dtypes (and, for a view, its offset from ``base``'s), to rebuild them."""
        outs = out if isinstance(out, tuple | list) else (out,)
        if not all(isinstance(o, self.torch.Tensor) for o in outs):
            return None
        if kind == "view":
            return (
                False,
                tuple((o.shape, o.stride(), o.dtype, o.storage_offset() - base.storage_offset()) for o in outs),
            )
        if any(o.storage_offset() for o in outs):
            return None
        return (isinstance(out, tuple | list), tuple((o.shape, o.stride(), o.dtype, 0) for o in outs))

    def _rebuild(self, kind: str, known: tuple[Any, ...], base: Any) -> Any:
        """Outputs like remembered ones: new meta tensors, or views of ``base`` (inside the kernel invocation)."""
        many, metas = known
        if kind == "view":
            outs = [self._as_strided(base, s, st, base.storage_offset() + off) for s, st, _, off in metas]
        else:
            outs = [self.torch.empty_strided(s, st, dtype=dt, device=self._meta) for s, st, dt, _ in metas]
        return tuple(outs) if many else outs[0]

    def _plain(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any] | None:
        """The flattened arguments, or None unless every tensor is a plain fake tensor of this mode on the meta
        device (no constant, no symbolic size), no other argument is symbolic and there is at least one tensor."""
        flat: list[Any] = []
        for value in (*args, *kwargs.values()):
            if isinstance(value, list | tuple):
                flat.extend(value)
            else:
                flat.append(value)
        tensors = 0
        for value in flat:
            if isinstance(value, self.torch.Tensor):
                if (
                    type(value) is not self._fake
                    or value.fake_mode is not self.mode
                    or value.constant is not None
                    or value.fake_device != self._meta
                    or value._has_symbolic_sizes_strides
                ):
                    return None
                tensors += 1
            elif isinstance(value, self._other):
                return None
        return flat if tensors else None
