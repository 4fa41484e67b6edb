"""Fitting device figures: synchronisation and NVLink latency, HBM and L2 rates, GEMM efficiency.

- ``latency``: ``sync_intra_sm`` (mbarrier), ``sync_inter_sm`` (flag through global memory) and the NVLink
  interconnect's one-way latency (system-scope flag between two GPUs), medians as measured.
- ``ceilings``: ``hbm_efficiency`` = the better streaming copy rate (bytes read + written; the shipped kernel or
  torch's device-to-device copy) over the datasheet HBM rate;
  ``l2_bandwidth`` = the L2 read rate.
- ``gemm``: ``tensor_efficiency`` (per dtype measured, the bf16 one kept) chosen so that the compute model, with
  its tile and wave quantisation, matches cuBLAS on large shapes in the median (ratio of times on shapes of
  at least 2 x 4096^3 FLOPs).
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


def _gemm(fit: Fit, frame: pd.DataFrame, system: System, source: str) -> None:
    if "dtype" not in frame:
        return
    rows = frame[(frame["family"] == "gemm") & frame["verified"] & (frame["dtype"] == "bf16")]
    if rows.empty:
        return
    big = rows[rows["flops"].astype(float) >= 2 * 4096**3]
    if big.empty:
        return
    dev = system.device
    shapes = zip(
        big["m"].astype(int), big["n"].astype(int), big["k"].astype(int), big["time_s"].astype(float), strict=True
    )
    ratios = [gemm(dev, int(m), int(n), int(k), "bf16").time_s / float(t) for m, n, k, t in shapes]
    eff = dev.tensor_efficiency.value * float(np.median(ratios))
    fit.set("device.tensor_efficiency", min(1.0, eff), source)


def fit_device(frame: pd.DataFrame, system: System, source: str) -> Fit:
    """Profile overrides for device figures and the NVLink latency from latency, ceilings and gemm rows."""
    fit = Fit()
    _latency(fit, frame, system, source)
    _ceilings(fit, frame, system, source)
    _gemm(fit, frame, system, source)
    return fit
