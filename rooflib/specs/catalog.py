"""Loading the hardware catalog: built-in YAML files plus the user's files and directories.

Every file holds one item with a ``kind`` (device, interconnect, system, library, profile, sources) and a
``name``. A user file may ``extends: <name>`` an item of the same kind and override only some fields; a user
item with the name of a built-in one replaces it. Paths in ``ROOFLIB_CATALOG`` (``os.pathsep``-separated) are
added to every catalog. Validation errors name the file, the field and the value.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from rooflib.errors import SpecError, SpecFileError, UnknownNameError
from rooflib.specs.devices import DeviceSpec
from rooflib.specs.figures import SOURCE_PREFIXES
from rooflib.specs.interconnects import InterconnectSpec
from rooflib.specs.port import port_memory_ops, port_model
from rooflib.specs.systems import LibrarySpec, ProfileSpec, SystemSpec
from rooflib.specs.yaml_files import load_yaml

__all__ = ["Catalog", "RawItem", "builtin_data_dir", "default_catalog", "load_yaml", "validate", "validate_model"]

KINDS = ("device", "interconnect", "system", "library", "profile", "program", "sources")
_MODELS: dict[str, Any] = {
    "device": DeviceSpec,
    "interconnect": TypeAdapter(InterconnectSpec),
    "system": SystemSpec,
    "library": LibrarySpec,
    "profile": ProfileSpec,
}


def builtin_data_dir(sub: str) -> Path:
    """The installed data folder (``rooflib/_data/<sub>``), or the source tree's ``<sub>/`` in a checkout."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "_data" / sub, here.parent / sub):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"rooflib data folder {sub!r} not found next to {here}")


@dataclass(frozen=True)
class RawItem:
    kind: str
    name: str
    data: dict[str, Any]
    path: Path


def _read_yaml(path: Path) -> dict[str, Any]:
    data = load_yaml(path)
    if data is None:
        raise SpecFileError(path, "is empty; a catalog file holds one mapping with 'kind' and 'name'")
    if not isinstance(data, dict):
        what = type(data).__name__
        raise SpecError(path, [("<file>", data, f"must be a mapping with 'kind' and 'name', not a {what}")])
    kind = data.get("kind")
    if kind not in KINDS:
        raise SpecError(path, [("kind", kind, f"must be one of {', '.join(KINDS)}")])
    name = data.get("name")
    if kind != "sources" and (not isinstance(name, str) or not name.strip()):
        raise SpecError(path, [("name", name, "every item needs a non-empty string 'name'")])
    return data


def _yaml_files(root: Path) -> Iterator[Path]:
    if root.is_file():
        yield root
        return
    if not root.is_dir():
        raise SpecFileError(root, "catalog path does not exist (neither a file nor a folder)")
    yield from sorted(p for p in root.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())


def _deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(base))
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping) and "value" not in value:
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _loc(loc: tuple[int | str, ...], kind: str) -> str:
    parts = list(loc)
    if kind == "interconnect" and parts and parts[0] in ("nvlink", "nvswitch", "pcie", "infiniband"):
        parts = parts[1:]  # the discriminator tag is not a field the user wrote
    if parts and parts[-1] == "[key]":  # pydantic's marker for a bad dictionary key: the key is the field
        parts = parts[:-1]
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "<item>"


def _lookup(data: Mapping[str, Any], dotted: str) -> object:
    node: object = data
    for part in dotted.replace("[", ".").replace("]", "").split("."):
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def validate_model(model: Any, data: Any, path: Path | str, kind: str = "") -> Any:
    """Validate ``data`` with a pydantic model (or TypeAdapter); a failure becomes a :class:`SpecError`
    naming ``path``, every failing field and its value."""
    clean = {k: v for k, v in data.items() if k != "extends"} if isinstance(data, Mapping) else data
    try:
        if isinstance(model, TypeAdapter):
            return model.validate_python(clean)
        return model.model_validate(clean)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            where = _loc(err["loc"], kind)
            value = err.get("input")
            if (err["type"] == "missing" and "." not in where) or where == "<item>":
                value = None  # the input is the whole item: naming the field (or the check) says enough
            elif where.endswith(".value") or isinstance(value, Mapping):
                value = _lookup(clean, where) if not isinstance(value, Mapping | list) else value
            msg = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                msg = "unknown key (misspelt?)"
            problems.append((where, value, msg))
        raise SpecError(path, problems) from None


def validate(kind: str, data: Mapping[str, Any], path: Path | str) -> Any:
    """Validate raw ``data`` of catalog ``kind``; a failure becomes a :class:`SpecError` naming ``path``."""
    return validate_model(_MODELS[kind], data, path, kind)


@dataclass
class Catalog:
    """All catalog items by kind and name, validated on first use."""

    paths: tuple[Path, ...] = ()
    items: dict[str, dict[str, RawItem]] = field(default_factory=dict)
    sources: dict[str, dict[str, Any]] = field(default_factory=dict)
    _cache: dict[tuple[str, str], Any] = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls, extra: Iterable[str | Path] = (), *, builtin: bool = True) -> Catalog:
        roots: list[Path] = [builtin_data_dir("hardware")] if builtin else []
        env = os.environ.get("ROOFLIB_CATALOG", "")
        roots += [Path(p) for p in env.split(os.pathsep) if p]
        roots += [Path(p) for p in extra]
        cat = cls(paths=tuple(roots), items={k: {} for k in KINDS})
        for root in roots:
            seen: dict[tuple[str, str], Path] = {}
            for path in _yaml_files(root):
                item = cat.add_file(path)
                if item is None:
                    continue
                first = seen.setdefault((item.kind, item.name), path)
                if first != path:  # a later root may replace an item; one root may not define it twice
                    raise SpecError(path, [("name", item.name, f"a {item.kind} of that name is also in {first}")])
        return cat

    def add_file(self, path: Path) -> RawItem | None:
        data = _read_yaml(path)
        if data["kind"] == "sources":
            entries = data.get("sources")
            if not isinstance(entries, dict):
                raise SpecError(path, [("sources", entries, "must map source ids to {title, url}")])
            bad = [
                (f"sources.{k}", v, "must be a mapping {title, url}")
                for k, v in entries.items()
                if not isinstance(v, dict)
            ]
            if bad:
                raise SpecError(path, bad)
            self.sources.update(entries)
            return None
        item = RawItem(data["kind"], data["name"], data, path)
        self.items[item.kind][item.name] = item
        self._cache.clear()
        return item

    def names(self, kind: str) -> list[str]:
        return sorted(self.items[kind])

    def raw(self, kind: str, name: str) -> RawItem:
        """The item's raw data with any ``extends`` chain merged in (a circular chain is a SpecError), and a
        device's carried memory-op curves (``compute.memory_ops_from``) filled in."""
        merged = self._merged(kind, name)
        return self._carried(merged) if kind == "device" else merged

    def _merged(self, kind: str, name: str) -> RawItem:
        if name not in self.items[kind]:
            raise UnknownNameError(kind, name, self.items[kind])
        chain = [self.items[kind][name]]
        while (parent := chain[-1].data.get("extends")) is not None:
            item = chain[-1]
            if not isinstance(parent, str) or not parent:
                raise SpecError(item.path, [("extends", parent, f"must be the name of a {kind}")])
            if parent == item.name:
                raise SpecError(item.path, [("extends", parent, "an item cannot extend itself")])
            names = [c.name for c in chain]
            if parent in names:
                loop = chain[names.index(parent) :]
                text = " -> ".join(f"{c.name} ({c.path})" for c in loop)
                first = loop[0]
                problem = ("extends", first.data["extends"], f"circular extends chain: {text} -> {parent}")
                raise SpecError(first.path, [problem])
            if parent not in self.items[kind]:
                raise SpecError(item.path, [("extends", parent, self._no_such(kind, parent))])
            chain.append(self.items[kind][parent])
        if len(chain) == 1:
            return chain[0]
        data = chain[-1].data
        for item in reversed(chain[:-1]):
            data = _deep_merge(data, item.data)
        return RawItem(kind, name, data, chain[0].path)

    def _carried(self, item: RawItem) -> RawItem:
        """``item`` with ``compute.memory_ops`` filled from ``compute.memory_ops_from``'s device, where given, and
        the compute models that port names (``models``) taken from that device where the item has none. A
        device's own curves win: a file that extends a carrying device with measured ``memory_ops`` (``rooflib
        calibrate``'s) keeps them, and its ``memory_ops_from`` is dropped."""
        compute = item.data.get("compute")
        if not isinstance(compute, dict) or compute.get("memory_ops_from") is None:
            return item
        spec: DeviceSpec = validate("device", item.data, item.path)
        assert spec.compute is not None and spec.compute.memory_ops_from is not None
        port = spec.compute.memory_ops_from
        field_ = "compute.memory_ops_from.device"
        if port.device not in self.items["device"]:
            raise SpecError(item.path, [(field_, port.device, self._no_such("device", port.device))])
        src_compute = self._merged("device", port.device).data.get("compute")
        src_compute = src_compute if isinstance(src_compute, dict) else {}
        data = copy.deepcopy(item.data)
        for model in port.models:
            if compute.get(model) is not None:
                continue
            if src_compute.get(model) is None:
                problem = ("compute.memory_ops_from.models", model, f"device {port.device} has no compute.{model}")
                raise SpecError(item.path, [problem])
            data["compute"][model] = port_model(src_compute[model], port.device, port.source)
        if compute.get("memory_ops") is not None:
            del data["compute"]["memory_ops_from"]
            return RawItem(item.kind, item.name, data, item.path)
        if "memory_ops" not in src_compute:
            msg = "that device has no measured compute.memory_ops of its own"
            raise SpecError(item.path, [(field_, port.device, msg)])
        data["compute"]["memory_ops"] = port_memory_ops(self.device(port.device), spec.hbm_bandwidth.value, port.source)
        return RawItem(item.kind, item.name, data, item.path)

    def _no_such(self, kind: str, name: str) -> str:
        others = [k for k in KINDS if name in self.items.get(k, {})]
        if others:
            return f"no {kind} of that name ({name!r} is a {others[0]}; an item extends one of its own kind)"
        return f"no {kind} of that name; {kind}s: {', '.join(self.names(kind))}"

    def get(self, kind: str, name: str) -> Any:
        key = (kind, name)
        if key not in self._cache:
            item = self.raw(kind, name)
            spec = validate(kind, item.data, item.path)
            self.check_sources(spec, item.path)
            self._cache[key] = spec
        return self._cache[key]

    def device(self, name: str) -> DeviceSpec:
        spec: DeviceSpec = self.get("device", name)
        return spec

    def system(self, name: str) -> SystemSpec:
        spec: SystemSpec = self.get("system", name)
        return spec

    def library(self, name: str) -> LibrarySpec:
        spec: LibrarySpec = self.get("library", name)
        return spec

    def interconnect(self, name: str) -> Any:
        return self.get("interconnect", name)

    def profile(self, name_or_path: str | Path) -> tuple[ProfileSpec, Path]:
        """A profile by catalog name, or from a YAML file (added to this catalog).

        A path that does not exist is a :class:`SpecFileError` naming it; a name that is neither a file nor a
        catalog profile is an :class:`UnknownNameError` listing the catalog's profiles.
        """
        path = Path(name_or_path)
        name = str(name_or_path)
        if path.is_file():
            data = _read_yaml(path)
            if data["kind"] != "profile":
                raise SpecError(path, [("kind", data["kind"], "a profile file needs kind: profile")])
            item = self.add_file(path)
            assert item is not None
            name = item.name
        elif name not in self.items["profile"]:
            known = ", ".join(self.names("profile")) or "none"
            if path.is_dir():
                raise SpecFileError(path, f"is a folder, not a profile file (catalog profiles: {known})")
            if path.suffix in (".yaml", ".yml") or os.sep in name or "/" in name:
                raise SpecFileError(path, f"no such profile file (catalog profiles by name: {known})")
            raise UnknownNameError("profile", name, self.items["profile"])
        spec: ProfileSpec = self.get("profile", name)
        return spec, self.items["profile"][name].path

    def check_sources(self, spec: BaseModel, path: Path) -> None:
        """Every ``source`` must be a known id or start with one of :data:`SOURCE_PREFIXES`."""
        problems = [
            (where, src, f"unknown source id; add it to hardware/sources.yaml or start with {SOURCE_PREFIXES}")
            for where, src in _walk_sources(spec, "")
            if not src.startswith(SOURCE_PREFIXES) and src not in self.sources
        ]
        if problems and self.sources:
            raise SpecError(path, problems)


def _walk_sources(obj: object, prefix: str) -> Iterator[tuple[str, str]]:
    if isinstance(obj, BaseModel):
        for name in type(obj).model_fields:
            value = getattr(obj, name)
            where = f"{prefix}.{name}" if prefix else name
            if name == "source" and isinstance(value, str):
                yield where, value
            elif name == "sources" and isinstance(value, tuple):
                for i, src in enumerate(value):
                    yield f"{where}[{i}]", src
            else:
                yield from _walk_sources(value, where)
    elif isinstance(obj, dict):
        for key, value in obj.items():
            yield from _walk_sources(value, f"{prefix}.{key}")


_DEFAULT: Catalog | None = None


def default_catalog() -> Catalog:
    """The built-in catalog plus ``ROOFLIB_CATALOG``, loaded once per process."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Catalog.load()
    return _DEFAULT
