"""Interconnect specs: NVLink generations, NVSwitch chips, PCIe, InfiniBand NICs (``hardware/interconnects/``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from rooflib.specs.figures import Bandwidth, Count, Duration, SpecModel

__all__ = [
    "InfiniBandSpec",
    "InterconnectSpec",
    "NVLinkSpec",
    "NVSwitchSpec",
    "PCIeSpec",
]


class _InterconnectBase(SpecModel):
    kind: Literal["interconnect"]
    name: str
    display_name: str


class NVLinkSpec(_InterconnectBase):
    family: Literal["nvlink"]
    generation: int = Field(ge=1)
    per_link_bandwidth: Bandwidth = Field(description="per link, per direction")
    latency: Duration = Field(description="one-way small-message latency GPU to GPU through one switch hop")


class NVSwitchSpec(_InterconnectBase):
    family: Literal["nvswitch"]
    generation: int = Field(ge=1)
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
    generation: int = Field(ge=1)
    lanes: int = Field(gt=0)
    bandwidth: Bandwidth = Field(description="per direction for all lanes, after encoding")
    latency: Duration


class InfiniBandSpec(_InterconnectBase):
    family: Literal["infiniband"]
    standard: Literal["HDR", "NDR", "XDR"]
    nic: str = Field(description="adapter model, e.g. ConnectX-7")
    port_bandwidth: Bandwidth = Field(description="per port, per direction")
    latency: Duration = Field(description="NIC to NIC through one switch, small message")
    switch_latency: Duration = Field(description="added by each further switch hop")
    switch_radix: Count = Field(description="ports per switch of this generation")


InterconnectSpec = Annotated[NVLinkSpec | NVSwitchSpec | PCIeSpec | InfiniBandSpec, Field(discriminator="family")]
