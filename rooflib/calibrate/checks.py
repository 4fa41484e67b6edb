"""Checks that measurements fit the system they are calibrated or validated as: GPU model and NVLS state.

GPU names differ between tools: nvidia-smi and CUDA say ``NVIDIA H200`` or ``NVIDIA H100 80GB HBM3``, the
catalog ``NVIDIA H200 SXM 141GB`` (``display_name``) and ``h200-sxm`` (``name``). :func:`gpu_model` reduces each
to its model code (``H200``, ``H100``, ``A100``, ``B200``, ``GB200``), and two names match when their codes do.

>>> gpu_model("NVIDIA A100-SXM4-80GB"), gpu_model("NVIDIA H100 80GB HBM3"), gpu_model("gb200")
('A100', 'H100', 'GB200')
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable
from typing import Any, Literal

import pandas as pd

from rooflib.bench.multicast import nccl_env_int
from rooflib.errors import RooflibError
from rooflib.specs.resolve import System

__all__ = ["MeasurementWarning", "check_gpu", "gpu_model", "measured_gpus", "nvls_state"]

_MODEL = re.compile(r"(?<![A-Z0-9])([A-Z]{1,2}\d{1,4}[A-Z]?)(?![A-Z0-9])")


class MeasurementWarning(UserWarning):
    """Measurements used although they do not quite fit (``force=True``); the CLI prints these on stderr."""


def gpu_model(name: str) -> str | None:
    """The model code in a GPU name (``'H200'`` from ``'NVIDIA H200'``), or None when it has none."""
    text = re.sub(r"\(UUID:[^)]*\)", "", name).upper()
    text = re.sub(r"^GPU \d+:", "", text.strip())
    match = _MODEL.search(text.replace("NVIDIA", " "))
    return match.group(1) if match else None


def _names(values: Iterable[Any]) -> set[str]:
    return {str(v).strip() for v in values if isinstance(v, str) and str(v).strip()}


def measured_gpus(frame: pd.DataFrame, meta: list[dict[str, Any]]) -> list[str]:
    """GPU names the measurements were taken on: the records' ``gpu`` column and the meta records."""
    names = _names(frame["gpu"].dropna().unique()) if "gpu" in frame else set()
    for rec in meta:
        names |= _names([rec.get("gpu")])
        gpus = rec.get("gpus")
        if isinstance(gpus, list):
            names |= _names(g.get("name") for g in gpus if isinstance(g, dict))
        smi = rec.get("nvidia_smi")
        if isinstance(smi, list):
            names |= _names(str(line).split(",", 1)[0] for line in smi)
    out: set[str] = set()
    for name in names:  # "A / B" (a machine with two models) counts as both
        out |= {part.strip() for part in name.split(" / ") if part.strip()}
    return sorted(out)


def check_gpu(
    frame: pd.DataFrame, meta: list[dict[str, Any]], system: System, where: str, *, force: bool = False
) -> str | None:
    """Refuse measurements of another GPU model than ``system``'s (with ``force``: warn); returns the problem.

    Measurements without a GPU name pass (nothing to compare)."""
    want = gpu_model(system.device.name) or gpu_model(system.device.display_name)
    measured = measured_gpus(frame, meta)
    others = [n for n in measured if gpu_model(n) != want]
    if not measured or want is None or not others:
        return None
    problem = (
        f"{where}: measured on {' and '.join(others)} (model {', '.join(str(gpu_model(n)) for n in others)}), but "
        f"system {system.name!r} has {system.device.display_name} (model {want})"
    )
    if not force:
        raise RooflibError(problem + "; use the system of the measured GPU, or --force to use them anyway")
    warnings.warn(problem + " (--force: used anyway)", MeasurementWarning, stacklevel=2)
    return problem


def nvls_state(meta: list[dict[str, Any]], where: str = "") -> Literal["on", "off", "unknown"]:
    """Whether NCCL could use NVLS when the measurements were taken.

    From each meta record's ``nvls`` (``rooflib bench`` and ``import-nccl-tests`` write it), else its recorded
    ``NCCL_NVLS_ENABLE`` as NCCL reads it (an integer; 0 is off). Records that disagree are an error."""
    states = set()
    for rec in meta:
        if rec.get("nvls") in ("on", "off"):
            states.add(str(rec["nvls"]))
            continue
        env = rec.get("env")
        if isinstance(env, dict) and "NCCL_NVLS_ENABLE" in env:
            states.add("off" if nccl_env_int(str(env["NCCL_NVLS_ENABLE"])) == 0 else "on")
    if len(states) > 1:
        raise RooflibError(f"{where}: measurements taken with NVLS on and with NVLS off; calibrate them apart")
    if states:
        return "on" if "on" in states else "off"
    return "unknown"
