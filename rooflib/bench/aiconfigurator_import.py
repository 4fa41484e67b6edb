"""``rooflib import-aiconfigurator``: aiconfigurator's measured tables into a results folder that calibrate,
validate and plot read like ``rooflib bench`` output.

``PATH`` is a system data folder (``.../aiconfigurator_core/systems/data/h100_sxm``) or, when the package
``aiconfigurator-core`` is installed, a system name (``h100_sxm``), found through ``importlib`` without importing
the package. Each table (:mod:`rooflib.bench.aiconfigurator_tables`) becomes one job
``import/aiconfigurator/<system>/<table path>`` in ``raw/<family>.jsonl``: NCCL tables (every
``comm/nccl/<version>`` folder, or the ones asked for) in ``raw/nccl.jsonl``; the framework all-reduce tables in
``raw/framework_allreduce.jsonl`` (their own family, ``excluded_from_fit``: neither calibrate nor validate uses
them as NCCL); one GEMM table (the newest version of ``--gemm-framework``) in ``raw/gemm.jsonl``. Importing again
replaces the earlier import of the same table (same system and table path, wherever the data folder lies), never
adds to it; a table whose file is byte-identical to another one (aiconfigurator reuses some) is kept, with
``same_content_as`` in its meta record.

Each table also gets a ``meta`` record: ``source: aiconfigurator``, the file and its SHA-256, the aiconfigurator
version (from the package's ``*.dist-info`` when found), the system and the rooflib catalog system it maps to,
the GPU, the NCCL (or framework) versions in the rows and the folder's, ``collection_meta.yaml``, NVLS state and
evidence, and how it was timed. NCCL rows carry ``source: aiconfigurator`` so that validation predicts them as
back-to-back stream launches, as it does for nccl-tests logs.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rooflib.bench.aiconfigurator_tables import (
    FRAMEWORK_TIMING,
    GEMM_TIMING,
    NCCL_TIMING,
    Table,
    read_framework_table,
    read_gemm_table,
    read_nccl_table,
)
from rooflib.bench.records import MeasurementError, read_jsonl
from rooflib.bench.store import collect, locked, store_job
from rooflib.conventions import Op
from rooflib.errors import RooflibError

__all__ = ["CATALOG_SYSTEMS", "TABLE_KINDS", "AicImported", "find_system", "import_aiconfigurator", "table_paths"]

CATALOG_SYSTEMS = {  # aiconfigurator system -> rooflib catalog system
    "a100_sxm": "hgx-a100",
    "h100_sxm": "hgx-h100",
    "h200_sxm": "hgx-h200",
    "b200_sxm": "hgx-b200",
    "gb200": "gb200-nvl72",
}
TABLE_KINDS = ("nccl", "gemm", "framework")
_NO_MULTICAST = ("A100", "A30", "L4", "L40", "PCIE", "RTX")  # GPUs without NVSwitch multicast (NVLS)
_FRAMEWORKS = ("trtllm", "vllm", "sglang")


@dataclass(frozen=True)
class AicImported:
    """What an import wrote: the tables read, records stored, earlier imports replaced, and the folder."""

    system: str
    tables: list[Table]
    points: int
    replaced: int
    folder: Path
    catalog_system: str | None
    nvls: str
    notes: list[str] = field(default_factory=list)


def _data_root() -> Path | None:
    """``aiconfigurator_core/systems/data`` of the installed package, without importing it."""
    try:
        spec = importlib.util.find_spec("aiconfigurator_core")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        root = Path(location) / "systems" / "data"
        if root.is_dir():
            return root
    return None


def find_system(path: str | Path) -> Path:
    """The system data folder named by ``path`` (a folder, or a system name of the installed package)."""
    p = Path(path)
    if p.is_dir():
        if not (p / "comm").is_dir() and not (p / "gemm").is_dir():
            raise RooflibError(
                f"{p}: not an aiconfigurator system data folder (no comm/ or gemm/ in it; expected e.g. "
                ".../aiconfigurator_core/systems/data/h100_sxm)"
            )
        return p
    if p.exists():
        raise RooflibError(f"{p}: is a file; give an aiconfigurator system data folder or a system name")
    name = str(path)
    if "/" in name or "\\" in name:
        raise RooflibError(f"{p}: no such folder")
    root = _data_root()
    if root is None:
        raise RooflibError(
            f"{name!r} is not a folder, and aiconfigurator-core is not installed to look it up as a system name "
            "(pip install 'rooflib[aiconfigurator]', or give the path of a system data folder)"
        )
    if not (root / name).is_dir():
        known = sorted(d.name for d in root.iterdir() if d.is_dir())
        raise RooflibError(f"unknown aiconfigurator system {name!r} (in {root}: {', '.join(known)})")
    return root / name


def _version_key(text: str) -> tuple[tuple[int, str], ...]:
    return tuple((int(p), "") if p.isdigit() else (-1, p) for p in re.split(r"[.\-]", text))


def _aic_version(folder: Path) -> tuple[str | None, str]:
    """aiconfigurator's version from the ``*.dist-info`` beside the package holding ``folder``."""
    for parent in folder.resolve().parents:
        if parent.name == "aiconfigurator_core":
            infos = sorted(parent.parent.glob("aiconfigurator_core-*.dist-info"))
            if infos:
                version = infos[-1].name.removeprefix("aiconfigurator_core-").removesuffix(".dist-info")
                return version, f"{infos[-1]}"
            return None, f"no aiconfigurator_core-*.dist-info beside {parent}"
    return None, "the folder is not inside an aiconfigurator_core package"


def _collection_meta(table: Path) -> dict[str, Any] | None:
    import yaml

    path = table.parent / "collection_meta.yaml"
    if not path.is_file():
        return None
    try:
        data = yaml.safe_load(path.read_text(errors="replace"))
    except yaml.YAMLError as exc:
        raise MeasurementError(path, f"not YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise MeasurementError(path, "expected a mapping")
    return {k: data[k] for k in ("schema_version", "provenance", "runtime", "tables") if k in data}


def _nvls(gpu: str | None, given: str | None) -> tuple[str, str]:
    if given is not None:
        return given, f"--nvls {given}"
    if not gpu:
        return "unknown", "the tables name no GPU"
    if any(tag in gpu.upper() for tag in _NO_MULTICAST):
        return "off", f"{gpu} has no NVSwitch multicast (NVLS)"
    return "on", (
        f"assumed: aiconfigurator's collector runs nccl-tests with NCCL's defaults (NCCL_NVLS_ENABLE not set) and "
        f"{gpu} boards have NVSwitch multicast; the tables do not record it (--nvls overrides)"
    )


def table_paths(
    folder: Path, kinds: set[str], nccl_versions: set[str] | None = None, gemm_framework: str = "trtllm"
) -> list[Path]:
    """The tables of a system data folder to import: every (or each asked-for) ``comm/nccl/<version>`` table, the
    frameworks' custom all-reduce tables, the newest ``gemm/<gemm_framework>`` table; by kind and version."""
    found: list[Path] = []
    if "nccl" in kinds:
        nccl = sorted((folder / "comm" / "nccl").glob("*/nccl_perf.parquet"), key=lambda p: _version_key(p.parent.name))
        if nccl_versions is not None:
            unknown = nccl_versions - {p.parent.name for p in nccl}
            if unknown:
                have = ", ".join(p.parent.name for p in nccl) or "none"
                raise RooflibError(
                    f"--nccl {sorted(unknown)[0]}: no comm/nccl/<version> of that name in {folder} ({have})"
                )
            nccl = [p for p in nccl if p.parent.name in nccl_versions]
        found += nccl
    if "framework" in kinds:
        for fw in _FRAMEWORKS:
            found += sorted(
                (folder / "comm" / fw).glob("*/custom_allreduce_perf.parquet"),
                key=lambda p: _version_key(p.parent.name),
            )
    if "gemm" in kinds:
        gemm = sorted(
            (folder / "gemm" / gemm_framework).glob("*/gemm_perf.parquet"), key=lambda p: _version_key(p.parent.name)
        )
        found += gemm[-1:]
    return found


def _meta(
    table: Table, folder: Path, system: str, gpu: str | None, nvls: tuple[str, str], aic: tuple[str | None, str]
) -> dict[str, Any]:
    rel = table.path.relative_to(folder).as_posix()
    timing = {"nccl": NCCL_TIMING, "gemm": GEMM_TIMING}.get(table.kind, FRAMEWORK_TIMING)
    rec: dict[str, Any] = {
        "record": "meta",
        "family": table.kind,
        "source": "aiconfigurator",
        "source_file": str(table.path.resolve()),
        "table": rel,
        "sha256": table.sha256,
        "system": system,
        "catalog_system": CATALOG_SYSTEMS.get(system),
        "aiconfigurator": aic[0],
        "aiconfigurator_evidence": aic[1],
        "gpu": gpu,
        "table_version": table.path.parent.name,
        "versions_in_rows": table.versions,
        "collection_meta": _collection_meta(table.path),
        "timing": timing,
        "rows": table.rows,
        "imported": len(table.records),
        "skipped": table.skipped,
        "excluded_from_fit": table.kind == "framework_allreduce",
        "command": f"rooflib import-aiconfigurator {folder}",
    }
    if table.kind == "nccl":
        rec["nccl"] = ", ".join(table.versions)
        rec["nccl_note"] = "the NCCL version in the rows (the folder name is not always it)"
    if table.kind != "gemm":
        rec["nvls"], rec["nvls_evidence"] = nvls
    else:
        rec["framework"] = table.path.parent.parent.name
        rec["framework_version"] = ", ".join(table.versions)
    if table.kind == "framework_allreduce":
        rec["fit_note"] = "framework custom all-reduce, not NCCL: kept out of every fit and of NCCL validation"
    return rec


def _imported_jobs(raw: Path, family: str) -> set[str]:
    """Jobs already in ``raw/<family>.jsonl`` (an import again replaces its own job, whatever the folder's place)."""
    path = raw / f"{family}.jsonl"
    if not path.exists():
        return set()
    return {str(r["job"]) for r in read_jsonl(path, drop_partial_tail=True).records if r.get("job")}


def _same_content(read: list[Table], folder: Path) -> dict[Path, str]:
    """Tables whose file is byte-identical to an earlier one of this import (aiconfigurator reuses some)."""
    first: dict[str, Path] = {}
    out = {}
    for t in read:
        if t.sha256 in first:
            out[t.path] = first[t.sha256].relative_to(folder).as_posix()
        else:
            first[t.sha256] = t.path
    return out


def import_aiconfigurator(
    path: str | Path,
    out: str | Path,
    *,
    gpus: Iterable[int] | None = None,
    ops: Iterable[Op] | None = None,
    tables: Iterable[str] = TABLE_KINDS,
    nccl_versions: Iterable[str] | None = None,
    gemm_framework: str = "trtllm",
    nvls: str | None = None,
) -> AicImported:
    """Read the aiconfigurator tables of ``path`` and store them in the results folder ``out`` (then
    ``results.csv``); see the module docstring."""
    folder = find_system(path)
    kinds = set(tables)
    bad = kinds - set(TABLE_KINDS)
    if bad:
        raise RooflibError(f"--tables {sorted(bad)[0]}: not one of {', '.join(TABLE_KINDS)}")
    if gemm_framework not in _FRAMEWORKS:
        raise RooflibError(f"--gemm-framework {gemm_framework}: not one of {', '.join(_FRAMEWORKS)}")
    want_gpus = set(gpus) if gpus is not None else None
    want_ops = set(ops) if ops is not None else None
    paths = table_paths(folder, kinds, set(nccl_versions) if nccl_versions is not None else None, gemm_framework)
    if not paths:
        raise RooflibError(f"{folder}: no {', '.join(sorted(kinds))} tables to import")
    read: list[Table] = []
    for p in paths:
        if p.name == "nccl_perf.parquet":
            read.append(read_nccl_table(p, gpus=want_gpus, ops=want_ops))
        elif p.name == "custom_allreduce_perf.parquet":
            read.append(read_framework_table(p, gpus=want_gpus))
        else:
            read.append(read_gemm_table(p))
    devices = sorted({d for t in read for d in t.devices})
    gpu = " / ".join(devices) if devices else None
    state = _nvls(gpu, nvls)
    aic = _aic_version(folder)
    notes = [f"{t.path}: no rows left after --gpus/--op" for t in read if not t.records and t.kind != "gemm"]
    root = Path(out)
    try:
        (root / "raw").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RooflibError(f"cannot make the results folder {root}: {exc.strerror or exc}") from None
    points = replaced = 0
    copies = _same_content(read, folder)
    with locked(root):
        for t in read:
            meta = _meta(t, folder, folder.name, gpu, state, aic)
            stamp = {"gpu": gpu, "source_file": meta["source_file"]}
            records = [meta, *({**r, **{k: v for k, v in stamp.items() if r.get(k) is None}} for r in t.records)]
            key = f"import/aiconfigurator/{folder.name}/{meta['table']}"
            if t.path in copies:
                meta["same_content_as"] = copies[t.path]
            replaced += key in _imported_jobs(root / "raw", t.kind)
            points += store_job(root, t.kind, key, records, {}, complete=True) - 1
        collect(root)
    return AicImported(folder.name, read, points, replaced, root, CATALOG_SYSTEMS.get(folder.name), state[0], notes)
