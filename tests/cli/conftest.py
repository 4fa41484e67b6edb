"""CLI tests: a CliRunner and a helper that invokes ``rooflib`` and parses ``--json`` output."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner, Result

from rooflib.cli import main


def invoke(*args: str) -> Result:
    """Run ``rooflib ARGS`` in-process (stdout and stderr kept apart)."""
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def invoke_json(*args: str) -> Any:
    result = invoke(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture
def profile_yaml(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A calibrated profile for hgx-h100 halving NCCL's NVLink efficiency."""
    path = tmp_path_factory.mktemp("profiles") / "slow-nvlink.yaml"
    path.write_text(
        "kind: profile\n"
        "name: test\n"
        "system: hgx-h100\n"
        "provenance: {date: '2026-01-01', command: 'rooflib bench nccl'}\n"
        "overrides:\n"
        "  library.link_efficiency.nvlink: {value: 0.5, source: 'measured: test'}\n"
    )
    return str(path)
