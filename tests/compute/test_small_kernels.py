"""Small kernels on the H200 (the small-op grid of runs/x1-host-programs): one-wave causal attention lasts as long as
its longest unit plus a fixed and a per-wave time; small copies and reductions in programs cost a kernel's floor."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import rooflib
from rooflib.calibrate.compute import fit_split, small_op_rows
from rooflib.compute import attention
from rooflib.program.cost import op_cost
from rooflib.program.ir import Op

RUN = Path(__file__).parents[2] / "docs" / "validation" / "h200" / "runs" / "x1-host-programs"


@pytest.fixture(scope="module")
def h200() -> rooflib.System:
    return rooflib.load_system("hgx-h200", gpus=1)


def test_one_wave_causal_pass_lasts_its_longest_unit(h200: rooflib.System) -> None:
    dev = h200.device
    assert dev.compute is not None
    model = dev.compute.attention
    assert model is not None and model.wave_overhead is not None
    # 4 heads x 16 query blocks: one wave; the last query block runs all 16 key blocks (not the mean 8.5), each as
    # long as the single key block of a 128-long pass
    fixed = model.kernel_fixed.value + model.wave_overhead.value
    long = attention(dev, 1, 4, 2048, 2048, 64, causal=True).compute_s
    short = attention(dev, 1, 4, 128, 128, 64, causal=True).compute_s
    assert long - fixed == pytest.approx(16 * (short - fixed), rel=1e-9)
    # many waves: the mean work per unit over the waves again (32 x 32 units of 16.5 key blocks on 132 SMs)
    many = attention(dev, 32, 32, 4096, 4096, 64, causal=True).compute_s
    waves = -(-32 * 32 * 32 // 132)
    assert many == pytest.approx(
        model.kernel_fixed.value + waves * model.wave_overhead.value + waves * 16.5 * (short - fixed), rel=1e-9
    )


def test_small_causal_passes_held_out_within_ten_percent(h200: rooflib.System) -> None:
    rows = small_op_rows(RUN).assign(run="x1-host-programs")
    att = rows[rows["op"] == "attention"]
    held = att[~fit_split(att)]
    assert len(held) == 14
    errs = []
    for r in held.to_dict("records"):
        heads, seq, d = (int(float(r[k])) for k in ("heads", "seq_q", "head_dim"))
        errs.append(abs(attention(h200.device, 1, heads, seq, seq, d, causal=True).time_s / float(r["time_s"]) - 1))
    assert np.median(errs) < 0.05 and max(errs) < 0.10


def test_small_op_rows_read_only_verified_op_records() -> None:
    raw = [json.loads(line) for line in (RUN / "raw" / "ops.jsonl").read_text().splitlines() if line.strip()]
    ops = [r for r in raw if r.get("record") == "op" and r.get("verified") and r["op"] in ("sdpa", "softmax")]
    rows = small_op_rows(RUN)
    assert len(rows) == len(ops) == 46
    assert set(rows["op"]) == {"attention", "softmax"} and rows["small_ops"].all()
    soft = rows[rows["op"] == "softmax"].assign(run="x")
    fitted = soft[fit_split(soft)]
    assert sorted(set(fitted["cols"])) == [32, 128]  # whole sweeps of every other row length


def test_small_copies_and_reductions_cost_a_kernel_floor(h200: rooflib.System) -> None:
    copy = op_cost(h200, Op("aten._to_copy", "copy", params={"bytes": 49152.0}), (0,))
    red = op_cost(h200, Op("aten.sum", "reduction", params={"elements": 512, "outputs": 256, "dtype": "fp32"}), (0,))
    for c in (copy, red):
        assert 1e-6 < c.device_s < 6e-6  # a launched kernel, not bytes at the streaming rate (tens of ns)
        assert c.ideal_memory_s < 1e-7  # the bound still counts only the bytes
