"""System, collective-library and profile specs (``hardware/systems/``, ``hardware/libraries/``, profiles)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, Strict, model_validator

from rooflib.conventions import ALGORITHMS, OPS
from rooflib.specs.figures import (
    Bandwidth,
    Bytes,
    Count,
    Duration,
    Fraction,
    LogLogCurve,
    Ratio,
    SizeCurve,
    SpecModel,
    WholeNumber,
    name_of,
)
from rooflib.units import parse_quantity

__all__ = [
    "LATENCY_FIGURES",
    "PORTABLE_LIBRARY",
    "LibrarySpec",
    "LinkClass",
    "NodeCount",
    "ProfileSpec",
    "ProtocolSpec",
    "Provenance",
    "RackTier",
    "RankCurve",
    "ScaleOut",
    "ScaleUp",
    "SystemSpec",
    "scale_latency",
]

LinkClass = Literal["nvlink", "pcie", "ib"]
AlgorithmName = Annotated[str, name_of("algorithm", ALGORITHMS)]
OpName = Annotated[str, name_of("collective", OPS)]
RankKey = Annotated[str, name_of("rank_efficiency key", ("default", *OPS))]

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


class RankCurve(LogLogCurve):
    """Bus efficiency against the ranks in a group, log-log interpolated between points, clamped at both ends.

    A ring or tree over few ranks runs fewer channels and shorter pipelines than over many, so NCCL reaches a
    smaller share of the link at 2 ranks than at 8 (measured: 65-75 % of bus bandwidth at 2 ranks). The curve
    multiplies the link efficiency of the library's own algorithms; it is dimensionless, so it carries from one
    GPU generation to the next.

    YAML: ``{points: [[2, 0.78], [4, 0.9], [8, 1.0]], source: ...}``.
    """

    x_name: ClassVar[str] = "ranks"
    x_plural: ClassVar[str] = "ranks"
    x_least: ClassVar[float] = 2.0
    x_inclusive: ClassVar[bool] = True


class LibrarySpec(SpecModel):
    """Achievable rates and fixed costs of a collective library (NCCL) on one GPU generation."""

    kind: Literal["library"]
    name: str
    display_name: str
    launch_overhead: Duration = Field(description="host launch to kernel start, per call, stream launch")
    host_call: Duration | None = Field(
        default=None,
        description="host time of one library call from C (nccl-tests' loop: enqueue and kernel launch); "
        "back-to-back stream calls cost at least this; unset: the device's host.nccl (a torch.distributed call)",
    )
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
    p2p_ll_threshold: Bytes | None = Field(
        default=None,
        description="point-to-point operations (all-to-all, send/recv, gather, scatter: grouped sends and receives) "
        "of at most this many bytes per peer run the LL protocol, larger ones Simple (NCCL's P2P_LL_THRESHOLD); "
        "none: the fastest protocol at each size, as for collectives",
    )
    p2p_channels: Count | None = Field(
        default=None,
        description="channels (thread blocks) NCCL's point-to-point engine spreads one communicator's grouped sends "
        "and receives over (p2pnChannels: pow2Up(min(nChannels, NCCL_MAX_P2P_NCHANNELS)), src/graph/paths.cc); "
        "each peer gets this many over the ranks, halved to a power of two (src/enqueue.cc); none: no per-peer cap",
    )
    p2p_chunk_size: Bytes | None = Field(
        default=None,
        description="NCCL's point-to-point chunk over NVLink (NCCL_P2P_NVL_CHUNKSIZE): a peer's bytes split into "
        "parts of at least chunk / 8, one channel each, up to the peer's share of p2p_channels, then more while a "
        "part exceeds 32 chunks (src/enqueue.cc)",
    )
    p2p_cta_bandwidth: Bandwidth | None = Field(
        default=None,
        description="bytes per second one thread block of NCCL's point-to-point kernel moves to its peer (calibrated): "
        "a peer's transfer runs no faster than its channels times this",
    )
    latency_scale: Ratio | None = Field(
        default=None,
        description="this generation's device-side latencies (kernel start, per-algorithm base, per-hop) over "
        "Hopper's, the unit library fits work in: the latency figures of this file already include it; "
        "rooflib.calibrate.library_tables divides tables' latencies by it and apply_library multiplies fitted "
        "ones by it; none: 1 (Hopper, or not known)",
    )
    rank_efficiency: dict[RankKey, RankCurve] = Field(
        default_factory=dict,
        description="bus efficiency of the library's own algorithms against the group's ranks, per op "
        "('default': ops without their own curve); none: 1 at every rank count",
    )

    @model_validator(mode="after")
    def _has_simple(self) -> LibrarySpec:
        if not self.protocols:
            raise ValueError("protocols must name at least one protocol")
        return self

    @property
    def latency_factor(self) -> float:
        """:attr:`latency_scale` as a number (1.0 when unset)."""
        return 1.0 if self.latency_scale is None else self.latency_scale.value

    def rank_factor(self, op: str, ranks: int) -> float:
        """The :attr:`rank_efficiency` of ``op`` at ``ranks`` ranks (1.0 when no curve applies)."""
        curve = self.rank_efficiency.get(op) or self.rank_efficiency.get("default")
        return 1.0 if curve is None else float(curve(ranks))


PORTABLE_LIBRARY = (
    "link_efficiency",
    "link_size_efficiency",
    "op_efficiency",
    "rank_efficiency",
    "protocols",
    "nvls_efficiency",
    "nvls_size_efficiency",
    "algorithm_latency",
    "op_latency",
    "p2p_cta_bandwidth",
)
"""``library.*`` figures of a profile that carry to another system: dimensionless shares and curves, the
library's per-step and per-call latencies, and its point-to-point kernel's rate per thread block. Host costs
(``launch_overhead``, ``host_call``), the kernel start in a graph (``graph_launch_overhead``, a property of the
machine's GPU and driver) and the machine's algorithm set (``native_algorithms``: NVLS off on the measured machine)
stay with the machine."""
_ENVIRONMENT = ("library.native_algorithms", "library.launch_overhead", "library.host_call")


LATENCY_FIGURES = ("graph_launch_overhead", "algorithm_latency.", "op_latency", "hop_latency.nvlink")
"""Library figures (paths without ``library.``) that are device-side latencies: a generation's
:attr:`LibrarySpec.latency_scale` multiplies them."""


def scale_latency(path: str, figure: Any, scale: float, source: str | None = None) -> Any:
    """``figure`` (an override value, ``{value: "1.2 us", source: ...}``) times ``scale`` when ``path`` (without
    ``library.``) is a device latency (:data:`LATENCY_FIGURES`); anything else unchanged. ``source``: the scaled
    figure's new source (default: the old one).

    >>> scale_latency("algorithm_latency.ring", {"value": "2 us", "source": "x"}, 1.5)
    {'value': '3 us', 'source': 'x'}
    """
    if scale == 1.0 or not isinstance(figure, dict) or not any(k in path for k in LATENCY_FIGURES):
        return figure
    if "value" not in figure:  # a mapping of figures (op_latency: one per op)
        return {k: scale_latency(path, v, scale, source) for k, v in figure.items()}
    value = parse_quantity(figure["value"], "time") * scale
    return {**figure, "value": f"{value * 1e6:.4g} us", "source": source or figure["source"]}


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

    def portable(self, *, other_system: bool, other_count: bool) -> tuple[ProfileSpec, list[str]]:
        """This profile less what does not carry, and the dropped override paths.

        To another system (another GPU or generation): only ``library.*`` figures in :data:`PORTABLE_LIBRARY`.
        To another GPU count of the same system: everything but the measured machine's environment (NVLink
        multicast and in-network reduction state, the library's algorithm set) and its host costs (the library's
        stream launch and call costs)."""

        def keep(path: str) -> bool:
            if other_system:
                head, _, rest = path.partition(".")
                return head == "library" and rest.split(".", 1)[0] in PORTABLE_LIBRARY
            if other_count:
                if path.startswith("interconnect.") and path.rsplit(".", 1)[-1] in (
                    "multicast",
                    "in_network_reduction",
                ):
                    return False
                return path not in _ENVIRONMENT
            return True

        kept = {k: v for k, v in self.overrides.items() if keep(k)}
        dropped = [k for k in self.overrides if k not in kept]
        return self.model_copy(update={"overrides": kept}), dropped
