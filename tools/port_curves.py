"""Memory-op curves measured on one GPU carried into another's device file, for the kernels the target never ran.

    python tools/port_curves.py RUN [RUN ...] --source h100-sxm5 --target hardware/devices/h200-sxm.yaml [--write]

RUN: folders of ``rooflib bench compute`` records (``raw/*.jsonl``) measured on the ``--source`` device. Their
curves are fitted as ``rooflib.calibrate.compute_report`` fits the target's own (``memory_curves``: share of the
source's datasheet HBM rate by bytes moved), then carried to the target's rate by the rule of
:mod:`rooflib.specs.port` (bytes at the best share the target's own curves reach run at the target's rate, the
rest keeps its time), and only the keys the target's file lacks are written: a curve the target measured itself
always wins. A row-wise curve that starts above the target's smallest kernel of the same op starts with that
kernel (the time of a launch-bound call, which the rows' length does not change), so that sizes below the
source's smallest are not held at its time. Without ``--write`` the ported curves are printed. Between two GPUs
of one chip (H100, H200: GH100, 132 SMs, the same clocks) the held part carries as it is; the target file's
sources say where each came from.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rooflib.calibrate.compute import compute_rows, load_runs
from rooflib.calibrate.compute_curves import memory_curves
from rooflib.calibrate.device_file import write_curves
from rooflib.specs import default_catalog
from rooflib.specs.devices import DeviceSpec
from rooflib.specs.port import NOT_PORTED, port_curve

ROOT = Path(__file__).resolve().parents[1]
DEVICES = ROOT / "hardware" / "devices"


def _floor(own: Any, key: str) -> list[float] | None:
    """For a row-wise key (``op@cols``): the target's own smallest measured kernel of that op (the first point of
    the curve that starts lowest), below which a launch-bound kernel's time holds; None for other keys."""
    op, _, cols = key.partition("@")
    firsts = [c.points[0] for k, c in own.items() if cols and k.partition("@")[0] == op]
    return [float(x) for x in min(firsts)] if firsts else None


def ported_curves(runs: list[Path], source: DeviceSpec, target: DeviceSpec) -> dict[str, dict[str, object]]:
    """The curves ``runs`` measured on ``source`` that ``target`` lacks, as ``target``'s ``memory_ops.hbm``
    entries (points as shares of ``target``'s HBM rate)."""
    rows = compute_rows(load_runs([str(r) for r in runs]))
    for col in ("m", "n", "k", "seq_q"):  # columns of GEMM and attention points, absent from a memory-only run
        if col not in rows:
            rows[col] = float("nan")
    where = ", ".join(r.relative_to(ROOT).as_posix() if r.is_relative_to(ROOT) else str(r) for r in runs)
    fitted = memory_curves(rows, source, f"measured: rooflib bench compute, one lent {source.name} ({where})")
    own = target.compute.memory_ops.hbm if target.compute is not None and target.compute.memory_ops else {}
    top = max(e for key, curve in own.items() if key.partition("@")[0] not in NOT_PORTED for _, e in curve.points)
    src_bw, dst_bw = source.hbm_bandwidth.value, target.hbm_bandwidth.value
    out: dict[str, dict[str, object]] = {}
    for key, curve in fitted["hbm"].items():
        if key in own or key.partition("@")[0] in NOT_PORTED:
            continue
        points = [
            [b, float(f"{e:.4g}")] for b, e in port_curve(tuple(map(tuple, curve["points"])), src_bw, dst_bw, top)
        ]
        floor = _floor(own, key)
        if floor is not None and floor[0] < points[0][0] and floor[0] / floor[1] < points[0][0] / points[0][1]:
            points.insert(0, floor)  # below the smallest measured size: the op's launch-bound kernel, not its time
        text = (
            f"derived: measured on {source.name} and carried to this device's HBM rate (tools/port_curves.py, "
            f"rooflib.specs.port: streaming at {top:.3g} of the rate, the rest as measured); no {target.name} "
            "measurement of this kernel"
        )
        out[key] = {"points": points, "source": text, "note": f"from: {curve['source']}"}
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="+", type=Path)
    p.add_argument("--source", required=True, help="catalog device the runs were measured on")
    p.add_argument(
        "--target", required=True, help="catalog device to add the carried curves to (its hardware/devices file)"
    )
    p.add_argument(
        "--keys", default="", help="only these curves (comma-separated; default: every one the target lacks)"
    )
    p.add_argument("--write", action="store_true")
    a = p.parse_args(argv)
    cat = default_catalog()
    path = DEVICES / f"{a.target}.yaml"
    for flag, name in (("--source", a.source), ("--target", a.target)):
        if name not in cat.names("device") or not (DEVICES / f"{name}.yaml").is_file():
            print(f"{flag}: {name!r} is not a catalog device ({', '.join(cat.names('device'))})", file=sys.stderr)
            return 2
    missing = [str(r) for r in a.runs if not any((r / "raw").glob("*.jsonl"))]
    if missing:
        print(f"{', '.join(missing)}: no raw/*.jsonl records", file=sys.stderr)
        return 2
    curves = ported_curves(a.runs, cat.device(a.source), cat.device(a.target))
    keys = [k for k in a.keys.split(",") if k]
    if unknown := [k for k in keys if k not in curves]:
        print(
            f"--keys: {', '.join(unknown)}: not a curve these runs give the target ({', '.join(curves)})",
            file=sys.stderr,
        )
        return 2
    curves = {k: c for k, c in curves.items() if not keys or k in keys}
    for key, curve in curves.items():
        print(key, curve["points"])
    if a.write and curves:
        block = {"compute": {"memory_ops": {"hbm": curves}}}
        print("wrote curves:", ", ".join(write_curves(path, block, list(curves))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
