"""``rooflib validate``: predicted against measured, per family, for several models side by side.

Models: ``datasheet`` (the catalog as shipped), ``calibrated`` (with a profile), and for NCCL rows ``nccl``
(NCCL's own tuning model, read from the ``NCCL_DEBUG_SUBSYS=TUNING`` logs the sweep saved). For each family and
name the report gives the median and max absolute percentage error over all sizes and the max above 1 MiB,
and plots measured and predicted curves. A calibrated profile fitted on the same folder is an in-sample check;
the report says so when the profile's provenance matches the measurements.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from rooflib.bench.nccl_text import nccl_model_time, parse_tuning
from rooflib.calibrate.checks import check_gpu, nvls_state
from rooflib.calibrate.data import load_meta, load_results
from rooflib.errors import RooflibError
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


def _nccl_model(results: Path, frame: pd.DataFrame) -> pd.Series:
    logs = sorted((results / "raw").glob("nccl_tuning_*.log")) if (results / "raw").is_dir() else []
    entries = parse_tuning("\n".join(p.read_text(errors="replace") for p in logs))
    values = np.full(len(frame), np.nan)
    if entries:
        for i, (family, name, size) in enumerate(zip(frame["family"], frame["name"], frame["bytes"], strict=True)):
            if family == "nccl":
                t, _ = nccl_model_time(entries, str(name), float(size))
                values[i] = t if np.isfinite(t) else np.nan
    return pd.Series(values, index=frame.index)


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
    """Overlap-schedule and tensor-parallel comparisons, with the calibrated profile when there is one."""
    from rooflib.validate.overlap import overlap_table, schedule_choice_summary
    from rooflib.validate.tp import tp_table

    if not frame["family"].isin(["overlap", "tp"]).any():
        return {}
    sys_ = load_system(system, gpus=gpus, profile=profile, catalog=_catalog(profile))
    out = {}
    over = overlap_table(frame, sys_)
    if not over.empty:
        out["overlap"] = over
        out["overlap_choices"] = schedule_choice_summary(over)
    tp = tp_table(frame, sys_)
    if not tp.empty:
        out["tp"] = tp
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
    nccl = _nccl_model(root, frame)
    if nccl.notna().any():
        frame["pred_nccl"] = nccl
        models.append("nccl")
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
