"""Kernels as points on a roofline: per-GPU FLOPs, HBM bytes and network bytes per link class.

A kernel is ``(name, flops, hbm_bytes, net_bytes)`` with ``net_bytes`` a mapping such as
``{"nvlink": 3.6e8, "ib": 0}`` (bytes one GPU sends over each link class, one direction). Plain tuples work
wherever a :class:`Kernel` is accepted.

>>> k = Kernel("gemm", 1e12, 1e9, {"nvlink": 1e8})
>>> k.flops / k.hbm_bytes
1000.0
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

from rooflib.errors import RooflibError
from rooflib.roof import roofline
from rooflib.specs.devices import DType
from rooflib.specs.resolve import System

__all__ = ["Kernel", "KernelLike", "KernelPoint", "as_kernels", "example_kernels", "place_kernels"]


class Kernel(NamedTuple):
    """One kernel on one GPU: FLOPs, HBM bytes and network bytes per link class (SI units)."""

    name: str
    flops: float
    hbm_bytes: float
    net_bytes: Mapping[str, float]


KernelLike = Kernel | tuple[str, float, float, Mapping[str, float]]


class KernelPoint(NamedTuple):
    """Where a kernel sits: FLOP per byte at each level (hbm and link classes) and FLOP/s at its bound."""

    name: str
    intensity: dict[str, float]
    attainable: float
    bound_s: float
    limiter: str


def as_kernels(items: Iterable[KernelLike]) -> list[Kernel]:
    """Normalise tuples to :class:`Kernel`, checking the shape of each."""
    out = []
    for item in items:
        if len(item) != 4:
            raise RooflibError(f"a kernel is (name, flops, hbm_bytes, net_bytes), got {item!r}")
        name, flops, hbm, net = item
        if not isinstance(net, Mapping):
            raise RooflibError(f"kernel {name!r}: net_bytes must map link class to bytes, got {net!r}")
        out.append(Kernel(str(name), float(flops), float(hbm), {str(k): float(v) for k, v in net.items()}))
    return out


def place_kernels(
    system: System, kernels: Iterable[KernelLike], *, dtype: DType = "bf16", achievable: bool = False
) -> list[KernelPoint]:
    """Place every kernel on the communication-aware roofline of ``system`` (see :func:`rooflib.roof`)."""
    points = []
    for k in as_kernels(kernels):
        r = roofline(
            system, flops=k.flops, hbm_bytes=k.hbm_bytes, net_bytes=k.net_bytes, dtype=dtype, achievable=achievable
        )
        intensity = {"hbm": r.intensity_hbm, **r.intensity_net}
        points.append(KernelPoint(k.name, intensity, r.attainable_flops, r.bound_s, r.limiter))
    return points


def example_kernels(system: System, *, tokens: int = 8192, hidden: int = 8192, ffn: int = 28672) -> list[Kernel]:
    """A few tensor-parallel transformer kernels (bf16) on the system's NVLink group, for plots and reports.

    With n = min(8, NVLink domain) GPUs, M = ``tokens``, H = ``hidden``, F = ``ffn`` and 2-byte elements, per GPU:

    - AG+GEMM: all-gather X (M x H), then X @ W (H x F/n): 2 M H F/n FLOPs, sends 2 M H (n-1)/n bytes.
    - GEMM+RS: attention output projection Y (M x H/n) @ W (H/n x H), reduce-scatter the M x H output:
      2 M H H/n FLOPs, sends 2 M H (n-1)/n bytes.
    - AR+RMSNorm: all-reduce an M x H activation (two-shot: 2 x 2 M H (n-1)/n bytes) and normalise (4 FLOP/elt).
    - with InfiniBand, a weight-gradient GEMM (2 M H H) whose H x H gradient is all-reduced over the NICs.
    """
    n = max(2, min(8, system.domain_gpus))
    m, h, f = float(tokens), float(hidden), float(ffn)
    share = (n - 1) / n
    gemm_flops = 2 * m * h * f / n
    gemm_hbm = 2 * (m * h + h * f / n + m * f / n)
    proj_flops = 2 * m * h * h / n
    proj_hbm = 2 * (m * h / n + h * h / n + m * h)
    out = [
        Kernel("AG+GEMM", gemm_flops, gemm_hbm, {"nvlink": 2 * m * h * share}),
        Kernel("GEMM+RS", proj_flops, proj_hbm, {"nvlink": 2 * m * h * share}),
        Kernel("AR+RMSNorm", 4 * m * h, 2 * 2 * m * h, {"nvlink": 2 * 2 * m * h * share}),
    ]
    if system.spec.scale_out is not None:
        grad = 2 * h * h
        out.append(Kernel("wgrad GEMM+AR (IB)", 2 * m * h * h, 2 * (2 * m * h + h * h), {"ib": 2 * grad * share}))
    return out
