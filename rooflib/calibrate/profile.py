"""``rooflib calibrate``: fit every family present in a results folder and write a profile YAML.

The profile holds the fitted figures as overrides of catalog paths (each with a ``measured:`` source), the
provenance of the measurements (date, GPU, driver, CUDA, NCCL, command) and the fit quality per family.
``load_system(name, profile=PATH)`` then predicts with the calibrated figures.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from rooflib.calibrate.collectives import fit_collectives
from rooflib.calibrate.data import Fit, load_meta, load_results
from rooflib.calibrate.device import fit_device
from rooflib.calibrate.transfer import fit_transfers
from rooflib.errors import RooflibError
from rooflib.specs.resolve import load_system

__all__ = ["calibrate", "nvls_enabled", "provenance"]


def _first(meta: list[dict[str, Any]], key: str) -> Any:
    for rec in meta:
        if rec.get(key) not in (None, ""):
            return rec[key]
    return None


def provenance(meta: list[dict[str, Any]], command: str) -> dict[str, Any]:
    """Date, GPU, driver, CUDA and NCCL versions as the benchmark programs recorded them."""
    gpu = _first(meta, "gpu")
    if gpu is None:
        for rec in meta:
            gpus = rec.get("gpus")
            if isinstance(gpus, list) and gpus:
                gpu = gpus[0].get("name")
                break
    driver = _first(meta, "driver_release")
    if driver is None:
        smi = _first(meta, "nvidia_smi")
        if isinstance(smi, list) and smi:
            parts = [p.strip() for p in str(smi[0]).split(",")]
            driver = parts[1] if len(parts) > 1 else None
    runtime = _first(meta, "runtime_version")
    cuda = _first(meta, "cuda") or (f"{int(runtime) // 1000}.{int(runtime) % 1000 // 10}" if runtime else None)
    return {
        "date": str(_first(meta, "date") or datetime.date.today().isoformat()),
        "command": command,
        "gpu": None if gpu is None else str(gpu),
        "driver": None if driver is None else str(driver),
        "cuda": None if cuda is None else str(cuda),
        "nccl": None if _first(meta, "nccl") is None else str(_first(meta, "nccl")),
    }


def nvls_enabled(meta: list[dict[str, Any]]) -> bool:
    """Whether the measured machine allowed NVLink multicast (its NCCL_NVLS_ENABLE, off when unrecorded)."""
    for rec in meta:
        env = rec.get("env")
        if isinstance(env, dict) and "NCCL_NVLS_ENABLE" in env:
            return str(env["NCCL_NVLS_ENABLE"]) != "0"
    return False


def calibrate(
    results: str | Path,
    system: str,
    out: str | Path,
    *,
    name: str | None = None,
    command: str = "rooflib calibrate",
) -> dict[str, Any]:
    """Fit the measurements in ``results`` for ``system`` and write the profile to ``out``; returns it."""
    frame = load_results(results)
    meta = load_meta(results)
    gpus = int(np.nanmax(frame["gpus"].astype(float))) if "gpus" in frame else 1
    sys_ = load_system(system, gpus=gpus)
    prov = provenance(meta, command)
    where = ", ".join(x for x in (prov["gpu"], f"driver {prov['driver']}" if prov["driver"] else None) if x)
    source = f"measured: rooflib bench on {where}, {prov['date'][:10]}"
    fit = Fit()
    fit.merge(fit_device(frame, sys_, source))
    fit.merge(fit_transfers(frame, sys_, source))
    fit.merge(fit_collectives(frame, sys_, source, nvls_enabled=nvls_enabled(meta)))
    if not fit.overrides:
        raise RooflibError(f"{results}: nothing to calibrate (no p2p, latency, ceilings, gemm or nccl rows)")
    if not nvls_enabled(meta) and sys_.switch.multicast:  # the machine forbids multicast: so must predictions
        why = f"{source}: NVLink multicast off on the measured machine (NCCL_NVLS_ENABLE=0)"
        fit.overrides[f"interconnect.{sys_.switch.name}.multicast"] = False
        fit.overrides[f"interconnect.{sys_.switch.name}.in_network_reduction"] = False
        fit.quality.append({"family": "environment", "name": "multicast", "note": why})
    profile = {
        "kind": "profile",
        "name": name or Path(out).stem,
        "system": system,
        "gpus": {"value": gpus, "source": source},
        "provenance": {k: v for k, v in prov.items() if v is not None},
        "overrides": fit.overrides,
        "fit": {"quality": [_plain(q) for q in fit.quality]},
    }
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w") as fh:
        fh.write(f"# Calibrated by `{command}`; figures fitted to measurements, see provenance.\n")
        yaml.safe_dump(profile, fh, sort_keys=False, width=120)
    load_system(system, gpus=gpus, profile=out)  # the profile must validate against the catalog
    return profile


def _plain(q: dict[str, Any]) -> dict[str, Any]:
    return {k: (float(v) if isinstance(v, np.floating | float) else v) for k, v in q.items()}
