"""The public API of rooflib.compute is explicit, and the examples in its docstrings are true."""

from __future__ import annotations

import doctest
import importlib

import pytest

import rooflib.compute

PUBLIC = {
    "BACKWARD_FLOP_RATIO",
    "ELEMENTWISE_OPS",
    "NORMALIZATIONS",
    "ComputeCost",
    "ComputeError",
    "ElementwiseOp",
    "GemmQuantization",
    "Normalization",
    "OpCounts",
    "Rates",
    "TileChoice",
    "TileShape",
    "Unit",
    "UnsupportedDTypeError",
    "attention",
    "attention_blocks",
    "attention_bytes",
    "attention_efficiency",
    "attention_flops",
    "bytes_per_element",
    "check_dtype",
    "choose_tiles",
    "elementwise",
    "elementwise_op",
    "gemm",
    "gemm_bytes",
    "gemm_flops",
    "gemm_quantization",
    "gemm_times",
    "gemm_unit",
    "memory_efficiency",
    "memory_rate",
    "memory_time",
    "normalization",
    "reduction",
    "resolve_sms",
    "roofline_cost",
}

MODULES = ["attention", "cost", "duty", "elementwise", "gemm", "gemm_plan", "memory", "rates", "tiling"]


def test_public_names() -> None:
    assert set(rooflib.compute.__all__) == PUBLIC
    for name in PUBLIC:
        assert getattr(rooflib.compute, name) is not None


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples(module: str) -> None:
    mod = importlib.import_module(f"rooflib.compute.{module}")
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert mod.__doc__


@pytest.mark.parametrize("module", MODULES)
def test_module_exports_exist(module: str) -> None:
    mod = importlib.import_module(f"rooflib.compute.{module}")
    for name in mod.__all__:
        assert hasattr(mod, name), f"{module}.__all__ names missing {name}"
