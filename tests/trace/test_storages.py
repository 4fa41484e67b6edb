"""Storage numbers of a trace (rooflib.trace.storages): a freed storage and a new one at its address are two,
in a fake run and in a run with values."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.mark.parametrize("values", [False, True])
def test_a_freed_storage_and_a_new_one_at_its_address_are_two(values: bool) -> None:
    """Temporaries die every step and the host's allocator hands their addresses back: each new output is still
    a new storage, in a fake run and in a run with values (real host tensors), and two traces number alike."""
    torch = pytest.importorskip("torch")
    from rooflib.trace.capture import capture

    def program(x: torch.Tensor) -> torch.Tensor:
        for _ in range(6):
            x = (x * 2.0).sum(dim=0, keepdim=True) + x
        return x

    def inputs(r: int, w: int, d: Any) -> tuple[Any, ...]:
        return (torch.randn(4, 64, device=d),)

    traces = [capture(program, inputs, world=1, values=values) for _ in range(2)]
    outs = [t.storage for c in traces[0].calls for t in c.outputs]
    assert len(outs) == 18 and len(set(outs)) == len(outs)  # no output aliases an earlier, dead one
    ids = [[(t.storage, t.offset) for c in tr.calls for t in (*c.inputs, *c.outputs)] for tr in traces]
    assert ids[0] == ids[1]
