"""Fixtures for the runner tests: fake jobs (tests/bench/fake_job.py) instead of GPU programs."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

_spec = importlib.util.spec_from_file_location("rooflib_test_fakes", Path(__file__).with_name("fakes.py"))
assert _spec is not None and _spec.loader is not None
fakes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fakes)


@pytest.fixture
def fake_jobs(monkeypatch: pytest.MonkeyPatch) -> Callable[[list[Any]], None]:
    """``fake_jobs([Job(...), ...])``: run_bench plans these jobs and runs them with fake_job.py on a fake H200."""
    from rooflib.bench import runner

    def use(jobs: list[Any]) -> None:
        fakes.patch(runner, jobs, monkeypatch.setattr)

    return use
