"""A stand-in ``triton`` for traces where Triton is not installed (a CPU-only PyTorch has none).

A program that launches a ``@triton.jit`` kernel (``kernel[grid](x, y, BLOCK=128)``) imports and runs with this
stand-in  (only the ``import triton`` statements run while :func:`stub_triton` is active see it, so torch's own
check for Triton is not fooled): the launch computes nothing and is recorded as one ``triton.kernel`` call whose
arguments are the launch's tensors (lowered as a streaming kernel over them, :mod:`rooflib.trace.rules`), its
program count where the grid is whole numbers (``programs``) and its keyword arguments (``num_warps``).
``triton.language`` answers every attribute (``tl.constexpr`` annotations, ``tl.float32``) with a placeholder.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib.util
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

__all__ = ["LAUNCH", "stub_triton"]

LAUNCH = "triton.kernel"


class _Anything:
    """``tl.constexpr``, ``tl.float32``, ...: callable, indexable, and every attribute is another one."""

    def __getattr__(self, name: str) -> _Anything:
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> _Anything:
        return self

    def __getitem__(self, key: Any) -> _Anything:
        return self


class _Kernel:
    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn, self.__name__ = fn, getattr(fn, "__name__", "kernel")

    def __getitem__(self, grid: Any) -> Callable[..., None]:
        def launch(*args: Any, **kwargs: Any) -> None:
            from rooflib.trace.recorder import active_recorder

            rec = active_recorder()
            if rec is not None:
                rec.launch(self.__name__, args, kwargs, programs=programs(grid, kwargs))

        return launch

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


def programs(grid: Any, meta: dict[str, Any]) -> int | None:
    """How many programs a launch runs: the product of its grid (a tuple of up to three whole numbers, or a
    function of the launch's keyword arguments returning one); None where the grid is not whole numbers.

    >>> programs((4096,), {}), programs(lambda meta: (8, meta["N"] // 128), {"N": 1024}), programs("x", {})
    (4096, 64, None)
    """
    if callable(grid):
        try:
            grid = grid(meta)
        except Exception:  # a grid function that needs what the stand-in cannot give
            return None
    dims = grid if isinstance(grid, tuple | list) else (grid,)
    if not dims or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in dims):
        return None
    out = 1
    for d in dims:
        out *= d
    return out


def _jit(fn: Any = None, **options: Any) -> Any:
    return _Kernel(fn) if fn is not None else _Kernel


def _attribute(attr: str) -> Any:
    if attr.startswith("__"):
        raise AttributeError(attr)
    return _Anything()


def _module(name: str) -> ModuleType:
    module = ModuleType(name)
    module.__dict__["__getattr__"] = _attribute
    return module


@contextlib.contextmanager
def stub_triton() -> Iterator[None]:
    """``triton`` and ``triton.language`` as stand-ins while the block runs (modules imported meanwhile keep
    them), unless Triton is installed (then nothing changes); launches go to the running trace's recorder."""
    if importlib.util.find_spec("triton") is not None:
        yield
        return
    triton, language = _module("triton"), _module("triton.language")
    triton.__dict__.update(
        jit=_jit,
        autotune=lambda *a, **k: lambda fn: fn,
        heuristics=lambda *a, **k: lambda fn: fn,
        Config=_Anything(),
        cdiv=lambda a, b: -(-int(a) // int(b)),
        next_power_of_2=lambda n: 1 << max(0, int(n) - 1).bit_length(),
        language=language,
    )
    stubs = {"triton": triton, "triton.language": language}
    original = builtins.__import__

    def importing(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        if level == 0 and name in stubs:
            return stubs[name] if fromlist or name == "triton" else triton
        return original(name, globals, locals, fromlist, level)

    builtins.__import__ = importing
    try:
        yield
    finally:
        builtins.__import__ = original
