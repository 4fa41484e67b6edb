"""The CUDA microbenchmark programs compile with nvcc and answer ``--help`` without a GPU.

CI has nvcc and no GPU: these tests compile every program (in parallel, about 10 s), run ``--help``, and
check that ``multimem`` refuses to run unless multicast is explicitly allowed, before touching CUDA.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from rooflib.bench.build import KERNELS, build, nvcc_flags
from rooflib.errors import RooflibError

pytestmark = [
    pytest.mark.nvcc,
    pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH"),
]

ARCH = "sm_90a"  # fixed, so that CI builds the Hopper paths (TMA, wgmma) whatever GPU it has or lacks


@pytest.fixture(scope="module")
def binaries(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    cache = tmp_path_factory.mktemp("kernels")
    with ThreadPoolExecutor(max_workers=len(KERNELS)) as pool:
        paths = list(pool.map(lambda k: build(k, arch=ARCH, cache_dir=cache), KERNELS))
    return dict(zip(KERNELS, paths, strict=True))


def _env_without_multicast() -> dict[str, str]:
    env = dict(os.environ)
    env.update(NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1", NVSHMEM_DISABLE_NVLS="1")
    return env


@pytest.mark.parametrize("name", KERNELS)
def test_builds_and_helps(binaries: dict[str, Path], name: str) -> None:
    exe = binaries[name]
    assert exe.is_file()
    assert os.access(exe, os.X_OK)
    out = subprocess.run(
        [str(exe), "--help"], capture_output=True, text=True, timeout=60, check=False, env=_env_without_multicast()
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(name)


def test_build_reuses_cached_binary(binaries: dict[str, Path]) -> None:
    exe = binaries["latency"]
    mtime = exe.stat().st_mtime_ns
    again = build("latency", arch=ARCH, cache_dir=exe.parent)
    assert again == exe
    assert again.stat().st_mtime_ns == mtime


@pytest.mark.parametrize(
    ("args", "nvls"),
    [
        ([], None),
        ([], "1"),
        (["--allow-multicast"], None),
        (["--allow-multicast"], "0"),
        (["--allow-multicast"], ""),
        (["--allow-multicast"], "false"),  # NCCL reads it as 0 (off): not a request for multicast
        (["--allow-multicast"], "no"),
        (["--allow-multicast"], "0x0"),
        (["--allow-multicast"], " 0 "),
        (["--allow-multicast"], "1abc"),
    ],
)
def test_multimem_refuses(binaries: dict[str, Path], args: list[str], nvls: str | None) -> None:
    env = _env_without_multicast()
    env.pop("NCCL_NVLS_ENABLE")
    if nvls is not None:
        env["NCCL_NVLS_ENABLE"] = nvls
    out = subprocess.run(
        [str(binaries["multimem"]), *args], capture_output=True, text=True, timeout=60, check=False, env=env
    )
    assert out.returncode == 3
    record = json.loads(out.stdout.splitlines()[0])
    assert record["record"] == "refused"
    assert "multicast" in record["reason"]


def test_unknown_kernel_and_bad_arch(tmp_path: Path) -> None:
    with pytest.raises(RooflibError, match="unknown benchmark program"):
        build("nope", cache_dir=tmp_path)
    with pytest.raises(RooflibError, match="bad CUDA architecture"):
        nvcc_flags("hopper")


def test_missing_nvcc(tmp_path: Path) -> None:
    with pytest.raises(RooflibError, match="nvcc not found"):
        build("latency", arch=ARCH, cache_dir=tmp_path, nvcc="no-such-nvcc-here")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--schedule", "intra_sm,nope"], "unknown schedule 'nope'"),
        (["--tile-bytes", "1000"], "multiple of 4K"),
        (["--stages", "1"], "--stages"),
        (["--slots", "1"], "--slots must be 2..8"),
        (["--slots", "9"], "--slots must be 2..8"),
        (["--iters", "0"], "--iters"),
        (["--gpus", "0,0"], "two different"),
        (["--direction", "sideways"], "--direction must be scatter or gather"),
        (["--schedule", "inter_ce"], "inter_ce needs --direction gather"),
        (["--reuse", "4"], "need --direction gather"),
        (["--ce-issue", "graph"], "need --direction gather"),
        (["--direction", "gather", "--reuse", "0"], "--reuse must be"),
        (["--direction", "gather", "--ce-chunk", "8,0"], "--ce-chunk"),
        (["--direction", "gather", "--ce-issue", "stream,pigeon"], "unknown --ce-issue 'pigeon'"),
    ],
)
def test_overlap_rejects_bad_options(binaries: dict[str, Path], args: list[str], message: str) -> None:
    out = subprocess.run(
        [str(binaries["overlap"]), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=_env_without_multicast(),
    )
    assert out.returncode == 2  # options are checked before any CUDA call
    record = json.loads(out.stdout.splitlines()[0])
    assert record["record"] == "error" and message in record["error"]


def test_overlap_help_lists_schedules(binaries: dict[str, Path]) -> None:
    out = subprocess.run([str(binaries["overlap"]), "--help"], capture_output=True, text=True, timeout=60, check=False)
    for schedule in ("compute_only", "comm_only", "sequential", "intra_sm", "inter_sm", "inter_ce"):
        assert schedule in out.stdout
    assert "524288" in out.stdout  # FLOPs per loop trip, stated exactly
    for option in ("--direction", "scatter", "gather", "--reuse C", "--ce-chunk", "--ce-issue", "preissued"):
        assert option in out.stdout
