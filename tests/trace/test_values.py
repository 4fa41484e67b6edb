"""Collective outputs in a run with values (rooflib.trace.values): the one-copy all-to-all."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")


def test_the_one_copy_all_to_all_fills_as_the_chunk_by_chunk_rule_does() -> None:
    from rooflib.trace.values import _chunks, _put, one_copy

    gen = torch.Generator().manual_seed(3)
    for splits in ([2, 3, 4, 1], None, [0, 1, 0, 5]):
        x = torch.randint(0, 100, (sum(splits) if splits else 12, 3), generator=gen)
        src = _chunks(x, splits, 4)[2]
        fast, slow = torch.full((4 * src.shape[0], 3), -1), torch.full((4 * src.shape[0], 3), -1)
        assert one_copy(fast, src, None, 4)
        for part in _chunks(slow, None, 4):
            _put(part, src)
        assert torch.equal(fast, slow)
    # an output that does not hold four such chunks is left to the chunk-by-chunk rule, untouched
    out = torch.full((5,), -1)
    assert not one_copy(out, torch.arange(2), None, 4) and out.tolist() == [-1] * 5
    assert not one_copy(torch.empty(8, dtype=torch.long), torch.arange(2), [2, 2, 3, 1], 4)  # uneven parts


def test_an_all_to_all_fill_hands_back_the_chunk_this_rank_sends_itself() -> None:
    from rooflib.trace.values import fill_outputs

    class Group:
        def convert(self, _: Any) -> Any:
            return type("G", (), {"size": 4, "rank": 1})

    x, out = torch.arange(8), torch.full((8,), -1)
    fill_outputs(torch, "alltoall_base_", {"input": x, "output": out}, None, Group())
    assert out.tolist() == [2, 3] * 4
