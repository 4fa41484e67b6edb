"""Op by op: the kernels each op of a ParallelKernelBench single-GPU part launched (CUPTI, ``pkb_worker --mode
kernels``) against the device time the model gives that op.

A ``kernels`` record lists, in launch order, every op that launched device work: its innermost aten op, the
outermost op around it and its kernels with their median device seconds. The traced program lists its ops in
issue order. The two sequences are aligned by name (:func:`align`, longest matching blocks first): a measured op
takes its outermost name where the program knows that name and not the innermost one (``aten::linear`` around
``aten::addmm``), the fake group's copies are merged per collective call, and a run of the same name on both sides
that the alignment left unmatched is compared as a whole (one ``aten::cat`` traced, two launched). What stays
unmatched is reported apart, never dropped.

>>> [(p.name, m.name) for p, m in align_names(["a", "b", "c"], ["a", "x", "c"])]
[('a', 'a'), ('c', 'c')]
"""

from __future__ import annotations

import difflib
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["ALIASES", "OpPair", "align", "align_names", "op_class", "op_pairs", "summarise"]

ALIASES = {
    "aten::clone": "aten::copy_",
    "aten::_to_copy": "aten::copy_",
    "aten::contiguous": "aten::copy_",
    "aten::convolution": "aten::cudnn_convolution",
}
"""Traced names whose kernels the profiler files under another op."""


@dataclass(frozen=True)
class Side:
    """One op of one side: its name for the alignment, seconds, and what it was (params or kernel names)."""

    name: str
    seconds: float
    detail: Mapping[str, Any]


@dataclass(frozen=True)
class OpPair:
    """A traced op (or a run of them) and the measured op(s) it was matched with; ``measured`` or ``predicted``
    empty where nothing matched."""

    name: str
    op_class: str
    predicted_s: float
    measured_s: float
    matched: bool
    kernels: tuple[str, ...] = ()


def _key(name: str) -> str:
    key = name.split("@")[0].replace("aten.", "aten::", 1)
    return ALIASES.get(key, key)


def op_class(kind: str, params: Mapping[str, Any]) -> str:
    """The label an op is grouped under: its kind and the measured class that times it, where one does
    (``index:scatter_add``, ``copy:transpose``, ``elementwise:fill``, ``sort:sort_rows``)."""
    extra = params.get("op") if kind == "index" else params.get("curve")
    if kind == "copy" and params.get("layout"):
        extra = params["layout"]
    if kind == "sort":
        extra = "rows" if int(params.get("cols", 1 << 30)) <= 4096 else "flat"
    return f"{kind}:{extra}" if extra else kind


def predicted_side(rows: Sequence[Mapping[str, Any]], params: Sequence[Mapping[str, Any]]) -> list[Side]:
    """The program's ops that run on the device (``ProgramPrediction.ops`` rows and each op's params); the parts
    of a fake all-gather (``<name>.part``, :func:`rooflib.trace.pkb_table.local_part`) join their call."""
    out: list[Side] = []
    for row, p in zip(rows, params, strict=True):
        if row["kind"] == "sync" or float(row["device_time_s"]) <= 0.0:
            continue
        name, seconds = str(row["name"]), float(row["device_time_s"])
        if name.endswith(".part") and out:  # a fake all-gather's further copies: one call, as measured
            last = out.pop()
            out.append(Side(last.name, last.seconds + seconds, last.detail))
            continue
        out.append(Side(_key(name), seconds, {"class": op_class(str(row["kind"]), p)}))
    return out


def measured_side(ops: Sequence[Sequence[Any]], known: Iterable[str]) -> list[Side]:
    """A ``kernels`` record's ``ops`` (``[leaf, top, shapes, [[kernel, seconds], ...]]``) as one side: the top
    op's name where ``known`` (the traced names) has it and not the leaf's; the copies of one fake collective call
    merged into one op named as the local part names it (``fake.c10d.<op>``)."""
    names = set(known)
    out: list[Side] = []
    for leaf, top, _shapes, kernels in ops:
        seconds = sum(float(k[1]) for k in kernels)
        names_k = tuple(str(k[0]) for k in kernels)
        if str(top).startswith("c10d::"):
            key = "fake." + str(top).replace("::", ".")
            if out and out[-1].name == key and out[-1].detail.get("top") == top:
                last = out.pop()
                out.append(Side(key, last.seconds + seconds, {"top": top, "kernels": last.detail["kernels"] + names_k}))
                continue
            out.append(Side(key, seconds, {"top": top, "kernels": names_k}))
            continue
        name = str(top) if (top in names and leaf not in names) else str(leaf)
        out.append(Side(name, seconds, {"top": top, "kernels": names_k}))
    return out


def align_names(left: Sequence[str], right: Sequence[str]) -> list[tuple[Side, Side]]:
    """:func:`align` of two name lists (seconds 0), for the example above."""
    a = [Side(n, 0.0, {}) for n in left]
    b = [Side(n, 0.0, {}) for n in right]
    return [(x, y) for x, y, ok in align(a, b) if ok and x is not None and y is not None]


def align(pred: Sequence[Side], meas: Sequence[Side]) -> list[tuple[Side | None, Side | None, bool]]:
    """Pairs ``(predicted, measured, matched)``: equal names one to one in the longest matching blocks; a block
    the alignment left unmatched whose ops all have one name on both sides becomes one pair of their sums
    (matched), and so do unmatched ops right after a matched pair of their name (:func:`_fold`); anything else
    comes back unmatched, each op on its own."""
    sm = difflib.SequenceMatcher(None, [p.name for p in pred], [m.name for m in meas], autojunk=False)
    out: list[tuple[Side | None, Side | None, bool]] = []
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        ps, ms = pred[i1:i2], meas[j1:j2]
        if tag == "equal":
            out += [(p, m, True) for p, m in zip(ps, ms, strict=True)]
        elif ps and ms and len({x.name for x in (*ps, *ms)}) == 1:
            p = Side(ps[0].name, sum(x.seconds for x in ps), ps[0].detail)
            kernels = tuple(k for x in ms for k in x.detail.get("kernels", ()))
            m = Side(ms[0].name, sum(x.seconds for x in ms), {**ms[0].detail, "kernels": kernels})
            out.append((p, m, True))
        else:
            out += [(p, None, False) for p in ps] + [(None, m, False) for m in ms]
    return _fold(out)


def _fold(pairs: list[tuple[Side | None, Side | None, bool]]) -> list[tuple[Side | None, Side | None, bool]]:
    """Unmatched ops right after a matched pair of their own name join that pair (an op the other side split in
    two: one ``aten::cat`` traced, two launched)."""
    out: list[tuple[Side | None, Side | None, bool]] = []
    for p, m, ok in pairs:
        if not ok and out and out[-1][2]:
            lp, lm, _ = out[-1]
            one = p if p is not None else m
            if lp is not None and lm is not None and one is not None and one.name == lp.name:
                if p is not None:
                    lp = Side(lp.name, lp.seconds + p.seconds, lp.detail)
                else:
                    kernels = tuple(lm.detail.get("kernels", ())) + tuple(one.detail.get("kernels", ()))
                    lm = Side(lm.name, lm.seconds + one.seconds, {**lm.detail, "kernels": kernels})
                out[-1] = (lp, lm, True)
                continue
        out.append((p, m, ok))
    return out


def op_pairs(
    record: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], params: Sequence[Mapping[str, Any]]
) -> list[OpPair]:
    """The ops of one ``kernels`` record against the prediction of the same part (``rows``: its
    ``ProgramPrediction.ops``; ``params``: each op's params, in order)."""
    pred = predicted_side(rows, params)
    meas = measured_side(record.get("ops") or [], {p.name for p in pred})
    out = []
    for p, m, ok in align(pred, meas):
        name = (p or m).name  # type: ignore[union-attr]
        cls = str(p.detail["class"]) if p is not None else "unmatched (measured only)"
        kernels = tuple(m.detail.get("kernels", ())) if m is not None else ()
        out.append(OpPair(name, cls, p.seconds if p else 0.0, m.seconds if m else 0.0, ok, kernels))
    return out


def summarise(pairs: Iterable[OpPair]) -> list[dict[str, Any]]:
    """Per op class: matched ops, their measured and predicted seconds in all, the median of predicted over
    measured and its quartiles, largest measured total first; then the unmatched ops on each side."""
    by: dict[str, list[OpPair]] = {}
    lone_m: list[OpPair] = []
    lone_p: list[OpPair] = []
    for pr in pairs:
        if pr.matched and pr.measured_s > 0 and pr.predicted_s > 0:
            by.setdefault(pr.op_class, []).append(pr)
        elif pr.measured_s > 0 and pr.predicted_s == 0:
            lone_m.append(pr)
        elif pr.predicted_s > 0:
            lone_p.append(pr)
    rows: list[dict[str, Any]] = []
    for cls, prs in by.items():
        ratio = sorted(p.predicted_s / p.measured_s for p in prs)
        q = statistics.quantiles(ratio, n=4) if len(ratio) > 1 else [ratio[0]] * 3
        rows.append(
            {
                "class": cls,
                "n": len(prs),
                "measured_s": sum(p.measured_s for p in prs),
                "predicted_s": sum(p.predicted_s for p in prs),
                "ratio_median": statistics.median(ratio),
                "ratio_q1": q[0],
                "ratio_q3": q[2],
            }
        )
    rows.sort(key=lambda r: -r["measured_s"])
    for label, prs in (("unmatched, measured only", lone_m), ("unmatched, predicted only", lone_p)):
        if prs:
            rows.append({"class": label, "n": len(prs), "measured_s": sum(p.measured_s for p in prs),
                         "predicted_s": sum(p.predicted_s for p in prs)})  # fmt: skip
    return rows
