"""rooflib.bus_factor and bandwidths: unknown ops and rank counts below one are errors, never a factor of 1."""

from __future__ import annotations

import math

import pytest

import rooflib
from rooflib.conventions import bandwidths
from rooflib.errors import GroupError, UnitError, UnknownNameError


def test_unknown_op() -> None:
    with pytest.raises(UnknownNameError, match="unknown collective 'bogus'; valid collectives: all_gather"):
        rooflib.bus_factor("bogus", 8)  # type: ignore[arg-type]


@pytest.mark.parametrize("n", [0, -1, 2.0, True])
def test_bad_rank_count(n: object) -> None:
    with pytest.raises(GroupError, match=f"n >= 1 ranks .*got n={n!r}"):
        rooflib.bus_factor("all_reduce", n)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("op", "factor"),
    [("all_reduce", 0.0), ("all_gather", 0.0), ("all_to_all", 0.0), ("broadcast", 1.0), ("send_recv", 1.0)],
)
def test_one_rank_moves_nothing_over_the_bus(op: str, factor: float) -> None:
    # nccl-tests' factors: 2(n-1)/n and (n-1)/n are 0 on one rank, broadcast/reduce/send-recv stay 1
    assert rooflib.bus_factor(op, 1) == factor  # type: ignore[arg-type]


def test_dashes_are_accepted() -> None:
    assert rooflib.bus_factor("all-reduce", 8) == pytest.approx(1.75)  # type: ignore[arg-type]


def test_bandwidths_refuse_zero_or_negative_time_and_negative_size() -> None:
    with pytest.raises(UnitError, match="times must be > 0 seconds, got 0"):
        bandwidths("all_reduce", 8, 1024, 0)
    with pytest.raises(UnitError, match="sizes must be finite and >= 0 bytes, got -1"):
        bandwidths("all_reduce", 8, -1, 1e-3)
    with pytest.raises(UnknownNameError):
        bandwidths("bogus", 8, 1024, 1e-3)  # type: ignore[arg-type]


def test_bandwidths_keep_nan_for_nothing_measured() -> None:
    algbw, busbw = bandwidths("all_reduce", 8, [1e9, 1e9], [1e-3, math.nan])
    assert algbw[0] == pytest.approx(1e12) and busbw[0] == pytest.approx(1.75e12)
    assert math.isnan(algbw[1]) and math.isnan(busbw[1])
