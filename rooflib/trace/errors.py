"""Errors of the tracer: one line each, naming the file, the function and what went wrong."""

from __future__ import annotations

import importlib
from typing import Any

from rooflib.errors import RooflibError

__all__ = ["TORCH_MISSING", "TorchMissingError", "TraceError", "import_torch"]

TORCH_MISSING = "rooflib trace needs PyTorch: pip install 'rooflib[trace]'"


class TraceError(RooflibError, ValueError):
    """A program that cannot be traced: a missing file or function, INPUTS raising or returning the wrong thing,
    the traced function raising, a data-dependent shape the tracer cannot bound."""


class TorchMissingError(TraceError, ImportError):
    """PyTorch is not installed (the ``trace`` extra)."""

    def __init__(self) -> None:
        super().__init__(TORCH_MISSING)


def import_torch() -> Any:
    """The ``torch`` module, or :class:`TorchMissingError` when it is not installed."""
    try:
        return importlib.import_module("torch")
    except ImportError:
        raise TorchMissingError() from None
