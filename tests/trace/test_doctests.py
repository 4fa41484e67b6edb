"""The examples in the tracer's docstrings run (those needing torch are marked to skip)."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["records", "load", "lower", "rules", "matmul", "comm", "pieces", "cuda", "errors", "capture", "intercept",
           "recorder"]  # fmt: skip


@pytest.mark.parametrize("name", ["rooflib.trace", *(f"rooflib.trace.{m}" for m in MODULES)])
def test_docstring_examples(name: str) -> None:
    if name.rsplit(".", 1)[-1] in ("capture", "recorder", "intercept"):
        pytest.importorskip("torch")
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
