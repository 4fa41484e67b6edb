"""The collective model's pieces: the message-size curve (rooflib.collectives.model.size_eff)."""

from __future__ import annotations

import numpy as np
import pytest


def test_size_curve_below_its_first_point_keeps_that_points_time() -> None:
    """Below the first point a message costs what the first point's does (efficiency in proportion to size),
    above it the log-log curve; zero bytes cost nothing and no size gives NaN."""
    from rooflib.collectives.model import size_eff

    points = ((256.0, 0.4), (2048.0, 0.5))
    sizes = np.array([0.0, 0.5, 64.0, 128.0, 256.0, 1024.0, 4096.0])
    eff = size_eff(points, sizes)
    assert np.isfinite(eff).all() and (eff > 0).all()
    assert eff[2] == pytest.approx(0.4 * 64 / 256) and eff[3] == pytest.approx(0.4 * 128 / 256)
    assert eff[4] == pytest.approx(0.4) and eff[6] == pytest.approx(0.5)
    time = sizes / eff
    assert time[2] == pytest.approx(time[3]) == pytest.approx(time[4])  # one time for every size up to 256 B
    assert (np.diff(time) >= 0).all()
    assert (size_eff(None, sizes) == 1.0).all()


def test_the_nvls_curve_stays_clamped_below_its_first_shard() -> None:
    """The NVLS curve's points are NVL72 shards of 7 MB and up: a 2 MiB all-reduce on 72 GPUs (29 KB shards) takes
    the first point's efficiency, not that point's time (which would be about 6x more)."""
    import rooflib
    from rooflib.collectives.api import predict_collective

    rack = rooflib.load_system("gb200-nvl72", gpus=72)
    curve = rack.library.nvls_size_efficiency
    assert curve is not None and curve.points[0][0] > (2**21) / 72
    r = predict_collective("all_reduce", rack, gpus=72, nbytes=np.array([2.0**21, 2.0**22]), algorithm="nvls")
    t = np.asarray(r.time_s)
    assert t[0] < 60e-6 and t[1] < 2 * t[0]


def test_the_floor_below_the_first_point_is_the_librarys_alone() -> None:
    """An 8-GPU all-reduce of 512 B moves 64 B parts: NCCL's ring pays the size curve's floor (its 64 B part
    costs its 256 B one's time), rooflib's own ld/st kernel (direct) keeps the curve's first efficiency."""
    import rooflib
    from rooflib.collectives.api import plan_costs
    from rooflib.collectives.model import plan_time

    system = rooflib.load_system("hgx-h200", gpus=8)
    costs = plan_costs(system, "all_reduce", gpus=8)
    assert costs["ring"].library and costs["nvls"].library and not costs["direct"].library
    sizes = np.array([256.0, 2048.0])  # 32 B and 256 B parts
    own, _ = plan_time(costs["direct"], sizes, 0.0)
    ring, _ = plan_time(costs["ring"], sizes, 0.0)
    assert own[0] < own[1]
    assert ring[0] == pytest.approx(ring[1], rel=1e-9)
