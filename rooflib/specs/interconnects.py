"""Interconnect specs: NVLink generations, NVSwitch chips, PCIe, InfiniBand NICs (``hardware/interconnects/``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from rooflib.specs.devices import MechanismSpec
from rooflib.specs.figures import Bandwidth, Count, Duration, SpecModel, WholeNumber

__all__ = [
    "InfiniBandSpec",
    "InterconnectSpec",
    "NVLinkSpec",
    "NVSwitchSpec",
    "PCIeSpec",
    "RdmaSpecs",
]


class _InterconnectBase(SpecModel):
    kind: Literal["interconnect"]
    name: str
    display_name: str


class NVLinkSpec(_InterconnectBase):
    family: Literal["nvlink"]
    generation: WholeNumber = Field(ge=1)
    per_link_bandwidth: Bandwidth = Field(description="per link, per direction")
    latency: Duration = Field(description="one-way small-message latency GPU to GPU through one switch hop")


class NVSwitchSpec(_InterconnectBase):
    family: Literal["nvswitch"]
    generation: WholeNumber = Field(ge=1)
    link: str = Field(description="NVLink generation of its ports (an interconnect name)")
    ports: Count
    multicast: bool
    in_network_reduction: bool
    reduction_bandwidth: Bandwidth | None = Field(
        default=None,
        description="per-GPU throughput of in-switch reduction (NVLS all-reduce algbw ceiling); "
        "required when in_network_reduction is true",
    )
    latency: Duration = Field(description="added latency of one pass through the switch")

    @model_validator(mode="after")
    def _reduction_needs_rate(self) -> NVSwitchSpec:
        if self.in_network_reduction and self.reduction_bandwidth is None:
            raise ValueError("reduction_bandwidth is required when in_network_reduction is true")
        if self.in_network_reduction and not self.multicast:
            raise ValueError("in_network_reduction needs multicast (NVLS uses multimem addresses)")
        return self


class PCIeSpec(_InterconnectBase):
    family: Literal["pcie"]
    generation: WholeNumber = Field(ge=1)
    lanes: WholeNumber = Field(gt=0)
    bandwidth: Bandwidth = Field(description="per direction for all lanes, after encoding")
    latency: Duration


class RdmaSpecs(SpecModel):
    """GPUDirect RDMA through the NIC: how bytes reach a GPU in another NVLink domain.

    ``proxy``: a CPU proxy thread posts the RDMA writes the GPU kernel's SMs have staged (NCCL's network
    transport); ``gpu_initiated``: the GPU posts them itself (InfiniBand GPUDirect Async, as NVSHMEM and DeepEP
    use). Both follow :class:`MechanismSpec`: ``peak_fraction`` of the path's bottleneck (the NIC port, or PCIe),
    ``per_sm_bandwidth`` the rate one SM's staging or posting sustains, ``fixed_cost`` per message.
    """

    proxy: MechanismSpec
    gpu_initiated: MechanismSpec | None = None

    @model_validator(mode="after")
    def _driven_by_sms(self) -> RdmaSpecs:
        for name in ("proxy", "gpu_initiated"):
            mech = getattr(self, name)
            if mech is not None and mech.per_sm_bandwidth is None:
                raise ValueError(f"{name}.per_sm_bandwidth is required: the SMs stage or post the RDMA writes")
        return self


class InfiniBandSpec(_InterconnectBase):
    family: Literal["infiniband"]
    standard: Literal["HDR", "NDR", "XDR"]
    nic: str = Field(description="adapter model, e.g. ConnectX-7")
    port_bandwidth: Bandwidth = Field(description="per port, per direction")
    latency: Duration = Field(description="NIC to NIC through one switch, small message")
    switch_latency: Duration = Field(description="added by each further switch hop")
    switch_radix: Count = Field(description="ports per switch of this generation")
    rdma: RdmaSpecs = Field(description="GPUDirect RDMA transfer mechanisms through this NIC")


InterconnectSpec = Annotated[NVLinkSpec | NVSwitchSpec | PCIeSpec | InfiniBandSpec, Field(discriminator="family")]
