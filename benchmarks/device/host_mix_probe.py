"""Does a sequence of different ops cost the host more than the same ops each in its own loop? One H200 (device
tool), from the repository root (rooflib importable):

    python3 benchmarks/device/host_mix_probe.py OUT.json [--curve]

The host family's ``op`` cases that neither wait nor compose others (``rooflib.bench.host_worker.MIX_EXCLUDED``),
each timed (a) in its own loop (500 back-to-back calls, median of 7 rounds) and (b) with the GPU held busy by a
sleep kernel (20 calls, per-call median: the issue cost alone, nothing queued behind a full launch queue); then
sequences of them, each timed both ways: ``mix`` (every case once, fixed order), ``mix_reversed``, ``pairs``
(each case twice in a row), ``elementwise`` (the one-kernel pointwise cases only, once each), and
``distinct<D>_<draw>``: D of the other (not pointwise) cases drawn at random (three draws per D, seed 0), once
each: how the extra cost grows with the number of different ops a loop cycles through; with ``--curve``,
``any<D>_<draw>``: D of all the cases (pointwise included) drawn at random, five draws per D from 1 to 40, and
``any<D>_<draw>_x2``: the same sequence run twice per round. Printed: each
sequence's time over the sum of its cases' own-loop figures.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable
from typing import Any


def _held(torch: Any, fn: Callable[[], Any], calls: int = 20) -> float:
    from rooflib.bench.torch_timing import held_host_times, loop_host_time

    fn()
    torch.cuda.synchronize()
    device = max(loop_host_time(torch, fn, calls=20, count=3), 20e-6)
    return float(held_host_times(torch, torch.device("cuda"), lambda i: fn(), calls, device)["host_s"])


def main() -> None:
    import torch

    from rooflib.bench.host_ops import pkb_cases
    from rooflib.bench.host_worker import MIX_EXCLUDED, op_cases
    from rooflib.bench.torch_timing import loop_host_time

    dev = torch.device("cuda")
    cases = {**op_cases(torch, dev), **pkb_cases(torch, dev)}
    cases = {k: f for k, f in cases.items() if k not in MIX_EXCLUDED}
    alone = {k: loop_host_time(torch, f) for k, f in cases.items()}
    held = {k: _held(torch, f) for k, f in cases.items()}
    pointwise = [
        k
        for k in (
            "add",
            "mul_scalar",
            "gelu",
            "silu",
            "tanh",
            "div",
            "mul",
            "sub",
            "eq",
            "neg",
            "pow",
            "sqrt",
            "mul_",
            "add_",
            "addcmul_",
        )
        if k in cases
    ]
    order = list(cases)
    seqs = {
        "mix": order,
        "mix_reversed": order[::-1],
        "pairs": [k for k in order for _ in range(2)],
        "elementwise": pointwise,
    }
    others = [k for k in order if k not in pointwise]
    rng = random.Random(0)
    for distinct in (1, 2, 4, 8, 16, 24, len(others)):  # the other cases, `distinct` of them, three draws each
        for draw in range(3 if distinct < len(others) else 1):
            seqs[f"distinct{distinct}_{draw}"] = rng.sample(others, distinct)
    if "--curve" in sys.argv:  # any cases, pointwise included, `distinct` of them, five draws each; and twice
        for distinct in (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 40):
            for draw in range(5):
                pick = rng.sample(order, distinct)
                seqs[f"any{distinct}_{draw}"] = pick
                seqs[f"any{distinct}_{draw}_x2"] = pick + pick
    out: dict[str, Any] = {"alone_s": alone, "held_s": held, "sequences": {}}
    print(
        f"{'sequence':14s} {'ops':>4s} {'alone sum us':>13s} {'loop us':>9s} {'ratio':>6s} {'held us':>9s} "
        f"{'ratio':>6s}"
    )
    for name, seq in seqs.items():

        def run(seq: list[str] = seq) -> None:
            for k in seq:
                cases[k]()

        loop = loop_host_time(torch, run, calls=20, count=7)
        hold = _held(torch, run, calls=5)
        base = sum(alone[k] for k in seq)
        out["sequences"][name] = {"cases": seq, "alone_sum_s": base, "loop_s": loop, "held_s": hold}
        print(
            f"{name:14s} {len(seq):4d} {base * 1e6:13.1f} {loop * 1e6:9.1f} {loop / base:6.2f} {hold * 1e6:9.1f} "
            f"{hold / base:6.2f}"
        )
    with open(sys.argv[1], "w") as fh:
        json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
