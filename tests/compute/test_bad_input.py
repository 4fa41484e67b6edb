"""The compute models refuse numbers they cannot represent instead of wrapping around int64 or overflowing a float."""

from __future__ import annotations

import re

import numpy as np
import pytest

from rooflib.compute import ComputeError, attention, elementwise, gemm, gemm_quantization, gemm_times, normalization
from rooflib.specs import DeviceSpec

BIG = 2**40  # m = n = 2**40 is 2**65 tiles of 128 x 256: past int64


def test_gemm_tile_count_past_int64_is_refused(h100_spec: DeviceSpec) -> None:
    with pytest.raises(ComputeError, match=rf"GEMM m={BIG}, n={BIG}, k=8192, batch=1 needs .* tiles.*int64"):
        gemm(h100_spec, BIG, BIG, 8192)
    with pytest.raises(ComputeError, match="int64"):
        gemm_quantization(h100_spec, BIG, BIG, 8192)
    with pytest.raises(ComputeError, match=rf"GEMM m={BIG}, n={BIG}"):
        gemm_times(h100_spec, [4096, BIG], BIG, 8192)  # the bad entry of an array is the one named


def test_gemm_batch_counts_towards_the_tiles(h100_spec: DeviceSpec) -> None:
    with pytest.raises(ComputeError, match=r"batch=1099511627776 needs .* tiles"):
        gemm(h100_spec, 2**20, 2**20, 64, batch=2**40)


def test_gemm_below_the_limit_is_consistent(h100_spec: DeviceSpec) -> None:
    # 2**31 x 2**31 is 2**39 tiles: big but representable; the quantised time can never beat the ideal one
    quantised, ideal = gemm(h100_spec, 2**31, 2**31, 8192), gemm(h100_spec, 2**31, 2**31, 8192, ideal=True)
    assert quantised.time_s >= ideal.time_s > 0
    times = gemm_times(h100_spec, [2**20, 2**31], 2**31, 8192)
    assert np.all(np.isfinite(times)) and times[1] > times[0]


@pytest.mark.parametrize(
    "shape", [(2**70, 8, 8), (8, 2**63, 8), (8, 8, 10**400)], ids=["m 2**70", "n 2**63", "k 10**400"]
)
def test_gemm_dimension_past_int64(h100_spec: DeviceSpec, shape: tuple[int, int, int]) -> None:
    with pytest.raises(ComputeError, match=r"is too large: at most 9223372036854775807 \(2\*\*63 - 1\)"):
        gemm(h100_spec, *shape)


@pytest.mark.parametrize(
    "m", [np.array([1e30]), np.array([2**64 - 1], dtype=np.uint64), [2**70]], ids=["float", "uint64", "python int"]
)
def test_gemm_times_dimension_past_int64(h100_spec: DeviceSpec, m: object) -> None:
    with pytest.raises(ComputeError, match=r"GEMM m = .* is too large"):
        gemm_times(h100_spec, m, 8, 8)  # type: ignore[arg-type]


def test_gemm_near_int64_k_does_not_wrap(h100_spec: DeviceSpec) -> None:
    cost = gemm(h100_spec, 1, 1, 2**63 - 1)  # k_tiles x tk passes int64; kept in float
    assert cost.time_s > 0 and np.isfinite(cost.time_s)


def test_attention_dimension_past_int64(h100_spec: DeviceSpec) -> None:
    with pytest.raises(ComputeError, match="attention seq_q = 1180591620717411303424 is too large"):
        attention(h100_spec, 1, 1, 2**70, 1024, 128)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"elements": 1.5}, "elements must be a whole number, got 1.5"),
        ({"elements": 2**70}, "elements must be finite and at most 9223372036854775807"),
        ({"elements": float("nan")}, "elements must be a number >= 1, got nan"),
        ({"elements": 8, "reads": 1.5}, "reads must be a whole number, got 1.5"),
        ({"elements": 8, "writes": True}, "writes must be a number >= 0, got True"),
    ],
)
def test_elementwise_counts(h100_spec: DeviceSpec, kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ComputeError, match=re.escape(message)):
        elementwise(h100_spec, **kwargs)  # type: ignore[arg-type]


def test_fractional_flops_per_element_are_fine(h100_spec: DeviceSpec) -> None:
    assert elementwise(h100_spec, 8, flops_per_element=0.5).flops == 4.0


def test_normalization_columns_past_int64(h100_spec: DeviceSpec) -> None:
    with pytest.raises(ComputeError, match="cols must be finite and at most"):
        normalization(h100_spec, 8, 2**70)
