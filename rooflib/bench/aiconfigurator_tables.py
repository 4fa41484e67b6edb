"""Reading NVIDIA aiconfigurator's measured tables (parquet) into rooflib's ``nccl`` and ``gemm`` records.

aiconfigurator (PyPI ``aiconfigurator-core``, Apache-2.0) ships, per system, ``systems/data/<system>/``:

- ``comm/nccl/<version>/nccl_perf.parquet``: nccl-tests results, columns ``op_name`` (all_gather, all_reduce,
  reduce_scatter, alltoall), ``nccl_dtype`` (half, int8), ``num_gpus``, ``message_size`` and ``latency``, and in
  newer tables ``framework``, ``version`` (the NCCL version measured, which is not always the folder's name) and
  ``device``. ``message_size`` counts *elements* of ``nccl_dtype`` of the nccl-tests size S, so
  ``bytes = message_size x sizeof(nccl_dtype)``; ``latency`` is in milliseconds. Its collector runs the stock
  nccl-tests binaries, one process with N threads, ops launched back-to-back from the host (no CUDA graph), the
  out-of-place time averaged; some tables hold repeat runs (rows with equal keys), kept with a ``repeat`` index.
- ``comm/{trtllm,vllm,sglang}/<version>/custom_allreduce_perf.parquet``: the frameworks' own all-reduce kernels
  (``message_size`` elements of ``allreduce_dtype``, ``latency`` ms, ``implementation`` or ``backend``). They are
  not NCCL: imported as the family ``framework_allreduce``, marked ``excluded_from_fit``.
- ``gemm/<framework>/<version>/gemm_perf.parquet``: ``gemm_dtype``, ``m``, ``n``, ``k``, ``latency`` (ms),
  ``kernel_source``; timed inside a CUDA graph with weight copies cycled to defeat L2; fp8 and nvfp4 rows include
  the framework's activation quantisation. rooflib reads bfloat16 (``bf16``), fp8 (per-tensor) and nvfp4
  (``fp4``); other dtypes (fp8_block, int8/int4 weight-only, smooth quant) are counted in the meta record and
  left out.

- ``quantize/trtllm/<version>/scale_matrix_perf.parquet``: ``m``, ``k``, ``quant_dtype`` (fp8), ``latency`` (ms):
  TensorRT-LLM's static per-tensor fp8 quantisation of an m x k bf16 tensor (``static_quantize_e4m3_per_tensor``:
  one streaming kernel, 2 bytes read and 1 written per element), timed in a CUDA graph that quantises the same
  tensor over and over (it stays in L2 where it fits). Read by :func:`read_quantize_table` as ``memory``
  records: rooflib's test of its memory-bound kernel curves on GPUs it never measured.

Each table comes with a ``collection_meta.yaml`` (provenance, runtime framework and version, status) that goes
into the import's meta record. Every value is checked: an error names the file, the row, the column and the
value. Only the formats are taken from aiconfigurator; no code of it is used.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rooflib.bench.records import MeasurementError
from rooflib.conventions import Op, bus_factor
from rooflib.errors import RooflibError

__all__ = [
    "GEMM_DTYPES",
    "NCCL_DTYPE_BYTES",
    "NCCL_OPS",
    "Table",
    "read_framework_table",
    "read_gemm_table",
    "read_nccl_table",
    "read_parquet",
    "read_quantize_table",
]

NCCL_OPS: dict[str, Op] = {
    "all_gather": "all_gather",
    "all_reduce": "all_reduce",
    "reduce_scatter": "reduce_scatter",
    "alltoall": "all_to_all",
}
NCCL_DTYPE_BYTES = {"half": 2, "float16": 2, "bfloat16": 2, "bf16": 2, "int8": 1, "uint8": 1, "float": 4, "fp32": 4}
GEMM_DTYPES = {"bfloat16": "bf16", "fp8": "fp8", "nvfp4": "fp4"}  # aiconfigurator gemm_dtype -> rooflib dtype
MS = 1e-3

NCCL_TIMING = (
    "stock nccl-tests binaries run by aiconfigurator's collector: one process with N threads, ops launched "
    "back-to-back from the host on a stream (no CUDA graph), out-of-place time averaged over the iterations; "
    "message_size = elements of nccl_dtype, latency in ms"
)
QUANTIZE_TIMING = (
    "TensorRT-LLM's static fp8 quantisation kernel over one bf16 tensor, quantised again and again in a CUDA graph "
    "(L2-resident where it fits); latency in ms"
)
GEMM_TIMING = (
    "one GEMM per CUDA graph node, replayed, up to 5 weight copies cycled to defeat L2; fp8 and nvfp4 include the "
    "framework's activation quantisation; latency in ms"
)
FRAMEWORK_TIMING = (
    "the framework's own custom all-reduce kernel (not NCCL), timed by aiconfigurator's collector; "
    "message_size = elements of allreduce_dtype, latency in ms"
)


@dataclass
class Table:
    """One parquet table read into records, with what its meta record needs."""

    path: Path
    kind: str  # nccl | gemm | framework_allreduce
    sha256: str
    rows: int
    records: list[dict[str, Any]] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> rows left out
    devices: list[str] = field(default_factory=list)
    versions: list[str] = field(default_factory=list)  # NCCL (or framework) versions in the rows


def read_parquet(path: Path) -> tuple[list[dict[str, Any]], str]:
    """The rows of a parquet file (as dicts) and its SHA-256; errors name the file."""
    try:
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - the extra is installed with dev
        raise RooflibError(
            f"{path}: reading aiconfigurator tables needs pyarrow: pip install 'rooflib[aiconfigurator]'"
        ) from None
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise MeasurementError(path, f"cannot be read: {exc.strerror or exc}") from None
    try:
        import pyarrow as pa

        table = pq.read_table(pa.BufferReader(data))
    except Exception as exc:  # pyarrow raises its own error types for a damaged file
        raise MeasurementError(path, f"not a readable parquet table ({type(exc).__name__}: {exc})") from None
    return table.to_pylist(), hashlib.sha256(data).hexdigest()


def _need(path: Path, rows: list[dict[str, Any]], columns: tuple[str, ...]) -> None:
    have = set(rows[0]) if rows else set()
    if not rows:
        raise MeasurementError(path, "no rows in the table")
    missing = [c for c in columns if c not in have]
    if missing:
        raise MeasurementError(path, f"no column {missing[0]!r} (its columns are {', '.join(sorted(have))})")


def _positive(path: Path, i: int, row: dict[str, Any], col: str, *, whole: bool = False) -> float:
    value = row.get(col)
    number = float(value) if isinstance(value, int | float) and not isinstance(value, bool) else math.nan
    if not (math.isfinite(number) and number > 0 and (not whole or number.is_integer())):
        need = "a whole number > 0" if whole else "a finite number > 0"
        raise MeasurementError(path, f"row {i}: must be {need}", field=col, value=value)
    return number


def _text(row: dict[str, Any], col: str) -> str | None:
    value = row.get(col)
    return str(value).strip() if value is not None and str(value).strip() else None


def _repeat(seen: dict[tuple[Any, ...], int], key: tuple[Any, ...]) -> int:
    n = seen.get(key, 0)
    seen[key] = n + 1
    return n


def _finish(table: Table, devices: set[str], versions: set[str]) -> Table:
    table.devices, table.versions = sorted(devices), sorted(versions)
    return table


def read_nccl_table(path: Path, *, gpus: set[int] | None = None, ops: set[Op] | None = None) -> Table:
    """``nccl_perf.parquet`` as ``nccl`` records (``source: aiconfigurator``, mode ``stream``)."""
    rows, sha = read_parquet(path)
    _need(path, rows, ("op_name", "nccl_dtype", "num_gpus", "message_size", "latency"))
    folder = path.parent.name
    table = Table(path, "nccl", sha, len(rows))
    devices: set[str] = set()
    versions: set[str] = set()
    seen: dict[tuple[Any, ...], int] = {}
    for i, row in enumerate(rows):
        name = _text(row, "op_name")
        if name not in NCCL_OPS:
            raise MeasurementError(
                path, f"row {i}: not a collective rooflib reads ({', '.join(NCCL_OPS)})", field="op_name", value=name
            )
        dtype = _text(row, "nccl_dtype")
        if dtype not in NCCL_DTYPE_BYTES:
            raise MeasurementError(
                path,
                f"row {i}: unknown element type ({', '.join(NCCL_DTYPE_BYTES)})",
                field="nccl_dtype",
                value=dtype,
            )
        n = int(_positive(path, i, row, "num_gpus", whole=True))
        count = int(_positive(path, i, row, "message_size", whole=True))
        seconds = _positive(path, i, row, "latency") * MS
        op = NCCL_OPS[name]
        if (gpus is not None and n not in gpus) or (ops is not None and op not in ops):
            table.skipped["not asked for (--gpus, --op)"] = table.skipped.get("not asked for (--gpus, --op)", 0) + 1
            continue
        nbytes = count * NCCL_DTYPE_BYTES[dtype]
        version = _text(row, "version") or folder
        device = _text(row, "device")
        devices |= {device} if device else set()
        versions.add(version)
        table.records.append(
            {
                "record": "nccl",
                "family": "nccl",
                "source": "aiconfigurator",
                "op": op,
                "mode": "stream",
                "placement": "out_of_place",
                "gpus": n,
                "bytes": nbytes,
                "count": count,
                "dtype": dtype,
                "time_s": seconds,
                "algbw_bytes_per_s": nbytes / seconds,
                "busbw_bytes_per_s": bus_factor(op, n) * nbytes / seconds,
                "nccl": version,
                "gpu": device,
                "collector": _text(row, "framework"),
                "repeat": _repeat(seen, (op, dtype, n, count)),
                "table_row": i,
            }
        )
    return _finish(table, devices, versions)


def read_framework_table(path: Path, *, gpus: set[int] | None = None) -> Table:
    """``custom_allreduce_perf.parquet`` as ``framework_allreduce`` records, each ``excluded_from_fit``."""
    rows, sha = read_parquet(path)
    _need(path, rows, ("allreduce_dtype", "num_gpus", "message_size", "latency"))
    table = Table(path, "framework_allreduce", sha, len(rows))
    framework = path.parent.parent.name
    devices: set[str] = set()
    versions: set[str] = set()
    seen: dict[tuple[Any, ...], int] = {}
    for i, row in enumerate(rows):
        dtype = _text(row, "allreduce_dtype")
        if dtype not in NCCL_DTYPE_BYTES:
            raise MeasurementError(path, f"row {i}: unknown element type", field="allreduce_dtype", value=dtype)
        n = int(_positive(path, i, row, "num_gpus", whole=True))
        count = int(_positive(path, i, row, "message_size", whole=True))
        seconds = _positive(path, i, row, "latency") * MS
        if gpus is not None and n not in gpus:
            table.skipped["not asked for (--gpus)"] = table.skipped.get("not asked for (--gpus)", 0) + 1
            continue
        impl = _text(row, "implementation") or _text(row, "backend") or _text(row, "kernel_source") or framework
        nbytes = count * NCCL_DTYPE_BYTES[dtype]
        device = _text(row, "device")
        devices |= {device} if device else set()
        version = _text(row, "version") or path.parent.name
        versions.add(version)
        table.records.append(
            {
                "record": "nccl",
                "family": "framework_allreduce",
                "source": "aiconfigurator",
                "op": "all_reduce",
                "mode": f"{framework}:{impl}",
                "gpus": n,
                "bytes": nbytes,
                "count": count,
                "dtype": dtype,
                "time_s": seconds,
                "algbw_bytes_per_s": nbytes / seconds,
                "busbw_bytes_per_s": bus_factor("all_reduce", n) * nbytes / seconds,
                "framework": framework,
                "framework_version": version,
                "kernel_source": _text(row, "kernel_source"),
                "gpu": device,
                "excluded_from_fit": True,
                "repeat": _repeat(seen, (impl, dtype, n, count)),
                "table_row": i,
            }
        )
    return _finish(table, devices, versions)


def read_gemm_table(path: Path) -> Table:
    """``gemm_perf.parquet`` as ``gemm`` records for the dtypes rooflib models (:data:`GEMM_DTYPES`)."""
    rows, sha = read_parquet(path)
    _need(path, rows, ("gemm_dtype", "m", "n", "k", "latency"))
    table = Table(path, "gemm", sha, len(rows))
    framework = path.parent.parent.name
    devices: set[str] = set()
    versions: set[str] = set()
    seen: dict[tuple[Any, ...], int] = {}
    for i, row in enumerate(rows):
        name = _text(row, "gemm_dtype") or ""
        if name not in GEMM_DTYPES:
            table.skipped[f"gemm_dtype {name}"] = table.skipped.get(f"gemm_dtype {name}", 0) + 1
            continue
        m, n, k = (int(_positive(path, i, row, c, whole=True)) for c in ("m", "n", "k"))
        seconds = _positive(path, i, row, "latency") * MS
        dtype = GEMM_DTYPES[name]
        device = _text(row, "device")
        devices |= {device} if device else set()
        version = _text(row, "version") or path.parent.name
        versions.add(version)
        flops = 2.0 * m * n * k
        table.records.append(
            {
                "record": "gemm",
                "family": "gemm",
                "source": "aiconfigurator",
                "name": f"gemm_{dtype}",
                "dtype": dtype,
                "table_dtype": name,
                "mode": "graph",
                "m": m,
                "n": n,
                "k": k,
                "flops": flops,
                "time_s": seconds,
                "flops_per_s": flops / seconds,
                "kernel_source": _text(row, "kernel_source"),
                "framework": framework,
                "framework_version": version,
                "gpu": device,
                "repeat": _repeat(seen, (name, m, n, k)),
                "table_row": i,
            }
        )
    return _finish(table, devices, versions)


def read_quantize_table(path: Path) -> Table:
    """``scale_matrix_perf.parquet`` as ``memory`` records: op ``quantize_fp8``, ``elements`` (m x k), ``bytes``
    moved (3 per element: the bf16 input read, the fp8 output written) and ``time_s``."""
    rows, sha = read_parquet(path)
    _need(path, rows, ("m", "k", "latency"))
    table = Table(path, "memory", sha, len(rows))
    devices: set[str] = set()
    versions: set[str] = set()
    seen: dict[tuple[Any, ...], int] = {}
    for i, row in enumerate(rows):
        dtype = _text(row, "quant_dtype") or "fp8"
        if dtype != "fp8":
            table.skipped[f"quant_dtype {dtype}"] = table.skipped.get(f"quant_dtype {dtype}", 0) + 1
            continue
        m, k = (int(_positive(path, i, row, c, whole=True)) for c in ("m", "k"))
        seconds = _positive(path, i, row, "latency") * MS
        device = _text(row, "device")
        devices |= {device} if device else set()
        versions.add(_text(row, "version") or path.parent.name)
        table.records.append(
            {
                "record": "memory",
                "family": "memory",
                "source": "aiconfigurator",
                "op": "quantize_fp8",
                "m": m,
                "k": k,
                "elements": m * k,
                "bytes": 3 * m * k,
                "time_s": seconds,
                "gpu": device,
                "repeat": _repeat(seen, (m, k)),
                "table_row": i,
            }
        )
    return _finish(table, devices, versions)
