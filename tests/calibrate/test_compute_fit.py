"""The compute fit on the committed H200 runs: the device file holds exactly what the fit gives, the held-out
errors stay where the report says, and ``rooflib calibrate`` writes the same tables into a profile."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from pydantic import ValidationError

from rooflib.calibrate.compute import compute_rows, fit_compute, fit_split, load_runs
from rooflib.calibrate.compute_report import device_block, error_table, predict_rows
from rooflib.specs import default_catalog
from rooflib.specs.compute_models import AttentionModelSpec, GemmTiles, MemoryOpsSpec

ROOT = Path(__file__).parents[2]
RUNS = [
    ROOT / "docs/validation/h200/runs/x1-compute",
    ROOT / "docs/validation/h200/runs/x1-compute-holdout",
    ROOT / "docs/validation/h200/runs/x1-kernels",  # the kernels grid only
    ROOT / "docs/validation/h200/runs/x1-kernels-2",  # casts, strided copies, column sums
    ROOT / "docs/validation/h200/runs/x1-kernels-4",  # the kernels grid's L2-resident (hot) points, 256+ calls
    ROOT / "docs/validation/h200/runs/x1-compute-hot-2",  # the memory part's hot points, 256+ calls
    ROOT / "docs/validation/h200/runs/x1-bcast",  # the kernels grid's broadcast operands
    ROOT / "docs/validation/h200/runs/x1-conv",  # the conv part (cuDNN's kernels, ATen's depthwise one)
    ROOT / "docs/validation/h200/runs/x1-sgemm",  # fp32 GEMMs on CUDA cores
]
OPS = [ROOT / "docs/validation/h200/runs/x1-host-programs"]  # only its small-op grid (programs_worker --ops)
DEVICE_FILE = ROOT / "hardware/devices/h200-sxm.yaml"
SOURCE = (
    "measured: rooflib bench compute, one NVIDIA H200 (runs/x1-compute, runs/x1-compute-holdout, "
    "runs/x1-compute-hot-2, runs/x1-sgemm, runs/x1-host-programs; fit half)"
)
KERNELS_SOURCE = (
    "measured: rooflib bench compute, one NVIDIA H200 (runs/x1-compute, runs/x1-compute-holdout, "
    "runs/x1-kernels, runs/x1-kernels-2, runs/x1-kernels-4, runs/x1-compute-hot-2, runs/x1-bcast, runs/x1-conv, "
    "runs/x1-sgemm, runs/x1-host-programs; fit half)"
)  # the curves with points of the kernels grid or the conv part
_RUN_LIST = re.compile(r"\(runs/[^;]*; fit half\)")


def _runs(text: str) -> set[str]:
    hit = _RUN_LIST.search(text)
    return set(re.findall(r"runs/([\w.-]+)", hit.group(0))) if hit else set()


HOST_SOURCE = "measured: rooflib bench host, one NVIDIA H200 (runs/x1-compute)"


@pytest.fixture(scope="module")
def fitted() -> Any:
    device = default_catalog().device("h200-sxm")
    frame = load_runs([str(p) for p in RUNS], [str(p) for p in OPS])
    result = fit_compute(frame, device, SOURCE, HOST_SOURCE, KERNELS_SOURCE)
    assert result is not None
    return result


def _close(a: Any, b: Any, path: str = "") -> None:
    """Equal structures; numbers within 2 % (the fit's optimiser may move in the last digits elsewhere)."""
    if isinstance(a, dict):
        assert set(a) == set(b), path
        for k in a:
            _close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _close(x, y, f"{path}[{i}]")
    elif isinstance(a, float | int) and not isinstance(a, bool):
        assert float(a) == pytest.approx(float(b), rel=0.02, abs=1e-12), path
    elif path.endswith(".source") and _RUN_LIST.search(str(a)) and _RUN_LIST.search(str(b)):
        # a curve written before a later run joined the fit lists the runs of its own day: those must all be
        # runs of this fit, and the rest of the source the same
        assert _RUN_LIST.sub("()", str(a)) == _RUN_LIST.sub("()", str(b)), path
        assert _runs(str(a)) <= _runs(str(b)), path
    else:
        assert a == b, path


def test_device_file_holds_the_fit(fitted: Any) -> None:
    """No hand-typed result: every number in the H200's compute tables comes from the committed runs."""
    block = device_block(fitted)
    data = yaml.safe_load(DEVICE_FILE.read_text())
    data["compute"]["memory_ops"]["hbm"].pop("topk")  # the small-op grid's fit: tests/calibrate/test_small_ops.py
    hbm = data["compute"]["memory_ops"]["hbm"]
    for key in [k for k, c in hbm.items() if "measured on h100-sxm5" in c["source"]]:
        hbm.pop(key)  # measured on H100s, carried: tests/validation/test_h100_runs.py
    data["compute"].pop("programs")  # fitted on the PKB lease runs: tests/validation/test_triton_report.py
    # the tensor-core GEMM block and its dtype shares are fitted on NVIDIA's H200 table since session 26
    # (tools/fit_gemm_defaults.py, as the A100's and H100's), its sustained share on the H200 ramps
    table_fit = "measured: aiconfigurator h200_sxm/gemm/"
    gemm = data["compute"].pop("gemm")
    assert gemm["operand_bandwidth"]["source"].startswith(table_fit)
    assert gemm["sustained_share"]["source"].startswith("measured: rooflib benchmarks/device/gemm_ramp.py")
    assert all(data["dtype_efficiency"][d]["source"].startswith(table_fit) for d in ("bf16", "fp8"))
    block["compute"].pop("gemm")
    assert set(block["compute"]) == set(data["compute"]), "the own runs' fit gives every other compute table"
    _close(data["compute"], block["compute"], "compute")
    # the host block is the host family's later run (runs/x1-host-programs): tests/program/test_host_costs.py


def test_split_is_deterministic_and_half(fitted: Any) -> None:
    rows = compute_rows(load_runs([str(p) for p in RUNS], [str(p) for p in OPS]))
    again = fit_split(rows)
    assert (again == fitted.fit).all()
    main = rows["grid"] == "main"
    assert 0.4 < again[main].mean() < 0.6
    second = rows[~main]
    kernels = rows["grid"] == "kernels"
    assert not again[~main & ~kernels & ~second["op"].isin(["rmsnorm", "layernorm", "softmax", "sum"])].any()
    assert 0.4 < again[kernels].mean() < 0.6  # every other size of each kernels-grid sweep


def test_held_out_errors(fitted: Any) -> None:
    device = default_catalog().device("h200-sxm")
    pred = predict_rows(fitted.device, fitted.rows)
    before = predict_rows(device.model_copy(update={"compute": None, "dtype_efficiency": {}}), fitted.rows)
    table = error_table(fitted.rows, fitted.fit, pred, before).set_index("subset")
    assert table.loc["memory ops (all)", "held_median"] < 2.0
    assert table.loc["GEMM (all)", "held_median"] < 8.0
    assert table.loc["attention (all)", "held_median"] < 8.0
    assert table.loc["  m = 128 j + 1", "held_max"] < 30.0
    broadcast = "  a broadcast tensor operand (0-dim, column, row; bf16, fp32, mixed)"
    assert table.loc[broadcast, "held_median"] < 15.0
    sgemm = "fp32 GEMMs on CUDA cores (TF32 off; compute.sgemm)"
    assert table.loc[sgemm, "held_median"] < table.loc[sgemm, "before_median"] / 1.5  # the one-tile model: 23 %
    convs = "convolutions (cuDNN's kernels and ATen's depthwise one, whole calls)"
    assert table.loc[convs, "held_n"] >= 50 and table.loc[convs, "held_median"] < 25.0
    for family in ("memory ops (all)", "GEMM (all)", "attention (all)"):  # better than the catalog before
        assert table.loc[family, "held_median"] < table.loc[family, "before_median"] / 3
    # the catalog device predicts the same as the fitted one (it holds the fit) but on tensor-core GEMMs and the
    # convolutions' implicit GEMMs, whose block is fitted on NVIDIA's table
    catalog = predict_rows(device, fitted.rows)
    rows = fitted.rows
    tensor = (((rows["op"] == "gemm") & rows["dtype"].isin(["bf16", "fp8"])) | (rows["op"] == "conv")).to_numpy()
    carried = {k for k, c in device.compute.memory_ops.hbm.items() if "measured on h100-sxm5" in c.source}  # type: ignore[union-attr]
    keys = [f"{op}@{int(c)}" if c == c else op for op, c in zip(rows["op"], rows["cols"], strict=True)]
    ported = np.array([k in carried for k in keys])  # row lengths the fit half left out, an H100's curves now
    same = ~tensor & ~ported
    assert tensor.sum() > 400 and ported.sum() < 10 and np.allclose(catalog[same], pred[same], rtol=0.05)
    err = np.abs(catalog[tensor] / rows["time_s"][tensor] - 1)
    assert float(np.median(err)) < 0.15


def test_calibrate_writes_the_tables_into_a_profile(tmp_path: Path) -> None:
    from rooflib.calibrate.profile import calibrate

    out = tmp_path / "p.yaml"
    profile = calibrate(RUNS[0], "hgx-h200", out, name="x1-compute")
    over = profile["overrides"]
    assert {"device.compute", "device.dtype_efficiency"} <= set(over)
    assert {"kernel", "cublas", "graph_launch", "kernel_gap", "sync"} <= {
        k.rsplit(".", 1)[1] for k in over if k.startswith("device.host.")
    }
    assert "gemm" in over["device.compute"] and "attention" in over["device.compute"]


def test_spec_refuses_bad_tables() -> None:
    curve = {"points": [[1024, 0.5]], "source": "measured: x"}
    with pytest.raises(ValidationError, match="unknown memory op kind"):
        MemoryOpsSpec.model_validate({"hbm": {"bogus": curve}})
    with pytest.raises(ValidationError, match="row length"):
        MemoryOpsSpec.model_validate({"hbm": {"softmax@x": curve}})
    with pytest.raises(ValidationError, match="both with and without"):
        MemoryOpsSpec.model_validate({"hbm": {"softmax": curve, "softmax@1024": curve}})
    with pytest.raises(ValidationError, match="split_k must include 1"):
        GemmTiles.model_validate({"pairs": [[128, 128]], "k_bytes": 128, "split_k": [2], "source": "x"})
    att = {"block_q": 128, "block_kv": 128, "kernel_fixed": {"value": "1 us", "source": "x"}, "source": "x"}
    with pytest.raises(ValidationError, match="DIRECTION-MASK-HEAD_DIM"):
        AttentionModelSpec.model_validate({**att, "efficiency": {"forward-128": 0.5}})
    with pytest.raises(ValidationError, match=r"\(0, 1\]"):
        AttentionModelSpec.model_validate({**att, "efficiency": {"fwd-full-128": 1.5}})


def test_launch_bound_points_extend_a_curve_downwards_only() -> None:
    import pandas as pd

    from rooflib.calibrate.compute import _below

    grp = pd.DataFrame(
        {
            "grid": ["main", "main", "kernels", "kernels", "kernels"],
            "bytes_moved": [1e6, 4e6, 1e3, 5e5, 2e6],  # the kernels grid's 2e6 point overlaps the main sweep
            "time_s": [2e-6, 4e-6, 1e-6, 3e-6, 9e-6],
        }
    )
    b, t = _below(grp)
    assert list(b) == [1e6, 4e6, 1e3, 5e5]  # above the main grid's smallest size the main grid alone
    assert list(t) == [2e-6, 4e-6, 1e-6, 2e-6]  # no slower than that smallest size (time grows with bytes)


def test_write_curves_replaces_only_the_named_lines(tmp_path: Path, fitted: Any) -> None:
    from rooflib.calibrate.compute_report import write_curves

    path = tmp_path / "h200.yaml"
    before = DEVICE_FILE.read_text()
    renamed = before.replace("      sort: {", "      sortx: {").replace("      fill: {", "      fillx: {")
    path.write_text(renamed)
    block = device_block(fitted)
    assert write_curves(path, block, ["fill", "sort", "nope"]) == ["fill", "sort"]
    after = path.read_text()
    added = [line for line in after.splitlines() if line.startswith(("      fill:", "      sort:"))]
    assert len(added) == 2 and [x for x in after.splitlines() if x not in added] == renamed.splitlines()
    path.write_text(before)  # present: replaced in place, every other line as it was
    write_curves(path, block, ["sort"])
    assert len(path.read_text().splitlines()) == len(before.splitlines())
    data = yaml.safe_load(after)["compute"]["memory_ops"]["hbm"]
    assert {"fill", "sort", "fillx", "sortx"} <= set(data)  # the two added after the last curve of the block
    MemoryOpsSpec.model_validate({"hbm": {k: v for k, v in data.items() if not k.endswith("x")}})


def test_l2_curves_come_from_long_replays_only(fitted: Any) -> None:
    """Hot points replayed fewer than 256 times carry the graph's launch (runs/x1-compute's, x1-kernels'): left
    out; the classes of the kernels grid get curves of their own, and hot times never fall with size."""
    from rooflib.calibrate.compute import HOT_MIN_CALLS

    l2 = device_block(fitted)["compute"]["memory_ops"]["l2_resident"]
    assert {"copy", "add", "transpose", "cast_up", "cast_down", "strided_copy"} <= set(l2)
    for op, curve in l2.items():
        assert "runs/x1-compute," not in curve["source"].split("(hot, ")[1], op
        assert all(0.0 < r <= 1.0 for _, r in curve["points"]), op
    rows = fitted.rows
    short = rows[(rows["mode"] == "hot") & (rows["graph_calls"] < HOT_MIN_CALLS)]
    assert set(short["run"]) >= {"x1-compute", "x1-kernels"}  # they exist, and were left out above
    spec = MemoryOpsSpec.model_validate(
        {"hbm": device_block(fitted)["compute"]["memory_ops"]["hbm"], "l2_resident": l2}
    )
    bw = default_catalog().device("h200-sxm").hbm_bandwidth.value
    for op in ("copy", "add"):
        xs = np.array([b for b, _ in l2[op]["points"]], dtype=float)
        cold = xs / (bw * spec.curves(op)[None](xs))
        hot = cold * np.array([r for _, r in l2[op]["points"]])
        assert (np.diff(hot) >= -1e-3 * hot[1:]).all(), op  # four digits kept


def test_write_curves_replaces_the_l2_block(tmp_path: Path, fitted: Any) -> None:
    from rooflib.calibrate.compute_report import write_curves

    path = tmp_path / "h200.yaml"
    before = DEVICE_FILE.read_text()
    stale = before.replace(
        "    l2_resident:\n", "    l2_resident:\n      gelu: {points: [[1, 0.5]], source: stale}\n", 1
    )
    path.write_text(stale)
    assert write_curves(path, device_block(fitted), ["l2_resident"]) == ["l2_resident"]
    after = path.read_text()
    # every line outside the L2 block as it was; the block the fit's (the stale line gone, the same curves)
    assert after.split("    l2_resident:")[0] == before.split("    l2_resident:")[0]
    assert (
        after.split("    l2_resident:")[1].split("\n  gemm:")[1]
        == before.split("    l2_resident:")[1].split("\n  gemm:")[1]
    )
    written = yaml.safe_load(after)["compute"]["memory_ops"]["l2_resident"]
    _close(yaml.safe_load(before)["compute"]["memory_ops"]["l2_resident"], written, "l2_resident")


def test_layout_conversions_are_read_off_the_cupti_profile() -> None:
    from rooflib.calibrate.conv import layout_points

    rows = compute_rows(load_runs([str(ROOT / "docs/validation/h200/runs/x1-conv")]))
    got = layout_points(rows)
    assert set(got) == {"conv_input", "conv_filter", "conv_output"}
    nchw = rows[(rows["op"] == "conv") & ~rows["channels_last"].astype(str).eq("True")]
    assert 40 <= len(got["conv_input"][0]) <= len(nchw)  # 1x1 and 3-channel convolutions convert nothing
    for b, t in got.values():
        assert (b > 0).all() and (t > 0).all() and (b / t < 4.8e12).all()  # never above the HBM rate


def test_only_multi_rank_nccl_calls_calibrate_the_nccl_figure() -> None:
    """A one-rank NCCL call skips the library's multi-rank enqueue: its host time does not set ``host.nccl``."""
    import pandas as pd

    from rooflib.calibrate.compute import _host

    def rows(*pts: tuple[int, float]) -> pd.DataFrame:
        recs = [{"family": "host", "name": "nccl", "gpus": g, "host_s": s, "verified": True} for g, s in pts]
        return pd.DataFrame.from_records(recs)

    device = default_catalog().device("h200-sxm")
    assert _host(rows((1, 8e-6), (2, 15e-6), (2, 17e-6)), device, "x")["nccl"]["value"] == "16 us"
    assert "nccl" not in _host(rows((1, 8e-6)), device, "x")
