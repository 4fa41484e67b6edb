"""Device (GPU) specs. One YAML file per device under ``hardware/devices/``."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from rooflib.specs.compute_models import ComputeModels
from rooflib.specs.figures import (
    Bandwidth,
    Bytes,
    Count,
    Duration,
    FlopRate,
    Fraction,
    Frequency,
    Ratio,
    SizeCurve,
    SpecModel,
    WholeNumber,
    name_of,
)

__all__ = [
    "DTYPES",
    "DType",
    "DeviceSpec",
    "GemmTile",
    "HostSpec",
    "MechanismSpec",
    "MechanismSpecs",
    "NVLinkPort",
    "TensorPeaks",
    "VectorPeaks",
]

DType = Literal["fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "fp4"]
DTYPES: tuple[DType, ...] = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "fp4")
DTypeName = Annotated[str, name_of("dtype", DTYPES)]


class TensorPeaks(SpecModel):
    """Dense tensor-core peaks in FLOP/s (no structured sparsity). Absent means the device lacks the type."""

    fp64: FlopRate | None = None
    tf32: FlopRate | None = None
    bf16: FlopRate | None = None
    fp16: FlopRate | None = None
    fp8: FlopRate | None = None
    fp4: FlopRate | None = None


class VectorPeaks(SpecModel):
    """CUDA-core (non-tensor) peaks in FLOP/s, counting an FMA as two FLOPs."""

    fp64: FlopRate
    fp32: FlopRate
    bf16: FlopRate | None = None
    fp16: FlopRate | None = None


class NVLinkPort(SpecModel):
    """The GPU's NVLink: which generation (an interconnect in the catalog) and how many links."""

    link: str = Field(description="interconnect name, e.g. nvlink4")
    links: Count


class MechanismSpec(SpecModel):
    """How one transfer mechanism moves a message to a peer GPU (ParallelKittens, section 3).

    time(bytes, sms) = fixed_cost + bytes / (min(peak_fraction * link, sms * per_sm_bandwidth) * size_efficiency)
    """

    fixed_cost: Duration
    per_sm_bandwidth: Bandwidth | None = Field(
        default=None, description="rate one SM drives; None for mechanisms that use no SMs (copy engine)"
    )
    peak_fraction: Fraction
    reduce_peak_fraction: Fraction | None = Field(
        default=None, description="large-message fraction of the link when adding into peer memory (TMA add, red)"
    )
    pull_peak_fraction: Fraction | None = Field(
        default=None, description="large-message fraction when the receiver reads from the peer (pull) instead"
    )
    size_efficiency: SizeCurve | None = None
    piece_cost: Duration | None = Field(
        default=None,
        description="extra time of each further piece when a transfer is cut into pieces that each signal their"
        " arrival (a pipelined copy engine); None: fixed_cost",
    )


class MechanismSpecs(SpecModel):
    copy_engine: MechanismSpec
    tma: MechanismSpec | None = None
    ldst: MechanismSpec
    multimem: MechanismSpec | None = None

    @model_validator(mode="after")
    def _copy_engine_uses_no_sms(self) -> MechanismSpecs:
        if self.copy_engine.per_sm_bandwidth is not None:
            raise ValueError("copy_engine.per_sm_bandwidth must be absent: the copy engine uses no SMs")
        for name in ("tma", "ldst", "multimem"):
            mech = getattr(self, name)
            if mech is not None and mech.per_sm_bandwidth is None:
                raise ValueError(f"{name}.per_sm_bandwidth is required: {name} is driven by SMs")
        return self


class GemmTile(SpecModel):
    """Default output tile of a tuned GEMM kernel on this device, for tile and wave quantisation."""

    m: WholeNumber = Field(gt=0, le=65536)
    n: WholeNumber = Field(gt=0, le=65536)
    k: WholeNumber = Field(gt=0, le=65536)
    stages: WholeNumber = Field(4, ge=1, description="shared-memory pipeline stages of the mainloop, (m + n) x k each")
    compute_registers: WholeNumber = Field(
        0, ge=0, description="32-bit registers the kernel's own warps hold per SM (0: unknown, not checked)"
    )
    source: str = Field(min_length=1)


class HostSpec(SpecModel):
    """What the host pays to issue work to this device (PyTorch eager dispatch included), per call.

    The timeline (``rooflib.program.timeline``) keeps the host busy this long per op; the device starts an op
    ``DeviceSpec.kernel_launch`` after its issue when it is idle. Calibrate with ``rooflib bench host``.
    """

    kernel: Duration = Field(description="one eager PyTorch op launching one kernel")
    cublas: Duration = Field(description="one eager GEMM through cuBLAS (heuristic lookup included)")
    nccl: Duration = Field(description="one collective through torch.distributed and NCCL's enqueue")
    sync: Duration = Field(description="a host wait on the device once the device is done (.item(), .cpu())")
    graph_launch: Duration = Field(description="launching one CUDA-graph replay")
    kernel_gap: Duration = Field(description="device-side gap between two kernels queued on a stream (eager or graph)")
    queued_gap: Duration | None = Field(
        None,
        description="device-side gap between two eagerly launched kernels already queued on a stream, where it is"
        " measured apart from a graph's (the host family's `queued` case); eager timelines use it for kernel_gap",
    )
    queued_event: Duration | None = Field(
        None,
        description="device-side time a timing CUDA event recorded on a stream of queued eager kernels adds (the host"
        " family's `queued_event` case); eager timelines pay it once per iteration, as ParallelKernelBench's loop"
        " records one after every call",
    )
    ops: dict[str, Duration] = Field(
        default_factory=dict,
        description="host cost of one eager call by the aten op it dispatches (aten.topk, aten._to_copy, ...), where"
        " it differs from its kind's (kernel, cublas); traced ops are named by their aten op",
    )
    view: Duration | None = Field(
        None, description="one call that launches nothing (a view, transpose, split, empty): dispatch only"
    )
    iteration: Duration | None = Field(
        None,
        description="what a timed loop adds per iteration: the next input group, the program's call and a CUDA event"
        " record (ParallelKernelBench's per-iteration events; the programs family)",
    )

    @property
    def eager_gap(self) -> float:
        """Seconds between two eagerly launched kernels queued on a stream: ``queued_gap`` where measured, else
        ``kernel_gap``."""
        return self.kernel_gap.value if self.queued_gap is None else self.queued_gap.value


class DeviceSpec(SpecModel):
    kind: Literal["device"]
    name: str
    display_name: str
    architecture: str
    compute_capability: str
    sms: Count
    boost_clock: Frequency
    tensor: TensorPeaks
    vector: VectorPeaks
    register_file_per_sm: Bytes
    shared_memory_per_sm: Bytes
    l2_size: Bytes
    l2_bandwidth: Bandwidth
    hbm_size: Bytes
    hbm_bandwidth: Bandwidth
    hbm_efficiency: Fraction = Field(description="achievable fraction of hbm_bandwidth for a streaming copy")
    tensor_efficiency: Fraction = Field(description="achievable fraction of the tensor peak for a large GEMM")
    dtype_efficiency: dict[DTypeName, Fraction] = Field(
        default_factory=dict, description="per-dtype achievable GEMM fraction where it differs (e.g. fp8; calibrated)"
    )
    copy_engines: Count
    nvlink: NVLinkPort
    pcie: str = Field(description="host interface, an interconnect name")
    transfer: MechanismSpecs
    gemm_tile: GemmTile
    sync_intra_sm: Duration = Field(description="mbarrier synchronisation inside one SM")
    sync_inter_sm: Duration = Field(description="synchronisation between SMs through global memory")
    kernel_launch: Duration = Field(description="host launch to kernel start, stream-ordered")
    host: HostSpec | None = Field(None, description="host issue costs per call (None: not given, see HostSpec)")
    operand_latency: Duration | None = Field(
        None, description="loaded latency of a bulk operand load from L2 into shared memory, all SMs streaming"
    )
    hbm_per_sm: Bandwidth | None = Field(
        None,
        description="the HBM rate one SM streams (bulk loads, enough bytes in flight): with hbm_sm_sharpness, "
        "the rate of a memory-bound kernel on a few SMs (rooflib.compute.memory.sm_stream_share)",
    )
    hbm_sm_sharpness: Ratio | None = Field(
        None,
        description="p of the smooth minimum (k r)^-p + R^-p of k SMs' stream rate and the GPU's (a larger p: "
        "a sharper knee)",
    )
    compute: ComputeModels | None = Field(
        None,
        description="measured compute-model tables: memory ops, GEMM tiles, attention (rooflib.specs.compute_models)",
    )

    def tensor_peak(self, dtype: DType) -> float | None:
        """Dense tensor-core FLOP/s for ``dtype`` or None when absent (fp32 maps to tf32 only if asked)."""
        fig = getattr(self.tensor, dtype, None) if dtype != "fp32" else None
        return None if fig is None else fig.value

    def gemm_efficiency(self, dtype: str) -> float:
        """Achievable share of the tensor peak for ``dtype`` (``dtype_efficiency``, else ``tensor_efficiency``)."""
        fig = self.dtype_efficiency.get(dtype)
        return (fig or self.tensor_efficiency).value

    def vector_peak(self, dtype: DType) -> float | None:
        fig = getattr(self.vector, dtype, None)
        return None if fig is None else fig.value
