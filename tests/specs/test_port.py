"""Memory-op curves carried from the measured H200 to its catalog siblings (``compute.memory_ops_from``)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from rooflib.compute.memory import memory_time
from rooflib.errors import SpecError
from rooflib.specs import Catalog, load_system
from rooflib.specs.catalog import builtin_data_dir
from rooflib.specs.port import NOT_PORTED, port_curve

CATALOG = Catalog.load(builtin=True)
CARRIED = [
    n for n in CATALOG.names("device") if "memory_ops_from" in (CATALOG.items["device"][n].data.get("compute") or {})
]
SIZES = np.geomspace(1.0, 3e10, 300)


def test_every_unmeasured_catalog_device_carries_the_h200_curves() -> None:
    assert set(CARRIED) == {"a100-sxm4-80gb", "h100-sxm5", "b200", "gb200"}
    h200 = CATALOG.device("h200-sxm").compute.memory_ops  # type: ignore[union-attr]
    for name in CARRIED:
        ops = CATALOG.device(name).compute.memory_ops  # type: ignore[union-attr]
        assert ops is not None
        assert set(ops.hbm) == {k for k in h200.hbm if k.partition("@")[0] not in NOT_PORTED}, name
        assert all(c.source.startswith("derived: h200-sxm's curve") for c in ops.hbm.values())


@pytest.mark.parametrize("name", CARRIED)
def test_carried_times_never_fall_with_bytes_and_are_never_zero(name: str) -> None:
    dev = CATALOG.device(name)
    assert dev.compute is not None and dev.compute.memory_ops is not None
    for key in dev.compute.memory_ops.hbm:
        op, _, cols = key.partition("@")
        times = memory_time(dev, op, SIZES, cols=float(cols) if cols else None)
        assert np.all(np.isfinite(times)) and np.all(times > 0), key
        assert all(b >= a * (1 - 1e-9) for a, b in itertools.pairwise(times)), key


@pytest.mark.parametrize("name", CARRIED)
def test_a_launch_bound_kernel_keeps_its_time_and_a_stream_its_share(name: str) -> None:
    dev, h200 = CATALOG.device(name), CATALOG.device("h200-sxm")
    tiny = float(memory_time(dev, "copy", 4.0)[()])
    assert tiny == pytest.approx(float(memory_time(h200, "copy", 4.0)[()]), rel=1e-3)
    big = 8e9
    share = big / float(memory_time(dev, "copy", big)[()]) / dev.hbm_bandwidth.value
    share200 = big / float(memory_time(h200, "copy", big)[()]) / h200.hbm_bandwidth.value
    assert share == pytest.approx(share200, rel=0.02)  # a copy streams 2 % below the best curve: that part holds


def test_a_kernel_far_below_the_streaming_rate_moves_little() -> None:
    """A 1 GB sort streams at about a tenth of the H200's rate: on the H100 (0.7x the HBM rate) it takes about
    as long, where a copy of the same bytes takes 1.4x."""
    h200, h100 = CATALOG.device("h200-sxm"), CATALOG.device("h100-sxm5")
    sort = float(memory_time(h100, "sort", 1e9)[()]) / float(memory_time(h200, "sort", 1e9)[()])
    copy = float(memory_time(h100, "copy", 1e9)[()]) / float(memory_time(h200, "copy", 1e9)[()])
    assert copy == pytest.approx(4.8 / 3.35, rel=0.02)
    assert 1.0 < sort < 1.1


def test_port_curve_rule() -> None:
    bw = 4e12
    points = ((1e3, 1e3 / (bw * 1e-6)), (1e9, 0.5))  # a 1 us launch-bound kernel; a stream at half the rate
    out = port_curve(points, bw, 2 * bw, top=0.5)
    assert out[0][0] == 1e3 and 1e3 / (2 * bw * out[0][1]) == pytest.approx(1e-6, rel=2e-3)  # time held
    assert out[1][1] == pytest.approx(0.5)  # the stream's share of the faster rate: half the time
    slow = port_curve(((1e9, 0.1),), bw, 2 * bw, top=0.5)  # a fifth of the stream: 1/5 of its time scales
    assert 1e9 / (2 * bw * slow[0][1]) == pytest.approx(1e9 / (bw * 0.1) * (0.8 + 0.2 / 2))


def test_h100_programs_cost_their_small_kernels() -> None:
    """Before the port an H100's launch-bound kernels cost nothing on the device; now they cost the H200's."""
    from rooflib.compute.kernels import kernel_time

    h100 = load_system("hgx-h100", gpus=1).device
    t100, t200 = kernel_time(h100, "fill", 64.0), kernel_time(CATALOG.device("h200-sxm"), "fill", 64.0)
    assert t100 is not None and t100 > 4e-7 and t100 == pytest.approx(t200, rel=1e-3)


def test_the_h100_carries_the_h200_sgemm_and_attention_models() -> None:
    """The same SMs at the same clock: the H100 takes the H200's measured CUDA-core fp32 GEMM and attention models
    as they are, every figure sourced as carried with the measured source in its note."""
    h100, h200 = CATALOG.device("h100-sxm5").compute, CATALOG.device("h200-sxm").compute
    assert h100 is not None and h200 is not None and h100.memory_ops_from is not None
    assert h100.memory_ops_from.models == ("sgemm", "attention", "programs")
    assert h100.programs is not None and h200.programs is not None
    assert h100.programs.time.value == h200.programs.time.value  # the same SMs: the same slot time
    for name in ("sgemm", "attention"):
        here, there = getattr(h100, name), getattr(h200, name)
        assert here is not None and there is not None
        assert here.kernel_fixed.value == there.kernel_fixed.value
        assert here.kernel_fixed.source.startswith("derived: h200-sxm's figure carried as it is")
        assert here.kernel_fixed.note.startswith(f"from: {there.kernel_fixed.source}")
    assert h100.sgemm is not None and h200.sgemm is not None
    assert h100.sgemm.efficiency.value == h200.sgemm.efficiency.value  # type: ignore[union-attr]
    assert h100.attention is not None and h200.attention is not None
    assert h100.attention.efficiency == h200.attention.efficiency
    assert h100.attention.source.endswith(f"(from: {h200.attention.source})")


def test_a_device_keeps_its_own_model(tmp_path: Path) -> None:
    attention = {
        "block_q": 64,
        "block_kv": 64,
        "kernel_fixed": {"value": "3 us", "source": "measured: my GPU"},
        "efficiency": {"fwd-causal-128": 0.5},
        "source": "measured: my GPU",
    }
    port = {"device": "h200-sxm", "source": "assumption: x", "models": ["sgemm", "attention"]}
    _device(tmp_path, memory_ops_from=port, attention=attention)
    dev = Catalog.load([tmp_path]).device("my-gpu").compute
    assert dev is not None and dev.attention is not None and dev.sgemm is not None
    assert dev.attention.source == "measured: my GPU" and dev.attention.block_q == 64
    assert dev.sgemm.kernel_fixed.source.startswith("derived: h200-sxm's figure carried")


# --- bad input -----------------------------------------------------------------------------------------------


def _device(tmp_path: Path, **compute: Any) -> Path:
    data = yaml.safe_load((builtin_data_dir("hardware") / "devices" / "h100-sxm5.yaml").read_text(encoding="utf-8"))
    data["name"] = "my-gpu"
    data["compute"] = {k: v for k, v in data["compute"].items() if k != "memory_ops_from"} | compute
    path = tmp_path / "my-gpu.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _problems(tmp_path: Path) -> tuple[str, list[tuple[str, Any, str]]]:
    with pytest.raises(SpecError) as info:
        Catalog.load([tmp_path]).device("my-gpu")
    return info.value.file, info.value.problems


def test_an_unknown_source_device_is_named(tmp_path: Path) -> None:
    path = _device(tmp_path, memory_ops_from={"device": "h300", "source": "assumption: x"})
    file, problems = _problems(tmp_path)
    assert file == str(path)
    assert problems[0][:2] == ("compute.memory_ops_from.device", "h300")
    assert "no device of that name" in problems[0][2]


def test_a_source_without_curves_is_refused(tmp_path: Path) -> None:
    _device(tmp_path, memory_ops_from={"device": "b200", "source": "assumption: x"})
    _, problems = _problems(tmp_path)
    assert problems == [
        ("compute.memory_ops_from.device", "b200", "that device has no measured compute.memory_ops of its own")
    ]


def test_a_device_extending_a_carrying_one_keeps_its_own_curves(tmp_path: Path) -> None:
    """A user's H100 file with curves of its own (``rooflib calibrate``'s) extends the catalog's H100, which carries
    the H200's: the own curves are used, the carried ones are not."""
    add = {"points": [[1e6, 0.5], [1e9, 0.8]], "source": "measured: my H100"}
    (tmp_path / "my-h100.yaml").write_text(
        yaml.safe_dump(
            {
                "kind": "device",
                "name": "my-h100",
                "extends": "h100-sxm5",
                "compute": {"memory_ops": {"hbm": {"add": add}}},
            }
        ),
        encoding="utf-8",
    )
    dev = Catalog.load([tmp_path]).device("my-h100")
    assert dev.compute is not None and dev.compute.memory_ops is not None and dev.compute.memory_ops_from is None
    assert (
        set(dev.compute.memory_ops.hbm) == {"add"} and dev.compute.memory_ops.hbm["add"].source == "measured: my H100"
    )
    off = tmp_path / "off"
    off.mkdir()
    (off / "bare.yaml").write_text(
        yaml.safe_dump(
            {"kind": "device", "name": "bare", "extends": "h100-sxm5", "compute": {"memory_ops_from": None}}
        ),
        encoding="utf-8",
    )
    bare = Catalog.load([off]).device("bare")  # the port switched off: the datasheet rule
    assert bare.compute is not None and bare.compute.memory_ops is None


def test_a_model_the_source_lacks_is_named(tmp_path: Path) -> None:
    path = _device(tmp_path, memory_ops_from={"device": "b200", "source": "assumption: x", "models": ["sgemm"]})
    file, problems = _problems(tmp_path)
    assert file == str(path)
    assert problems == [("compute.memory_ops_from.models", "sgemm", "device b200 has no compute.sgemm")]


def test_a_misspelt_model_is_named(tmp_path: Path) -> None:
    _device(tmp_path, memory_ops_from={"device": "h200-sxm", "source": "assumption: x", "models": ["sgem"]})
    _, problems = _problems(tmp_path)
    assert problems == [("compute.memory_ops_from.models[0]", "sgem", "Input should be 'sgemm', 'attention' or 'programs'")]


def test_a_misspelt_key_is_named(tmp_path: Path) -> None:
    _device(tmp_path, memory_ops_from={"devise": "h200-sxm", "source": "assumption: x"})
    _, problems = _problems(tmp_path)
    assert any("memory_ops_from" in p[0] and "devise" in p[0] for p in problems), problems
