"""Fitting the transfer-mechanism parameters to ``p2p`` measurements (one-way, between two GPUs).

For each mechanism, on the size sweep with all SMs: ``fixed`` is the small-message floor and ``cap`` the large-
message rate, and the message-size efficiency ``eff(S) = S / ((t(S) - fixed) * cap)`` at every measured size
(as a ``size_efficiency`` table, isotonic so that times never fall as sizes grow).
On the SM sweep at a fixed size: ``rate(k) = min(cap, k * per_sm)`` with ``per_sm`` fitted in log space.
Reductions into peer memory (``tma_reduce``, ``red``) give ``reduce_peak_fraction`` from their large sizes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.optimize import minimize_scalar

from rooflib.calibrate.data import Fit
from rooflib.specs.resolve import System
from rooflib.transfer.model import link_bandwidth

__all__ = ["fit_transfers"]

_FITTED = (("copy_engine", "copy_engine"), ("tma", "tma"), ("ldst_push", "ldst"))
_REDUCE = (
    ("tma_reduce", "tma", "reduce_peak_fraction"),
    ("red", "ldst", "reduce_peak_fraction"),
    ("ldst_pull", "ldst", "pull_peak_fraction"),
)
MIB = float(1 << 20)


def _one_way(frame: pd.DataFrame) -> pd.DataFrame:
    rows = frame[(frame["family"] == "p2p") & frame["verified"] & (frame["variant"] == "one_way")]
    if "peer" in rows:
        rows = rows[rows["peer"].astype(bool)]
    return rows


def _fixed_and_cap(sizes: np.ndarray, times: np.ndarray) -> tuple[float, float]:
    """``fixed``: the small-message floor (median of the three smallest sizes' times); ``cap``: the rate of the
    large messages once ``fixed`` is taken off (median over sizes of 64 MiB and up)."""
    order = np.argsort(sizes)
    fixed = float(np.median(times[order][:3]))
    big = sizes >= 64 * MIB
    if not big.any():
        big = sizes >= np.max(sizes)
    cap = float(np.median(sizes[big] / np.maximum(times[big] - fixed, 1e-12)))
    return fixed, cap


def _size_curve(sizes: np.ndarray, times: np.ndarray, fixed: float, cap: float) -> list[list[float]]:
    """Efficiency per measured size such that ``fixed + S / (cap * eff(S))`` is the measured time, made
    non-decreasing in ``S`` (isotonic) so that interpolated times never fall as messages grow."""
    order = np.argsort(sizes)
    s = sizes[order]
    body = np.maximum.accumulate(np.maximum(times[order] - fixed, 0.0))
    body = np.maximum(body, s / cap)  # never faster than the cap
    eff = np.clip(s / (body * cap), 1e-4, 1.0)
    eff = np.where(body > 0, eff, 1.0)
    return [[float(x), round(float(e), 5)] for x, e in zip(s, eff, strict=True) if x > 0]


def _per_sm(sms: np.ndarray, rates: np.ndarray, cap: float) -> float:
    def loss(log_r: float) -> float:
        model = np.minimum(cap, sms * np.exp(log_r))
        return float(np.sum(np.log(model / rates) ** 2))

    lo, hi = np.log(cap / 1e3), np.log(cap)
    res = minimize_scalar(loss, bounds=(lo, hi), method="bounded")
    return float(np.exp(res.x))


def fit_transfers(frame: pd.DataFrame, system: System, source: str) -> Fit:
    """Profile overrides for ``device.transfer.*`` from the p2p measurements in ``frame``."""
    fit = Fit()
    rows = _one_way(frame)
    if rows.empty:
        return fit
    link = link_bandwidth(system, 0, 1)
    total_sms = int(system.device.sms)
    for measured, model in _FITTED:
        mech = rows[rows["name"] == measured]
        if mech.empty or getattr(system.device.transfer, model, None) is None:  # the system's GPU lacks it
            continue
        sms = mech["sms"].astype(float)
        full = mech[(sms == 0) | (sms >= total_sms)]
        per_size = full.groupby("bytes")["time_s"].median()  # several runs of one size: their median
        sizes = per_size.index.to_numpy(dtype=float)
        times = per_size.to_numpy(dtype=float)
        if (sizes >= MIB).sum() < 2:
            continue
        fixed, cap = _fixed_and_cap(sizes, times)
        base = f"device.transfer.{model}"
        fit.set(f"{base}.fixed_cost", fixed * 1e6, source, "us")
        fit.set(f"{base}.peak_fraction", min(1.0, cap / link), source)
        curve = _size_curve(sizes, times, fixed, cap)
        if curve:
            fit.overrides[f"{base}.size_efficiency"] = {"points": curve, "source": source}
        if model != "copy_engine":
            sweep = mech[(sms > 0) & (sms < total_sms)]
            if not sweep.empty:
                size = float(sweep["bytes"].max())
                sweep = sweep[sweep["bytes"].astype(float) == size]
                per_k = sweep.groupby("sms")["time_s"].median()
                k = per_k.index.to_numpy(dtype=float)
                rates = size / np.maximum(per_k.to_numpy(dtype=float) - fixed, 1e-12)
                fit.set(f"{base}.per_sm_bandwidth", _per_sm(k, rates, cap) / 1e9, source, "GB/s")
        fit.quality.append({"family": "p2p", "name": measured, "fixed_cost_s": fixed, "cap_bytes_per_s": cap})
    for measured, model, field in _REDUCE:
        if getattr(system.device.transfer, model, None) is None:
            continue
        red = rows[(rows["name"] == measured) & (rows["bytes"].astype(float) >= 256 * MIB)]
        red = red[(red["sms"].astype(float) >= total_sms)]
        if red.empty:
            continue
        rate = float(np.median(red["bytes"].astype(float) / red["time_s"].astype(float)))
        fit.set(f"device.transfer.{model}.{field}", min(1.0, rate / link), source)
    piece = ce_piece_cost(frame)
    if piece is not None:
        fit.set("device.transfer.copy_engine.piece_cost", piece * 1e6, source, "us")
    return fit


def ce_piece_cost(frame: pd.DataFrame) -> float | None:
    """Seconds each further copy-engine piece adds (with its arrival flag): the least-squares slope of time
    against pieces over the overlap benchmark's stand-alone copies (one whole copy and stream-issued pieces)."""
    need = {"family", "schedule", "send_path", "record"}
    if not need <= set(frame.columns):
        return None
    rows = frame[(frame["family"] == "overlap") & (frame["record"] == "point") & (frame["schedule"] == "comm_only")]
    if "verified" in rows:
        rows = rows[rows["verified"].astype(bool)]
    whole = rows[rows["send_path"] == "copy_engine"]
    parts = rows[rows["send_path"] == "copy_engine_chunks"]
    if "ce_issue" in parts:
        parts = parts[parts["ce_issue"] == "stream"]
    if whole.empty or parts.empty or "input_blocks" not in rows or "ce_chunk" not in rows:
        return None
    whole = whole[whole["input_blocks"].notna()]  # the gather job's copy of the same bytes
    pieces = np.concatenate(
        [np.ones(len(whole)), np.ceil(parts["input_blocks"].astype(float) / parts["ce_chunk"].astype(float))]
    )
    times = np.concatenate([whole["time_s"].astype(float), parts["time_s"].astype(float)])
    if len(np.unique(pieces)) < 2:
        return None
    slope = float(np.polyfit(pieces, times, 1)[0])
    return max(0.0, slope)
