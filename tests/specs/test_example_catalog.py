"""The example user catalog of docs/examples/catalog loads, its device extends a built-in one, and the models
predict on its system, so the documented example never rots."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml

import rooflib
from rooflib.specs import Catalog, load_system
from rooflib.specs.figures import SOURCE_PREFIXES

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
CATALOG = EXAMPLES / "catalog"
DEVICE, BASE_DEVICE, SYSTEM = "h100-sxm5-500w", "h100-sxm5", "lab-h100-hdr"


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return Catalog.load([CATALOG])


def _overridden(path: Path) -> dict[str, dict[str, object]]:
    """Every figure the file writes itself (``{value, source}`` mappings), by dotted name."""
    out: dict[str, dict[str, object]] = {}

    def walk(node: object, where: str) -> None:
        if isinstance(node, dict) and "value" in node:
            out[where] = node
        elif isinstance(node, dict):
            for key, value in node.items():
                walk(value, f"{where}.{key}" if where else str(key))

    walk(yaml.safe_load(path.read_text()), "")
    return out


def test_the_folder_adds_one_device_and_one_system(catalog: Catalog) -> None:
    builtin = rooflib.default_catalog()
    assert set(catalog.names("device")) - set(builtin.names("device")) == {DEVICE}
    assert set(catalog.names("system")) - set(builtin.names("system")) == {SYSTEM}
    assert catalog.items["device"][DEVICE].data["extends"] == BASE_DEVICE


def test_the_device_overrides_a_few_figures_with_sources(catalog: Catalog) -> None:
    figures = _overridden(CATALOG / "devices" / f"{DEVICE}.yaml")
    assert len(figures) >= 2
    for name, figure in figures.items():
        source = str(figure["source"])
        assert source.startswith(("assumption:", "derived:")), (name, source)
    assert all(p in SOURCE_PREFIXES for p in ("assumption:", "derived:"))
    mine, base = catalog.device(DEVICE), catalog.device(BASE_DEVICE)
    assert mine.tensor.bf16.value < base.tensor.bf16.value  # overridden
    assert mine.tensor.fp64.value == base.tensor.fp64.value  # merged in from the built-in device
    assert mine.hbm_bandwidth.value == base.hbm_bandwidth.value
    assert mine.sms.value == base.sms.value


def test_models_predict_on_the_new_system(catalog: Catalog) -> None:
    system = load_system(SYSTEM, catalog=catalog)
    assert system.device.name == DEVICE and system.nic is not None
    assert system.gpus > system.domain_gpus  # several nodes over the HDR network
    sizes = [2**20, 2**30]
    for gpus in (system.domain_gpus, system.gpus):
        r = rooflib.predict_collective("all_reduce", system, nbytes=sizes, gpus=gpus)
        assert np.all(np.isfinite(r.time_s)) and np.all(r.time_s > 0)
        assert r.time_s[1] > r.time_s[0]
    assert rooflib.roofs(system).compute == pytest.approx(catalog.device(DEVICE).tensor.bf16.value)
    t = rooflib.predict_transfer(system, 2**20)
    assert math.isfinite(t.options[0].time_s)


def test_the_slower_network_is_slower_across_nodes(catalog: Catalog) -> None:
    lab = load_system(SYSTEM, catalog=catalog)
    ndr = load_system("dgx-h100-superpod", gpus=lab.gpus)
    slow = rooflib.predict_collective("all_reduce", lab, nbytes=2**30, gpus=lab.gpus).time_s[0]
    fast = rooflib.predict_collective("all_reduce", ndr, nbytes=2**30, gpus=lab.gpus).time_s[0]
    assert slow > fast  # HDR 200 Gb/s against NDR 400 Gb/s per NIC


def test_the_readme_names_the_example() -> None:
    text = (EXAMPLES / "README.md").read_text()
    for word in (DEVICE, SYSTEM, "--catalog docs/examples/catalog", "extends:"):
        assert word in text
