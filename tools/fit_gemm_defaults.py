"""Fit the catalog's GEMM figures (each device's ``compute.gemm`` block and ``dtype_efficiency``) on NVIDIA
aiconfigurator's measured GEMM tables of A100, H100 and H200; B200 and GB200 take only figures derived from
those fits (their tables are the held-out test: never fitted).

    python tools/fit_gemm_defaults.py --data .../aiconfigurator_core/systems/data [--evals 1000] [--write]

- A100, H100 and H200: every figure of the tile-choice model (:mod:`rooflib.compute.gemm_plan`) fitted on the
  system's own table: the bf16 and fp8 efficiencies of the datasheet peak, the operand, output-tile and
  split-K partial-sum rates, the unit, kernel and split-K fixed times, the memory side's latency and its share
  of the datasheet HBM rate (``memory_share``), and the fp8 activation quantisation's fixed time. The tables
  time bursts (a few graph replays from idle), so the fits are burst figures (``duty="burst"``); a block's
  ``sustained_share`` (measured by ``benchmarks/device/gemm_duty.sh`` or ``gemm_ramp.py``, not by this tool) is
  kept as it is. Until session 26 the H200 kept a block fitted on rooflib's own H200 runs (the compute worker,
  timed partway between the burst and the sustained rate); with its measured share (0.863, H200 ramps) charged
  to the table-fitted block, its programs of 0.5 ms and more went from 3.8 to 1.3 % median; its small GEMVs
  (gemv_chain) and the compute worker's bare fp8 GEMMs are predicted worse (docs/validation/README.md);
- B200 and GB200: per figure, the median over the three fits of its portable form: an efficiency, share or fixed
  time as is, a rate as bytes per bf16 FLOP of the datasheet peak; nvfp4 takes the fp8 quantisation time (no
  nvfp4 table before Blackwell). Their fp8 and nvfp4 efficiencies are fitted on public Blackwell GEMMs instead
  (Azure's GB200 cuBLASLt runs, the large shapes: :data:`rooflib.validate.public_gemm.AZURE_GB200_GEMM`), the
  B200 taking the GB200's; their bf16 efficiency on pytorch/ao's published B200 bf16 GEMMs (the large shapes:
  :data:`rooflib.validate.public_gemm.AO_B200_GEMM`), the GB200 taking the B200's.

The fit: Nelder-Mead from one fixed start (:data:`START`, a simplex of :data:`STEP`, restarted from its best) on
``--rows`` rows sampled per dtype with a fixed seed, minimising median + mean and worst class median + a quarter
of the p90 of |error| (classes of :func:`rooflib.validate.generalization.gemm_class`), so reruns give the same
figures. Every table row is reported by ``tools/generalization_report.py``. Without ``--write`` the figures are printed.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml
from scipy.optimize import minimize

from rooflib.bench.aiconfigurator_import import _data_root, table_paths
from rooflib.bench.aiconfigurator_tables import read_gemm_table
from rooflib.compute.gemm import gemm_times
from rooflib.specs import DeviceSpec, default_catalog
from rooflib.specs.compute_models import ComputeModels, GemmModelSpec
from rooflib.validate.generalization import gemm_class
from rooflib.validate.public_gemm import AO_B200_GEMM, AZURE_GB200_GEMM, fit_efficiency

ROOT = Path(__file__).resolve().parents[1]
DEVICES = ROOT / "hardware" / "devices"
SYSTEMS = {  # aiconfigurator folder: (catalog device, its device file, role)
    "a100_sxm": ("a100-sxm4-80gb", "a100-sxm4-80gb.yaml", "fit"),
    "h100_sxm": ("h100-sxm5", "h100-sxm5.yaml", "fit"),
    "h200_sxm": ("h200-sxm", "h200-sxm.yaml", "fit"),
    "b200_sxm": ("b200", "b200.yaml", "derived"),
    "gb200": ("gb200", "gb200.yaml", "derived"),
}
RATES = {"opnd": "operand_bandwidth", "epi": "epilogue_bandwidth", "part": "partial_bandwidth"}
TIMES = {"unit": "unit_overhead", "fixed": "kernel_fixed", "split": "split_k_reduce", "mem": "memory_latency"}
SHARES = {"hbm": "memory_share"}
FP8 = ("eff_fp8", "q_fp8")


START: dict[str, float] = {
    "eff_bf16": 0.7753,
    "eff_fp8": 0.7,
    "q_fp8": 9e-6,
    "opnd": 0.011668,
    "epi": 0.0042679,
    "part": 0.01,
    "unit": 1.44e-6,
    "fixed": 1.47e-6,
    "split": 3.705e-6,
    "mem": 2e-6,
    "hbm": 0.9,
}
"""The fixed start of every fit: the H200's former own block (fitted on rooflib's own H200 runs, ``rooflib
calibrate``), its rates as bytes per bf16 FLOP of the H200's peak; frozen here so that the fits repeat."""

STEP = 0.25
"""The start simplex's step per figure, in log space (each figure x e^0.25 = 1.28): scipy's default (5 % of the
start, 0.00025 where it is zero, as every log offset is here) crept from one start point and stopped in a nearby
minimum (A100 bf16 10.6 % median; this step gets 7.0 %)."""


def _gemm(device: DeviceSpec) -> GemmModelSpec:
    if device.compute is None or device.compute.gemm is None:
        raise SystemExit(f"{device.name}: no compute.gemm block")
    return device.compute.gemm


def _peak(device: DeviceSpec) -> float:
    peak = device.tensor_peak("bf16")
    if peak is None:
        raise SystemExit(f"{device.name}: no bf16 tensor peak")
    return peak


def with_figures(device: DeviceSpec, template: GemmModelSpec, fig: dict[str, float], source: str) -> DeviceSpec:
    """``device`` with its GEMM block (``template``'s tiles and any figure ``fig`` lacks) set from ``fig``."""
    peak = _peak(device)
    base = device.compute.gemm if device.compute is not None and device.compute.gemm is not None else template
    update: dict[str, Any] = {}
    for key, attr in RATES.items():
        if key in fig:
            update[attr] = {"value": fig[key] * peak, "source": source}
    for key, attr in TIMES.items():
        if key in fig:
            update[attr] = {"value": fig[key], "source": source}
    for key, attr in SHARES.items():
        if key in fig:
            update[attr] = {"value": min(fig[key], 1.0), "source": source}
    quantize = {k: v.model_dump() for k, v in base.quantize.items()}
    if "q_fp8" in fig:
        quantize["fp8"] = {"value": fig["q_fp8"], "source": source}
    update["quantize"] = quantize
    if "opnd" in fig:  # a block this tool fits: fixed costs serial to the memory side
        update["serial_fixed"] = True
    gemm = GemmModelSpec.model_validate(base.model_dump() | update)
    compute = device.compute.model_copy(update={"gemm": gemm}) if device.compute is not None else None
    if compute is None:
        compute = ComputeModels(gemm=gemm)
    effs = {k: v.model_dump() for k, v in device.dtype_efficiency.items()}
    for dtype in ("bf16", "fp8"):
        if f"eff_{dtype}" in fig:
            effs[dtype] = {"value": min(fig[f"eff_{dtype}"], 1.0), "source": source}
    data = device.model_dump() | {"compute": compute.model_dump(), "dtype_efficiency": effs}
    return DeviceSpec.model_validate(data)


def table(data: Path, folder: str) -> tuple[pd.DataFrame, str]:
    paths = table_paths(data / folder, {"gemm"})
    if not paths:
        raise SystemExit(f"{data / folder}: no gemm/trtllm/*/gemm_perf.parquet")
    path = paths[0]
    rows = pd.DataFrame.from_records(read_gemm_table(path).records)
    return rows, str(path.relative_to(data))


def errors(device: DeviceSpec, rows: pd.DataFrame, dtype: str) -> np.ndarray:
    m, n, k = (rows[c].to_numpy(dtype=np.int64) for c in ("m", "n", "k"))
    predicted = gemm_times(device, m, n, k, dtype, quantize_activations=True, duty="burst")
    return np.asarray(predicted / rows["time_s"].to_numpy(dtype=float) - 1.0)


def score(device: DeviceSpec, samples: dict[str, tuple[pd.DataFrame, np.ndarray]]) -> float:
    total = 0.0
    for dtype, (rows, classes) in samples.items():
        err = np.abs(errors(device, rows, dtype))
        by_class = pd.Series(err).groupby(classes).median()
        total += float(np.median(err) + by_class.mean() + 0.5 * by_class.max() + 0.25 * np.quantile(err, 0.9))
    return total


def fit_one(
    device: DeviceSpec, template: GemmModelSpec, rows: pd.DataFrame, keys: list[str], start: dict[str, float], args: Any
) -> dict[str, float]:
    dtypes = [d for d in ("bf16", "fp8") if (rows["dtype"] == d).any() and device.tensor_peak(d) is not None]
    keys = [k for k in keys if "fp8" in dtypes or k not in FP8]
    samples = {}
    for dtype in dtypes:
        part = rows[rows["dtype"] == dtype]
        part = part.sample(min(args.rows, len(part)), random_state=args.seed)
        samples[dtype] = (part, gemm_class(part["m"], part["n"], part["k"]))

    def figures(v: np.ndarray) -> dict[str, float]:
        return {k: start[k] * math.exp(x) for k, x in zip(keys, v, strict=True)}

    def objective(v: np.ndarray) -> float:
        return score(with_figures(device, template, figures(v), "fit"), samples)

    x, best, used = np.zeros(len(keys)), objective(np.zeros(len(keys))), 0
    first = best
    while used < args.evals:  # restarts from the best point with a fresh simplex until one gains nothing
        simplex = np.vstack([x, x + STEP * np.eye(len(keys))])
        options = {"maxfev": args.evals - used, "initial_simplex": simplex, "xatol": 1e-3, "fatol": 1e-4}
        result = minimize(objective, x, method="Nelder-Mead", options=options)
        used += int(result.nfev)
        if result.fun >= best - 1e-4:
            break
        x, best = result.x, float(result.fun)
    sys.stdout.write(f"{device.name}: objective {first:.3f} -> {best:.3f} ({used} evaluations)\n")
    return figures(x)


def fit(data: Path, args: Any, log: Callable[[str], None]) -> dict[str, tuple[dict[str, float], str]]:
    """Per device name: its figures (portable form) and their source."""
    catalog = default_catalog()
    h200 = catalog.device("h200-sxm")
    template = _gemm(h200)
    start = START
    out: dict[str, tuple[dict[str, float], str]] = {}
    portable: list[dict[str, float]] = []
    fitted_tables = []
    for folder, (name, _, role) in SYSTEMS.items():
        if role == "derived":
            continue
        rows, rel = table(data, folder)
        fitted_tables.append(rel)
        device = catalog.device(name)
        source = (
            f"measured: aiconfigurator {rel} (tools/fit_gemm_defaults.py: Nelder-Mead on {args.rows} rows per dtype, "
            f"seed {args.seed}; tools/generalization_report.py reports every row)"
        )
        fig = fit_one(device, template, rows, list(start), start, args)
        out[name] = (fig, source)
        portable.append(fig)
        log(f"{name}: " + ", ".join(f"{k} {v:.4g}" for k, v in fig.items()))
    median = {k: float(np.median([p[k] for p in portable if k in p])) for k in start}
    source = (
        "derived: the median of the portable figures (rates as bytes per bf16 FLOP of the datasheet peak) fitted "
        f"on {', '.join(fitted_tables)}; the B200 and GB200 tables are held out of every fit"
    )
    public = blackwell_efficiencies(
        with_figures(catalog.device("gb200"), template, median, source),
        with_figures(catalog.device("b200"), template, median, source),
    )
    log("blackwell (azure-nd-gb200-v6, pytorch-ao-2427): " + ", ".join(f"{k} {v:.4g}" for k, v in public.items()))
    for _, (name, _, role) in SYSTEMS.items():
        if role == "derived":
            out[name] = (median | public, source)
    return out


def blackwell_efficiencies(gb200: DeviceSpec, b200: DeviceSpec) -> dict[str, float]:
    """Blackwell's shares of the datasheet peak, fitted with the derived block on public Blackwell GEMMs of the
    large shapes: fp8 and nvfp4 on Azure's GB200 runs (``eff_fp8_public``, ``eff_fp4_public``), bf16 on
    pytorch/ao's B200 runs (``eff_bf16_public``)."""
    out = {f"eff_{d}_public": fit_efficiency(gb200, AZURE_GB200_GEMM, d) for d in ("fp8", "fp4")}
    return out | {"eff_bf16_public": fit_efficiency(b200, AO_B200_GEMM, "bf16")}


def _flow(value: Any) -> str:
    return str(yaml.safe_dump(value, default_flow_style=True, width=10**9, sort_keys=False)).strip()


def _set_line(text: str, pattern: str, line: str, after: str | None = None) -> str:
    """Replace the line matching ``pattern`` with ``line``, or add it (after the line matching ``after``, else at
    the end)."""
    if re.search(pattern, text, flags=re.M):
        return re.sub(pattern + r".*$", lambda _: line, text, count=1, flags=re.M)
    if after is not None and re.search(after, text, flags=re.M):
        return re.sub(after + r".*$", lambda mt: mt.group(0) + "\n" + line, text, count=1, flags=re.M)
    return text.rstrip("\n") + "\n" + line + "\n"


def _fig(value: float, source: str, unit: str, note: str | None = None) -> dict[str, str]:
    text = f"{value * 1e6:.4g} us" if unit == "s" else f"{value / 1e12:.4g} TB/s"
    out = {"value": text, "source": source}
    return out | ({"note": note} if note else {})


def write(fitted: dict[str, tuple[dict[str, float], str]]) -> None:
    catalog = default_catalog()
    for name, file, role in SYSTEMS.values():
        fig, source = fitted[name]
        device = catalog.device(name)
        path = DEVICES / file
        text = path.read_text()
        effs = {k: {"value": v.value, "source": v.source} for k, v in device.dtype_efficiency.items()}
        for dtype in ("bf16", "fp8"):
            if f"eff_{dtype}" in fig:
                effs[dtype] = {"value": round(min(fig[f"eff_{dtype}"], 1.0), 4), "source": source}
        for dtype in ("bf16", "fp8", "fp4"):
            if f"eff_{dtype}_public" in fig and device.tensor_peak(dtype) is not None:
                effs[dtype] = {"value": round(fig[f"eff_{dtype}_public"], 4), "source": _PUBLIC_EFF[dtype]}
        text = _set_line(text, r"^dtype_efficiency:", "dtype_efficiency: " + _flow(effs), after=r"^tensor_efficiency:")
        block = _block(device, fig, source, role)
        line = "  gemm: " + _flow(block)
        if re.search(r"^compute:", text, flags=re.M):
            text = _set_line(text, r"^  gemm: ", line, after=r"^compute:")
        else:
            text = text.rstrip("\n") + "\ncompute:\n" + line + "\n"
        path.write_text(text)
        sys.stdout.write(f"wrote {path.relative_to(ROOT)}\n")


def _block(device: DeviceSpec, fig: dict[str, float], source: str, role: str) -> dict[str, Any]:
    """The device file's ``compute.gemm`` mapping."""
    raw: dict[str, Any] = yaml.safe_load((DEVICES / "h200-sxm.yaml").read_text())["compute"]["gemm"]
    tiles = dict(raw["tiles"])
    if device.name != "h200-sxm":
        tiles["source"] = (
            "assumption: the tiles cuBLAS 13 chose on an H200 (69, from its nvjet kernel names, rooflib bench "
            "compute runs/x1-compute), taken as the library's candidate set here"
        )
    peak = _peak(device)
    block: dict[str, Any] = {"tiles": tiles, "serial_fixed": True}
    own = device.compute.gemm if device.compute is not None else None
    if own is not None and own.sustained_share is not None:  # measured on the device, not by this tool
        block["sustained_share"] = own.sustained_share.model_dump(exclude_none=True)
    for key, attr in RATES.items():
        block[attr] = _fig(fig[key] * peak, source, "B/s", f"{fig[key]:.4g} B per bf16 FLOP of the datasheet peak")
    for key, attr in TIMES.items():
        block[attr] = _fig(fig[key], source, "s")
    for key, attr in SHARES.items():
        if key in fig:
            block[attr] = {"value": round(min(fig[key], 1.0), 4), "source": source}
    if "q_fp8" in fig:  # no fp8 table (A100): no quantisation figure
        block["quantize"] = {"fp8": _fig(fig["q_fp8"], source, "s", _QUANT_NOTE)}
    if role == "derived" and device.tensor_peak("fp4") is not None:
        block["quantize"]["fp4"] = _fig(fig["q_fp8"], _FP4, "s")
    return block


_FP4 = "assumption: as the fp8 figure (no nvfp4 table before Blackwell)"
_AZURE_EFF = (
    "measured: azure-nd-gb200-v6 (cuBLASLt GEMMs with m, n, k >= 4096 on one GB200, as published; "
    "rooflib.validate.public_gemm, tools/fit_gemm_defaults.py; the B200 takes the GB200's)"
)
_PUBLIC_EFF = {
    "fp8": _AZURE_EFF,
    "fp4": _AZURE_EFF,
    "bf16": "measured: pytorch-ao-2427 (cuBLAS bf16 GEMMs with m = n = k >= 4096 on one B200, as published; "
    "rooflib.validate.public_gemm, tools/fit_gemm_defaults.py; the GB200 takes the B200's)",
}
_QUANT_NOTE = "TRT-LLM's activation quantisation, timed with the GEMM in the tables' CUDA graph"


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=None, help="aiconfigurator_core/systems/data")
    ap.add_argument("--evals", type=int, default=1000, help="Nelder-Mead evaluations per system (default 1000)")
    ap.add_argument("--rows", type=int, default=1500, help="rows sampled per dtype (default 1500)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--write", action="store_true", help="rewrite the device files' GEMM figures")
    ap.add_argument("--save", type=Path, help="also write the fitted figures and sources to this JSON file")
    ap.add_argument("--load", type=Path, help="take the figures from a --save file instead of fitting")
    args = ap.parse_args(argv)
    if args.load is not None:
        fitted = {k: (v[0], v[1]) for k, v in json.loads(args.load.read_text()).items()}
    else:
        data = args.data or _data_root()
        if data is None or not data.is_dir():
            sys.stderr.write("error: no aiconfigurator data: pass --data .../aiconfigurator_core/systems/data\n")
            return 2
        fitted = fit(data, args, _say)
    if args.save is not None:
        args.save.write_text(json.dumps(fitted, indent=1) + "\n")
    if args.write:
        write(fitted)
    else:
        sys.stdout.write(yaml.safe_dump({k: v[0] for k, v in fitted.items()}, sort_keys=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
