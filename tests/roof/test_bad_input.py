"""rooflib.roofline and rooflib.roofs refuse what no kernel can be: NaN, infinite or negative amounts, link classes
that do not exist or that the system lacks, unknown dtypes and roofs."""

from __future__ import annotations

import math

import pytest

import rooflib
from rooflib.errors import GroupError, UnitError, UnknownNameError
from rooflib.specs import System


@pytest.fixture(scope="module")
def h100() -> System:
    return rooflib.load_system("hgx-h100")


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, -1.0])
@pytest.mark.parametrize("field", ["flops", "hbm_bytes"])
def test_bad_amount(h100: System, field: str, bad: float) -> None:
    amounts = {"flops": 1e12, "hbm_bytes": 1e9, field: bad}
    with pytest.raises(UnitError, match=f"roofline {field} must be >= 0 and finite, got {bad!r}"):
        rooflib.roofline(h100, **amounts)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -5.0])
def test_bad_network_bytes(h100: System, bad: float) -> None:
    with pytest.raises(UnitError, match=rf"roofline net_bytes\['nvlink'\] must be >= 0 and finite, got {bad!r}"):
        rooflib.roofline(h100, flops=1e12, hbm_bytes=1e9, net_bytes={"nvlink": bad})


@pytest.mark.parametrize("bad", ["1e12", True, None])
def test_amount_that_is_not_a_number(h100: System, bad: object) -> None:
    with pytest.raises(UnitError, match=f"roofline flops must be a number, got {bad!r}"):
        rooflib.roofline(h100, flops=bad, hbm_bytes=1e9)  # type: ignore[arg-type]


def test_unknown_link_class(h100: System) -> None:
    with pytest.raises(UnknownNameError, match="unknown link class 'nvlnk'; valid link classes: ib, nvlink"):
        rooflib.roofline(h100, flops=1e12, hbm_bytes=1e9, net_bytes={"nvlnk": 1e9})


def test_link_class_the_system_lacks(h100: System) -> None:
    with pytest.raises(GroupError, match=r"hgx-h100 \(8 GPUs\) has no ib links per GPU; link classes: nvlink"):
        rooflib.roofline(h100, flops=1e12, hbm_bytes=1e9, net_bytes={"ib": 1e9})


def test_unknown_dtype_and_roof(h100: System) -> None:
    with pytest.raises(UnknownNameError, match="unknown dtype 'fp9'; valid dtypes: bf16"):
        rooflib.roofs(h100, "fp9")  # type: ignore[arg-type]
    with pytest.raises(UnknownNameError, match="unknown roof 'ib'; valid roofs: hbm, l2, nvlink"):
        rooflib.roofs(h100).ridge("ib")


def test_zero_is_a_valid_kernel(h100: System) -> None:
    line = rooflib.roofline(h100, flops=0, hbm_bytes=0, net_bytes={"nvlink": 0})
    assert line.bound_s == 0.0 and line.intensity_hbm == math.inf
