"""``rooflib validate``: predicted against measured, per family, for several models side by side.

Models: ``datasheet`` (the catalog as shipped), ``calibrated`` (with a profile), and the families' reference
models: for NCCL rows ``nccl`` (NCCL's own tuning model, read from the ``NCCL_DEBUG_SUBSYS=TUNING`` logs the sweep
saved). Every per-family part (prediction, checks, reference model, tables) is looked up in
:mod:`rooflib.families.registry`. For each family and
name the report gives the median and max absolute percentage error over all sizes and the max above 1 MiB,
and plots measured and predicted curves. A calibrated profile fitted on the same folder is an in-sample check;
the report says so when the profile's provenance matches the measurements.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from rooflib.calibrate.checks import check_gpu, nvls_state
from rooflib.calibrate.data import load_meta, load_results
from rooflib.errors import RooflibError
from rooflib.families.registry import references, with_part
from rooflib.specs.catalog import Catalog
from rooflib.specs.resolve import load_system, without_multicast
from rooflib.validate.inputs import check_rows
from rooflib.validate.predict import predict_frame

__all__ = ["Validation", "error_table", "validate"]

MIB = float(1 << 20)


@dataclass(frozen=True)
class Validation:
    rows: pd.DataFrame  # measurements with one predicted column per model
    errors: pd.DataFrame  # one row per (family, name, model)
    models: tuple[str, ...]
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)  # overlap and tensor-parallel comparisons


def _errors(grp: pd.DataFrame, model: str) -> dict[str, float] | None:
    pred = grp[f"pred_{model}"]
    ok = pred.notna() & grp["time_s"].notna()
    if not ok.any():
        return None
    err = (pred[ok] / grp["time_s"][ok] - 1.0).abs() * 100.0
    big = err[pd.to_numeric(grp["bytes"][ok], errors="coerce").fillna(0) > MIB]
    return {
        "n": int(ok.sum()),
        "median_abs_pct": float(err.median()),
        "max_abs_pct": float(err.max()),
        "max_abs_pct_above_1MiB": float(big.max()) if not big.empty else float("nan"),
    }


def error_table(rows: pd.DataFrame, models: tuple[str, ...]) -> pd.DataFrame:
    """Median / max absolute % error per family (name ``(all)``), per family and variant, and per (family, name,
    variant), for every model."""
    records = []
    for family, fam_rows in rows.groupby("family"):
        groups = [("(all)", "", fam_rows)]
        groups += [
            ("(all)", str(v), g) for v, g in fam_rows.groupby("variant") if str(v) and fam_rows["variant"].nunique() > 1
        ]
        groups += [(str(k[0]), str(k[1]), g) for k, g in fam_rows.groupby(["name", "variant"])]
        for name, variant, grp in groups:
            for model in models:
                rec = _errors(grp, model)
                if rec is not None:
                    records.append({"family": family, "name": name, "variant": variant, "model": model, **rec})
    return pd.DataFrame.from_records(records)


def _schedule_tables(
    frame: pd.DataFrame, system: str, gpus: int, profile: str | Path | None
) -> dict[str, pd.DataFrame]:
    """The comparisons that are not one prediction per row (overlap schedules, tensor-parallel ops: the families
    with ``tables``), with the calibrated profile when there is one."""
    families = with_part("tables")
    if not frame["family"].isin([n for fam in families for n in fam.names]).any():
        return {}
    sys_ = load_system(system, gpus=gpus, profile=profile, catalog=_catalog(profile))
    out: dict[str, pd.DataFrame] = {}
    for fam in families:
        out.update(fam.tables(frame, sys_))  # type: ignore[operator]
    return out


def _catalog(profile: str | Path | None) -> Catalog | None:
    """A fresh catalog for a profile file (the default one keeps its profiles), else None (the default)."""
    return Catalog.load() if profile is not None and Path(profile).is_file() else None


def validate(
    results: str | Path,
    system: str,
    *,
    profile: str | Path | None = None,
    out: str | Path | None = None,
    plots: bool = True,
    force: bool = False,
) -> Validation:
    """Compare the models with the measurements in ``results``; with ``out``, write CSVs, plots and REPORT.md.

    Measurements of another GPU model than the system's are refused unless ``force`` (then a
    :class:`~rooflib.calibrate.checks.MeasurementWarning`, and rows the system's GPU cannot run are left out)."""
    root = Path(results)
    if out is not None and Path(out).exists() and not Path(out).is_dir():
        raise RooflibError(f"--out {out} is a file: the report goes to a folder")
    loaded = load_results(root)
    meta = load_meta(root)
    frame = loaded[loaded["verified"]].copy()
    frame.attrs = dict(loaded.attrs)
    if frame.empty:
        raise RooflibError(
            f"{loaded.attrs.get('source', root)}: no verified measurements ({len(loaded)} rows, all failed)"
        )
    gpus = int(np.nanmax(frame["gpus"].astype(float)))
    models: list[str] = ["datasheet"]
    datasheet = load_system(system, gpus=gpus)
    check_gpu(frame, meta, datasheet, str(root), force=force)
    frame = check_rows(frame, datasheet, force=force)
    if nvls_state(meta, str(root)) != "on":  # the machine forbade multicast: so must the datasheet model
        datasheet = without_multicast(datasheet)
    frame["pred_datasheet"] = predict_frame(datasheet, frame)
    if profile is not None:
        calibrated = load_system(system, gpus=gpus, profile=profile, catalog=_catalog(profile))
        frame["pred_calibrated"] = predict_frame(calibrated, frame)
        models.append("calibrated")
    for model, reference in references():  # third-party models (NCCL's own, from its tuning logs)
        pred = reference(root, frame)
        if pred.notna().any():
            frame[f"pred_{model}"] = pred
            models.append(model)
    table = error_table(frame, tuple(models))
    tables = _schedule_tables(frame, system, gpus, profile)
    result = Validation(frame, table, tuple(models), tables)
    if out is not None:
        from rooflib.validate.write import write_report

        try:
            write_report(result, Path(out), system=system, results=root, profile=profile, plots=plots)
        except OSError as exc:
            raise RooflibError(f"cannot write the report to {out}: {exc.strerror or exc}") from None
    return result
