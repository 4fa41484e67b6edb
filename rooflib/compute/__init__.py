"""Compute and memory costs: GEMM (tile and wave quantisation), attention, elementwise and normalisation.

Every model returns a :class:`ComputeCost` (FLOPs, HBM bytes, seconds) on tensor or vector units of one
device, per dtype, at rates read from the device spec (:class:`Rates`). SI units throughout.
"""

from rooflib.compute.attention import (
    BACKWARD_FLOP_RATIO,
    attention,
    attention_blocks,
    attention_bytes,
    attention_efficiency,
    attention_flops,
)
from rooflib.compute.cost import ComputeCost, roofline_cost
from rooflib.compute.elementwise import (
    ELEMENTWISE_OPS,
    NORMALIZATIONS,
    ElementwiseOp,
    Normalization,
    OpCounts,
    elementwise,
    elementwise_op,
    normalization,
    reduction,
)
from rooflib.compute.gemm import (
    gemm,
    gemm_bytes,
    gemm_flops,
    gemm_quantization,
    gemm_times,
    gemm_unit,
)
from rooflib.compute.gemm_plan import TileChoice, choose_tiles
from rooflib.compute.memory import memory_efficiency, memory_rate, memory_time
from rooflib.compute.rates import (
    ComputeError,
    Rates,
    Unit,
    UnsupportedDTypeError,
    bytes_per_element,
    check_dtype,
    resolve_sms,
)
from rooflib.compute.tiling import GemmQuantization, TileShape

__all__ = [
    "BACKWARD_FLOP_RATIO",
    "ELEMENTWISE_OPS",
    "NORMALIZATIONS",
    "ComputeCost",
    "ComputeError",
    "ElementwiseOp",
    "GemmQuantization",
    "Normalization",
    "OpCounts",
    "Rates",
    "TileChoice",
    "TileShape",
    "Unit",
    "UnsupportedDTypeError",
    "attention",
    "attention_blocks",
    "attention_bytes",
    "attention_efficiency",
    "attention_flops",
    "bytes_per_element",
    "check_dtype",
    "choose_tiles",
    "elementwise",
    "elementwise_op",
    "gemm",
    "gemm_bytes",
    "gemm_flops",
    "gemm_quantization",
    "gemm_times",
    "gemm_unit",
    "memory_efficiency",
    "memory_rate",
    "memory_time",
    "normalization",
    "reduction",
    "resolve_sms",
    "roofline_cost",
]
