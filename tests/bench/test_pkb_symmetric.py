"""The fake process group's integer outputs filled as if every rank held this rank's data (CPU)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")


@pytest.fixture
def fake_world() -> Iterator[Any]:
    from torch.testing._internal.distributed.fake_pg import FakeStore

    from rooflib.bench.pkb_symmetric import install

    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=4)
    fills, restore = install(torch, dist)
    try:
        yield fills
    finally:
        restore()
        dist.destroy_process_group()


def test_all_to_all_of_counts_hands_back_what_this_rank_sends_itself(fake_world: Any) -> None:
    send = torch.tensor([5, 7, 1, 3])
    recv = torch.full((4,), -1)
    dist.all_to_all_single(recv, send)
    assert recv.tolist() == [5, 5, 5, 5]
    # the variable split that follows is consistent with them: 4 x 5 rows received
    data = torch.arange(16)
    out = torch.full((20,), -1, dtype=torch.long)
    dist.all_to_all_single(out, data, output_split_sizes=recv.tolist(), input_split_sizes=send.tolist())
    assert out.tolist() == [0, 1, 2, 3, 4] * 4
    assert fake_world.count == 2 and fake_world.seconds > 0


def test_float_outputs_are_left_as_the_fake_group_leaves_them(fake_world: Any) -> None:
    x, out = torch.ones(8), torch.full((8,), 3.0)
    dist.all_to_all_single(out, x)
    dist.all_reduce(x)
    assert x.tolist() == [1.0] * 8  # not scaled: a float sum is not filled
    assert fake_world.count == 0 and fake_world.seconds == 0.0  # straight to the fake call, no binding


def test_plain_arguments_skip_the_wrapper_and_others_do_not() -> None:
    from rooflib.bench.pkb_symmetric import _plain

    f = torch.ones(4)
    assert _plain(torch, (f, f), {"group": None})
    assert _plain(torch, ([torch.ones(2), torch.ones(2)], torch.ones(2)), {})
    assert not _plain(torch, (f, torch.ones(4, dtype=torch.long)), {})
    assert not _plain(torch, ([torch.ones(2), torch.ones(3)], torch.ones(2)), {})  # uneven list all-gather
    assert not _plain(torch, (), {"tensor": torch.zeros(1, dtype=torch.bool)})


def test_integer_sums_scale_with_the_group_and_max_does_not(fake_world: Any) -> None:
    n, m = torch.tensor([3]), torch.tensor([3])
    dist.all_reduce(n)
    dist.all_reduce(m, op=dist.ReduceOp.MAX)
    assert (n.item(), m.item()) == (12, 3)


def test_uneven_list_all_gather_runs_and_copies_the_input(fake_world: Any) -> None:
    x = torch.ones(2, 3)
    parts = [torch.zeros(k, 3) for k in (2, 3, 1, 2)]
    dist.all_gather(parts, x)  # the fake backend alone refuses parts of other sizes
    assert [p.sum().item() for p in parts] == [6.0, 6.0, 3.0, 6.0]  # truncated or zero-padded copies


def test_shapes_gathered_as_objects_are_every_rank_s_own(fake_world: Any) -> None:
    got: list[Any] = [None] * 4
    dist.all_gather_object(got, [(2, 3)])
    assert got == [[(2, 3)]] * 4


def test_restore_puts_the_originals_back() -> None:
    from torch.testing._internal.distributed.fake_pg import FakeStore

    from rooflib.bench.pkb_symmetric import install

    before = dist.all_to_all_single
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=2)
    try:
        _, restore = install(torch, dist)
        assert dist.all_to_all_single is not before
        restore()
        assert dist.all_to_all_single is before and dist.distributed_c10d.all_to_all_single is before
    finally:
        dist.destroy_process_group()

