"""Fitting device figures: synchronisation and NVLink latency, HBM and L2 rates, GEMM efficiency.

- ``latency``: ``sync_intra_sm`` (mbarrier), ``sync_inter_sm`` (flag through global memory) and the NVLink
  interconnect's one-way latency (system-scope flag between two GPUs), medians as measured.
- ``ceilings``: ``hbm_efficiency`` = the better streaming copy rate (bytes read + written; the shipped kernel or
  torch's device-to-device copy) over the datasheet HBM rate;
  ``l2_bandwidth`` = the L2 read rate.
- ``gemm``: ``kernel_launch`` from the smallest products (time beyond their compute), then per dtype the
  efficiency (``dtype_efficiency``; bf16 also as ``tensor_efficiency``) with which the compute model, tile and
  wave quantisation included, matches cuBLAS in the median over shapes of at least 2 x 4096^3 FLOPs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rooflib.calibrate.data import Fit
from rooflib.compute import gemm
from rooflib.specs.resolve import System

__all__ = ["fit_device"]


def _median(rows: pd.DataFrame, name: str, column: str = "time_s") -> float | None:
    sel = rows[rows["name"] == name]
    if sel.empty or column not in sel:
        return None
    return float(np.median(sel[column].astype(float)))


def _latency(fit: Fit, frame: pd.DataFrame, system: System, source: str) -> None:
    rows = frame[(frame["family"] == "latency") & frame["verified"]]
    intra = _median(rows, "intra_sm_mbarrier")
    inter = _median(rows, "inter_sm_flag")
    if intra is not None:
        fit.set("device.sync_intra_sm", intra * 1e9, source, "ns")
    if inter is not None:
        fit.set("device.sync_inter_sm", inter * 1e9, source, "ns")
    peer = rows[(rows["name"] == "peer_flag") & rows.get("peer", pd.Series(False, index=rows.index)).astype(bool)]
    if not peer.empty:
        one_way = float(np.median(peer["time_s"].astype(float)))
        # the topology adds the switch traversal to the link latency: keep the sum equal to the measurement
        link = max(0.0, one_way - system.switch.latency.value)
        fit.set(f"interconnect.{system.link.name}.latency", link * 1e9, source, "ns")


def _ceilings(fit: Fit, frame: pd.DataFrame, system: System, source: str) -> None:
    rows = frame[(frame["family"] == "ceilings") & frame["verified"]]
    gemm_rows = frame[(frame["family"] == "gemm") & frame["verified"]]
    dev = system.device
    copies = [
        c for c in (_median(rows, "hbm_copy", "bytes_per_s"), _median(gemm_rows, "torch_copy", "bytes_per_s")) if c
    ]
    copy = max(copies) if copies else None  # the better of the shipped copy kernel and torch's copy
    if copy is not None:
        fit.set("device.hbm_efficiency", min(1.0, copy / dev.hbm_bandwidth.value), source)
    l2 = _median(rows, "l2_read", "bytes_per_s")
    if l2 is not None:
        fit.set("device.l2_bandwidth", l2 / 1e12, source, "TB/s")
    latency = operand_latency(rows)
    if latency is not None:
        fit.set("device.operand_latency", latency * 1e9, source, "ns")


def operand_latency(rows: pd.DataFrame) -> float | None:
    """Loaded operand latency (s) from ``tma_stream``: with all SMs streaming from L2 and one load in flight per
    SM, Little's law gives latency = bytes in flight / per-SM rate; the median over the stage sizes whose rate
    stays under 90 % of the best per-SM rate (so the load, not the bandwidth, sets it)."""
    if "source" not in rows or "depth" not in rows:
        return None
    sel = rows[(rows["name"] == "tma_stream") & (rows["source"] == "l2")]
    if sel.empty:
        return None
    sel = sel[sel["blocks"].astype(float) == sel["blocks"].astype(float).max()]
    rate = sel["bytes_per_s_per_sm"].astype(float)
    one = sel[(sel["depth"].astype(float) == 1) & (rate < 0.9 * rate.max())]
    if one.empty:
        return None
    return float(np.median(one["in_flight_bytes"].astype(float) / one["bytes_per_s_per_sm"].astype(float)))


def _gemm(fit: Fit, frame: pd.DataFrame, system: System, source: str) -> None:
    """The launch cost and the (burst: a few products from idle, ``rooflib.families.gemm``) efficiencies."""
    if "dtype" not in frame or "m" not in frame:
        return
    rows = frame[(frame["family"] == "gemm") & frame["verified"] & frame["m"].notna()]
    if rows.empty:
        return
    dev = system.device
    flops = rows["flops"].astype(float)
    # launch cost: what the smallest products take beyond their (tiny) compute time
    known = {str(d) for d in rows["dtype"].dropna().unique() if dev.tensor_peak(str(d)) is not None}  # type: ignore[arg-type]
    modelled = rows["dtype"].astype(str).isin(known)
    tiny = rows[(flops <= 2 * 1024**3) & modelled]  # a dtype the device lacks (fp8 on an A100) has no model
    launch = dev.kernel_launch.value
    if not tiny.empty:
        model = [gemm(dev, int(m), int(n), int(k), str(d), duty="burst").time_s for m, n, k, d in _shapes(tiny)]
        launch = float(np.median(tiny["time_s"].astype(float).to_numpy() - np.asarray(model)))
        fit.set("device.kernel_launch", max(0.0, launch) * 1e6, source, "us")
    for dtype, grp in rows[flops >= 2 * 4096**3].groupby("dtype"):
        if dev.tensor_peak(str(dtype)) is None:  # type: ignore[arg-type]
            continue
        ratios = [
            gemm(dev, int(m), int(n), int(k), str(d), duty="burst").time_s / (float(t) - launch)
            for (m, n, k, d), t in zip(_shapes(grp), grp["time_s"], strict=True)
        ]
        eff = min(1.0, dev.gemm_efficiency(str(dtype)) * float(np.median(ratios)))
        if dtype == "bf16":
            fit.set("device.tensor_efficiency", eff, source)
        fit.overrides.setdefault("device.dtype_efficiency", {})[str(dtype)] = {"value": round(eff, 4), "source": source}


def _shapes(rows: pd.DataFrame) -> list[tuple[int, int, int, str]]:
    cols = (rows["m"].astype(int), rows["n"].astype(int), rows["k"].astype(int), rows["dtype"].astype(str))
    return [(int(m), int(n), int(k), str(d)) for m, n, k, d in zip(*cols, strict=True)]


def fit_device(frame: pd.DataFrame, system: System, source: str) -> Fit:
    """Profile overrides for device figures and the NVLink latency from latency, ceilings and gemm rows."""
    fit = Fit()
    _latency(fit, frame, system, source)
    _ceilings(fit, frame, system, source)
    _gemm(fit, frame, system, source)
    return fit
