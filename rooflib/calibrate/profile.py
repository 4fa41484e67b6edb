"""``rooflib calibrate``: fit every family present in a results folder and write a profile YAML.

The profile holds the fitted figures as overrides of catalog paths (each with a ``measured:`` source), the
provenance of the measurements (date, GPU, driver, CUDA, NCCL, command) and the fit quality per family.
``load_system(name, profile=PATH)`` then predicts with the calibrated figures.
"""

from __future__ import annotations

import datetime
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from rooflib.calibrate.checks import MeasurementWarning, check_gpu, measured_gpus, nvls_state
from rooflib.calibrate.collectives import fit_collectives
from rooflib.calibrate.compute import fit_compute_profile
from rooflib.calibrate.data import Fit, load_meta, load_results
from rooflib.calibrate.device import fit_device
from rooflib.calibrate.transfer import fit_transfers
from rooflib.errors import RooflibError, SpecError
from rooflib.specs.catalog import Catalog
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
    """Whether the measured machine allowed NVLink multicast (off when unrecorded; see :func:`checks.nvls_state`)."""
    return nvls_state(meta) == "on"


def _measurements(frame: Any, meta: list[dict[str, Any]], gpus: int, nvls: str) -> dict[str, Any]:
    """Where the fitted measurements come from: files, GPU model and count, NVLS state, how they were timed."""
    sources = sorted({str(r["source_file"]) for r in meta if r.get("source_file")})
    timing = sorted({str(r["timing"]) for r in meta if r.get("timing")})
    evidence = sorted({str(r["nvls_evidence"]) for r in meta if r.get("nvls_evidence")})
    out: dict[str, Any] = {
        "results": frame.attrs.get("source"),
        "rows": len(frame),
        "gpus": gpus,
        "gpu_models": measured_gpus(frame, meta),
        "nvls": nvls,
    }
    if evidence:
        out["nvls_evidence"] = evidence
    if sources:
        out["source_files"] = sources
    if timing:
        out["timing"] = timing
    if "complete" in frame and (frame["complete"].astype(str) == "False").any():
        out["incomplete_job_rows"] = int((frame["complete"].astype(str) == "False").sum())
    return out


def _write(profile: dict[str, Any], out: Path, system: str, gpus: int, command: str) -> None:
    """Write the profile to ``out`` only once it validates (a temporary file first, then a rename)."""
    if out.is_dir():
        raise RooflibError(f"--out {out} is a folder: give the profile's file name, e.g. {out / 'profile.yaml'}")
    if out.is_file():
        try:
            old = yaml.safe_load(out.read_text(errors="replace"))
        except yaml.YAMLError:
            old = None
        if not (isinstance(old, dict) and old.get("kind") == "profile"):
            raise RooflibError(f"--out {out} exists and is not a profile (kind: profile): not overwriting it")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{out.stem}.", suffix=".yaml", dir=out.parent)
    except OSError as exc:
        raise RooflibError(f"cannot write the profile {out}: {exc.strerror or exc}") from None
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(f"# Calibrated by `{command}`; figures fitted to measurements, see provenance.\n")
            yaml.safe_dump(profile, fh, sort_keys=False, width=120)
        try:
            # the profile must validate against the catalog (a fresh one: the default stays as it was)
            load_system(system, gpus=gpus, profile=tmp, catalog=Catalog.load())
        except SpecError as exc:  # name the file the user asked for, not the temporary one
            raise SpecError(out, exc.problems) from None
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)


def calibrate(
    results: str | Path,
    system: str,
    out: str | Path,
    *,
    name: str | None = None,
    command: str = "rooflib calibrate",
    force: bool = False,
) -> dict[str, Any]:
    """Fit the measurements in ``results`` for ``system`` and write the profile to ``out``; returns it.

    Measurements of another GPU model than the system's are refused unless ``force`` (then a
    :class:`~rooflib.calibrate.checks.MeasurementWarning`)."""
    frame = load_results(results)
    meta = load_meta(results)
    gpus = int(np.nanmax(frame["gpus"].astype(float))) if "gpus" in frame else 1
    sys_ = load_system(system, gpus=gpus)
    mismatch = check_gpu(frame, meta, sys_, str(results), force=force)
    nvls = nvls_state(meta, str(results))
    if nvls == "unknown" and any(r.get("nvls") == "unknown" for r in meta) and (frame["family"] == "nccl").any():
        warnings.warn(
            f"{results}: NVLS state unknown for the NCCL measurements; fitted as if NVLS was off "
            "(import the log again with --nvls on|off)",
            MeasurementWarning,
            stacklevel=2,
        )
    prov = provenance(meta, command)
    if prov["gpu"] is None and measured_gpus(frame, meta):
        prov["gpu"] = " / ".join(measured_gpus(frame, meta))
    where = ", ".join(x for x in (prov["gpu"], f"driver {prov['driver']}" if prov["driver"] else None) if x)
    tools = sorted({"nccl-tests" if r.get("source") == "nccl-tests" else "rooflib bench" for r in meta})
    source = f"measured: {' and '.join(tools) or 'rooflib bench'} on {where}, {prov['date'][:10]}"
    fit = Fit()
    fit.merge(fit_device(frame, sys_, source))
    fit.merge(fit_transfers(frame, sys_, source))
    fit.merge(fit_collectives(frame, sys_, source, nvls_enabled=nvls == "on"))
    fit.merge(fit_compute_profile(frame, sys_.device, source))  # compute, compute-holdout and host rows
    if not fit.overrides:
        raise RooflibError(
            f"{results}: nothing to calibrate (no p2p, latency, ceilings, gemm, nccl, compute or host rows)"
        )
    if nvls != "on" and sys_.switch.multicast:  # the machine forbids multicast: so must predictions
        why = f"{source}: NVLink multicast off on the measured machine (NCCL_NVLS_ENABLE=0)"
        if nvls == "unknown":
            why = f"{source}: NVLink multicast state not recorded; assumed off"
        fit.overrides[f"interconnect.{sys_.switch.name}.multicast"] = False
        fit.overrides[f"interconnect.{sys_.switch.name}.in_network_reduction"] = False
        fit.quality.append({"family": "environment", "name": "multicast", "note": why})
    measurements = _measurements(frame, meta, gpus, nvls)
    notes = [f"{gpus} GPUs", f"NVLS {nvls}", *measurements.get("timing", [])]
    if mismatch:
        measurements["gpu_mismatch_forced"] = mismatch
        notes.append(f"forced: {mismatch}")
    prov["notes"] = "; ".join(notes)
    profile = {
        "kind": "profile",
        "name": name or Path(out).stem,
        "system": system,
        "gpus": {"value": gpus, "source": source},
        "provenance": {k: v for k, v in prov.items() if v is not None},
        "overrides": fit.overrides,
        "fit": {"quality": [_plain(q) for q in fit.quality], "measurements": measurements},
    }
    _write(profile, Path(out), system, gpus, command)
    return profile


def _plain(q: dict[str, Any]) -> dict[str, Any]:
    return {k: (float(v) if isinstance(v, np.floating | float) else v) for k, v in q.items()}
