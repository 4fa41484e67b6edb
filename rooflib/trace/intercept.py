"""The two torch modes of a trace: a TorchFunctionMode that moves ``cuda`` to ``meta`` and records fused
functions whole, and a TorchDispatchMode that hands every aten and c10d op to the recorder.

The mode classes are made at trace time (``make_modes``), so this module imports without torch; their logic lives
in :class:`Intercepts` and :class:`rooflib.trace.recorder.Recorder`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rooflib.trace.recorder import Recorder

__all__ = ["Intercepts", "make_modes"]

_SDPA = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")
_SDPA_DEFAULTS = {"attn_mask": None, "dropout_p": 0.0, "is_causal": False, "scale": None, "enable_gqa": False}
_RMS = ("input", "normalized_shape", "weight", "eps")
_RMS_DEFAULTS = {"weight": None, "eps": None}


def _is_cuda(value: Any, torch: Any) -> bool:
    if isinstance(value, torch.device):
        return bool(value.type == "cuda")
    return isinstance(value, str) and (value == "cuda" or value.startswith("cuda:"))


class Intercepts:
    """What the function mode does with one call (see :mod:`rooflib.trace.capture`)."""

    def __init__(self, torch: Any, recorder: Recorder, device: str = "meta") -> None:
        self.torch, self.recorder = torch, recorder
        self.meta = torch.device(device)  # where "cuda" tensors live: meta (fake), or cpu (a run with values)
        self.values = device != "meta"
        F = torch.nn.functional
        self.fused: dict[Any, tuple[str, tuple[str, ...], Mapping[str, Any]]] = {
            F.scaled_dot_product_attention: ("aten.scaled_dot_product_attention", _SDPA, _SDPA_DEFAULTS),
            F.rms_norm: ("aten.rms_norm", _RMS, _RMS_DEFAULTS),
            torch.rms_norm: ("aten.rms_norm", _RMS, _RMS_DEFAULTS),
        }
        T = torch.Tensor
        self.tensor_cuda, self.tensor_to = T.cuda, T.to
        self.free = {T.record_stream, T.pin_memory}
        self.constructors = {torch.tensor, torch.as_tensor, torch.asarray}
        self.reads = {T.tolist, T.cpu, T.numpy}  # the host reads a device tensor (see Recorder.host_read)
        self.is_cuda = torch._C.TensorBase.is_cuda  # its getter: a device tensor answers True

    def _device(self, value: Any) -> Any:
        return self.meta if _is_cuda(value, self.torch) else value

    def function(self, func: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
        kwargs = dict(kwargs)
        if getattr(func, "__self__", None) is self.is_cuda and args:  # ``x.is_cuda``: the meta tensors are the GPU's
            return bool(args[0].device == self.meta) or bool(func(*args, **kwargs))
        if func in self.fused and self.recorder.active and not self.recorder.suppress:
            return self._fused(func, args, kwargs)
        if self.values and (func in self.reads or (func is self.tensor_to and self._to_host(args, kwargs))):
            self.recorder.host_read(args[0] if args else None, bool(kwargs.get("non_blocking", False)))
        if func in self.free:
            return args[0] if func is self.torch.Tensor.pin_memory else None
        if func is self.tensor_cuda:
            non_blocking = bool(kwargs.get("non_blocking", args[2] if len(args) > 2 else False))
            return args[0].to(self.meta, non_blocking=non_blocking)
        if func is self.torch.device:  # torch.device("cuda", 1) is a torch function too
            first = args[0] if args else kwargs.get("type")
            return self.meta if _is_cuda(first, self.torch) else func(*args, **kwargs)
        device = kwargs.get("device")
        if func in self.constructors and (_is_cuda(device, self.torch) or str(device) == "meta"):
            kwargs.pop("device")
            return func(*args, **kwargs).to(self.meta)
        args = tuple(self._device(a) for a in args)
        kwargs = {k: self._device(v) for k, v in kwargs.items()}
        if func is self.tensor_to and len(args) > 1 and type(args[1]) is int:
            args = (args[0], self.meta, *args[2:])
        return func(*args, **kwargs)

    def _to_host(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> bool:
        """Whether a ``Tensor.to`` call names the host as its device."""
        torch = self.torch
        for v in (*args[1:], kwargs.get("device")):
            if (isinstance(v, torch.device) and v.type == "cpu") or (isinstance(v, str) and v == "cpu"):
                return True
        return False

    def _fused(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        name, names, defaults = self.fused[func]
        bound = dict(defaults)
        bound.update(zip(names, args, strict=False))
        bound.update(kwargs)
        rec = self.recorder
        rec.suppress += 1
        try:
            fused_sdpa = name == "aten.scaled_dot_product_attention" and not self.values
            out = self._attention(bound) if fused_sdpa else None
            if out is None:
                out = func(*args, **kwargs)
        finally:
            rec.suppress -= 1
        rec.add(name, {k: rec.convert(v) for k, v in bound.items()}, out)
        return out

    def _attention(self, a: Mapping[str, Any]) -> Any:
        """SDPA's output through the memory-efficient kernel's shape function (differentiable, and ten times
        faster under fake tensors than the math path a CPU-only build takes); None where it does not apply."""
        torch = self.torch
        q, k, v = a["query"], a["key"], a["value"]
        if a["attn_mask"] is not None or not 3 <= q.dim() == k.dim() == v.dim() <= 4:
            return None
        if q.dtype not in (torch.bfloat16, torch.float16, torch.float32):
            return None
        if q.dim() == 3:
            out = self._attention({**a, "query": q.unsqueeze(0), "key": k.unsqueeze(0), "value": v.unsqueeze(0)})
            return None if out is None else out.squeeze(0)
        if k.shape[-3] != q.shape[-3]:
            if not a["enable_gqa"] or q.shape[-3] % k.shape[-3]:
                return None
            groups = q.shape[-3] // k.shape[-3]
            k, v = k.repeat_interleave(groups, dim=-3), v.repeat_interleave(groups, dim=-3)
        grad = torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v))
        efficient = torch.ops.aten._scaled_dot_product_efficient_attention
        return efficient(q, k, v, None, grad, a["dropout_p"], a["is_causal"], scale=a["scale"])[0]


def make_modes(torch: Any, intercepts: Intercepts) -> tuple[Any, Any]:
    """A fresh ``(function mode, dispatch mode)`` pair bound to ``intercepts`` and its recorder.

    The classes are built with ``type()`` so that this module, and mypy, need no torch.
    """
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    def torch_function(self: Any, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        return intercepts.function(func, args, kwargs or {})

    def torch_dispatch(self: Any, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        return intercepts.recorder.dispatch(func, args, kwargs or {})

    function_mode = type("RooflibDeviceMode", (TorchFunctionMode,), {"__torch_function__": torch_function})
    dispatch_mode = type("RooflibRecordMode", (TorchDispatchMode,), {"__torch_dispatch__": torch_dispatch})
    return function_mode(), dispatch_mode()
