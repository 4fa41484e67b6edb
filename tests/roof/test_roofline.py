from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import rooflib
from rooflib.errors import RooflibError, UnknownNameError
from rooflib.roof import roofline, roofs
from rooflib.specs import System


def test_roofs_and_ridge_points(h100: System) -> None:
    r = roofs(h100, "bf16")
    assert r.compute == pytest.approx(989e12)
    assert r.ridge("hbm") == pytest.approx(989e12 / 3.35e12)  # ~295 FLOP/byte
    assert r.ridge("nvlink") == pytest.approx(989e12 / 450e9)
    fp8 = roofs(h100, "fp8")
    assert fp8.ridge("hbm") == pytest.approx(2 * r.ridge("hbm"), rel=1e-3)
    with pytest.raises(UnknownNameError, match="unknown roof 'ib'; valid roofs: hbm, l2, nvlink"):
        r.ridge("ib")


def test_superpod_has_an_ib_roof(superpod: System) -> None:
    r = roofs(superpod)
    assert r.links["ib"] == pytest.approx(50e9)  # 8 x 400 Gb/s NICs for 8 GPUs


def test_achievable_roofs_sit_below_the_peaks(h100: System) -> None:
    peak, real = roofs(h100), roofs(h100, achievable=True)
    assert real.compute < peak.compute and real.hbm < peak.hbm and real.links["nvlink"] < peak.links["nvlink"]


def test_limiter_bound_and_sums(h100: System) -> None:
    k = roofline(h100, flops=2 * 8192**3, hbm_bytes=3 * 2 * 8192**2, net_bytes={"nvlink": 2 * 8192**2})
    assert k.limiter == "compute"
    assert k.bound_s == pytest.approx(2 * 8192**3 / 989e12)
    comm_bound = roofline(h100, flops=1e9, hbm_bytes=1e6, net_bytes={"nvlink": 1e9})
    assert comm_bound.limiter == "nvlink" and comm_bound.bound_s == pytest.approx(1e9 / 450e9)
    assert comm_bound.intensity_net["nvlink"] == pytest.approx(1.0)


def test_bad_kernels(h100: System) -> None:
    with pytest.raises(RooflibError, match="has no ib links"):
        roofline(h100, flops=1, hbm_bytes=1, net_bytes={"ib": 1})
    with pytest.raises(RooflibError, match="flops must be >= 0"):
        roofline(h100, flops=-1, hbm_bytes=1)
    with pytest.raises(RooflibError, match="no fp4 peak"):
        roofs(h100, "fp4")


@given(
    flops=st.floats(0, 1e18, allow_nan=False),
    hbm=st.floats(0, 1e13, allow_nan=False),
    nv=st.floats(0, 1e12, allow_nan=False),
    ib=st.floats(0, 1e12, allow_nan=False),
)
def test_bound_never_above_serial_or_sum(flops: float, hbm: float, nv: float, ib: float) -> None:
    k = roofline(_POD, flops=flops, hbm_bytes=hbm, net_bytes={"nvlink": nv, "ib": ib})
    assert k.bound_s <= k.serial_s * (1 + 1e-12) <= k.sum_s * (1 + 1e-12) + 1e-300
    assert k.bound_s >= max(k.compute_s, k.memory_s, *k.comm_s.values())


_POD = rooflib.load_system("dgx-h100-superpod", nodes=2)
