"""Point-to-point ops take NCCL's protocol rule: LL while each peer's share is at most P2P_LL_THRESHOLD, then
Simple, never LL128 (src/enqueue.cc); collectives keep the fastest protocol at each size."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import rooflib

SIZES = np.array([2.0**k for k in range(9, 30)])


@pytest.mark.parametrize("gpus", [2, 4, 8])
def test_all_to_all_leaves_ll_at_the_threshold_per_peer(gpus: int) -> None:
    system = rooflib.load_system("hgx-h100", gpus=gpus)
    threshold = system.library.p2p_ll_threshold
    assert threshold is not None and threshold.value == 16384
    r = rooflib.predict_collective("all_to_all", system, nbytes=SIZES, algorithm="library", launch="stream")
    protocols = np.array(r.protocol)
    per_peer = SIZES / gpus
    assert set(protocols[per_peer > threshold.value]) == {"simple"}
    assert "ll128" not in set(protocols)
    assert (np.diff(r.time_s) >= 0).all()  # Simple stays open below it: no drop at the switch


def test_without_a_threshold_the_fastest_protocol_runs() -> None:
    system = rooflib.load_system("hgx-h100", gpus=8)
    free = dataclasses.replace(system, library=system.library.model_copy(update={"p2p_ll_threshold": None}))
    ruled = rooflib.predict_collective("all_to_all", system, nbytes=SIZES, algorithm="library")
    fastest = rooflib.predict_collective("all_to_all", free, nbytes=SIZES, algorithm="library")
    assert (fastest.time_s <= ruled.time_s * (1 + 1e-12)).all()
    assert (fastest.time_s < ruled.time_s).any()  # the rule costs time somewhere (LL128 or LL past 16 KiB)
    # a collective is not point-to-point: the threshold changes nothing
    ar = [rooflib.predict_collective("all_reduce", s, nbytes=SIZES, algorithm="library").time_s for s in (system, free)]
    np.testing.assert_array_equal(ar[0], ar[1])


def test_send_recv_counts_its_whole_buffer_as_one_peer() -> None:
    system = rooflib.load_system("hgx-h100", gpus=2)
    r = rooflib.predict_collective("send_recv", system, nbytes=np.array([8192.0, 65536.0]), algorithm="library")
    assert r.protocol[1] == "simple"
