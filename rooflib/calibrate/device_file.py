"""Writing a compute fit into a device file (``rooflib.calibrate.compute_report --write-device``): the whole
``compute`` block, or only some memory curves or model lines, every other line as it is."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from rooflib.calibrate.compute import ComputeFit

__all__ = ["device_block", "write_curves", "write_device", "write_models"]


def device_block(result: ComputeFit) -> dict[str, Any]:
    """The device-file pieces the fit gives: ``compute``, ``dtype_efficiency`` (the GEMM model's), ``host``."""
    out: dict[str, Any] = {"compute": _clean(result.compute)}
    src = result.compute["gemm"]["operand_bandwidth"]["source"] if "gemm" in result.compute else None
    if result.efficiency and src:
        out["dtype_efficiency"] = {d: {"value": round(v, 4), "source": src} for d, v in result.efficiency.items()}
    if result.host:
        out["host"] = result.host
    return out


def _clean(obj: Any) -> Any:
    """Drop ``note: None`` entries and round floats to 4 significant digits (what the device file holds)."""
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items() if not (k == "note" and v is None)}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    if isinstance(obj, float):
        return float(f"{obj:.4g}")
    return obj


def _flow(value: Any) -> str:
    return yaml.safe_dump(value, default_flow_style=True, width=10**6, sort_keys=False).strip()


def _replace_line(text: str, pattern: str, line: str) -> str:
    hit = re.search(pattern, text, flags=re.MULTILINE)
    return text if hit is None else text[: hit.start()] + line + text[hit.end() :]


def _set_line(text: str, pattern: str, line: str, at: int) -> str:
    """``text`` with the line matching ``pattern`` replaced by ``line``, or ``line`` inserted after offset ``at``
    (the end of a line) where none matches."""
    if re.search(pattern, text, flags=re.MULTILINE):
        return _replace_line(text, pattern, line)
    return text[:at] + "\n" + line + text[at:]


def write_device(path: Path, block: dict[str, Any]) -> None:
    """Replace (or add) the fitted entries of a device file: one flow-style line per entry, ``compute`` last."""
    text = path.read_text()
    body = text.split("\ncompute:\n")[0].rstrip("\n") + "\n"
    if "dtype_efficiency" in block:
        entry = f"dtype_efficiency: {_flow(block['dtype_efficiency'])}"
        pattern = re.compile(r"^dtype_efficiency:.*$", re.MULTILINE)
        if pattern.search(body):
            body = pattern.sub(lambda _m: entry, body)
        else:  # after tensor_efficiency, where the catalog's other devices keep it
            line = re.search(r"^tensor_efficiency:.*$", body, flags=re.M)
            if line is not None:
                body = body[: line.end()] + "\n" + entry + body[line.end() :]
    for key, fig in block.get("host", {}).items():
        body = _replace_line(body, rf"^  {key}: .*$", f"  {key}: {_flow(fig)}")
    compute = block["compute"]
    out = [body.rstrip("\n"), "compute:"]
    mem = compute["memory_ops"]
    out.append("  memory_ops:")
    out.append("    hbm:")
    out += [f"      {key}: {_flow(curve)}" for key, curve in mem["hbm"].items()]
    out.append("    l2_resident:")
    out += [f"      {op}: {_flow(curve)}" for op, curve in mem["l2_resident"].items()]
    for key in ("gemm", "sgemm", "attention"):
        if key in compute:
            out.append(f"  {key}: {_flow(compute[key])}")
    path.write_text("\n".join(out) + "\n")


def write_models(path: Path, block: dict[str, Any], keys: list[str]) -> list[str]:
    """Replace (or add, at the end of the ``compute`` block) only the model lines ``keys`` (``sgemm``, ``gemm``,
    ``attention``) of a device file with the fitted ones, every other line as it is; returns the keys written."""
    text = path.read_text()
    done = []
    for key in keys:
        if key not in block["compute"]:
            continue
        line = f"  {key}: {_flow(_clean(block['compute'][key]))}"
        text = _set_line(text, rf"^  {re.escape(key)}: .*$", line, len(text.rstrip("\n")))
        done.append(key)
    path.write_text(text)
    return done


def write_curves(path: Path, block: dict[str, Any], keys: list[str]) -> list[str]:
    """Replace (or add, after the last one) only the ``memory_ops.hbm`` curves ``keys`` of a device file with the
    fitted ones, leaving every other line as it is; returns the keys written (those the fit has)."""
    text = path.read_text()
    hbm = block["compute"]["memory_ops"]["hbm"]
    done = []
    if "l2_resident" in keys:  # the whole L2 block: one line per op, as write_device writes it
        l2 = block["compute"]["memory_ops"]["l2_resident"]
        lines = "".join(f"      {op}: {_flow(curve)}\n" for op, curve in l2.items())
        hit = re.search(r"^    l2_resident:\n(?:      .*\n)*", text, flags=re.MULTILINE)
        if hit is None:
            raise SystemExit(f"{path}: no memory_ops.l2_resident block to replace")
        text = text[: hit.start()] + "    l2_resident:\n" + lines + text[hit.end() :]
        done.append("l2_resident")
    head, sep, tail = text.partition("    l2_resident:")  # the hbm curves are above the L2 block: only there
    for key in keys:
        if key not in hbm:
            continue
        block_end = list(re.finditer(r"^      \S+: \{points: .*$", head, re.M))
        if not block_end:
            raise SystemExit(f"{path}: no memory_ops.hbm block to add {key} to")
        head = _set_line(head, rf"^      {re.escape(key)}: .*$", f"      {key}: {_flow(hbm[key])}", block_end[-1].end())
        done.append(key)
    path.write_text(head + sep + tail)
    return done
