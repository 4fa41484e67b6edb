"""Plots of rooflib's predictions (matplotlib), at the edge of the library: model layers never import this.

Display objects in the style of scikit-learn: the object stores computed data; ``plot(ax=None)`` draws it
(making a figure only without ``ax``) and returns itself; ``from_system(...)`` computes then plots;
``savefig(path)`` writes a file, plotting off-screen on the Agg canvas first when needed.

>>> import rooflib
>>> from rooflib.plot import MechanismMapDisplay, file_axes
>>> d = MechanismMapDisplay.from_system(rooflib.load_system("hgx-h100"), ax=file_axes())
>>> "copy_engine" in d.mechanisms
True
"""

from __future__ import annotations

from rooflib.plot._base import Display, NothingToPlotError, file_axes, new_axes
from rooflib.plot.collective import CollectiveBandwidthDisplay, peak_link_bandwidth
from rooflib.plot.comm import CommPoint, CommRooflineDisplay
from rooflib.plot.groups import CollectiveGroupsDisplay
from rooflib.plot.kernels import Kernel, KernelPoint, as_kernels, example_kernels, place_kernels
from rooflib.plot.mechanism import MechanismMapDisplay
from rooflib.plot.roofline import HierarchicalRooflineDisplay
from rooflib.plot.timeline import TimelineDisplay
from rooflib.plot.whatif import WhatIfDisplay, WhatIfSweepDisplay

__all__ = [
    "CollectiveBandwidthDisplay",
    "CollectiveGroupsDisplay",
    "CommPoint",
    "CommRooflineDisplay",
    "Display",
    "HierarchicalRooflineDisplay",
    "Kernel",
    "KernelPoint",
    "MechanismMapDisplay",
    "NothingToPlotError",
    "TimelineDisplay",
    "WhatIfDisplay",
    "WhatIfSweepDisplay",
    "as_kernels",
    "example_kernels",
    "file_axes",
    "new_axes",
    "peak_link_bandwidth",
    "place_kernels",
]
