"""Reading NCCL's own text: the tuning table it prints and the output of nccl-tests.

``NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING`` makes NCCL print, per collective, a ``latency/algbw`` pair for
every (algorithm, protocol): NCCL's own model predicts ``t = latency + bytes / algbw`` and picks the fastest
(src/graph/tuning.cc). :func:`parse_tuning` reads those tables and :func:`nccl_model_time` evaluates them, so
NCCL's model can be compared with rooflib's on the same measurements.

:func:`parse_nccl_tests` (from :mod:`rooflib.bench.nccl_tests`) reads the table printed by nccl-tests
(``all_reduce_perf`` etc.) into the same long-form records the torchrun sweep writes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rooflib.bench.nccl_tests import parse_nccl_tests

__all__ = ["TuningEntry", "nccl_model_time", "parse_nccl_tests", "parse_tuning"]

_COLL = {
    "broadcast": "broadcast",
    "reduce": "reduce",
    "allgather": "all_gather",
    "reducescatter": "reduce_scatter",
    "allreduce": "all_reduce",
    "sendrecv": "send_recv",
    "alltoall": "all_to_all",
}
_PAIR = re.compile(r"(-?\d+(?:\.\d+)?)\s*/\s*(-?\d+(?:\.\d+)?)")


@dataclass(frozen=True)
class TuningEntry:
    op: str
    algorithm: str
    protocol: str
    latency_s: float
    algbw_bytes_per_s: float


def _cells(line: str) -> list[str]:
    body = line.split("INFO", 1)[-1]
    return [c.strip() for c in body.split("|")]


def _labels_from_header(cells: list[str]) -> list[tuple[str, str]]:
    """Older NCCL: ``Latency/AlgBw |    Tree/    LL |    Tree/ LL128 | ...``."""
    out = []
    for cell in cells[1:]:
        if "/" in cell:
            algo, proto = (part.strip() for part in cell.split("/", 1))
            out.append((algo, proto))
    return out


def parse_tuning(text: str) -> list[TuningEntry]:
    """Entries of every tuning table in ``text`` (the last table wins when several ranks printed one).

    Both layouts NCCL has used are read: one header row of ``Algo/Proto`` cells (``Latency/AlgBw | ...``), or an
    ``Algorithm`` row followed by a ``Protocol`` row.
    """
    labels: list[tuple[str, str]] = []
    algos: list[str] = []
    found: dict[tuple[str, str, str], TuningEntry] = {}
    for line in text.splitlines():
        cells = _cells(line)
        if len(cells) < 2:
            continue
        head = cells[0].replace(" ", "").lower()
        if head == "latency/algbw":
            labels = _labels_from_header(cells)
        elif head == "algorithm":
            algos = [c for c in cells[1:] if c]
        elif head == "protocol" and algos:
            protos = " ".join(cells[1:]).split()
            per = max(1, len(protos) // len(algos))
            labels = [(algos[i // per], protos[i]) for i in range(min(len(protos), per * len(algos)))]
        elif head.replace("_", "") in _COLL and labels:
            op = _COLL[head.replace("_", "")]
            pairs = _PAIR.findall("|".join(cells[1:]))
            for (lat, bw), (algo, proto) in zip(pairs, labels, strict=False):
                entry = TuningEntry(op, algo, proto, float(lat) * 1e-6, float(bw) * 1e9)
                found[(op, algo, proto)] = entry
    return list(found.values())


def nccl_model_time(entries: list[TuningEntry], op: str, nbytes: float) -> tuple[float, str]:
    """NCCL's predicted time (s) for ``op`` at ``nbytes`` and the (algorithm/protocol) it would pick."""
    best, pick = float("inf"), ""
    for e in entries:
        if e.op != op or e.algbw_bytes_per_s <= 0:
            continue
        t = e.latency_s + nbytes / e.algbw_bytes_per_s
        if t < best:
            best, pick = t, f"{e.algorithm}/{e.protocol}"
    return best, pick
