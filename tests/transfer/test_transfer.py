from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import rooflib
from rooflib.errors import GroupError, RooflibError, UnknownNameError
from rooflib.specs import System
from rooflib.transfer import (
    available_mechanisms,
    best_mechanism,
    mechanism_rate,
    predict_transfer,
    saturating_sms,
    transfer_time,
)


def test_copy_engine_uses_no_sms(h100: System) -> None:
    one = transfer_time(h100, "copy_engine", 1 << 30, sms=1)
    every = transfer_time(h100, "copy_engine", 1 << 30, sms=132)
    assert one == every
    r = predict_transfer(h100, 1 << 30, sms=0)
    assert r.best == "copy_engine" and r.options[0].sms == 0
    assert r.unavailable["tma"] == "no SMs in the budget"


def test_sm_driven_rates_grow_with_sms_until_the_cap(h100: System) -> None:
    rates = mechanism_rate(h100, "ldst", np.arange(1, 133))
    assert (np.diff(rates) >= 0).all()
    assert rates[-1] == pytest.approx(0.76 * 450e9)
    k = saturating_sms(h100, "tma")
    assert mechanism_rate(h100, "tma", k) == pytest.approx(mechanism_rate(h100, "tma", 132))
    assert mechanism_rate(h100, "tma", k - 1) < mechanism_rate(h100, "tma", 132)


def test_zero_sms_never_finishes(h100: System) -> None:
    assert np.isinf(transfer_time(h100, "tma", 4096, sms=0))


def test_reduction_capabilities(h100: System, a100: System) -> None:
    assert "copy_engine" not in available_mechanisms(h100, "peer")
    assert available_mechanisms(h100, "switch") == ["multimem"]
    assert available_mechanisms(a100, "switch") == []
    with pytest.raises(GroupError, match="only multimem reduces in the switch"):
        predict_transfer(h100, 1 << 20, reduction="switch", mechanism="tma")
    with pytest.raises(GroupError, match="no mechanism can do this transfer"):
        predict_transfer(a100, 1 << 20, reduction="switch")
    with pytest.raises(RooflibError, match="has no tma"):
        transfer_time(a100, "tma", 1 << 20)


def test_small_messages_prefer_register_ops_large_ones_dma(h100: System) -> None:
    assert predict_transfer(h100, 4096).best == "ldst"
    assert predict_transfer(h100, 1 << 30).best == "copy_engine"
    # with a small SM budget TMA beats ld/st at mid sizes: it saturates NVLink with few SMs
    assert predict_transfer(h100, 64 << 20, sms=8).best == "tma"


def test_best_mechanism_grid_matches_single_predictions(h100: System) -> None:
    sizes = 2.0 ** np.arange(7, 31, 3)
    sms = np.array([1, 4, 16, 132])
    names, times = best_mechanism(h100, sizes[:, None], sms[None, :])
    assert names.shape == (sizes.size, sms.size)
    for i, s in enumerate(sizes):
        for j, k in enumerate(sms):
            r = predict_transfer(h100, float(s), sms=int(k))
            assert names[i, j] == r.best
            assert times[i, j] == pytest.approx(r.options[0].time_s)


def test_bad_input(h100: System) -> None:
    with pytest.raises(UnknownNameError, match="valid mechanisms: auto, copy_engine"):
        transfer_time(h100, "dma", 10)
    with pytest.raises(GroupError, match=r"--sms must be in 0..132"):
        predict_transfer(h100, 10, sms=500)
    with pytest.raises(GroupError, match="names a GPU twice"):
        predict_transfer(h100, 10, src=1, dst=1)
    with pytest.raises(GroupError, match="nbytes must be finite"):
        transfer_time(h100, "ldst", -5)


@given(
    mech=st.sampled_from(["copy_engine", "tma", "ldst", "multimem"]),
    a=st.floats(0, 2**31, allow_nan=False),
    b=st.floats(0, 2**31, allow_nan=False),
    sms=st.integers(1, 132),
)
def test_time_grows_with_bytes_and_falls_with_sms(mech: str, a: float, b: float, sms: int) -> None:
    lo, hi = sorted((a, b))
    t_lo, t_hi = transfer_time(_H100, mech, lo, sms), transfer_time(_H100, mech, hi, sms)
    assert np.isfinite(t_lo) and t_lo <= t_hi
    assert transfer_time(_H100, mech, hi, min(132, sms + 1)) <= t_hi


_H100 = rooflib.load_system("hgx-h100")


def test_peer_reduction_and_pull_use_their_own_rates() -> None:
    h200 = rooflib.load_system("hgx-h200", gpus=2, profile="h200-x2")
    spec = h200.device.transfer
    assert spec.tma.reduce_peak_fraction is not None and spec.ldst.pull_peak_fraction is not None
    big = float(1 << 30)
    copy = transfer_time(h200, "tma", big)
    add = transfer_time(h200, "tma", big, reduce=True)
    assert add > copy  # adding into peer memory is slower than copying (measured 74 % against 82 %)
    pulled = transfer_time(h200, "ldst", 4096, pull=True)
    pushed = transfer_time(h200, "ldst", 4096)
    assert pulled > pushed  # a read pays for the request's trip
    r = predict_transfer(h200, big, reduction="peer")
    assert r.best != "copy_engine" and r.options[0].time_s == pytest.approx(
        float(transfer_time(h200, r.best, big, r.options[0].sms, reduce=True))
    )
    with pytest.raises(RooflibError, match="cannot reduce"):
        transfer_time(h200, "copy_engine", big, reduce=True)
