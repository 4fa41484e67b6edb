"""Fixtures for the compute-layer tests: devices from the built-in catalog."""

from __future__ import annotations

import pytest

from rooflib.specs import DeviceSpec, default_catalog

CATALOG = default_catalog()
DEVICE_NAMES = CATALOG.names("device")


@pytest.fixture(scope="session")
def h100_spec() -> DeviceSpec:
    return CATALOG.device("h100-sxm5")


@pytest.fixture(scope="session")
def a100_spec(h100_spec: DeviceSpec) -> DeviceSpec:
    """The catalog's A100 when present, else an H100 copy without fp8 tensor cores standing in for it."""
    if "a100-sxm4-80gb" in DEVICE_NAMES:
        return CATALOG.device("a100-sxm4-80gb")
    return h100_spec.model_copy(
        update={"name": "a100-sxm4-80gb", "tensor": h100_spec.tensor.model_copy(update={"fp8": None})}
    )


@pytest.fixture(scope="session", params=DEVICE_NAMES)
def device_spec(request: pytest.FixtureRequest) -> DeviceSpec:
    """Every device in the catalog (at least the H100)."""
    return CATALOG.device(request.param)


@pytest.fixture(scope="session")
def h100_tile_spec(h100_spec: DeviceSpec) -> DeviceSpec:
    """The H100 without its GEMM model and per-dtype efficiencies: the one-tile quantisation model (what a device
    without ``compute.gemm`` runs, and any call given ``tile``), with ``tensor_efficiency`` for every dtype."""
    assert h100_spec.compute is not None
    compute = h100_spec.compute.model_copy(update={"gemm": None})
    return h100_spec.model_copy(update={"compute": compute, "dtype_efficiency": {}})
