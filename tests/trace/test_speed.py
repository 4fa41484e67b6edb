"""Tracing is fast: a 30-op program well under a second once torch (and the torch._dynamo that fake tensors
import on first use) is loaded."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("torch")

from rooflib.trace import load_target, trace_program

from .conftest import target


def test_thirty_ops_well_under_a_second() -> None:
    func, inputs = load_target(target("block.py:layers")), load_target(target("block.py:inputs"))
    trace_program(func, inputs, world=8, params={"n_layers": 1})  # first use imports torch._dynamo
    start = time.perf_counter()
    program = trace_program(func, inputs, world=8, params={"n_layers": 3})
    seconds = time.perf_counter() - start
    assert len(program.ops) >= 30
    assert seconds < 0.5, f"{len(program.ops)} ops traced in {seconds:.3f} s"
