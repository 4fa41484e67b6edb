"""GEMM: FLOPs, bytes, compute- vs memory-bound, tile and wave quantisation, split-K, SM scaling."""

from __future__ import annotations

import numpy as np
import pytest

from rooflib.compute import (
    ComputeError,
    UnsupportedDTypeError,
    gemm,
    gemm_bytes,
    gemm_flops,
    gemm_quantization,
    gemm_times,
)
from rooflib.specs import DeviceSpec


def test_flops_formula() -> None:
    assert gemm_flops(3, 5, 7) == 2 * 3 * 5 * 7
    assert gemm_flops(3, 5, 7, batch=4) == 4 * 2 * 3 * 5 * 7
    assert gemm_flops(8192, 8192, 8192) == pytest.approx(1.0995e12, rel=1e-4)


def test_bytes_are_a_b_c_once() -> None:
    assert gemm_bytes(4096, 4096, 4096, "bf16") == 3 * 4096 * 4096 * 2
    # fp8 inputs write a bf16 output by default
    assert gemm_bytes(1024, 2048, 512, "fp8") == 1024 * 512 + 512 * 2048 + 1024 * 2048 * 2
    assert gemm_bytes(1024, 2048, 512, "fp8", out_dtype="fp8") == 1024 * 512 + 512 * 2048 + 1024 * 2048
    assert gemm_bytes(64, 64, 64, "fp32", batch=3) == 3 * 3 * 64 * 64 * 4
    assert gemm_bytes(64, 64, 64, "fp4") == 64 * 64 + 64 * 64 * 2  # two half-byte inputs, bf16 output


def test_large_square_gemm_on_h100(h100_tile_spec: DeviceSpec) -> None:
    c = gemm(h100_tile_spec, 8192, 8192, 8192, "bf16")
    expected = 2 * 8192**3 / (989e12 * h100_tile_spec.tensor_efficiency.value)
    assert c.bound == "compute"
    assert c.time_s == pytest.approx(expected, rel=0.10)
    assert c.time_s >= expected  # quantisation only ever adds time
    assert c.flops == 2 * 8192**3
    assert c.unit == "tensor" and c.dtype == "bf16"
    # 2048 tiles of 128x256 are 15.5 waves on 132 SMs, run as 16
    q = gemm_quantization(h100_tile_spec, 8192, 8192, 8192)
    assert (q.tiles, q.waves, q.split_k) == (2048, 16, 1)
    assert c.time_s == pytest.approx(expected * 16 * 132 / 2048)


def test_ideal_is_pure_flops_over_rate(h100_tile_spec: DeviceSpec) -> None:
    c = gemm(h100_tile_spec, 8192, 8192, 8192, ideal=True)
    assert c.compute_s == pytest.approx(2 * 8192**3 / (989e12 * h100_tile_spec.tensor_efficiency.value))
    datasheet = gemm(h100_tile_spec, 8192, 8192, 8192, ideal=True, derate=False)
    assert datasheet.compute_s == pytest.approx(2 * 8192**3 / 989e12)
    assert datasheet.peak_bytes_per_s == pytest.approx(3.35e12)


def test_skinny_gemm_is_memory_bound(h100_tile_spec: DeviceSpec) -> None:
    c = gemm(h100_tile_spec, 16, 8192, 8192, "bf16")
    assert c.bound == "memory"
    nbytes = (16 * 8192 + 8192 * 8192 + 16 * 8192) * 2
    assert c.hbm_bytes == nbytes
    assert c.time_s == pytest.approx(nbytes / (3.35e12 * h100_tile_spec.hbm_efficiency.value))
    # 32 tiles leave 100 SMs idle: split-K into 4 fills 128 of them in one wave
    q = gemm_quantization(h100_tile_spec, 16, 8192, 8192)
    assert (q.tiles, q.split_k, q.waves) == (32, 4, 1)


def test_one_tile_more_than_the_sms_takes_a_second_wave(h100_tile_spec: DeviceSpec) -> None:
    tm, tn = h100_tile_spec.gemm_tile.m, h100_tile_spec.gemm_tile.n
    k = 16384
    full = gemm(h100_tile_spec, 11 * tm, 12 * tn, k)  # 132 tiles = one wave
    over = gemm(h100_tile_spec, 7 * tm, 19 * tn, k)  # 133 tiles = two waves
    assert gemm_quantization(h100_tile_spec, 11 * tm, 12 * tn, k).waves == 1
    assert gemm_quantization(h100_tile_spec, 7 * tm, 19 * tn, k).waves == 2
    assert full.bound == over.bound == "compute"
    assert over.time_s / full.time_s == pytest.approx(2.0)
    # the useful work grew by 1/132 only
    ideal_ratio = (
        gemm(h100_tile_spec, 7 * tm, 19 * tn, k, ideal=True).time_s / gemm(h100_tile_spec, 11 * tm, 12 * tn, k, ideal=True).time_s
    )
    assert ideal_ratio == pytest.approx(133 / 132)


def test_waves_on_every_device(device_spec: DeviceSpec) -> None:
    sms, tm, tn = int(device_spec.sms), device_spec.gemm_tile.m, device_spec.gemm_tile.n
    tile = device_spec.gemm_tile  # given explicitly: devices with a GEMM model would choose their own
    one = gemm_quantization(device_spec, tm * sms, tn, 4096, tile=tile)
    two = gemm_quantization(device_spec, tm * (sms + 1), tn, 4096, tile=tile)
    assert (one.waves, two.waves) == (1, 2)
    assert one.wave_efficiency == 1.0
    assert two.wave_efficiency == pytest.approx((sms + 1) / (2 * sms))
    assert two.executed_flops / one.executed_flops == pytest.approx(2.0)


def test_tile_quantisation_efficiency(h100_tile_spec: DeviceSpec) -> None:
    tm = h100_tile_spec.gemm_tile.m
    exact = gemm_quantization(h100_tile_spec, 10 * tm, 4096, 4096)
    ragged = gemm_quantization(h100_tile_spec, 10 * tm + 1, 4096, 4096)
    assert exact.tile_efficiency == 1.0
    assert ragged.tile_efficiency == pytest.approx((10 * tm + 1) / (11 * tm))
    assert ragged.tile_efficiency < 1.0
    # k is padded to the tile's k too
    assert gemm_quantization(h100_tile_spec, 4096, 4096, 4096 + 1).tile_efficiency == pytest.approx(4097 / (4096 + 64))


def test_efficiency_is_the_product_of_its_parts(h100_spec: DeviceSpec) -> None:
    q = gemm_quantization(h100_spec, 1000, 3000, 700)
    assert q.efficiency == pytest.approx(q.tile_efficiency * q.split_efficiency * q.wave_efficiency)
    assert 0 < q.efficiency < 1


def test_half_the_sms_doubles_compute_time(h100_tile_spec: DeviceSpec) -> None:
    full = gemm(h100_tile_spec, 8192, 8192, 8192)
    half = gemm(h100_tile_spec, 8192, 8192, 8192, sms=66)
    assert half.compute_s / full.compute_s == pytest.approx(2.0)
    assert half.sms == 66
    assert half.memory_s == full.memory_s
    assert gemm(h100_tile_spec, 8192, 8192, 8192, sms=66, ideal=True).compute_s == pytest.approx(2 * full.flops / 791.2e12)


def test_explicit_split_k_and_tile(h100_tile_spec: DeviceSpec) -> None:
    q = gemm_quantization(h100_tile_spec, 128, 256, 4096, split_k=8)
    assert (q.tiles, q.split_k, q.waves) == (1, 8, 1)
    q = gemm_quantization(h100_tile_spec, 128, 256, 4096, split_k=1)
    assert q.executed_flops == pytest.approx(132 * 2 * 128 * 256 * 4096)
    q = gemm_quantization(h100_tile_spec, 4096, 4096, 4096, tile=(128, 128, 64))
    assert (q.tile, q.tiles) == ((128, 128, 64), 1024)


def test_fp32_runs_on_cuda_cores_and_tf32_on_tensor_cores(h100_spec: DeviceSpec) -> None:
    sgemm = gemm(h100_spec, 8192, 8192, 8192, "fp32", ideal=True)
    assert sgemm.unit == "vector"
    assert sgemm.compute_s == pytest.approx(2 * 8192**3 / 67e12)
    tf32 = gemm(h100_spec, 8192, 8192, 8192, "tf32", ideal=True)
    assert tf32.unit == "tensor"
    assert tf32.compute_s == pytest.approx(2 * 8192**3 / (494.5e12 * h100_spec.tensor_efficiency.value))


def test_fp8_gemm_on_a100_raises(a100_spec: DeviceSpec) -> None:
    with pytest.raises(UnsupportedDTypeError, match=r"'a100-sxm4-80gb'.*'fp8'"):
        gemm(a100_spec, 4096, 4096, 4096, "fp8")


def test_fp8_is_twice_as_fast_as_bf16_on_h100(h100_tile_spec: DeviceSpec) -> None:
    # 1979 vs 989 TFLOP/s on the datasheet
    fp8 = gemm(h100_tile_spec, 8192, 8192, 8192, "fp8").compute_s
    assert fp8 * 2 == pytest.approx(gemm(h100_tile_spec, 8192, 8192, 8192).compute_s, rel=1e-3)


@pytest.mark.parametrize("bad", [0, -8, 1.5, float("nan"), "64", True])
def test_bad_shapes(h100_spec: DeviceSpec, bad: object) -> None:
    with pytest.raises(ComputeError, match="GEMM m must be a positive whole number"):
        gemm(h100_spec, bad, 64, 64)  # type: ignore[arg-type]


@pytest.mark.parametrize("tile", [(128, 256), (0, 128, 64), (128.0, 128, 64)])
def test_bad_tile(h100_spec: DeviceSpec, tile: object) -> None:
    with pytest.raises(ComputeError, match="tile must be"):
        gemm(h100_spec, 64, 64, 64, tile=tile)  # type: ignore[arg-type]


def test_scalar_functions_refuse_arrays(h100_spec: DeviceSpec) -> None:
    with pytest.raises(ComputeError, match="use gemm_times for arrays"):
        gemm(h100_spec, np.array([64, 128]), 64, 64)  # type: ignore[arg-type]


def test_bad_split_k(h100_spec: DeviceSpec) -> None:
    with pytest.raises(ComputeError, match="split_k"):
        gemm(h100_spec, 64, 64, 64, split_k=0)


def test_gemm_times_is_vectorised(h100_spec: DeviceSpec) -> None:
    ms = np.array([16, 1000, 4096, 8192, 8193])
    times = gemm_times(h100_spec, ms, 8192, 8192)
    assert times.shape == (5,)
    expected = [gemm(h100_spec, int(m), 8192, 8192).time_s for m in ms]
    np.testing.assert_allclose(times, expected, rtol=1e-12)
    ideal = gemm_times(h100_spec, ms, 8192, 8192, ideal=True)
    np.testing.assert_allclose(ideal, [gemm(h100_spec, int(m), 8192, 8192, ideal=True).time_s for m in ms])
    grid = gemm_times(h100_spec, ms[:, None], ms[None, :], 1024, dtype="fp8", sms=100, batch=2)
    assert grid.shape == (5, 5)
    assert grid[2, 3] == pytest.approx(gemm(h100_spec, 4096, 8192, 1024, "fp8", sms=100, batch=2).time_s)


def test_large_gemm_is_compute_bound_on_every_device(device_spec: DeviceSpec) -> None:
    c = gemm(device_spec, 8192, 8192, 8192, "bf16", duty="burst")
    assert c.bound == "compute"
    ideal = 2 * 8192**3 / (device_spec.tensor_peak("bf16") or 0.0) / device_spec.gemm_efficiency("bf16")
    assert ideal <= c.time_s <= 1.10 * ideal
    # at the power limit the tensor rate drops by the block's measured share, nothing else moves
    block = device_spec.compute.gemm if device_spec.compute is not None else None
    share = block.sustained_share.value if block is not None and block.sustained_share is not None else 1.0
    sustained = gemm(device_spec, 8192, 8192, 8192, "bf16")
    assert sustained.time_s == pytest.approx(c.time_s / share, rel=0.02)
    assert gemm(device_spec, 8192, 8192, 8192, "bf16", ideal=True).time_s <= c.time_s


@pytest.mark.parametrize("device_name", ["h200-sxm", "h100-sxm5", "a100-sxm4-80gb"])
@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_a_batch_of_tiny_matrices_shares_tiles(device_name: str, dtype: str) -> None:
    """16384 1 x 1 x 64 products (attention scores written as a bmm, PKB problem 39) fill tiles together: about
    one small GEMM's time, not a wave of full tiles per 132 matrices; a single GEMM packs nothing."""
    from rooflib.compute.tiling import pack_count
    from rooflib.specs import default_catalog

    dev = default_catalog().device(device_name)
    batched = gemm(dev, 1, 1, 64, dtype, batch=16384)
    one = gemm(dev, 128, 128, 64, dtype)  # the same output elements (16384) as one matrix
    assert batched.time_s < 4 * one.time_s
    assert batched.flops == pytest.approx(2 * 16384 * 64)
    more = gemm(dev, 2, 1, 64, dtype, batch=16384)  # larger matrices: never faster
    assert more.time_s >= batched.time_s * (1 - 1e-9)
    one_m = np.array([1, 3, 8, 64, 200])
    assert pack_count(one_m, np.full(5, 64), np.ones(5, dtype=np.int64), 128, 128).tolist() == [1, 1, 1, 1, 1]
    assert pack_count(one_m, np.full(5, 64), np.full(5, 4), 128, 128).tolist() == [256, 84, 32, 4, 2]


def test_a_fitted_memory_share_sets_the_weight_streaming_rate() -> None:
    """Where the device has no measured ``gemm`` curve, a GEMM's bytes stream at ``memory_share`` of the
    datasheet HBM rate (fitted on the GEMM tables: tools/fit_gemm_defaults.py), else at ``hbm_efficiency``'s."""
    from rooflib.compute.gemm import gemm_times
    from rooflib.specs import default_catalog

    h100 = default_catalog().device("h100-sxm5")
    gemm = h100.compute.gemm  # type: ignore[union-attr]
    assert gemm is not None and gemm.memory_share is not None and "measured: aiconfigurator" in gemm.memory_share.source

    def with_share(share: float | None) -> float:
        fig = None if share is None else {"value": share, "source": "test"}
        model = gemm.model_copy(update={"memory_share": fig and type(gemm.memory_share).model_validate(fig)})
        dev = h100.model_copy(update={"compute": h100.compute.model_copy(update={"gemm": model})})  # type: ignore[union-attr]
        return float(gemm_times(dev, 1, 16384, 16384, "bf16")[()])  # 512 MiB of weights: memory-bound

    half, same = with_share(0.45), with_share(h100.hbm_efficiency.value)
    assert same == pytest.approx(with_share(None))
    assert half == pytest.approx(2 * same, rel=0.05)  # the bytes dominate: half the rate, twice the time


def test_duty_slows_only_compute_bound_gemms() -> None:
    """Sustained (the GPU at its power limit) is never faster than burst; a weight-streaming GEMM keeps its time;
    a large one takes the measured share of the tensor rate (the H100: docs/validation/duty.md)."""
    from rooflib.compute import ComputeError
    from rooflib.specs import default_catalog

    dev = default_catalog().device("h100-sxm5")
    share = dev.compute.gemm.sustained_share.value  # type: ignore[union-attr]
    assert 0.8 < share < 0.95
    m = np.array([1, 16, 64, 256, 1024, 4096, 8192])
    burst = gemm_times(dev, m, 8192, 8192, duty="burst")
    sustained = gemm_times(dev, m, 8192, 8192)
    assert np.all(sustained >= burst * (1 - 1e-12))
    assert sustained[0] == pytest.approx(burst[0])  # decode: memory-bound
    assert sustained[-1] / burst[-1] == pytest.approx(1 / share, rel=0.02)
    for i, mm in enumerate(m):
        assert gemm(dev, int(mm), 8192, 8192).time_s == pytest.approx(sustained[i])
    # no measured share (the B200): both duties give one answer
    b200 = default_catalog().device("b200")
    assert gemm(b200, 8192, 8192, 8192).time_s == gemm(b200, 8192, 8192, 8192, duty="burst").time_s
    with pytest.raises(ComputeError, match="duty must be one of burst, sustained"):
        gemm(dev, 64, 64, 64, duty="idle")  # type: ignore[arg-type]
