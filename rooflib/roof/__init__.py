"""Communication-aware roofline: bound, no-overlap sum, intensities and ridge points."""

from rooflib.roof.model import Roofline, Roofs, roofline, roofs

__all__ = ["Roofline", "Roofs", "roofline", "roofs"]
