"""Fitting the convolution classes of :mod:`rooflib.compute.conv` to the ``conv`` part of ``rooflib bench compute``
(:mod:`rooflib.bench.conv_cases`).

Each ``conv`` row carries its call's kernels with their CUPTI seconds (``profile``, in launch order). cuDNN's
layout conversions are read off it: the first ``nchwToNhwc`` kernel converts the input, the second the filter,
the ``nhwcToNchw`` kernel the output; each becomes a point (the tensor's bytes read and written, its seconds) of
its class curve (``conv_input``, ``conv_filter``, ``conv_output``). ``conv_depthwise`` rows are whole calls of
ATen's depthwise kernel and are fitted by the caller as every other kernel class (their ``time_s`` against
``bytes_moved``).

The split (:func:`conv_split`): every other row of the main grid, per (run, op), in the grid's order; the
``holdout`` grid is held out whole.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["CONV_OPS", "LAYOUT_CLASSES", "conv_split", "layout_points"]

LAYOUT_CLASSES = ("conv_input", "conv_filter", "conv_output")
CONV_OPS = ("conv", "conv_depthwise")


def conv_split(rows: pd.DataFrame, alternate: Callable[..., pd.Series]) -> pd.Series:
    """True for the fitted ``conv`` part rows: every other row of the main grid per (run, op), by line."""
    sel = rows[rows["op"].isin(CONV_OPS) & (rows["grid"] == "main")]
    order = ["_line"] if "_line" in rows else []
    return alternate(sel, ["run", "op"], order)


def _seq(value: Any) -> list[Any]:
    """A list field of a row: a list, or its text as results.csv keeps it (``[[...], ...]``); else empty."""
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return []
    return list(value) if isinstance(value, list | tuple) else []


def layout_points(rows: pd.DataFrame) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``{class: (bytes moved, seconds)}`` of cuDNN's layout conversions in the ``profile`` of ``conv`` rows
    (module docstring); rows without a profile, or whose conversions are not the expected three or two (a
    channels-last filter), give none."""
    got: dict[str, list[tuple[float, float]]] = {c: [] for c in LAYOUT_CLASSES}
    conv = rows[rows["op"] == "conv"]
    for rec in conv.to_dict("records"):
        profile = _seq(rec.get("profile"))
        spatial, kernel = _seq(rec.get("spatial")), _seq(rec.get("kernel"))
        if not profile or not spatial or not kernel:
            continue
        size = 2.0 if str(rec.get("dtype", "bf16")) in ("bf16", "fp16") else 4.0
        n, c, k, g = (int(rec[f]) for f in ("n", "c", "k", "groups"))
        x = n * c * math.prod(spatial) * size
        w = k * (c // max(1, g)) * math.prod(kernel) * size
        out = n * k * math.prod(spatial) * size
        forward = [float(s) for name, s in profile if "nchwToNhwc" in str(name)]
        back = [float(s) for name, s in profile if "nhwcToNchw" in str(name)]
        if len(forward) >= 1:
            got["conv_input"].append((2.0 * x, forward[0]))
        if len(forward) >= 2:
            got["conv_filter"].append((2.0 * w, forward[1]))
        if back:
            got["conv_output"].append((2.0 * out, back[0]))
    return {c: (np.array([b for b, _ in v]), np.array([s for _, s in v])) for c, v in got.items() if v}
