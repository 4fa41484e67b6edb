"""Reading the output of nccl-tests (``all_reduce_perf`` and the others) into rooflib's ``nccl`` records.

nccl-tests (src/util.cu) prints, per run: ``# nccl-tests version V nccl-headers=H nccl-library=L`` and
``# Collective test starting: all_reduce_perf`` (both since 2025), ``# nThread T nGpus G minBytes ... graph: N``,
``# Using devices`` and one ``#  Rank  r Group  g Pid  p on host device  d [bus] NAME`` line per GPU, a column
header (``size count type redop root time algbw busbw #wrong time algbw busbw #wrong``: out-of-place, then
in-place; ``i_min ... i_cv%`` per-iteration columns with ``-I 1``) and one row per size. ``#wrong`` is ``N/A``
when the results were not checked (``-c 0``, or alltoall in place).

:func:`read_nccl_tests` returns one :class:`NcclTestsRun` per test in the text. The collective comes from the
``Collective test starting`` line, else ``op=``, else a single ``<op>_perf`` name anywhere in the text (a
command line), else the table itself where it allows one answer (``redop``, ``root`` and ``busbw / algbw``,
whose nccl-tests factor depends on the op and the GPU count). The GPU count is ranks listed (nGpus x nThread x
processes where the listing was cut); the GPU model from the rank lines; the NCCL version from the header or
NCCL's ``NCCL version`` line; NVLS from NCCL's ``NCCL_NVLS_ENABLE set by environment`` and ``NVLS multicast
support is (not) available`` lines (``nvls=`` where the text says nothing). Every value is checked: an error
names the text, the line, the column and the value.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from typing import Any

from rooflib.bench.multicast import NvlsState, nccl_env_int
from rooflib.bench.records import MeasurementError
from rooflib.conventions import Op, bus_factor

__all__ = ["NcclTestsRun", "parse_nccl_tests", "read_nccl_tests"]

TESTS: dict[str, Op] = {
    "all_reduce": "all_reduce",
    "all_gather": "all_gather",
    "reduce_scatter": "reduce_scatter",
    "alltoall": "all_to_all",
    "broadcast": "broadcast",
    "reduce": "reduce",
    "sendrecv": "send_recv",
    "gather": "gather",
    "scatter": "scatter",
}
_VERSION = re.compile(r"#\s*nccl-tests version (\S+)(?:.*?nccl-library=(\d+))?")
_START = re.compile(r"#\s*Collective test starting:\s*(\S+)")
_NTHREAD = re.compile(r"#\s*nThread\s+(\d+)\s+nGpus\s+(\d+)")
_SETTING = re.compile(r"(warmup iters|agg iters|iters|validation|graph):\s*(-?\d+)")
_RANK = re.compile(
    r"#\s*Rank\s+(\d+)(?:\s+Group\s+\d+)?\s+Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+\[[^\]]*\]\s+(.*\S)"
)
_PERF = re.compile(r"\b([a-z][a-z_]*?)_perf(?:_mpi)?\b")
_UNMODELLED = ("alltoallv", "hypercube")  # nccl-tests programs that are not one of rooflib's collectives
_NCCL_VERSION = re.compile(r"\bNCCL version (\d+\.\d+\.\d+)")
_NVLS_ENV = re.compile(r"\bNCCL_NVLS_ENABLE(?: set by environment to |=)\s*([^\s.]*)")
_NVLS_SUPPORT = re.compile(r"NVLS multicast support is (not )?available")
_NVLS_USED = re.compile(r"Connected NVLS|NVLS comm 0x")
_DEFAULT_HEADER = "size count type redop root time algbw busbw #wrong time algbw busbw #wrong".split()


@dataclass
class NcclTestsRun:
    """One nccl-tests run found in a text: where it is, what it measured, and its records."""

    source: str
    first_line: int
    op: Op | None = None
    op_evidence: str = ""
    gpus: int | None = None
    gpus_evidence: str = ""
    processes: int | None = None
    hosts: int | None = None
    gpu_model: str | None = None
    nccl: str | None = None
    nccl_tests: str | None = None
    nvls: NvlsState = "unknown"
    nvls_evidence: str = ""
    settings: dict[str, int] = field(default_factory=dict)
    per_process: int | None = None
    ranks: dict[int, tuple[str, str, str]] = field(default_factory=dict)  # rank -> (host, pid, gpu name)
    header: list[str] = field(default_factory=lambda: list(_DEFAULT_HEADER))
    rows: list[tuple[int, list[str]]] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)

    @property
    def launch(self) -> str:
        return "graph" if self.settings.get("graph", 0) > 0 else "stream"

    @property
    def timing(self) -> str:
        s = self.settings
        how = (
            f"a CUDA graph of {s['graph']} launches per timing"
            if s.get("graph", 0) > 0
            else "ops launched from the host"
        )
        clock = "CPU time (-C 1)" if "cputime" in self.header else "mean time per op"
        checked = "results not checked (-c 0)" if s.get("validation") == 0 else "results checked (#wrong)"
        iters = f"{s['iters']} iterations" if "iters" in s else "its iterations"
        warm = f" after {s['warmup iters']} warm-up" if "warmup iters" in s else ""
        return f"nccl-tests {self.nccl_tests or '(version not printed)'}: {clock} over {iters}{warm}, {how}; {checked}"


def _nccl_code(code: int) -> str:
    """NCCL_VERSION_CODE as text: major*10000 + minor*100 + patch since 2.9, major*1000 + minor*100 before."""
    if code >= 10000:
        return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"
    return f"{code // 1000}.{code % 1000 // 100}.{code % 100}"


def _sections(text: str, source: str) -> list[NcclTestsRun]:
    runs: list[NcclTestsRun] = []
    cur: NcclTestsRun | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        starts = _VERSION.match(stripped) or _START.match(stripped) or _NTHREAD.match(stripped)
        if cur is None or (starts and cur.rows):
            cur = NcclTestsRun(source, number)
            runs.append(cur)
        if m := _VERSION.match(stripped):
            cur.nccl_tests = m.group(1)
            if m.group(2):
                cur.nccl = _nccl_code(int(m.group(2)))
        elif m := _START.match(stripped):
            _set_op(cur, m.group(1), f"line {number}: {stripped}", number)
        elif m := _NTHREAD.match(stripped):
            cur.per_process = int(m.group(1)) * int(m.group(2))
            cur.settings = {k: int(v) for k, v in _SETTING.findall(stripped)}
        elif m := _RANK.match(stripped):
            cur.ranks[int(m.group(1))] = (m.group(3), m.group(2), m.group(5))
        elif stripped.startswith("#"):
            tokens = stripped.lstrip("#").split()
            if "size" in tokens and "busbw" in tokens and ({"time", "cputime"} & set(tokens)):
                cur.header = [t for t in tokens if t != "timestamp"]
        elif stripped[:1].isdigit() and stripped.split()[0].isdigit():
            cur.rows.append((number, stripped.split()))
        if cur.nccl is None and (m := _NCCL_VERSION.search(line)):
            cur.nccl = m.group(1)
        _nvls_line(cur, line, number)
    return [r for r in runs if r.rows or r.op or r.ranks]


def _set_op(run: NcclTestsRun, name: str, evidence: str, number: int) -> None:
    test = name.removesuffix("_mpi").removesuffix("_perf")
    if test not in TESTS:
        raise MeasurementError(
            run.source,
            f"{name} is not a collective rooflib models; rooflib reads {', '.join(t + '_perf' for t in TESTS)}",
            line=number,
        )
    run.op, run.op_evidence = TESTS[test], evidence


def _nvls_line(run: NcclTestsRun, line: str, number: int) -> None:
    where = f"line {number}: {line.strip()[:120]}"
    if _NVLS_USED.search(line):
        run.nvls, run.nvls_evidence = "on", where
    elif (m := _NVLS_ENV.search(line)) and run.nvls != "on":
        value = nccl_env_int(m.group(1))
        if value == 0:
            run.nvls, run.nvls_evidence = "off", where
        elif value == 1:
            run.nvls, run.nvls_evidence = "on", where
    elif (m := _NVLS_SUPPORT.search(line)) and run.nvls == "unknown":
        run.nvls, run.nvls_evidence = ("off" if m.group(1) else "on"), where


def _number(run: NcclTestsRun, number: int, column: str, text: str, *, positive: bool) -> float:
    if text.upper() == "N/A":
        raise MeasurementError(
            run.source, "no value (N/A) where the import needs one", line=number, field=column, value=text
        )
    try:
        value = float(text)
    except ValueError:
        raise MeasurementError(run.source, "not a number", line=number, field=column, value=text) from None
    if value != value or value in (float("inf"), float("-inf")) or value < 0 or (positive and value == 0):
        need = "a finite number > 0" if positive else "a finite number >= 0"
        raise MeasurementError(run.source, f"must be {need}", line=number, field=column, value=text)
    return value


def _blocks(run: NcclTestsRun) -> tuple[int, list[tuple[str, int, int]]]:
    """Index of the first measured column, and (placement, start, wrong index) per block of the header."""
    starts = [i for i, t in enumerate(run.header) if t in ("time", "cputime")]
    names = ["out_of_place", "in_place"][: len(starts)]
    blocks = []
    for name, i in zip(names, starts, strict=True):
        wrong = next((j for j in range(i, i + 5) if run.header[j : j + 1] in (["#wrong"], ["error"])), i + 3)
        blocks.append((name, i, wrong))
    return (starts[0] if starts else 5), blocks


def _records(run: NcclTestsRun) -> None:
    first, blocks = _blocks(run)
    width = len(run.header)
    per_block = (width - first) // max(1, len(blocks))
    for number, cells in run.rows:
        if len(cells) < width and len(blocks) == 2 and len(cells) == first + per_block:
            todo = [("in_place", first, first + (blocks[1][2] - blocks[1][1]))]  # out-of-place left blank
        elif len(cells) >= width:
            todo = blocks
        else:
            raise MeasurementError(
                run.source,
                f"row cut short: {len(cells)} cells where the column header has {width} (other output mixed in?)",
                line=number,
            )
        size = int(_number(run, number, "size", cells[0], positive=False))
        for placement, start, wrong_at in todo:
            t = _number(run, number, f"{run.header[start]} ({placement})", cells[start], positive=True)
            algbw = _number(run, number, f"algbw ({placement})", cells[start + 1], positive=False)
            busbw = _number(run, number, f"busbw ({placement})", cells[start + 2], positive=False)
            wrong_text = cells[wrong_at]
            wrong = (
                None if wrong_text.upper() == "N/A" else int(_number(run, number, "#wrong", wrong_text, positive=False))
            )
            run.records.append(
                {
                    "record": "nccl",
                    "family": "nccl",
                    "source": "nccl-tests",
                    "op": run.op,
                    "mode": run.launch if placement == "out_of_place" else f"{run.launch}-in-place",
                    "placement": placement,
                    "gpus": run.gpus,
                    "bytes": size,
                    "count": int(cells[1]) if cells[1].isdigit() else None,
                    "dtype": cells[2] if len(cells) > 2 else None,
                    "redop": cells[3] if first > 3 else None,
                    "root": int(cells[4]) if first > 4 and re.fullmatch(r"-?\d+", cells[4]) else None,
                    "time_s": t * 1e-6,
                    "algbw_bytes_per_s": algbw * 1e9,
                    "busbw_bytes_per_s": busbw * 1e9,
                    "verified": None if wrong is None else wrong == 0,
                    "mismatches": wrong,
                    "log_line": number,
                }
            )


def _gpus(run: NcclTestsRun, given: int | None) -> None:
    if run.ranks:
        pids = {(host, pid) for host, pid, _ in run.ranks.values()}
        run.processes, run.hosts = len(pids), len({host for host, _ in pids})
        listed = len(run.ranks)
        counted = run.per_process * len(pids) if run.per_process else listed
        run.gpus = max(listed, counted)
        run.gpus_evidence = f"{listed} rank lines, {len(pids)} process(es)"
        run.gpu_model = " / ".join(sorted({name for _, _, name in run.ranks.values()}))
    elif run.per_process:
        run.gpus, run.gpus_evidence = run.per_process, "nThread x nGpus (no rank lines: one process assumed)"
    if given is not None:
        per_process_only = not run.ranks and run.per_process and given % run.per_process == 0  # several processes
        if run.gpus is not None and run.gpus != given and not per_process_only:
            raise MeasurementError(
                run.source,
                f"--gpus {given}, but the text lists {run.gpus} GPUs ({run.gpus_evidence})",
                line=run.first_line,
            )
        run.gpus, run.gpus_evidence = given, "--gpus" + (f" ({run.gpus_evidence})" if run.gpus_evidence else "")
    if run.gpus is None or run.gpus < 1:
        raise MeasurementError(
            run.source,
            "cannot tell the GPU count (no '# nThread .. nGpus ..' or '#  Rank' lines): pass --gpus",
            line=run.first_line,
        )


def _ratio(run: NcclTestsRun) -> tuple[float, int] | None:
    """Median busbw / algbw over rows whose printed rates are large enough to be exact to 1 %."""
    pairs = [
        (r["busbw_bytes_per_s"] / r["algbw_bytes_per_s"], r["log_line"])
        for r in run.records
        if r["algbw_bytes_per_s"] >= 1e9 and r["busbw_bytes_per_s"] >= 1e9
    ]
    if not pairs:
        return None
    med = statistics.median(p for p, _ in pairs)
    return med, min(pairs, key=lambda p: abs(p[0] - med))[1]


def _infer_op(run: NcclTestsRun) -> list[Op]:
    """The ops this table can be (redop, root and the bus factor), for a text that does not name its test."""
    n = run.gpus or 0
    found = _ratio(run)
    redops = {r["redop"] for r in run.records}
    roots = {r["root"] for r in run.records}
    if found is None or len(redops) != 1 or len(roots) != 1 or n < 2:
        return list(TESTS.values())
    reduces = redops != {"none"}
    rooted = roots != {-1} and roots != {None}
    ops = [o for o in TESTS.values() if abs(bus_factor(o, n) - found[0]) <= 0.02 * bus_factor(o, n)]
    kinds = {
        "all_reduce": (True, False),
        "reduce_scatter": (True, False),
        "reduce": (True, True),
        "broadcast": (False, True),
        "gather": (False, True),
        "scatter": (False, True),
    }
    return [o for o in ops if kinds.get(o, (False, False)) == (reduces, rooted)]


def _op_from_flag(op: str) -> Op:
    """An op given by the user: rooflib's name (``all_to_all``) or nccl-tests' (``alltoall``, ``alltoall_perf``)."""
    from rooflib.conventions import check_op

    test = op.strip().lower().removesuffix("_mpi").removesuffix("_perf")
    return TESTS[test] if test in TESTS else check_op(test)


def read_nccl_tests(
    text: str, *, source: str = "<text>", op: str | None = None, gpus: int | None = None, nvls: NvlsState | None = None
) -> list[NcclTestsRun]:
    """Every nccl-tests run in ``text`` (a log file's content; ``source`` names it in errors), with records."""
    runs = [r for r in _sections(text, source) if r.rows]
    if not runs:
        raise MeasurementError(source, "nothing to import: no nccl-tests result rows (lines starting with a size)")
    named = {m.group(1) for m in _PERF.finditer(text)} & {*TESTS, *_UNMODELLED}
    wanted = None if op is None else _op_from_flag(op)
    for run in runs:
        _gpus(run, gpus)
        if wanted is not None:
            if run.op is not None and run.op != wanted:
                raise MeasurementError(source, f"--op {op}, but {run.op_evidence}", line=run.first_line)
            run.op, run.op_evidence = wanted, run.op_evidence or "--op"
        elif run.op is None and len(named) == 1:
            _set_op(run, named.pop() + "_perf", "the test name in the text", run.first_line)
        _records(run)
        if run.op is None:
            fits = _infer_op(run)
            if len(fits) != 1:
                raise MeasurementError(
                    source,
                    "cannot tell the collective: no 'Collective test starting' line or <op>_perf name, and "
                    f"the table fits {', '.join(fits)}; pass --op",
                    line=run.first_line,
                )
            run.op, run.op_evidence = fits[0], "inferred from redop, root and busbw / algbw"
        _check_factor(run)
        _nvls(run, nvls)
        for rec in run.records:
            rec["op"], rec["gpus"] = run.op, run.gpus
    return runs


def _check_factor(run: NcclTestsRun) -> None:
    found = _ratio(run)
    assert run.op is not None and run.gpus is not None
    want = bus_factor(run.op, run.gpus)
    if found is not None and abs(found[0] - want) > 0.02 * want:
        raise MeasurementError(
            run.source,
            f"busbw / algbw = {found[0]:.3f}, but {run.op} on {run.gpus} GPUs has the nccl-tests factor {want:.3f}: "
            f"the collective ({run.op_evidence}) or the GPU count ({run.gpus_evidence}) is wrong; see --op, --gpus",
            line=found[1],
        )


def _nvls(run: NcclTestsRun, given: NvlsState | None) -> None:
    if given is None or given == "unknown":
        if run.nvls == "unknown":
            run.nvls_evidence = "the text says nothing about NVLS (NCCL_DEBUG=INFO prints it); see --nvls"
        return
    if run.nvls != "unknown" and run.nvls != given:
        raise MeasurementError(run.source, f"--nvls {given}, but NVLS was {run.nvls} ({run.nvls_evidence})")
    run.nvls, run.nvls_evidence = given, run.nvls_evidence or f"--nvls {given}"


def parse_nccl_tests(text: str, *, op: str | None = None, gpus: int | None = None) -> list[dict[str, Any]]:
    """The records of every run in ``text`` (see :func:`read_nccl_tests`)."""
    return [rec for run in read_nccl_tests(text, op=op, gpus=gpus) for rec in run.records]
