"""Hardware specs: pydantic models for the YAML catalog, the catalog loader and system resolution."""

from rooflib.specs.catalog import Catalog, default_catalog
from rooflib.specs.devices import DTYPES, DeviceSpec, DType, MechanismSpec
from rooflib.specs.figures import Figure, SizeCurve
from rooflib.specs.interconnects import InfiniBandSpec, NVLinkSpec, NVSwitchSpec, PCIeSpec
from rooflib.specs.resolve import System, load_system, without_multicast
from rooflib.specs.systems import LibrarySpec, LinkClass, ProfileSpec, SystemSpec

__all__ = [
    "DTYPES",
    "Catalog",
    "DType",
    "DeviceSpec",
    "Figure",
    "InfiniBandSpec",
    "LibrarySpec",
    "LinkClass",
    "MechanismSpec",
    "NVLinkSpec",
    "NVSwitchSpec",
    "PCIeSpec",
    "ProfileSpec",
    "SizeCurve",
    "System",
    "SystemSpec",
    "default_catalog",
    "load_system",
    "without_multicast",
]
