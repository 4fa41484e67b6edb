"""The multicast switches are read the way NCCL, PyTorch and NVSHMEM read them, and anything not clearly off
is replaced (a literal comparison with "0" let ``NCCL_NVLS_ENABLE=false`` through)."""

from __future__ import annotations

import os

import pytest

from rooflib.bench.multicast import clearly_off, keep_multicast_off, multicast_requested, nccl_env_int, nvls_state
from rooflib.conventions import MULTICAST_OFF


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0", 0),
        ("1", 1),
        ("2", 2),
        (" 0", 0),
        ("00", 0),
        ("0x0", 0),
        ("0x1", 1),
        ("010", 8),  # base 0: octal, as strtoll reads it
        ("1abc", 1),  # digits, then ignored text
        ("false", 0),  # no digits: strtoll converts nothing
        ("true", 0),
        ("-1", -1),
        ("", 2),  # empty or unset: NCCL's default (on where supported)
        (None, 2),
        ("99999999999999999999", 2),  # out of range: the default
    ],
)
def test_nccl_reads_integers_like_strtoll(text: str | None, value: int) -> None:
    assert nccl_env_int(text) == value


@pytest.mark.parametrize(
    ("name", "value", "off"),
    [
        ("NCCL_NVLS_ENABLE", "0", True),
        ("NCCL_NVLS_ENABLE", " 0 ", True),
        ("NCCL_NVLS_ENABLE", "0x0", True),
        ("NCCL_NVLS_ENABLE", "false", False),  # off in NCCL only by accident
        ("NCCL_NVLS_ENABLE", "0abc", False),
        ("NCCL_NVLS_ENABLE", "2", False),
        ("NCCL_NVLS_ENABLE", None, False),
        ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1", True),
        ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "true", False),  # c10::utils::check_env ignores it: multicast on
        ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "0", False),
        ("NVSHMEM_DISABLE_NVLS", "1", True),
        ("NVSHMEM_DISABLE_NVLS", "TRUE", True),
        ("NVSHMEM_DISABLE_NVLS", "yes", True),
        ("NVSHMEM_DISABLE_NVLS", "0", False),
        ("NVSHMEM_DISABLE_NVLS", "off", False),
    ],
)
def test_clearly_off(name: str, value: str | None, off: bool) -> None:
    assert clearly_off(name, value) is off


def test_anything_not_clearly_off_is_replaced() -> None:
    env, notes = keep_multicast_off({"NCCL_NVLS_ENABLE": "false", "NVSHMEM_DISABLE_NVLS": "yes", "PATH": "/bin"})
    assert env == {**MULTICAST_OFF, "NVSHMEM_DISABLE_NVLS": "yes", "PATH": "/bin"}
    assert notes == ["NCCL_NVLS_ENABLE='false' -> '0'"]  # unset ones are set without a note
    assert keep_multicast_off(MULTICAST_OFF) == (MULTICAST_OFF, [])


@pytest.mark.parametrize(
    ("value", "requested"),
    [
        ("1", True),
        ("2", True),
        (" 0x1 ", True),
        ("0", False),
        ("false", False),
        ("yes", False),
        ("", False),
        (None, False),
    ],
)
def test_only_a_plain_nonzero_integer_requests_multicast(value: str | None, requested: bool) -> None:
    env = {} if value is None else {"NCCL_NVLS_ENABLE": value}
    assert multicast_requested(env) is requested
    assert nvls_state(env) == ("off" if value in ("0", "false", "yes") else "on")


@pytest.mark.parametrize(("allow", "value", "kept"), [(False, "1", "0"), (True, "false", "0"), (True, "1", "1")])
def test_the_nccl_worker_guard(monkeypatch: pytest.MonkeyPatch, allow: bool, value: str, kept: str) -> None:
    from rooflib.bench.nccl_worker import _guard_multicast

    monkeypatch.setenv("NCCL_NVLS_ENABLE", value)
    monkeypatch.setenv("TORCH_SYMM_MEM_DISABLE_MULTICAST", "true")
    _guard_multicast(allow)
    assert os.environ["NCCL_NVLS_ENABLE"] == kept
    if kept == "0":
        assert os.environ["TORCH_SYMM_MEM_DISABLE_MULTICAST"] == "1"


def test_the_workers_import_without_pydantic_or_pandas() -> None:
    """The torchrun workers run on machines with torch and numpy only."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['pydantic'] = None; sys.modules['pandas'] = None; sys.modules['scipy'] = None\n"
        "import rooflib.bench.nccl_worker, rooflib.bench.tp_worker, rooflib.bench.gemm_worker\n"
        "assert 'rooflib.specs' not in sys.modules"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
