"""Pieces shared by the torch workers (compute, host, programs, pkb): the JSON Lines sink, the meta record, clocks
sampled while a job runs, the L2 size, resuming (:func:`recorded_keys`) and the output check (:func:`rel_error`).
The timing loops are :mod:`rooflib.bench.torch_timing`.

Imports only the standard library and :mod:`rooflib.bench.records` (no pydantic, no torch at import time: torch is
passed in), so a worker's ``--help`` works anywhere.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import platform
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

from rooflib.bench.records import dump_record

__all__ = [
    "DEFAULT_L2_BYTES",
    "Clocks",
    "Sink",
    "family_records",
    "finish",
    "l2_bytes",
    "meta_record",
    "recorded_keys",
    "rel_error",
]

DEFAULT_L2_BYTES = 60 << 20
"""L2 size assumed when the device does not report one (the H200 driver reports 60 MiB)."""

_SMI_FIELDS = "clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active"


class Sink:
    """Strict JSON Lines output (one record a line, flushed): the job's ``--out`` file."""

    def __init__(self, path: str) -> None:
        self._fh: TextIO = open(path, "a")  # closed by close()

    def write(self, rec: dict[str, Any]) -> None:
        self._fh.write(dump_record(rec) + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()


class Clocks:
    """Samples SM and memory clocks, power, temperature and clock-event reasons with ``nvidia-smi -lms`` in the
    background while a job runs (nothing when nvidia-smi is missing). Never changes any setting."""

    def __init__(self, index: int = 0, interval_ms: int = 500) -> None:
        self.samples: list[dict[str, Any]] = []
        self._proc: subprocess.Popen[str] | None = None
        self._thread: threading.Thread | None = None
        fields = _SMI_FIELDS if _smi(_SMI_FIELDS) else _SMI_FIELDS.replace("event_reasons", "throttle_reasons")
        cmd = ["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits", "-lms", str(interval_ms)]
        cmd += ["-i", str(index)]
        try:
            self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            return
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) < 5:
                continue
            self.samples.append(
                {
                    "t": time.time(),
                    "sm_mhz": _number(parts[0]),
                    "mem_mhz": _number(parts[1]),
                    "power_w": _number(parts[2]),
                    "temp_c": _number(parts[3]),
                    "reasons": parts[4],
                }
            )

    def latest_sm_mhz(self) -> float | None:
        return self.samples[-1]["sm_mhz"] if self.samples else None

    def summary(self) -> dict[str, Any]:
        """Min / median / max of each sampled quantity, and the clock-event reasons seen (hex masks)."""
        out: dict[str, Any] = {"samples": len(self.samples)}
        for key in ("sm_mhz", "mem_mhz", "power_w", "temp_c"):
            vals = [s[key] for s in self.samples if s[key] is not None]
            if vals:
                out[key] = {"min": min(vals), "median": statistics.median(vals), "max": max(vals)}
        out["reasons"] = sorted({str(s["reasons"]) for s in self.samples})
        return out

    def close(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
        if self._thread is not None:
            self._thread.join(2)


def finish(sink: Sink, clocks: Clocks | None, end: dict[str, Any], start: float | None = None) -> None:
    """Write a worker's closing meta record (``end``, with its run time from ``start`` and the sampled clocks)
    and close its output."""
    if start is not None:
        end["seconds"] = time.monotonic() - start
    if clocks is not None:
        clocks.close()
        end["clocks"] = clocks.summary()
    sink.write(end)
    sink.close()


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _smi(query: str) -> list[str]:
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    return out.stdout.strip().splitlines() if out.returncode == 0 else []


def l2_bytes(torch: Any, dev: Any) -> int:
    """The device's L2 size in bytes (``DEFAULT_L2_BYTES`` on the CPU or when unreported)."""
    if getattr(dev, "type", "cpu") != "cuda":
        return DEFAULT_L2_BYTES
    props = torch.cuda.get_device_properties(dev)
    size = int(getattr(props, "L2_cache_size", 0) or getattr(props, "l2_cache_size", 0) or 0)
    return size if size > 0 else DEFAULT_L2_BYTES


def meta_record(torch: Any, dev: Any, family: str, **extra: Any) -> dict[str, Any]:
    """Where and how the job ran: GPU, SMs, L2, driver, torch, CUDA, cuDNN, clocks, host, command."""
    rec: dict[str, Any] = {
        "record": "meta",
        "family": family,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "host": socket.gethostname(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(sys.argv),
        "env": {k: v for k, v in os.environ.items() if k.startswith(("NCCL_", "TORCH_SYMM", "NVSHMEM_", "CUDA_"))},
        "cpu": cpu_info(),
    }
    if getattr(dev, "type", "cpu") == "cuda":
        props = torch.cuda.get_device_properties(dev)
        smi = _smi("name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,power.limit")
        rec.update(
            {
                "gpu": props.name,
                "sms": props.multi_processor_count,
                "l2_bytes": l2_bytes(torch, dev),
                "memory_bytes": int(props.total_memory),
                "capability": f"{props.major}.{props.minor}",
                "nvidia_smi": smi,
                "driver": smi[0].split(",")[1].strip() if smi and "," in smi[0] else None,
                "cuda_compiled": _compiled_cuda(torch),
                "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
            }
        )
    else:
        rec["gpu"] = "cpu"
    rec.update(extra)
    return rec


def cpu_info(path: str = "/proc/cpuinfo") -> dict[str, Any]:
    """The host CPU: model, logical CPUs, the MHz the kernel reports now (median over CPUs) and the cores this
    process may use; empty where ``path`` cannot be read. Lent hosts differ in host speed between leases: this
    says whether they are the same CPU.

    >>> sorted(cpu_info("/nonexistent"))
    ['usable']
    """
    out: dict[str, Any] = {"usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None}
    try:
        text = Path(path).read_text()
    except OSError:
        return out
    models = [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")]
    mhz = sorted(float(line.split(":", 1)[1]) for line in text.splitlines() if line.startswith("cpu MHz"))
    out.update(model=models[0] if models else None, logical=len(models) or None)
    out["mhz"] = mhz[len(mhz) // 2] if mhz else None
    return out


def _compiled_cuda(torch: Any) -> int | None:
    """The CUDA version torch was built with (13000 for 13.0); the kernel names tell the cuBLAS in use."""
    try:
        return int(torch._C._cuda_getCompiledVersion()) if hasattr(torch._C, "_cuda_getCompiledVersion") else None
    except Exception:  # informative only
        return None


def rel_error(torch: Any, got: Any, ref: Any) -> float:
    """Relative Frobenius error ``|got - ref| / |ref|`` in float32 (NaN when anything is not finite)."""
    g, r = got.float(), ref.float()
    if not bool(torch.isfinite(g).all()):
        return math.nan
    denom = float(torch.linalg.vector_norm(r))
    diff = float(torch.linalg.vector_norm(g - r))
    return diff / denom if denom > 0 else diff


def family_records(path: str, family: str) -> Iterator[dict[str, Any]]:
    """The records of ``family`` in the JSON Lines file ``path``, in order (none if it is absent; a torn or
    corrupt line is skipped)."""
    if not os.path.exists(path):
        return
    with open(path) as fh:
        for line in fh:
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(rec, dict) and rec.get("family") == family:
                yield rec


def recorded_keys(path: str, family: str, key: Callable[[dict[str, Any]], tuple[str, ...]]) -> set[tuple[str, ...]]:
    """``key`` of every point and skip of ``family`` already in the JSON Lines file ``path`` (a torn last line is
    ignored): what a resumed run must not measure again."""
    return {key(rec) for rec in family_records(path, family) if rec.get("record") in ("point", "skipped")}
