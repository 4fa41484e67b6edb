"""System, collective-library and profile specs (``hardware/systems/``, ``hardware/libraries/``, profiles)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, Strict, model_validator

from rooflib.conventions import ALGORITHMS, OPS
from rooflib.specs.figures import Count, Duration, Fraction, SizeCurve, SpecModel, WholeNumber, name_of

__all__ = [
    "LibrarySpec",
    "LinkClass",
    "NodeCount",
    "ProfileSpec",
    "ProtocolSpec",
    "Provenance",
    "RackTier",
    "ScaleOut",
    "ScaleUp",
    "SystemSpec",
]

LinkClass = Literal["nvlink", "pcie", "ib"]
AlgorithmName = Annotated[str, name_of("algorithm", ALGORITHMS)]
OpName = Annotated[str, name_of("collective", OPS)]

# What NCCL itself runs: ring/tree/NVLS for reductions and gathers, ring chains for rooted ops, and its
# point-to-point engine (rooflib's "direct") for all-to-all, send/recv, gather and scatter.
NATIVE_ALGORITHMS: dict[str, tuple[str, ...]] = {
    "all_reduce": ("ring", "tree", "nvls", "nvls_tree"),
    "all_gather": ("ring", "nvls"),
    "reduce_scatter": ("ring", "nvls"),
    "broadcast": ("ring",),
    "reduce": ("ring",),
    "all_to_all": ("direct",),
    "send_recv": ("direct",),
    "gather": ("direct",),
    "scatter": ("direct",),
}


class RackTier(SpecModel):
    """A second NVLink switch tier joining racks into one domain (the 576-GPU pod)."""

    gpus_per_rack: WholeNumber = Field(gt=0)
    uplink_fraction: Fraction = Field(description="rack uplink bandwidth over the GPUs' NVLink bandwidth")
    latency: Duration = Field(description="added by the second switch tier")


class ScaleUp(SpecModel):
    """The NVLink domain: every GPU reaches every other through ``planes`` switch chips."""

    switch: str = Field(description="NVSwitch generation (an interconnect name)")
    domain_gpus: WholeNumber = Field(gt=0, description="GPUs in one NVLink domain")
    planes: WholeNumber = Field(gt=0, description="switch chips each GPU connects to (per rack)")
    links_per_plane: tuple[WholeNumber, ...] = Field(description="NVLinks from each GPU to each plane")
    racks: RackTier | None = None

    @model_validator(mode="after")
    def _links_match_planes(self) -> ScaleUp:
        if len(self.links_per_plane) != self.planes:
            raise ValueError(f"links_per_plane has {len(self.links_per_plane)} entries but planes = {self.planes}")
        if any(n <= 0 for n in self.links_per_plane):
            raise ValueError("links_per_plane entries must be > 0")
        if self.racks is not None and self.domain_gpus % self.racks.gpus_per_rack:
            raise ValueError(
                f"domain_gpus = {self.domain_gpus} is not a multiple of racks.gpus_per_rack = "
                f"{self.racks.gpus_per_rack}"
            )
        return self


class ScaleOut(SpecModel):
    """Rail-optimised fat tree: NIC ``r`` of every node sits on rail ``r``; each rail has its own switches."""

    nic: str = Field(description="InfiniBand generation (an interconnect name)")
    nics_per_node: WholeNumber = Field(gt=0)
    host_link: str = Field(description="GPU to NIC link (an interconnect name, PCIe)")
    nodes_per_leaf: WholeNumber = Field(gt=0, description="nodes per scalable unit: one leaf per rail per unit")
    oversubscription: Annotated[float, Strict()] = Field(
        ge=1.0, allow_inf_nan=False, description="leaf downlink over uplink bandwidth (1 = non-blocking)"
    )
    source: str = Field(min_length=1)


class NodeCount(SpecModel):
    default: WholeNumber = Field(gt=0)
    max: WholeNumber = Field(gt=0)

    @model_validator(mode="after")
    def _default_le_max(self) -> NodeCount:
        if self.default > self.max:
            raise ValueError(f"default = {self.default} exceeds max = {self.max}")
        return self


class SystemSpec(SpecModel):
    kind: Literal["system"]
    name: str
    display_name: str
    description: str
    projection: bool = False
    sources: tuple[str, ...] = Field(min_length=1, description="sources for the structure itself")
    device: str
    library: str = Field(description="collective library parameters (a library name)")
    gpus_per_node: WholeNumber = Field(gt=0)
    nodes: NodeCount
    scale_up: ScaleUp
    scale_out: ScaleOut | None = None

    @model_validator(mode="after")
    def _shape(self) -> SystemSpec:
        per_node, domain = self.gpus_per_node, self.scale_up.domain_gpus
        if domain % per_node:
            raise ValueError(f"scale_up.domain_gpus = {domain} is not a multiple of gpus_per_node = {per_node}")
        nodes_per_domain = domain // per_node
        if self.nodes.max > nodes_per_domain and self.scale_out is None:
            raise ValueError(
                f"nodes.max = {self.nodes.max} spans several NVLink domains of {nodes_per_domain} nodes "
                "but no scale_out network is given"
            )
        if self.nodes.max > nodes_per_domain and self.nodes.max % nodes_per_domain:
            raise ValueError(
                f"nodes.max = {self.nodes.max} is not a whole number of NVLink domains of {nodes_per_domain} nodes"
            )
        return self


class ProtocolSpec(SpecModel):
    """A collective protocol regime (NCCL's LL, LL128, Simple): per-hop latency and usable bandwidth share."""

    bandwidth_fraction: Fraction = Field(description="share of the achievable link bandwidth carrying data")
    hop_latency: dict[LinkClass, Duration]
    max_bytes: Annotated[float, Strict()] | None = Field(
        default=None, gt=0, description="largest buffer this protocol is used for"
    )


class LibrarySpec(SpecModel):
    """Achievable rates and fixed costs of a collective library (NCCL) on one GPU generation."""

    kind: Literal["library"]
    name: str
    display_name: str
    launch_overhead: Duration = Field(description="host launch to kernel start, per call, stream launch")
    graph_launch_overhead: Duration = Field(description="the same inside a replayed CUDA graph")
    link_efficiency: dict[LinkClass, Fraction] = Field(
        description="achievable share of the raw per-direction link peak for the library's copy loops"
    )
    link_size_efficiency: SizeCurve | None = None
    algorithm_latency: dict[AlgorithmName, Duration] = Field(description="base latency per algorithm, per call")
    op_latency: dict[OpName, Duration] = Field(
        default_factory=dict,
        description="extra latency per call of one op (calibrated), added to its native algorithms",
    )
    op_efficiency: dict[OpName, Fraction] = Field(
        default_factory=dict,
        description="bandwidth share one op's native algorithms reach relative to the link efficiency (calibrated)",
    )
    native_algorithms: dict[OpName, tuple[AlgorithmName, ...]] = Field(
        default_factory=lambda: dict(NATIVE_ALGORITHMS),
        description="algorithms the library itself runs, per op (algorithm='library' chooses among these)",
    )
    protocols: dict[str, ProtocolSpec]
    nvls_efficiency: Fraction | None = None
    nvls_size_efficiency: SizeCurve | None = Field(
        default=None,
        description="NVLS efficiency against each rank's shard (S / n): many ranks split a buffer into small shards",
    )
    max_channels: Count | None = Field(
        default=None, description="most parallel rings / trees the library builds across NVLink domains"
    )

    @model_validator(mode="after")
    def _has_simple(self) -> LibrarySpec:
        if not self.protocols:
            raise ValueError("protocols must name at least one protocol")
        return self


class Provenance(SpecModel):
    date: str
    command: str
    gpu: str | None = None
    driver: str | None = None
    cuda: str | None = None
    nccl: str | None = None
    notes: str | None = None


class ProfileSpec(SpecModel):
    """Calibrated overrides of catalog figures: ``overrides`` maps dotted paths to replacement values.

    Paths start with ``device.``, ``library.``, ``system.`` or ``interconnect.<name>.``, e.g.
    ``device.transfer.tma.per_sm_bandwidth: {value: 21 GB/s, source: "measured: ..."}``.
    """

    kind: Literal["profile"]
    name: str
    system: str
    gpus: Count | None = None
    provenance: Provenance
    overrides: dict[str, Any]
    fit: dict[str, Any] | None = None
