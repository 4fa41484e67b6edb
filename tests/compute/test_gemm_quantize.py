"""The GEMM model's figures fitted on aiconfigurator's tables: activation quantisation (fp8 / fp4), the memory
side's latency, split-K partial sums at their own rate, fixed costs serial to the memory side, and the held-out
devices' derived figures."""

from __future__ import annotations

import numpy as np
import pytest

from rooflib.compute.gemm import gemm, gemm_bytes, gemm_times, quantize_time
from rooflib.specs import DeviceSpec, default_catalog
from rooflib.specs.compute_models import GemmModelSpec
from rooflib.specs.figures import Bandwidth, Duration

CATALOG = default_catalog()


def _model(dev: DeviceSpec) -> GemmModelSpec:
    assert dev.compute is not None and dev.compute.gemm is not None
    return dev.compute.gemm


def _with(dev: DeviceSpec, **update: object) -> DeviceSpec:
    assert dev.compute is not None
    gemm_model = _model(dev).model_copy(update=update)
    return dev.model_copy(update={"compute": dev.compute.model_copy(update={"gemm": gemm_model})})


def test_quantisation_is_opt_in_and_adds_its_fixed_cost_and_pass() -> None:
    dev = CATALOG.device("h100-sxm5")
    fixed = _model(dev).quantize["fp8"].value
    plain = gemm(dev, 1, 4096, 4096, "fp8").time_s
    quant = gemm(dev, 1, 4096, 4096, "fp8", quantize_activations=True).time_s
    a_pass = 4096 * 3.0 / (dev.hbm_bandwidth.value * dev.hbm_efficiency.value)  # bf16 in, fp8 out
    assert quant - plain == pytest.approx(fixed + a_pass)
    arr = gemm_times(dev, [1, 1], 4096, 4096, "fp8", quantize_activations=True)
    assert arr[0] == pytest.approx(quant)
    assert float(quantize_time(dev, 1, 4096, "bf16")) == 0.0  # bf16 is not quantised


def test_memory_bound_gemm_pays_its_fixed_costs_and_latency_only_when_serial() -> None:
    dev = CATALOG.device("h100-sxm5")
    m, n, k = 8, 8192, 8192  # decode: 134 MB of weights, far from compute-bound
    share = _model(dev).memory_share  # the GEMM tables' fitted share of the HBM rate
    assert share is not None
    stream = gemm_bytes(m, n, k, "bf16") / (dev.hbm_bandwidth.value * share.value)
    plain = _with(dev, serial_fixed=False, memory_latency=None)
    assert gemm(plain, m, n, k).time_s == pytest.approx(stream)  # max(compute, memory): the bytes alone
    serial = _with(dev, serial_fixed=True, memory_latency=None)
    assert gemm(serial, m, n, k).time_s >= stream + _model(dev).kernel_fixed.value
    latency = 3e-6
    slow = gemm(_with(dev, serial_fixed=True, memory_latency=Duration(value=latency, source="test")), m, n, k).time_s
    assert 0 < slow - gemm(serial, m, n, k).time_s <= latency * (1 + 1e-9)
    assert gemm(serial, m, n, k, ideal=True).time_s <= gemm(serial, m, n, k).time_s


def test_split_k_partial_sums_move_at_their_own_rate() -> None:
    dev = CATALOG.device("h100-sxm5")
    m, n, k = 256, 256, 65536  # 1 x 1 tiles of 256: only a split fills the SMs
    fast = gemm(_with(dev, partial_bandwidth=Bandwidth(value=1e15, source="test")), m, n, k).time_s
    hbm = gemm(_with(dev, partial_bandwidth=None), m, n, k).time_s
    slow = gemm(_with(dev, partial_bandwidth=Bandwidth(value=1e11, source="test")), m, n, k).time_s
    assert fast <= hbm <= slow and fast < slow


def test_fitted_devices_carry_the_table_fit() -> None:
    for name, table in (("a100-sxm4-80gb", "a100_sxm"), ("h100-sxm5", "h100_sxm"), ("h200-sxm", "h200_sxm")):
        dev = CATALOG.device(name)
        g = _model(dev)
        assert g.serial_fixed
        for fig in (g.operand_bandwidth, g.epilogue_bandwidth, g.kernel_fixed, g.unit_overhead, g.split_k_reduce):
            assert fig.source.startswith(f"measured: aiconfigurator {table}/gemm/trtllm/")
        assert dev.dtype_efficiency["bf16"].source.startswith(f"measured: aiconfigurator {table}/gemm/trtllm/")
    for name in ("h100-sxm5", "h200-sxm"):  # the power limit's share: measured on the lent GPUs, not by the fit
        share = _model(CATALOG.device(name)).sustained_share
        assert share is not None and share.source.startswith("measured: rooflib benchmarks/device/gemm_")


@pytest.mark.parametrize("name", ["b200", "gb200"])
def test_held_out_devices_carry_derived_figures_only(name: str) -> None:
    dev = CATALOG.device(name)
    g = _model(dev)
    for fig in (g.operand_bandwidth, g.epilogue_bandwidth, g.kernel_fixed, g.unit_overhead, g.split_k_reduce):
        assert fig.source.startswith("derived:") and "held out" in fig.source
    # the shares: public Blackwell GEMMs (Azure's GB200 runs, pytorch/ao's B200 runs), never aiconfigurator's tables
    for dtype, source in (("fp8", "azure-nd-gb200-v6"), ("fp4", "azure-nd-gb200-v6"), ("bf16", "pytorch-ao-2427")):
        src = dev.dtype_efficiency[dtype].source
        assert src.startswith(f"measured: {source}") and "aiconfigurator" not in src
    # the operand rate is the median of the fits' bytes per bf16 FLOP of the datasheet peak
    ratios = []
    for fitted in ("a100-sxm4-80gb", "h100-sxm5", "h200-sxm"):
        other = CATALOG.device(fitted)
        ratios.append(_model(other).operand_bandwidth.value / (other.tensor_peak("bf16") or np.nan))
    ratio = g.operand_bandwidth.value / (dev.tensor_peak("bf16") or np.nan)
    assert ratio == pytest.approx(float(np.median(ratios)), rel=2e-3)  # the file holds four digits


def test_a_memory_bound_gemm_with_serial_fixed_costs_says_memory() -> None:
    """With fixed costs serial to the memory side (the table-fitted blocks), a decode GEMM is bound by its bytes:
    the fixed costs are its overhead, not compute time, and the scalar and array paths agree."""
    dev = CATALOG.device("h100-sxm5")
    assert _model(dev).serial_fixed
    decode = gemm(dev, 1, 16384, 16384)
    assert decode.bound == "memory" and decode.overhead_s > 0
    assert decode.time_s == pytest.approx(float(gemm_times(dev, 1, 16384, 16384)[()]), rel=1e-9)
    big = gemm(dev, 8192, 8192, 8192)
    assert big.bound == "compute" and big.time_s == pytest.approx(float(gemm_times(dev, 8192, 8192, 8192)[()]))
