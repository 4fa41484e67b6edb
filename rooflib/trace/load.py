"""Loading ``FILE.py:NAME`` targets and ``--set key=value`` parameters for ``rooflib trace``.

A target names a Python file and a callable in it (``programs/mlp.py:tp_mlp``); the file is imported once per
path and modification time (so FUNC and INPUTS from one file share its module and its classes), with its folder
on ``sys.path`` while it imports, so it can import its neighbours. Every failure is one :class:`TraceError`
line naming the file and the attribute.

>>> convert_value("8192"), convert_value("0.5"), convert_value("bf16")
(8192, 0.5, 'bf16')
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any, cast

from rooflib.trace.errors import TraceError

__all__ = ["convert_value", "load_target", "parse_sets", "split_target"]

_MODULES: dict[tuple[str, int], ModuleType] = {}


def split_target(spec: str, what: str = "FUNC") -> tuple[Path, str]:
    """``('path/file.py', 'name')`` from ``'path/file.py:name'`` (the last colon splits, so drive letters work)."""
    path, sep, attr = spec.rpartition(":")
    if not sep or not path or not attr:
        raise TraceError(f"{what} must be FILE.py:NAME, got {spec!r}")
    if not attr.replace(".", "_").isidentifier():
        raise TraceError(f"{what} {spec!r}: {attr!r} is not a Python name")
    return Path(path), attr


def _module(path: Path) -> ModuleType:
    if not path.is_file():
        raise TraceError(f"{path}: no such file")
    resolved = path.resolve()
    key = (str(resolved), resolved.stat().st_mtime_ns)
    if key in _MODULES:
        return _MODULES[key]
    digest = hashlib.sha1(key[0].encode()).hexdigest()[:10]
    name = f"_rooflib_trace_{resolved.stem}_{digest}"
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise TraceError(f"{path}: cannot be imported as a Python file")
    module = importlib.util.module_from_spec(spec)
    folder = str(resolved.parent)
    sys.modules[name] = module
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(name, None)
        raise TraceError(f"{path}: importing it raised {type(exc).__name__}: {exc}") from exc
    finally:
        if folder in sys.path:
            sys.path.remove(folder)
    _MODULES[key] = module
    return module


def load_target(spec: str, what: str = "FUNC") -> Callable[..., Any]:
    """The callable named by ``'FILE.py:NAME'`` (``NAME`` may be dotted: ``Model.forward``)."""
    path, attr = split_target(spec, what)
    obj: Any = _module(path)
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise TraceError(f"{path} has no attribute {attr!r} (the {what} of {spec!r})")
        obj = getattr(obj, part)
    if not callable(obj):
        raise TraceError(f"{path}:{attr} is not callable (a {type(obj).__name__}); {what} must be a function")
    return cast(Callable[..., Any], obj)


def convert_value(text: str) -> int | float | str:
    """An ``int`` when ``text`` is one (``8192``, ``-1``, ``1_024``), else a ``float`` (``0.5``, ``1e-3``), else
    the string itself (``bf16``, ``true``)."""
    value = text.strip()
    try:
        return int(value)
    except ValueError:
        pass
    try:
        return float(value)
    except ValueError:
        return value


def parse_sets(items: Iterable[str]) -> dict[str, int | float | str]:
    """``{'t': 4096, 'dtype': 'bf16'}`` from ``['t=4096', 'dtype=bf16']``; a later key replaces an earlier one."""
    out: dict[str, int | float | str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise TraceError(f"--set expects KEY=VALUE, got {item!r}")
        if not key.isidentifier():
            raise TraceError(f"--set {item!r}: {key!r} is not a Python name (INPUTS receives it as a keyword)")
        out[key] = convert_value(value)
    return out
