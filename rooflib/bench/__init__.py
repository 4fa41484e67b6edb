"""CUDA microbenchmarks that measure the real machine: sources in ``kernels/``, built by :mod:`.build`."""

from __future__ import annotations

from rooflib.bench.build import KERNELS, build

__all__ = ["KERNELS", "build"]
