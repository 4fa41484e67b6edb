"""How close any prediction of a given shape could come to a set of measurements: the noise floor of a comparison.

Where points repeat across runs (the same problems measured on several leases of a lent machine), a prediction's
error has three parts: a factor per run (the lent host's speed that day), a factor per item (what the model gets
wrong about one problem) and what is left, the run-by-item interaction (a host that slows for a few minutes, a
problem whose time moves between leases). :func:`separable_floor` removes the first two as well as they can be
removed, from the points themselves (Tukey's median polish of ``log(measured / predicted)``), and returns what is
left: about the smallest median error a prediction made of a per-run and a per-item correction could reach on these
points (median polish is robust, not guaranteed to minimise the median; it takes both factors from the very points
it scores, which no prediction can).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["separable_floor"]


def _codes(keys: Sequence[Hashable]) -> npt.NDArray[np.int64]:
    index: dict[Hashable, int] = {}
    return np.array([index.setdefault(k, len(index)) for k in keys], dtype=np.int64)


def _group_medians(values: npt.NDArray[np.float64], codes: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    out = np.empty_like(values)
    for c in np.unique(codes):
        sel = codes == c
        out[sel] = np.median(values[sel])
    return out


def separable_floor(
    ratio: Sequence[float],
    runs: Sequence[Hashable],
    items: Sequence[Hashable],
    *,
    rounds: int = 100,
) -> npt.NDArray[np.float64]:
    """Each point's deviation (``ratio / (run factor x item factor) - 1``) once the factor of its run and of its item
    that fit the points best in median terms are divided out: median polish of ``log(ratio)``, alternating the
    runs' and the items' medians until neither moves (at most ``rounds`` passes).

    ``ratio`` is measured over predicted per point (positive); ``runs`` and ``items`` name each point's run and
    item. The median of ``abs(result)`` is, about, the floor of any per-run-times-per-item correction on these points.
    """
    x = np.asarray(ratio, dtype=np.float64)
    if not (len(x) == len(runs) == len(items)):
        raise ValueError(f"separable_floor: {len(x)} ratios, {len(runs)} runs, {len(items)} items (one each per point)")
    if not np.all(np.isfinite(x) & (x > 0)):
        raise ValueError("separable_floor: every ratio must be positive and finite")
    r = np.log(x)
    run_codes, item_codes = _codes(runs), _codes(items)
    for _ in range(rounds):
        before = r.copy()
        r = r - _group_medians(r, run_codes)
        r = r - _group_medians(r, item_codes)
        if np.max(np.abs(r - before), initial=0.0) < 1e-12:
            break
    return np.asarray(np.expm1(r), dtype=np.float64)
