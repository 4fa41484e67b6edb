from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

import rooflib
from rooflib.specs import System

settings.register_profile("ci", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def h100() -> System:
    return rooflib.load_system("hgx-h100")


@pytest.fixture(scope="session")
def a100() -> System:
    return rooflib.load_system("hgx-a100")


@pytest.fixture(scope="session")
def b200() -> System:
    return rooflib.load_system("hgx-b200")


@pytest.fixture(scope="session")
def superpod() -> System:
    """64 nodes = 512 GPUs in two scalable units of 32 nodes."""
    return rooflib.load_system("dgx-h100-superpod", nodes=64)
