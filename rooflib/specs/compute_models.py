"""Measured compute-model data of a device (``DeviceSpec.compute``): efficiencies as tables, not constants.

- ``memory_ops``: per op kind, the achieved share of ``hbm_bandwidth`` against bytes moved (every input and output
  once), operands from HBM; row-wise ops (norms, softmax, row sums) one curve per row length measured
  (``op@cols``);
  ``l2_resident``: the time with operands already in L2 over the time from HBM, by bytes moved;
- ``gemm``: the candidate tiles of a tuned GEMM library (the model picks the fastest per shape, as cuBLAS's
  heuristics do), the split-K factors it may use, the operand rate its mainloops draw on, fixed costs, and the
  share of the tensor rate left at the power limit (``sustained_share``);
- ``attention``: flash-attention query and key block sizes, the achieved share of the tensor peak per head size,
  mask and direction, and a fixed cost per kernel;
- ``programs``: the interval between two starts of a small program (a Triton block) on one SM: the floor of a
  launch of many small programs.

YAML (``hardware/devices/h200-sxm.yaml``)::

    compute:
      memory_ops:
        hbm:
          add: {points: [[768 KiB, 0.08], [3 GiB, 0.91]], source: "measured: ..."}
          softmax@1024: {points: [...], source: ...}
          softmax@8192: {points: [...], source: ...}
        l2_resident: {add: {points: [[768 KiB, 0.72], [48 MiB, 1.0]], source: ...}}
      gemm: {tiles: {pairs: [[8, 64], [128, 256], ...], k_bytes: 128, split_k: [1, 2, 4, 8]}, ...}
      attention: {block_q: 128, block_kv: 128, kernel_fixed: {...}, efficiency: {fwd-causal-128: 0.6, ...}, ...}
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from rooflib.specs.figures import Bandwidth, Duration, Fraction, SizeCurve, SpecModel, WholeNumber, name_of

__all__ = [
    "KERNEL_OP_KINDS",
    "MEMORY_OP_KINDS",
    "AttentionModelSpec",
    "ComputeModels",
    "GemmModelSpec",
    "GemmTiles",
    "MemoryOpsSpec",
    "PortSpec",
    "ProgramSlotsSpec",
    "attention_key",
    "curve_key",
    "program_floor",
]

KERNEL_OP_KINDS = (
    "fill",
    "index_select",
    "gather",
    "index_add",
    "scatter_add",
    "scatter_add_rows",
    "index_put",
    "sort",
    "sort_rows",
    "transpose",
    "cumsum",
    "fft",
    "rfft",
    "rfft_dim0",
    "cast_up",
    "cast_down",
    "strided_copy",
    "sum_dim0",
    "broadcast",
    "broadcast_fp32",
    "broadcast_cast",
    "conv_input",
    "conv_filter",
    "conv_output",
    "conv_depthwise",
)
"""The op classes the compute family's ``kernels`` part measures (:mod:`rooflib.compute.kernels`)."""

MEMORY_OP_KINDS = (
    "copy",
    "add",
    "mul",
    "gelu",
    "silu",
    "swiglu",
    "rmsnorm",
    "layernorm",
    "softmax",
    "sum",
    "topk",
    "gemm",
    "attention",
    *KERNEL_OP_KINDS,
)
"""Op kinds a memory curve may be given for (``gemm``: the weight-streaming side of GEMMs; ``attention``: decode;
``topk``: ``torch.topk`` along rows, its input bytes once). The op classes of the compute family's ``kernels``
part (:mod:`rooflib.bench.kernel_cases`), each against the bytes that benchmark counts: ``fill`` (bytes written),
``index_select`` (rows gathered: output twice and the int64 indices), ``gather`` (one index per element: the
same), ``index_add`` (rows added at indices: source three times and the indices), ``scatter_add`` (elements
added at random positions, atomics) and ``index_put`` (elements written at indices: the same), ``sort`` (one
flat array: keys in, keys and int64 indices out) and ``sort_rows`` (rows of at most 4096, each sorted in place
by one block: the same), ``transpose`` (a bf16 matrix made contiguous from its transpose: read and write; other
dtypes at the same element count), ``cumsum`` (along rows: read and write), ``fft`` (complex-to-complex along
the last dimension), ``rfft`` (real-to-complex along the last dimension) and ``rfft_dim0`` (along the first
dimension: strided signals) (input and output once)."""


def _curve_key(key: str) -> str:
    op, _, cols = key.partition("@")
    if op not in MEMORY_OP_KINDS:
        raise ValueError(f"unknown memory op kind {op!r} in {key!r}; valid: {', '.join(MEMORY_OP_KINDS)}")
    if cols and (not cols.isdigit() or int(cols) < 1):
        raise ValueError(f"{key!r}: after '@' give the row length, a whole number >= 1")
    return key


CurveKey = Annotated[str, AfterValidator(_curve_key)]
"""``op`` (a flat op) or ``op@cols`` (a row-wise op measured over rows of ``cols`` elements)."""
OpKindName = Annotated[str, name_of("memory op kind", MEMORY_OP_KINDS)]


def curve_key(op: str, cols: int | None = None) -> str:
    """The key of an op's curve: ``op``, or ``op@cols`` for a row-wise op."""
    return op if cols is None else f"{op}@{int(cols)}"


class MemoryOpsSpec(SpecModel):
    hbm: dict[CurveKey, SizeCurve] = Field(
        description="achieved share of hbm_bandwidth by bytes moved, operands from HBM (keys: op or op@cols)"
    )
    l2_resident: dict[OpKindName, SizeCurve] = Field(
        default_factory=dict, description="time with operands resident in L2 over the time from HBM, by bytes moved"
    )

    @model_validator(mode="after")
    def _one_kind_of_key(self) -> MemoryOpsSpec:
        flat = {k for k in self.hbm if "@" not in k}
        rowwise = {k.partition("@")[0] for k in self.hbm if "@" in k}
        both = flat & rowwise
        if both:
            raise ValueError(f"hbm: {', '.join(sorted(both))} given both with and without a row length")
        return self

    def curves(self, op: str) -> dict[int | None, SizeCurve]:
        """The curves of ``op`` by row length (``{None: curve}`` for a flat op; empty when none)."""
        out: dict[int | None, SizeCurve] = {}
        for key, curve in self.hbm.items():
            name, _, cols = key.partition("@")
            if name == op:
                out[int(cols) if cols else None] = curve
        return out


class GemmTiles(SpecModel):
    """Candidate output tiles ``(rows along m, columns along n)``, the bytes of A or B per row of a k step
    (``k_bytes``: 64 bf16 or 128 fp8 elements for 128), and the split-K factors the library may use."""

    pairs: tuple[tuple[WholeNumber, WholeNumber], ...] = Field(min_length=1)
    k_bytes: WholeNumber = Field(gt=0)
    split_k: tuple[WholeNumber, ...] = Field((1,), min_length=1)
    source: str = Field(min_length=1)

    @model_validator(mode="after")
    def _sane(self) -> GemmTiles:
        if any(v < 1 for pair in self.pairs for v in pair) or any(s < 1 for s in self.split_k):
            raise ValueError("tile sizes and split-K factors must be >= 1")
        if 1 not in self.split_k:
            raise ValueError("split_k must include 1 (no split)")
        if len(set(self.pairs)) != len(self.pairs):
            raise ValueError("a tile is listed twice")
        return self


class GemmModelSpec(SpecModel):
    """How a tuned GEMM runs: per work unit (a tile, or a K-slice of one) ``unit_overhead`` plus its output tile
    at the SM's share of ``epilogue_bandwidth`` plus, per k step, the larger of its FLOPs at the SM's share of
    ``tensor_peak x efficiency`` and its operand bytes at the SM's share of ``operand_bandwidth``; waves of units
    over the SMs; ``kernel_fixed`` per kernel and ``split_k_reduce`` per split-K reduction
    (:mod:`rooflib.compute.gemm_plan`)."""

    tiles: GemmTiles
    operand_bandwidth: Bandwidth = Field(description="rate at which all SMs together load A and B tiles")
    epilogue_bandwidth: Bandwidth = Field(description="rate at which all SMs together write output tiles")
    unit_overhead: Duration = Field(description="fixed prologue and epilogue time of one work unit")
    kernel_fixed: Duration = Field(description="device time of a kernel beyond its waves")
    split_k_reduce: Duration = Field(description="extra fixed time of a split-K reduction")
    partial_bandwidth: Bandwidth | None = Field(
        None,
        description="rate at which a split-K GEMM writes and reads back its fp32 partial sums; none: the HBM rate",
    )
    serial_fixed: bool = Field(
        False,
        description="true: the kernel's fixed and split-K reduction times add to the memory-bound time too (the "
        "waves take at least the bytes at the HBM rate); false: the whole compute time is max'ed against the "
        "memory time",
    )
    memory_latency: Duration | None = Field(
        None,
        description="fixed time a memory-bound GEMM adds to streaming its bytes at the HBM rate (the ramp of "
        "weight-streaming decode GEMMs); none: the HBM rate alone (or the device's measured gemm curve)",
    )
    memory_share: Fraction | None = Field(
        None,
        description="share of hbm_bandwidth a GEMM's operand stream reaches, where the device has no measured "
        "gemm curve (fitted on GEMM tables; a streaming copy's share is hbm_efficiency); none: hbm_efficiency",
    )
    efficiency: Fraction | None = Field(
        None,
        description="share of the unit's peak the mainloop reaches, for a model whose dtype has no "
        "dtype_efficiency of its own (the CUDA-core fp32 GEMMs of ``sgemm``); none: the device's dtype efficiency",
    )
    sustained_share: Fraction | None = Field(
        None,
        description="share of the block's tensor rate a GEMM keeps once the GPU has run at its power limit for a "
        "while (about 0.1 s of back-to-back large GEMMs): the block's figures are fitted on burst timings "
        "(NVIDIA's tables: a few replays from idle), programs run sustained (``duty``); none: no measured "
        "difference, sustained = burst",
    )
    quantize: dict[str, Duration] = Field(
        default_factory=dict,
        description="fixed device time of the activation quantisation a framework runs before a GEMM of this dtype "
        "(keys fp8, fp4; per call, beyond its pass over A), added only when asked (quantize_activations=True)",
    )

    @model_validator(mode="after")
    def _quantized_dtypes(self) -> GemmModelSpec:
        bad = sorted(set(self.quantize) - {"fp8", "fp4"})
        if bad:
            raise ValueError(f"quantize: keys must be fp8 or fp4, got {', '.join(bad)}")
        return self


def _attention_key(key: str) -> str:
    parts = key.split("-")
    ok = len(parts) == 3 and parts[0] in ("fwd", "bwd") and parts[1] in ("full", "causal") and parts[2].isdigit()
    if not ok or int(parts[2]) < 1:
        raise ValueError(f"attention efficiency key {key!r}: write DIRECTION-MASK-HEAD_DIM, e.g. fwd-causal-128")
    return key


AttentionKey = Annotated[str, AfterValidator(_attention_key)]


def attention_key(head_dim: int, causal: bool, backward: bool) -> str:
    """``fwd-causal-128`` and the like: the key of an attention efficiency."""
    return f"{'bwd' if backward else 'fwd'}-{'causal' if causal else 'full'}-{int(head_dim)}"


class AttentionModelSpec(SpecModel):
    """Flash attention as blocks: each (batch, head, query block) is a work unit that runs the key blocks it sees
    (all of them, or those up to its diagonal when causal) at ``efficiency x`` the tensor peak share of an SM; a
    query shorter than ``block_q`` runs in a block of its length rounded up to ``min_block_q`` (decode, which has
    no ``kernel_fixed``: its measured memory curve holds its fixed costs); ``wave_overhead``, where measured, is a
    prefill pass's time per wave of units. The backward pass adds its memory-bound pre- and post-processing
    kernels: its bytes at the ``copy`` rate (:mod:`rooflib.compute.attention`)."""

    block_q: WholeNumber = Field(gt=0)
    block_kv: WholeNumber = Field(gt=0)
    min_block_q: WholeNumber = Field(16, gt=0)
    kernel_fixed: Duration = Field(description="fixed time of a prefill pass, forward or backward")
    wave_overhead: Duration | None = Field(
        None, description="time per wave of work units over the SMs (a unit's prologue and epilogue), prefill"
    )
    efficiency: dict[AttentionKey, float] = Field(
        min_length=1, description="achieved share of the tensor peak on executed blocks, by DIRECTION-MASK-HEAD_DIM"
    )
    source: str = Field(min_length=1)

    @model_validator(mode="after")
    def _fractions(self) -> AttentionModelSpec:
        bad = {k: v for k, v in self.efficiency.items() if not 0 < v <= 1}
        if bad:
            raise ValueError(f"efficiencies must be in (0, 1]: {bad}")
        return self


CarriedModel = Literal["sgemm", "attention", "programs"]
"""Compute models a device may carry as they are from the device it carries its memory-op curves from."""


class ProgramSlotsSpec(SpecModel):
    """Kernels of many small programs (a Triton launch of a grid of blocks): an SM starts one program about every
    ``time`` however few bytes each moves and however many warps it has (1 to 4 warps measured alike), so P
    programs take at least ``P / SMs x time`` (:func:`program_floor`)."""

    time: Duration = Field(description="the interval between two program starts on one SM")
    source: str = Field(min_length=1, description="where the form (a start interval, not a residency limit) comes from")


def program_floor(spec: ProgramSlotsSpec, sms: int, programs: int) -> float:
    """Seconds a launch of ``programs`` programs takes at least on ``sms`` SMs.

    >>> spec = ProgramSlotsSpec(time={"value": "80 ns", "source": "s"}, source="s")
    >>> round(program_floor(spec, 132, 2**20) * 1e6, 1)
    635.5
    """
    return float(programs) / float(sms) * spec.time.value


class PortSpec(SpecModel):
    """Where a device's memory-op curves come from when it has none measured: another catalog device's, carried
    to this one's HBM rate (:mod:`rooflib.specs.port`); ``models`` names the compute models that device measured
    which this one takes as they are (the same SMs at the same clocks: CUDA-core fp32 GEMMs, attention)."""

    device: str = Field(min_length=1, description="the catalog device whose measured memory_ops are carried")
    source: str = Field(min_length=1, description="why that device stands for this one")
    models: tuple[CarriedModel, ...] = Field(
        (), description="compute models of that device carried as they are, where this device has none of its own"
    )


class ComputeModels(SpecModel):
    memory_ops: MemoryOpsSpec | None = None
    memory_ops_from: PortSpec | None = Field(
        None, description="carry another device's measured memory_ops here (the catalog fills memory_ops from it)"
    )
    gemm: GemmModelSpec | None = None
    sgemm: GemmModelSpec | None = Field(
        None, description="fp32 GEMMs on CUDA cores (TF32 off, PyTorch's default): the same tile model, its own tiles"
    )
    attention: AttentionModelSpec | None = None
    programs: ProgramSlotsSpec | None = Field(
        None, description="the floor of a launch of many small programs (Triton kernels whose grid is known)"
    )
