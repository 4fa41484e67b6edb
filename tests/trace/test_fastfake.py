"""The fake run's short cut to meta kernels: the same calls recorded with and without it, the ops it must leave
to ``FakeTensorMode`` left there, and ParallelKernelBench's recurrences traced the same (PKB tests skip cleanly
without a checkout)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from rooflib.trace.capture import capture  # noqa: E402
from rooflib.trace.fastfake import MISS, FastMeta  # noqa: E402

ROOT = Path(os.environ.get("ROOFLIB_PKB", Path(__file__).resolve().parents[3] / "shared" / "pkb"))
needs_pkb = pytest.mark.skipif(not (ROOT / "reference").is_dir(), reason=f"no ParallelKernelBench at {ROOT}")
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")


_RUN = FastMeta.run


def _counted(monkeypatch: pytest.MonkeyPatch, on: bool) -> dict[str, int]:
    """Patch FastMeta.run to count the ops it answered (``on``) or to answer none (off)."""
    counts = {"fast": 0}

    def counting(self: FastMeta, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not on:
            return MISS
        out = _RUN(self, func, args, kwargs)
        counts["fast"] += out is not MISS
        return out

    monkeypatch.setattr(FastMeta, "run", counting)
    return counts


def recurrence(q: Any, k: Any, v: Any, decay: Any) -> Any:
    state = torch.zeros(q.shape[0], q.shape[2], v.shape[2], device=q.device)
    out = torch.empty_like(v)
    for step in range(q.shape[1]):
        gate = decay[:, step].view(q.shape[0], -1, 1)  # a strided view, the same key each step: remembered
        state = gate * state + k[:, step].unsqueeze(-1) * v[:, step].unsqueeze(1)
        out[:, step] = torch.bmm(q[:, step].unsqueeze(1), state).squeeze(1)
    picked = out[out[:, 0, 0] > 0]  # a data-dependent shape: the mode's bound
    scale = torch.tensor(2.0, device=q.device)  # a constant: the mode's propagation
    host = torch.arange(4)  # a host tensor
    return picked.sum() * scale + host.float().sum()


def inputs(rank: int, world: int, device: Any) -> tuple[Any, ...]:
    return tuple(torch.randn(2, 6, 8, device=device) for _ in range(4))


def _identity(trace: Any) -> list[tuple[tuple[int, int], ...]]:
    """Each call's tensors by storage number and offset (identity, which Call equality leaves out)."""
    return [tuple((t.storage, t.offset) for t in (*c.inputs, *c.outputs)) for c in trace.calls]


def _trace(monkeypatch: pytest.MonkeyPatch, on: bool) -> tuple[Any, dict[str, int]]:
    counts = _counted(monkeypatch, on)
    return capture(recurrence, inputs, world=2), counts


def test_the_short_cut_records_what_the_mode_records(monkeypatch: pytest.MonkeyPatch) -> None:
    slow, none = _trace(monkeypatch, False)
    fast, counts = _trace(monkeypatch, True)
    assert none["fast"] == 0
    assert counts["fast"] > 6 * 5  # the recurrence's ops took it
    assert fast.calls == slow.calls and _identity(fast) == _identity(slow)
    assert fast.notes == slow.notes
    assert any("upper bound" in n for n in fast.notes)  # the boolean index still went through the mode


def test_ops_the_mode_handles_itself_are_left_to_it() -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    mode = FakeTensorMode(allow_non_fake_inputs=True)
    fast = FastMeta(torch, mode)
    aten = torch.ops.aten
    assert fast.eligible(aten.mul.Tensor) and fast.eligible(aten.bmm.default) and fast.eligible(aten.select.int)
    assert not fast.eligible(aten.nonzero.default)  # dynamic output shape
    assert not fast.eligible(aten._local_scalar_dense.default)  # reads a value
    assert not fast.eligible(aten.lift_fresh.default)  # torch.tensor's constants
    assert not fast.eligible(torch.ops.prims.add.default)  # not aten
    a = torch.empty(3, 4, device="meta")
    const = mode.fake_tensor_converter.from_real_tensor(mode, torch.tensor([1.0, 2.0]), make_constant=True)
    assert const.constant is not None
    fa = mode.from_tensor(a)
    assert fast.run(aten.mul.Tensor, (fa, fa), {}) is not MISS
    assert fast.run(aten.mul.Tensor, (a, a), {}) is MISS  # not the mode's fake tensors
    assert fast.run(aten.add.Tensor, (const, const), {}) is MISS  # constants propagate through the mode
    out = fast.run(aten.mul.Tensor, (fa, fa), {})
    assert type(out) is type(fa) and out.shape == (3, 4) and out.fake_mode is mode


def test_without_torch_internals_the_short_cut_is_off() -> None:
    fast = FastMeta(torch, None)
    assert not fast.on
    assert fast.run(torch.ops.aten.mul.Tensor, (), {}) is MISS


@needs_pkb
@pytest.mark.parametrize("problem", ["74", "75", "16", "40"])
def test_pkb_problems_trace_the_same(monkeypatch: pytest.MonkeyPatch, problem: str) -> None:
    from rooflib.trace.pkb import open_suite, trace_problem

    suite = open_suite(ROOT)
    got = []
    for on in (False, True):
        counts = _counted(monkeypatch, on)
        trace = trace_problem(suite, problem, (256, 256), world=2)
        got.append(((trace.calls, _identity(trace)), trace.notes, counts["fast"]))
    (slow, slow_notes, _), (fast, fast_notes, hits) = got
    assert fast == slow and fast_notes == slow_notes
    assert hits > 0 or problem not in ("74", "75")  # the recurrences' ops take it
