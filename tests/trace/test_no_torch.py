"""What works without PyTorch: importing rooflib and rooflib.trace, lowering, the CLI's message and exit code 2,
``--help`` (torch missing is simulated with ``sys.modules['torch'] = None``)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from click.testing import CliRunner

from rooflib.cli.common import RooflibGroup
from rooflib.cli.trace import trace
from rooflib.trace import TORCH_MISSING, TorchMissingError, trace_program
from rooflib.trace.errors import import_torch

from .conftest import target


@pytest.fixture
def no_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``import torch`` fail, as on a machine without the trace extra."""
    monkeypatch.setitem(sys.modules, "torch", None)


@pytest.mark.usefixtures("no_torch")
def test_torch_missing() -> None:
    with pytest.raises(TorchMissingError) as info:
        import_torch()
    assert str(info.value) == TORCH_MISSING == "rooflib trace needs PyTorch: pip install 'rooflib[trace]'"
    with pytest.raises(TorchMissingError):
        trace_program(lambda: None, world=1)


@pytest.mark.usefixtures("no_torch")
def test_cli_without_torch_exits_2() -> None:
    group = RooflibGroup("rooflib", commands=[trace])
    args = ["trace", target("tp_mlp.py:tp_mlp"), "--inputs", target("tp_mlp.py:inputs"), "--system", "hgx-h100"]
    result = CliRunner().invoke(group, [*args, "--gpus", "8"])
    assert result.exit_code == 2
    assert result.output == "error: rooflib trace needs PyTorch: pip install 'rooflib[trace]'\n"
    assert CliRunner().invoke(group, ["trace", "--help"]).exit_code == 0


def test_rooflib_imports_without_torch() -> None:
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import rooflib, rooflib.trace, rooflib.cli, rooflib.cli.trace, rooflib.program\n"
        "from rooflib.trace import lower, Trace\n"
        "assert lower(Trace('empty', 1, 0, ())).ops == ()\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_public_names() -> None:
    import rooflib.trace

    assert set(rooflib.trace.__all__) == {
        "TORCH_MISSING", "Call", "Group", "TensorMeta", "TorchMissingError", "Trace", "TraceError", "capture_trace",
        "convert_value", "load_target", "lower", "parse_sets", "trace_program",
    }  # fmt: skip
    assert all(hasattr(rooflib.trace, name) for name in rooflib.trace.__all__)
