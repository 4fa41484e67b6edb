"""Small aiconfigurator-like system data folders, generated here (no aiconfigurator data is copied).

The layout and columns follow aiconfigurator's ``systems/data/<system>/`` tables: ``message_size`` in elements
of ``nccl_dtype``, ``latency`` in milliseconds. The values are made up: times from a simple latency + size /
bandwidth law, so that every row is plausible.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

NCCL_OPS = ("all_gather", "all_reduce", "reduce_scatter", "alltoall")


def write_table(path: Path, rows: list[dict[str, Any]], meta: dict[str, Any] | None = None) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq
    import yaml

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    if meta is not None:
        (path.parent / "collection_meta.yaml").write_text(yaml.safe_dump(meta))
    return path


def nccl_rows(device: str | None, version: str | None, gpus: tuple[int, ...] = (2, 4, 8)) -> list[dict[str, Any]]:
    rows = []
    for op in NCCL_OPS:
        for n in gpus:
            for dtype, width in (("half", 2), ("int8", 1)):
                for e in range(9, 30, 4):  # 512 B .. 512 MiB
                    nbytes = 2**e
                    row: dict[str, Any] = {
                        "op_name": op,
                        "kernel_source": "NCCL",
                        "nccl_dtype": dtype,
                        "num_gpus": n,
                        "message_size": nbytes // width,
                        "latency": (6e-6 + 1.5e-6 * n + nbytes / 300e9) * 1e3,
                    }
                    if version is not None:
                        row = {"framework": "TRTLLM", "version": version, "device": device, **row}
                    rows.append(row)
    return rows


def gemm_rows(device: str) -> list[dict[str, Any]]:
    rows = []
    for dtype, rate in (("bfloat16", 6e14), ("fp8", 1.2e15), ("fp8_block", 1.1e15), ("nvfp4", 2.4e15)):
        for m in (1, 16, 129, 1024, 4096):
            for n, k in ((4096, 4096), (256, 16384), (8192, 8192)):
                rows.append(
                    {
                        "framework": "TRTLLM",
                        "version": "1.3.0rc20",
                        "device": device,
                        "op_name": "gemm",
                        "kernel_source": "torch_flow",
                        "gemm_dtype": dtype,
                        "m": m,
                        "n": n,
                        "k": k,
                        "latency": (3e-6 + 2 * m * n * k / rate) * 1e3,
                    }
                )
    return rows


def framework_rows(device: str) -> list[dict[str, Any]]:
    return [
        {
            "framework": "vLLM",
            "version": "0.24.0",
            "device": device,
            "op_name": "all_reduce",
            "kernel_source": f"vLLM_custom_{mode}",
            "allreduce_dtype": "bfloat16",
            "num_gpus": n,
            "message_size": 2**e,
            "latency": (4e-6 + 2 * 2**e / 200e9) * 1e3,
            "backend": f"vllm_{mode}",
        }
        for n in (2, 4, 8)
        for e in range(7, 24, 4)
        for mode in ("graph", "eager")
    ]


def make_system(
    root: Path, name: str = "h200_sxm", device: str = "NVIDIA H200", *, gpus: tuple[int, ...] = (2, 4, 8)
) -> Path:
    """``root/name`` with two NCCL tables (one old, without version and device columns), a GEMM table and a
    framework all-reduce table, each with a ``collection_meta.yaml``."""
    folder = root / name
    meta = {"schema_version": 1, "provenance": "collected", "runtime": {"framework": "nccl", "version": "2.29.2"}}
    write_table(folder / "comm/nccl/2.29.2/nccl_perf.parquet", nccl_rows(device, "2.29.2", gpus), meta)
    old = [r for r in nccl_rows(None, None, gpus) if r["op_name"] != "all_reduce"]
    write_table(folder / "comm/nccl/2.23/nccl_perf.parquet", old)
    gm = {"schema_version": 1, "provenance": "collected", "runtime": {"framework": "trtllm", "version": "1.3.0rc20"}}
    write_table(folder / "gemm/trtllm/1.3.0rc20/gemm_perf.parquet", gemm_rows(device), gm)
    write_table(folder / "comm/vllm/0.24.0/custom_allreduce_perf.parquet", framework_rows(device))
    return folder
