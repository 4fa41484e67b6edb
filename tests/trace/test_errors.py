"""The tracer's error paths with torch: INPUTS raising or returning a non-tensor, the program raising, bad
parameters, a live process group; each one line naming the file and what went wrong."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

from rooflib.trace import TraceError, load_target, trace_program  # noqa: E402

from .conftest import target  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:.*is deprecated. Please use.*:FutureWarning")


def test_inputs_raising() -> None:
    with pytest.raises(
        TraceError, match=r"INPUTS bad\.py:inputs_raising raised RuntimeError: INPUTS failed on purpose"
    ):
        trace_program(load_target(target("bad.py:fine")), load_target(target("bad.py:inputs_raising")), world=1)


def test_inputs_returning_a_non_tensor() -> None:
    with pytest.raises(TraceError, match=r"must return a tuple of arguments or a dict of keyword arguments.*got int"):
        trace_program(load_target(target("bad.py:fine")), load_target(target("bad.py:inputs_not_a_tuple")), world=1)


def test_inputs_returning_a_lone_tensor_is_one_argument() -> None:
    p = trace_program(lambda x: x * 2, lambda rank, world, device: torch.ones(4, device=device), world=1)
    assert [op.kind for op in p.ops] == ["elementwise"]


def test_function_raising_names_the_line() -> None:
    with pytest.raises(
        TraceError, match=r"bad\.py:raising raised ValueError: the program itself failed \(at bad\.py:\d+\)"
    ):
        trace_program(load_target(target("bad.py:raising")), load_target(target("bad.py:inputs")), world=1)


def test_bad_params_reach_inputs_as_an_error() -> None:
    with pytest.raises(TraceError, match="unexpected keyword argument 'nope'"):
        trace_program(load_target(target("bad.py:fine")), load_target(target("bad.py:inputs")), world=1,
                      params={"nope": 1})  # fmt: skip
    with pytest.raises(TraceError, match="no INPUTS function"):
        trace_program(lambda: None, world=1, params={"t": 1})


@pytest.mark.parametrize(("world", "rank"), [(0, 0), (2, 2), (2, -1)])
def test_world_and_rank_checked(world: int, rank: int) -> None:
    with pytest.raises(TraceError, match=r"world|rank"):
        trace_program(lambda: None, world=world, rank=rank)


def test_refuses_a_live_process_group() -> None:
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore

    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=2)
    try:
        with pytest.raises(TraceError, match="already initialised"):
            trace_program(lambda: None, world=2)
    finally:
        dist.destroy_process_group()


def test_state_restored_after_an_error() -> None:
    import torch.distributed as dist

    real_stream = torch.cuda.Stream
    with pytest.raises(TraceError):
        trace_program(load_target(target("bad.py:raising")), load_target(target("bad.py:inputs")), world=2)
    assert not dist.is_initialized() and torch.cuda.Stream is real_stream
    assert dist.Backend.backend_capability["fake"] == ["cpu", "cuda", "hpu", "xpu"]
    p: Any = trace_program(lambda x: x + 1, lambda r, w, d: (torch.ones(2, device=d),), world=2)
    assert len(p.ops) == 1
