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
        if not self.on or not self.eligible(func):
            return MISS
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
                    return MISS
                tensors += 1
            elif isinstance(value, self._other):
                return MISS
        if not tensors:
            return MISS
        try:
            with self._enter(self.mode):
                out = func(*args, **kwargs)
        except NotImplementedError:
            return MISS
        return self.mode.wrap_meta_outputs_with_default_device_logic(out, func, flat, device=kwargs.get("device"))
