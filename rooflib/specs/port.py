"""Measured memory-op curves carried from the device they were measured on to a sibling device.

A device file may say ``compute: {memory_ops_from: {device: h200-sxm, source: ...}}`` instead of giving its own
``memory_ops``: the catalog then builds that device's curves from the named device's (:func:`port_memory_ops`).
Curves of its own win (a file extending a carrying device with measured ``memory_ops``); ``memory_ops_from: null``
in such a file switches the port off (the datasheet rule: ``hbm_efficiency``, no launch cost).

Each measured point is a kernel moving ``b`` bytes in ``t = b / (BW_src x eff(b))``. Its time is split in two:

- a streaming part, ``b / (BW_src x e_top)``: those bytes at the best share of the HBM rate any carried curve
  reaches on the source (a streaming add, about 0.91 on the H200), at most ``t``;
- a held part, the rest: launch, ramp-up and tail, and whatever else bounds a kernel that streams below that
  share (atomics, a sort's passes, a transpose's strided accesses).

On the target the held part keeps its time and the streaming part runs at the target's datasheet HBM rate, so
``t' = held + streaming x BW_src / BW_dst``. A large copy keeps its share of the datasheet rate, a launch-bound
kernel its time, and a kernel that streams at a small share of the rate moves little. Times are then made
non-decreasing in bytes. The GEMM and attention memory curves are not carried (their devices' own GEMM and
attention models stand for them), and the ``l2_resident`` ratios are carried as they are (the target's
``l2_size`` bounds where they apply). Where the two devices' SMs differ (another generation), the held parts are
the source's: an assumption the target's file states. The rates are the two files' own ``hbm_bandwidth`` (a
profile's override of the target's does not re-carry the curves).

>>> from rooflib.specs import default_catalog
>>> cat = default_catalog()
>>> h200, h100 = cat.device("h200-sxm"), cat.device("h100-sxm5")
>>> ported = port_memory_ops(h200, h100.hbm_bandwidth.value, "assumption: test")
>>> e200, e100 = h200.compute.memory_ops.hbm["copy"].points[-1][1], ported["hbm"]["copy"]["points"][-1][1]
>>> abs(e100 / e200 - 1) < 0.01  # a streaming copy keeps its share of the datasheet rate
True
>>> t = lambda dev_bw, pts: pts[0][0] / (dev_bw * pts[0][1])
>>> round(t(h100.hbm_bandwidth.value, ported["hbm"]["copy"]["points"]) * 1e6, 3)  # a 4-byte copy keeps its time
0.807
"""

from __future__ import annotations

from typing import Any

from rooflib.specs.devices import DeviceSpec
from rooflib.specs.figures import SizeCurve

__all__ = ["NOT_PORTED", "port_curve", "port_memory_ops", "port_model"]

NOT_PORTED = frozenset({"gemm", "attention"})
"""Memory curves tied to the source device's own GEMM and attention kernels: the target's GEMM and attention
models stand for them."""


def port_curve(points: tuple[tuple[float, float], ...], src_bw: float, dst_bw: float, top: float) -> list[list[float]]:
    """``points`` (bytes, share of ``src_bw``) as the same kernels' shares of ``dst_bw``, streaming at share ``top``
    (the module's rule)."""
    out: list[list[float]] = []
    last = 0.0
    for b, e in points:
        t = b / (src_bw * e)
        stream = min(t, b / (src_bw * top))
        ported = max((t - stream) + stream * src_bw / dst_bw, last)
        last = ported
        out.append([b, min(1.0, b / (dst_bw * ported))])
    return out


def port_model(block: Any, source: str, note: str) -> Any:
    """A compute model's YAML block (``sgemm``, ``attention``) of device ``source`` as another device carries it:
    the same figures, each figure's source saying it was carried, from which device, with ``note``."""
    if isinstance(block, list):
        return [port_model(x, source, note) for x in block]
    if not isinstance(block, dict):
        return block
    out = {k: port_model(v, source, note) for k, v in block.items()}
    if isinstance(block.get("source"), str):
        out["source"] = f"derived: {source}'s figure carried as it is (rooflib.specs.port); {note}"
        origin = f"from: {block['source']}"
        if "value" in block:  # a figure: the original source goes in its note
            out["note"] = origin + (f"; {block['note']}" if block.get("note") else "")
        else:  # a block whose source stands for its figures: the original source follows
            out["source"] += f" ({origin})"
    return out


def port_memory_ops(source: DeviceSpec, dst_bw: float, note: str) -> dict[str, Any]:
    """``source``'s ``memory_ops`` block, as plain YAML data, for a device of datasheet HBM rate ``dst_bw`` (B/s);
    every curve's source says it was carried, from which device, with ``note`` (the target file's reason)."""
    models = source.compute
    if models is None or models.memory_ops is None:
        raise ValueError(f"device {source.name} has no compute.memory_ops to carry")
    src_bw = source.hbm_bandwidth.value
    kept = {k: c for k, c in models.memory_ops.hbm.items() if k.partition("@")[0] not in NOT_PORTED}
    top = max(e for curve in kept.values() for _, e in curve.points)

    def carried(curve: SizeCurve, points: list[list[float]]) -> dict[str, Any]:
        text = f"derived: {source.name}'s curve carried to this device's HBM rate (rooflib.specs.port); {note}"
        return {"points": points, "source": text, "note": f"from: {curve.source}"}

    hbm = {key: carried(curve, port_curve(curve.points, src_bw, dst_bw, top)) for key, curve in kept.items()}
    l2 = {
        key: carried(curve, [list(p) for p in curve.points])
        for key, curve in models.memory_ops.l2_resident.items()
        if key not in NOT_PORTED
    }
    return {"hbm": hbm, "l2_resident": l2}
