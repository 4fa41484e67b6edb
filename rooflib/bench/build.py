"""Build rooflib's CUDA microbenchmark programs with nvcc, into a per-user cache.

Each program is one ``rooflib/bench/kernels/<name>.cu`` (plus the shared header ``common.cuh``) that prints
JSON Lines: a ``{"record": "meta", ...}`` line, then one ``{"record": "point", ...}`` line per measurement.
A binary is cached under a key made of the sources, the flags, the nvcc version and the target
architecture, so a second ``build`` with the same inputs returns at once.

Example::

    >>> from rooflib.bench.build import build
    >>> exe = build("p2p")                      # doctest: +SKIP
    >>> subprocess.run([exe, "--help"])         # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from rooflib.errors import RooflibError

__all__ = ["KERNELS", "KERNEL_DIR", "build", "default_cache_dir", "detect_arch", "nvcc_flags"]

KERNELS: tuple[str, ...] = ("p2p", "latency", "ceilings", "multimem", "overlap")
"""The programs under ``rooflib/bench/kernels/``. ``multimem`` refuses to run without explicit consent."""

KERNEL_DIR = Path(__file__).resolve().parent / "kernels"
_HEADERS = ("common.cuh",)
_DEFAULT_ARCH = "sm_90a"  # Hopper with its arch-specific features (wgmma); used when no GPU is visible
_ARCH_RE = re.compile(r"^sm_(\d{2,3})([af]?)$")
_COMPILE_TIMEOUT_S = 600.0


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/rooflib/kernels``, else ``~/.cache/rooflib/kernels``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rooflib" / "kernels"


def detect_arch() -> str:
    """The target for the first visible GPU, from ``nvidia-smi``; ``sm_90a`` without one.

    Compute capability 9.0 maps to ``sm_90a`` (wgmma and setmaxnreg need the arch-specific target);
    any other ``X.Y`` to ``sm_XY``.
    """
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return _DEFAULT_ARCH
    try:
        out = subprocess.run(
            [smi, "--query-gpu=compute_cap", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return _DEFAULT_ARCH
    caps = [line.strip() for line in out.stdout.splitlines() if line.strip()]
    if out.returncode != 0 or not caps:
        return _DEFAULT_ARCH
    match = re.fullmatch(r"(\d+)\.(\d+)", caps[0])
    if match is None:
        return _DEFAULT_ARCH
    major, minor = match.groups()
    return "sm_90a" if (major, minor) == ("9", "0") else f"sm_{major}{minor}"


def nvcc_flags(arch: str) -> list[str]:
    """The nvcc flags for a target such as ``sm_90a`` (written as ``-gencode``, see HOPPER notes)."""
    match = _ARCH_RE.match(arch)
    if match is None:
        raise RooflibError(f"bad CUDA architecture {arch!r}: expected the form sm_90a, sm_90 or sm_80")
    number, suffix = match.groups()
    return [
        "-O3",
        "-std=c++17",
        "-lineinfo",
        f"-gencode=arch=compute_{number}{suffix},code=sm_{number}{suffix}",
        f'-DRL_ARCH="{arch}"',
    ]


def _nvcc_version(nvcc: str) -> str:
    exe = shutil.which(nvcc)
    if exe is None:
        raise RooflibError(
            f"nvcc not found (looked for {nvcc!r} on PATH): install the CUDA toolkit or pass nvcc='/path/to/nvcc'"
        )
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise RooflibError(f"could not run {exe} --version: {exc}") from exc
    if out.returncode != 0:
        raise RooflibError(f"{exe} --version failed (exit {out.returncode}):\n{out.stdout}{out.stderr}")
    return out.stdout.strip()


def _source_digest(name: str, flags: list[str], version: str, arch: str) -> str:
    h = hashlib.sha256()
    for file in (f"{name}.cu", *_HEADERS):
        h.update(file.encode())
        h.update((KERNEL_DIR / file).read_bytes())
    h.update("\0".join(flags).encode())
    h.update(version.encode())
    h.update(arch.encode())
    return h.hexdigest()


def build(name: str, *, arch: str | None = None, cache_dir: Path | None = None, nvcc: str = "nvcc") -> Path:
    """Compile ``rooflib/bench/kernels/<name>.cu`` and return the executable's path.

    ``arch`` defaults to :func:`detect_arch`; ``cache_dir`` to :func:`default_cache_dir`. An existing binary
    with the same sources, flags, nvcc version and arch is reused. Raises :class:`RooflibError` for an
    unknown name, a missing nvcc, or a failed compilation (with the compiler's output).
    """
    if name not in KERNELS:
        raise RooflibError(f"unknown benchmark program {name!r}; valid programs: {', '.join(KERNELS)}")
    source = KERNEL_DIR / f"{name}.cu"
    if not source.is_file():
        raise RooflibError(f"benchmark source missing: {source}")
    target = arch if arch is not None else detect_arch()
    flags = nvcc_flags(target)
    version = _nvcc_version(nvcc)
    digest = _source_digest(name, flags, version, target)
    directory = cache_dir if cache_dir is not None else default_cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    exe = directory / f"{name}-{target}-{digest[:16]}"
    if exe.is_file() and os.access(exe, os.X_OK):
        return exe

    fd, tmp_name = tempfile.mkstemp(prefix=f".{name}-", dir=directory)
    os.close(fd)
    tmp = Path(tmp_name)
    cmd = [shutil.which(nvcc) or nvcc, *flags, f"-I{KERNEL_DIR}", "-o", str(tmp), str(source)]
    try:
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=_COMPILE_TIMEOUT_S, check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            raise RooflibError(f"could not run nvcc for {name}: {exc}\ncommand: {' '.join(cmd)}") from exc
        if out.returncode != 0:
            raise RooflibError(
                f"nvcc failed to build {name} for {target} (exit {out.returncode})\n"
                f"command: {' '.join(cmd)}\n{out.stdout}{out.stderr}"
            )
        tmp.chmod(0o755)
        os.replace(tmp, exe)
    finally:
        tmp.unlink(missing_ok=True)
    return exe
