"""A system resolved from the catalog: its spec, device, links, library, size and optional calibrated profile."""

from __future__ import annotations

import copy
import dataclasses
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rooflib.conventions import MULTICAST_ALGORITHMS
from rooflib.errors import GroupError, RooflibError, SpecError
from rooflib.specs.catalog import Catalog, default_catalog, validate
from rooflib.specs.devices import DeviceSpec
from rooflib.specs.interconnects import InfiniBandSpec, NVLinkSpec, NVSwitchSpec, PCIeSpec
from rooflib.specs.systems import LibrarySpec, ProfileSpec, SystemSpec, scale_latency

__all__ = ["System", "load_system", "without_multicast"]


@dataclass(frozen=True, eq=False)
class System:
    """Everything the cost models need about one system, with ``nodes`` nodes in use."""

    spec: SystemSpec
    device: DeviceSpec
    link: NVLinkSpec
    switch: NVSwitchSpec
    nic: InfiniBandSpec | None
    host_link: PCIeSpec | None
    library: LibrarySpec
    nodes: int
    profile: ProfileSpec | None = None
    used: int | None = None  # GPUs a prediction uses by default (load_system(gpus=N)); None: all of them

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def gpus(self) -> int:
        return self.nodes * self.spec.gpus_per_node

    @property
    def gpus_per_node(self) -> int:
        return self.spec.gpus_per_node

    @property
    def domain_gpus(self) -> int:
        """GPUs in one NVLink domain (capped by the system's size)."""
        return min(self.spec.scale_up.domain_gpus, self.gpus)

    @property
    def nvlink_bandwidth(self) -> float:
        """Raw NVLink bandwidth per GPU per direction (links x per-link rate), B/s."""
        return int(self.device.nvlink.links) * self.link.per_link_bandwidth.value

    @property
    def nic_bandwidth(self) -> float:
        """Raw scale-out bandwidth per NIC per direction, B/s (0 without a scale-out network)."""
        return 0.0 if self.nic is None else self.nic.port_bandwidth.value

    def group(self, gpus: int | Iterable[int] | None = None) -> tuple[int, ...]:
        """Indices of a GPU group: ``None`` for the GPUs in use (``load_system(gpus=N)``: the first N; else all),
        ``n`` for the first n, or explicit indices."""
        if gpus is None:
            return tuple(range(self.used or self.gpus))
        if isinstance(gpus, bool) or (not isinstance(gpus, int) and isinstance(gpus, float)):
            raise GroupError(f"gpus must be a whole number or a list of GPU indices, got {gpus!r}")
        if isinstance(gpus, int):
            if gpus < 1 or gpus > self.gpus:
                raise GroupError(
                    f"--gpus {gpus} does not fit system {self.name!r}, which has {self.gpus} GPUs "
                    f"({self.nodes} nodes x {self.gpus_per_node}; up to {self.spec.nodes.max} nodes)"
                )
            return tuple(range(gpus))
        members = tuple(int(g) for g in gpus)
        if not members:
            raise GroupError("a GPU group needs at least one GPU")
        bad = [g for g in members if not 0 <= g < self.gpus]
        if bad:
            raise GroupError(f"GPU indices {bad} are outside system {self.name!r} (0..{self.gpus - 1})")
        if len(set(members)) != len(members):
            raise GroupError(f"GPU group {list(members)} names a GPU twice")
        return members


def _set_path(data: dict[str, Any], dotted: str, value: object, profile_path: Path, key: str) -> None:
    """Set ``data[dotted]``; errors name the override ``key`` exactly as the profile writes it."""
    parts = dotted.split(".")
    node: Any = data
    for i, part in enumerate(parts[:-1]):
        if not isinstance(node, dict) or part not in node:
            where = ".".join(parts[: i + 1])
            raise SpecError(profile_path, [(f"overrides.{key}", value, f"no field {where!r} to override")])
        node = node[part]
    if not isinstance(node, dict):
        raise SpecError(profile_path, [(f"overrides.{key}", value, "parent is not a mapping")])
    node[parts[-1]] = copy.deepcopy(value)


def _apply_profile(
    catalog: Catalog, raws: dict[str, tuple[str, dict[str, Any], Path]], profile: ProfileSpec, path: Path
) -> None:
    for dotted, value in profile.overrides.items():
        head, _, rest = dotted.partition(".")
        target = head
        if head == "interconnect":
            target, _, rest = rest.partition(".")
        if target not in raws or not rest:
            valid = ", ".join(sorted(k if k in ("device", "library", "system") else f"interconnect.{k}" for k in raws))
            raise SpecError(path, [(f"overrides.{dotted}", value, f"path must start with one of: {valid}")])
        _set_path(raws[target][1], rest, value, path, dotted)
        if rest.endswith(".value"):  # a bare number from a profile is credited to the profile, not the datasheet
            _set_path(
                raws[target][1], rest[: -len("value")] + "source", f"calibrated: profile {profile.name}", path, dotted
            )


def _whole(name: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value) or value < 1:
        raise GroupError(f"{name} must be a whole number >= 1, got {value!r}")
    return int(value)


def _node_count(spec: SystemSpec, nodes: int | None, gpus: int | None) -> int:
    per_node = spec.gpus_per_node
    if nodes is not None and gpus is not None and gpus > nodes * per_node:
        raise GroupError(f"gpus = {gpus} do not fit {nodes} nodes of {per_node} GPUs of system {spec.name!r}")
    if nodes is None:
        nodes = spec.nodes.default if gpus is None else -(-gpus // per_node)
    if not 1 <= nodes <= spec.nodes.max:
        held = f" to hold {gpus} GPUs" if gpus is not None else ""
        raise GroupError(
            f"system {spec.name!r} takes 1 to {spec.nodes.max} nodes of {per_node} GPUs "
            f"(up to {spec.nodes.max * per_node} GPUs); asked for {nodes} nodes{held}"
        )
    return nodes


def _raw_items(cat: Catalog, spec: SystemSpec) -> tuple[dict[str, tuple[str, dict[str, Any], Path]], dict[str, str]]:
    """Raw data of every item the system uses, keyed by role (system, device, library) or interconnect name."""
    links = {cat.device(spec.device).nvlink.link: "nvlink", spec.scale_up.switch: "nvswitch"}
    if spec.scale_out is not None:
        links[spec.scale_out.nic] = "infiniband"
        links[spec.scale_out.host_link] = "pcie"
    wanted = [("system", "system", spec.name), ("device", "device", spec.device), ("library", "library", spec.library)]
    wanted += [(name, "interconnect", name) for name in links]
    raws = {}
    for key, kind, item in wanted:
        raw = cat.raw(kind, item)
        raws[key] = (kind, copy.deepcopy(raw.data), raw.path)
    return raws, links


def _latency_ratio(cat: Catalog, source: str, target: str) -> float:
    """Target system's library latency_scale over the source system's (1 when a system is not in the catalog)."""
    try:
        a = cat.library(cat.system(source).library).latency_factor
        b = cat.library(cat.system(target).library).latency_factor
    except RooflibError:  # the profile's system is not in this catalog: nothing to scale by
        return 1.0
    return b / a


def _portable_part(prof: ProfileSpec, name: str, gpus: int, cat: Catalog) -> ProfileSpec:
    """The part of ``prof`` that carries to ``gpus`` GPUs of system ``name`` (:meth:`ProfileSpec.portable`); one
    line on stderr names what was dropped."""
    fitted = None if prof.gpus is None else int(prof.gpus.value)
    other_system = prof.system != name
    other_count = fitted is not None and fitted != gpus
    if not (other_system or other_count):
        return prof
    kept, dropped = prof.portable(other_system=other_system, other_count=other_count)
    where = f"{prof.system}" + ("" if fitted is None else f", {fitted} GPUs")
    head = f"rooflib: profile {prof.name} (fitted on {where}) on {name} with {gpus} GPUs carries only its portable part"
    ratio = _latency_ratio(cat, prof.system, name) if other_system else 1.0
    if ratio != 1.0:  # another generation: its device latencies are the profile's times the scales' ratio
        scaled = {k: scale_latency(k.removeprefix("library."), v, ratio) for k, v in kept.overrides.items()}
        kept = kept.model_copy(update={"overrides": scaled})
        head += f" (device latencies x {ratio:.3g}, the libraries' latency_scale ratio)"
    if dropped:
        sys.stderr.write(f"{head}; dropped {len(dropped)} overrides: {', '.join(dropped)}\n")
    elif other_system:
        sys.stderr.write(f"{head}: all {len(prof.overrides)} of its overrides are portable\n")
    return kept


def load_system(
    name: str,
    *,
    nodes: int | None = None,
    gpus: int | None = None,
    profile: str | Path | None = None,
    catalog: Catalog | None = None,
) -> System:
    """Resolve system ``name`` from the catalog.

    ``nodes`` sets the node count (default: the system's default); ``gpus`` sizes a cluster to the nodes that
    hold that many GPUs, and groups default to those ``gpus`` (``System.group()``, every prediction).
    ``profile`` (a name or a YAML path) overrides catalog figures with calibrated ones.
    """
    cat = catalog or default_catalog()
    sys_spec = cat.system(name)
    nodes, gpus = _whole("nodes", nodes), _whole("gpus", gpus)
    count = _node_count(sys_spec, nodes, gpus)
    raws, links = _raw_items(cat, sys_spec)
    prof: ProfileSpec | None = None
    specs: dict[str, Any] = {}
    if profile is not None:
        prof, prof_path = cat.profile(profile)
        prof = _portable_part(prof, name, gpus if gpus is not None else count * sys_spec.gpus_per_node, cat)
        _apply_profile(cat, raws, prof, prof_path)
        for key, (kind, data, path) in raws.items():
            specs[key] = validate(kind, data, f"{path} (with profile {prof_path})")
            cat.check_sources(specs[key], prof_path)
    else:
        names = {"system": name, "device": sys_spec.device, "library": sys_spec.library}
        specs = {key: cat.get(kind, names.get(key, key)) for key, (kind, _, _) in raws.items()}

    def link_of(family: str) -> Any:
        for link_name, fam in links.items():
            if fam == family:
                found = getattr(specs[link_name], "family", None)
                if found != family:
                    raise SpecError(raws[link_name][2], [("family", found, f"expected {family}")])
                return specs[link_name]
        return None

    return System(
        spec=specs["system"],
        device=specs["device"],
        link=link_of("nvlink"),
        switch=link_of("nvswitch"),
        nic=link_of("infiniband"),
        host_link=link_of("pcie"),
        library=specs["library"],
        nodes=count,
        profile=prof,
        used=gpus,
    )


def without_multicast(system: System) -> System:
    """``system`` as run where NVLink multicast is forbidden (NCCL_NVLS_ENABLE=0): no switch multicast or
    in-network reduction, and no NVLS among the library's own algorithms. A fact of the environment, not a fit."""
    switch = system.switch.model_copy(update={"multicast": False, "in_network_reduction": False})
    native = {
        op: tuple(a for a in algs if a not in MULTICAST_ALGORITHMS)
        for op, algs in system.library.native_algorithms.items()
    }
    library = system.library.model_copy(update={"native_algorithms": native})
    return dataclasses.replace(system, switch=switch, library=library)
