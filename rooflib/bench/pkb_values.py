"""The values a ParallelKernelBench problem takes and returns, as the worker handles them: the tensors of a nested
output in order, a deep copy of inputs (to a device), two outputs compared within tolerances, and their bytes.
Torch is passed in (it is optional for rooflib)."""

from __future__ import annotations

from typing import Any

__all__ = ["clone", "compare", "flatten", "nbytes"]


def flatten(torch: Any, value: Any) -> list[Any]:
    """The tensors of an output (a tensor, or nested tuples, lists and dicts of them), in order."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        return [t for k in sorted(value, key=str) for t in flatten(torch, value[k])]
    if isinstance(value, list | tuple):
        return [t for v in value for t in flatten(torch, v)]
    return []


def clone(torch: Any, value: Any, device: Any = None) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().clone() if device is None else value.detach().to(device).clone()
    if isinstance(value, list):
        return [clone(torch, v, device) for v in value]
    if isinstance(value, tuple):
        return tuple(clone(torch, v, device) for v in value)
    if isinstance(value, torch.nn.Module):
        import copy

        m = copy.deepcopy(value)
        return m.to(device) if device is not None else m
    return value


def compare(torch: Any, got: Any, ref: Any, atol: float, rtol: float) -> tuple[bool, float]:
    a, b = flatten(torch, got), flatten(torch, ref)
    if len(a) != len(b):
        return False, float("inf")
    worst, ok = 0.0, True
    for x, y in zip(a, b, strict=True):
        if x.shape != y.shape:
            return False, float("inf")
        if x.numel() == 0:
            continue
        xf, yf = x.detach().float().cpu(), y.detach().float().cpu()
        if xf.dtype.is_complex or yf.dtype.is_complex:
            xf, yf = torch.view_as_real(x.detach().cpu()).float(), torch.view_as_real(y.detach().cpu()).float()
        diff = (xf - yf).abs()
        finite = torch.isfinite(diff)
        worst = max(worst, float(diff[finite].max()) if bool(finite.any()) else 0.0)
        ok = ok and bool(torch.allclose(xf, yf, atol=atol, rtol=rtol, equal_nan=True))
    return ok, worst


def nbytes(torch: Any, args: Any) -> int:
    return sum(int(t.numel() * t.element_size()) for t in flatten(torch, list(args)))
