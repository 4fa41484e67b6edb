"""NCCL's point-to-point thread blocks per peer (src/enqueue.cc, src/graph/paths.cc, 2.23-2.29): the cap that
makes all-to-all at 2 GPUs block-bound on every generation."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import rooflib
from rooflib.collectives.model import peer_channels, per_peer_blocks
from rooflib.specs.figures import log_interp

KiB, MiB = 1024.0, 1024.0**2
SIZES = np.array([2.0**k for k in range(9, 31)])


@pytest.mark.parametrize(("ranks", "blocks"), [(2, 16), (3, 8), (4, 8), (8, 4), (16, 2), (32, 1), (72, 1)])
def test_blocks_per_peer_halve_while_blocks_times_ranks_exceed_the_channels(ranks: int, blocks: int) -> None:
    assert per_peer_blocks(32, ranks) == blocks


def test_a_peer_takes_one_block_per_64_kib_up_to_its_share() -> None:
    chunk = 512 * KiB
    got = peer_channels([4 * KiB, 64 * KiB, 256 * KiB, 1 * MiB, 64 * MiB, 4096 * MiB], 16, chunk)
    np.testing.assert_allclose(got, [1, 1, 4, 16, 16, 16])
    # continuous, so a peer's time b / blocks never falls as b grows
    b = np.geomspace(1.0, 2.0**33, 400)
    t = b / peer_channels(b, 4, chunk)
    assert (np.diff(t) >= -1e-12 * t[1:]).all()


def test_all_to_all_at_two_gpus_is_block_bound() -> None:
    """2 ranks: 16 blocks for the one peer, each at the library's block rate, whatever the link."""
    for name in ("hgx-h100", "hgx-b200"):
        system = rooflib.load_system(name, gpus=2)
        lib = system.library
        assert lib.p2p_cta_bandwidth is not None
        big = 1 << 30
        r = rooflib.predict_collective("all_to_all", system, nbytes=big, algorithm="library", launch="graph")
        # the peer's S/2 on 16 blocks, each at the block rate times the size curve at its 32 MiB part
        floor = (big / 2) / (16 * lib.p2p_cta_bandwidth.value)
        assert lib.link_size_efficiency is not None
        eff = float(log_interp(lib.link_size_efficiency.points, big / 2 / 16))
        assert floor / eff <= r.time_s[0] <= floor / eff + 30e-6


def test_without_a_block_rate_the_link_alone_sets_all_to_all() -> None:
    system = rooflib.load_system("hgx-b200", gpus=2)
    free = dataclasses.replace(system, library=system.library.model_copy(update={"p2p_cta_bandwidth": None}))
    capped = rooflib.predict_collective("all_to_all", system, nbytes=SIZES, algorithm="library").time_s
    uncapped = rooflib.predict_collective("all_to_all", free, nbytes=SIZES, algorithm="library").time_s
    assert (capped[-5:] > uncapped[-5:] * 1.2).all()  # 16 blocks x ~22 GB/s against a 900 GB/s link
    # collectives are not point-to-point: the block rate changes nothing there
    ar = [rooflib.predict_collective("all_reduce", s, nbytes=SIZES, algorithm="library").time_s for s in (system, free)]
    np.testing.assert_array_equal(ar[0], ar[1])


@pytest.mark.parametrize("op", ["all_to_all", "send_recv", "gather", "scatter"])
@pytest.mark.parametrize("gpus", [2, 4, 8])
def test_point_to_point_time_never_falls_with_bytes(op: str, gpus: int) -> None:
    for name in ("hgx-a100", "hgx-h100", "hgx-b200"):
        r = rooflib.predict_collective(op, rooflib.load_system(name, gpus=gpus), nbytes=SIZES, algorithm="library")
        assert np.isfinite(r.time_s).all()
        assert (np.diff(r.time_s) >= 0).all()


def test_a_lone_send_takes_more_blocks_for_large_parts() -> None:
    """A send/recv is the rank's only point-to-point op: past 32 chunks a part, NCCL doubles its blocks up to the
    communicator's 32; an all-to-all's peers share them, so theirs stay at their share."""
    assert peer_channels([16 * MiB, 256 * MiB, 1024 * MiB], 4, 512 * KiB, most=32).tolist() == [4.0, 16.0, 32.0]
    system = rooflib.load_system("hgx-h100", gpus=8)
    rate = system.library.p2p_cta_bandwidth
    assert rate is not None
    r = rooflib.predict_collective("send_recv", system, nbytes=[16 * MiB, 4096 * MiB], algorithm="library")
    small, large = r.busbw
    assert small <= 4 * rate.value * 1.001  # 4 blocks at 8 ranks
    assert large > 16 * rate.value  # doubled to 32 blocks (or the link)
