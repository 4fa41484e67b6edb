"""Fit the catalog's default NCCL figures (hardware/libraries/nccl-{ampere,hopper,blackwell}.yaml) on NVIDIA
aiconfigurator's measured nccl-tests tables of A100, H100 and H200 (never B200 or GB200, never the frameworks'
all-reduce tables), with :func:`rooflib.calibrate.library_tables.fit_library_tables`.

    python tools/fit_library_defaults.py --data .../aiconfigurator_core/systems/data [--write]

- nccl-ampere: fitted on a100_sxm;
- nccl-hopper: fitted on h100_sxm and h200_sxm together;
- nccl-blackwell: what carries over from Hopper: the dimensionless shares and curves (link, op, rank, protocol
  shares, size curve), the point-to-point block rate and the host call from C; its device latencies (kernel
  start, per-algorithm base, per-hop) are Hopper's times one ``latency_scale``, fitted on a public Blackwell
  sweep (``rooflib.validate.public_sweeps.AZURE_GB200_RING``: 4 GB200, ring all-reduce, sizes up to 1 MiB); its
  NVLS figures stay the NVL72-derived ones. NVIDIA aiconfigurator's B200 and GB200 tables are never read here.

Each fit runs from ``--starts`` starts (default 4, :func:`~rooflib.calibrate.library_tables.fit_library_starts`)
and keeps the lowest cost. Each library is fitted up to :data:`ROUNDS` times, every round with the previous
round's figures in the catalog (the protocol and algorithm NCCL's tuning picks per size follow them); the round
that predicts the rows best is kept, if it beats the catalog's current figures by :data:`KEEP` points of median
error, else the library's file is left as it is (and Blackwell's, derived from Hopper's, with Hopper's). A rerun
on the tool's own output writes nothing.
Without ``--write`` the fitted figures are printed; with it the changed YAML files are rewritten.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from rooflib.bench.aiconfigurator_import import _data_root, table_paths
from rooflib.bench.aiconfigurator_tables import read_nccl_table
from rooflib.calibrate.library_tables import (
    STARTS,
    apply_library,
    fit_latency_scale,
    fit_library_tables,
    nccl_tuning_held,
)
from rooflib.specs import load_system
from rooflib.specs.systems import scale_latency
from rooflib.validate.generalization import predict_nccl_rows
from rooflib.validate.public_sweeps import AZURE_GB200_RING, LATENCY_FIT_MAX_BYTES, sweep_rows

ROOT = Path(__file__).resolve().parents[1]
LIBS = ROOT / "hardware" / "libraries"
FITS = {  # library file -> (aiconfigurator systems, catalog systems)
    "nccl-ampere": (("a100_sxm",), ("hgx-a100",)),
    "nccl-hopper": (("h100_sxm", "h200_sxm"), ("hgx-h100", "hgx-h200")),
}
KEEP_ON_BLACKWELL = ("nvls_efficiency",)  # Blackwell's own (NVL72-derived) figures, not Hopper's


def nccl_rows(folder: Path) -> tuple[pd.DataFrame, list[str]]:
    """Every NCCL row of one aiconfigurator system folder, and the NCCL versions its rows name."""
    frames = [pd.DataFrame.from_records(read_nccl_table(p).records) for p in table_paths(folder, {"nccl"})]
    rows = pd.concat(frames, ignore_index=True)
    return rows, sorted(rows["nccl"].astype(str).unique())


def source_of(systems: tuple[str, ...], versions: list[str]) -> str:
    return f"measured: aiconfigurator {' and '.join(systems)} nccl_perf, NCCL {', '.join(versions)}"


ROUNDS = 4
"""Fits per library at most: each refits with the previous round's figures in the catalog, until they move by less
than :data:`SETTLED`. The protocol and algorithm NCCL's tuning picks per size (the regimes each fit evaluates)
follow the figures, so one fit's result depends on the figures it started from: Ampere's wanders between nearby
solutions (0.2 points of median error apart). The round whose figures predict the rows best, each with its own
regimes, is kept (:func:`fit_settled`)."""

SETTLED = 0.01


def _numbers(value: Any) -> list[float]:
    if isinstance(value, dict):
        return [x for k in sorted(value) if k not in ("source", "note") for x in _numbers(value[k])]
    if isinstance(value, list | tuple):
        return [x for v in value for x in _numbers(v)]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return [float(value)]
    if isinstance(value, str):
        head = value.split()[0] if value.split() else ""
        try:
            return [float(head)]
        except ValueError:
            return []
    return []


def moved(a: dict[str, Any], b: dict[str, Any]) -> float:
    """The largest relative change of any number between two sets of fitted figures (inf where they differ in
    shape)."""
    worst = 0.0
    for key in set(a) | set(b):
        x, y = _numbers(a.get(key)), _numbers(b.get(key))
        if len(x) != len(y):
            return float("inf")
        worst = max([worst, *(abs(p - q) / max(abs(p), abs(q), 1e-30) for p, q in zip(x, y, strict=True))])
    return worst


def own_error(datasets: list[tuple[Any, pd.DataFrame]], overrides: dict[str, Any]) -> float:
    """Median |error| (%) of the rows predicted with ``overrides`` in the catalog (their own regimes)."""
    errs = []
    for system, rows in datasets:
        pred = predict_nccl_rows(apply_library(system, overrides), rows)
        errs.append((pred / rows["time_s"] - 1.0).abs().dropna())
    return 100.0 * float(pd.concat(errs).median())


KEEP = 0.05
"""Percentage points of median |error| a refit must gain on the catalog's current figures to replace them."""


def fit_settled(
    lib: str, datasets: list[tuple[Any, pd.DataFrame]], source: str, starts: int = STARTS
) -> dict[str, Any] | None:
    """The library's figures: :data:`ROUNDS` refits at most (each the lowest-cost of ``starts`` starts), the
    best-predicting round kept; None where no round predicts the rows better than the catalog's current figures by
    :data:`KEEP` (the file stays as it is)."""
    start = own_error(datasets, {})
    sys.stdout.write(f"{lib}: the catalog's figures, own {start:.2f} %\n")
    current, best, previous = datasets, None, None
    for r in range(ROUNDS):
        result = fit_library_tables(current, source, held=nccl_tuning_held(), starts=starts)
        err = own_error(datasets, result.overrides)
        sys.stdout.write(
            f"{lib} round {r + 1}: {result.n} rows, fit median {result.median_abs_pct:.1f} %, own {err:.2f} %\n"
        )
        if best is None or err < best[0] - 1e-9:
            best = (err, result.overrides)
        if previous is not None and moved(previous, result.overrides) < SETTLED:
            break
        previous = result.overrides
        current = [(apply_library(system, result.overrides), rows) for system, rows in datasets]
    assert best is not None
    if best[0] > start - KEEP:
        sys.stdout.write(f"{lib}: no round gains {KEEP} points on the catalog's figures: kept\n")
        return None
    return best[1]


def fit(data: Path, starts: int = STARTS) -> dict[str, dict[str, Any]]:
    out = {}
    for lib, (aics, catalogs) in FITS.items():
        datasets, versions = [], set()
        for aic, catalog in zip(aics, catalogs, strict=True):
            rows, vers = nccl_rows(data / aic)
            versions.update(vers)
            datasets.append((load_system(catalog, gpus=int(rows["gpus"].max())), rows))
        fitted = fit_settled(lib, datasets, source_of(aics, sorted(versions)), starts)
        if fitted is not None:
            out[lib] = fitted
    if "nccl-ampere" in out:
        for key in ("library.nvls_efficiency", "library.algorithm_latency.nvls"):  # no NVLS on NVSwitch gen2
            out["nccl-ampere"].pop(key, None)
    if "nccl-hopper" in out:  # Blackwell's figures are Hopper's carried: they move only with Hopper's
        out["nccl-blackwell"] = blackwell_figures(out["nccl-hopper"])
    return out


def blackwell_figures(hopper: dict[str, Any]) -> dict[str, Any]:
    """Hopper's fitted figures carried to Blackwell, device latencies times the scale the public GB200 sweep
    fits (the sweep's sizes up to 1 MiB; its conditions force the ring algorithm)."""
    sweep = AZURE_GB200_RING
    system = load_system(sweep.system, gpus=sweep.gpus)
    carried = {p: _carried(v) for p, v in hopper.items() if p.split(".", 1)[1] not in KEEP_ON_BLACKWELL}
    rows = sweep_rows(sweep, max_bytes=LATENCY_FIT_MAX_BYTES)
    k = fit_latency_scale(system, carried, rows, algorithm=sweep.algorithm)
    sys.stdout.write(f"nccl-blackwell: latency_scale {k:.3f} on {len(rows)} rows of {sweep.source}\n")
    out = {}
    for path, value in carried.items():
        origin = str(hopper[path].get("source", "")).removeprefix("measured: ") if isinstance(value, dict) else ""
        why = f"derived: Hopper's figure x {k:.3f} (latency_scale), {origin}"
        out[path] = scale_latency(path.split(".", 1)[1], value, k, why)
        if out[path] is not value and "note" in out[path]:  # the held NVLS figure: held on Hopper, scaled here
            out[path] = {**out[path], "note": "NCCL's tuning figure, held by the Hopper fit, times latency_scale"}
    out["library.latency_scale"] = {
        "value": round(k, 3),
        "source": f"measured: {sweep.source} ({sweep.conditions}), sizes up to 1 MiB: the Hopper figures' "
        "device latencies fitted by one factor (tools/fit_library_defaults.py)",
    }
    return out


def _carried(value: Any) -> Any:
    if isinstance(value, dict) and "source" in value and isinstance(value["source"], str):
        return {**value, "source": value["source"].replace("measured:", "derived: Hopper's figure,", 1)}
    if isinstance(value, dict):
        return {k: _carried(v) for k, v in value.items()}
    return value


def _set(data: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node = data
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value


def write(fitted: dict[str, dict[str, Any]]) -> None:
    for lib, overrides in fitted.items():
        path = LIBS / f"{lib}.yaml"
        data = yaml.safe_load(path.read_text())
        for dotted, value in overrides.items():
            _set(data, dotted.split(".", 1)[1], value)
        head = (
            "# Defaults fitted by `python tools/fit_library_defaults.py --write` on aiconfigurator's measured NCCL\n"
            "# tables (A100, H100, H200 only; B200 and GB200 are the held-out test). Figures without a 'measured:'\n"
            "# source are NCCL's own model or assumptions.\n"
        )
        path.write_text(head + yaml.safe_dump(data, sort_keys=False, width=120))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=None, help="aiconfigurator_core/systems/data")
    ap.add_argument("--write", action="store_true", help="rewrite hardware/libraries/nccl-*.yaml")
    ap.add_argument("--starts", type=int, default=STARTS, help=f"starts of each fit (default {STARTS})")
    args = ap.parse_args(argv)
    data = args.data or _data_root()
    if data is None or not data.is_dir():
        sys.stderr.write("error: no aiconfigurator data: pass --data .../aiconfigurator_core/systems/data\n")
        return 2
    fitted = fit(data, args.starts)
    if args.write:
        write(fitted)
    else:
        sys.stdout.write(yaml.safe_dump(fitted, sort_keys=False, width=120))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
