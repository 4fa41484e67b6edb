"""Fit the catalog's default NCCL figures (hardware/libraries/nccl-{ampere,hopper,blackwell}.yaml) on NVIDIA
aiconfigurator's measured nccl-tests tables of A100, H100 and H200 (never B200 or GB200, never the frameworks'
all-reduce tables), with :func:`rooflib.calibrate.library_tables.fit_library_tables`.

    python tools/fit_library_defaults.py --data .../aiconfigurator_core/systems/data [--write]

- nccl-ampere: fitted on a100_sxm;
- nccl-hopper: fitted on h100_sxm and h200_sxm together;
- nccl-blackwell: what carries over from Hopper: the dimensionless shares and curves (link, op, rank, protocol
  shares, size curve), the host call from C and the kernel start; its per-step latencies stay NCCL's own tuning
  figures for Blackwell and its NVLS figures the NVL72-derived ones (Hopper's measured latencies are not
  portable across generations: nothing on a datasheet predicts them).

Without ``--write`` the fitted figures are printed; with it the three YAML files are rewritten.
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
from rooflib.calibrate.library_tables import fit_library_tables, nccl_tuning_held
from rooflib.specs import load_system

ROOT = Path(__file__).resolve().parents[1]
LIBS = ROOT / "hardware" / "libraries"
FITS = {  # library file -> (aiconfigurator systems, catalog systems)
    "nccl-ampere": (("a100_sxm",), ("hgx-a100",)),
    "nccl-hopper": (("h100_sxm", "h200_sxm"), ("hgx-h100", "hgx-h200")),
}
CARRIED = ("latency",)  # Blackwell takes Hopper's figures except those whose path contains these words
KEEP_ON_BLACKWELL = ("nvls_efficiency",)


def nccl_rows(folder: Path) -> tuple[pd.DataFrame, list[str]]:
    """Every NCCL row of one aiconfigurator system folder, and the NCCL versions its rows name."""
    frames = [pd.DataFrame.from_records(read_nccl_table(p).records) for p in table_paths(folder, {"nccl"})]
    rows = pd.concat(frames, ignore_index=True)
    return rows, sorted(rows["nccl"].astype(str).unique())


def source_of(systems: tuple[str, ...], versions: list[str]) -> str:
    return f"measured: aiconfigurator {' and '.join(systems)} nccl_perf, NCCL {', '.join(versions)}"


def fit(data: Path) -> dict[str, dict[str, Any]]:
    out = {}
    for lib, (aics, catalogs) in FITS.items():
        datasets, versions = [], set()
        for aic, catalog in zip(aics, catalogs, strict=True):
            rows, vers = nccl_rows(data / aic)
            versions.update(vers)
            datasets.append((load_system(catalog, gpus=int(rows["gpus"].max())), rows))
        result = fit_library_tables(datasets, source_of(aics, sorted(versions)), held=nccl_tuning_held())
        sys.stdout.write(f"{lib}: {result.n} rows, fit median {result.median_abs_pct:.1f} %\n")
        out[lib] = result.overrides
    for key in ("library.nvls_efficiency", "library.algorithm_latency.nvls"):  # no NVLS on NVSwitch gen2
        out["nccl-ampere"].pop(key, None)
    hopper = out["nccl-hopper"]
    blackwell = {}
    for path, value in hopper.items():
        if any(w in path for w in CARRIED) or path.split(".", 1)[1] in KEEP_ON_BLACKWELL:
            continue
        blackwell[path] = _carried(value)
    out["nccl-blackwell"] = blackwell
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
    args = ap.parse_args(argv)
    data = args.data or _data_root()
    if data is None or not data.is_dir():
        sys.stderr.write("error: no aiconfigurator data: pass --data .../aiconfigurator_core/systems/data\n")
        return 2
    fitted = fit(data)
    if args.write:
        write(fitted)
    else:
        sys.stdout.write(yaml.safe_dump(fitted, sort_keys=False, width=120))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
