"""``rooflib trace``: the table, --json, --set, errors (exit code 2), torch missing; with a stand-in
``predict_program`` (the CLI only formats what it returns) and once with the real one."""

from __future__ import annotations

import json
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

torch = pytest.importorskip("torch")

import rooflib.program  # noqa: E402
from rooflib.cli.common import RooflibGroup  # noqa: E402
from rooflib.cli.trace import trace, unmodelled_line  # noqa: E402
from rooflib.program import Program  # noqa: E402

from .conftest import target  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:.*is deprecated. Please use.*:FutureWarning")


@click.group(cls=RooflibGroup)
def cli() -> None:
    """The ``rooflib`` group with only this command (as ``rooflib.cli.main`` runs it)."""


cli.add_command(trace)
MLP = [target("tp_mlp.py:tp_mlp"), "--inputs", target("tp_mlp.py:inputs")]


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, ["trace", *args])


class StandIn:
    """A ``ProgramPrediction`` stand-in built from the program it is given."""

    def __init__(self, program: Program, system: Any, *, gpus: int | None = None) -> None:
        self.program, self.gpus = program, gpus

    def as_dict(self) -> dict[str, Any]:
        ops = [
            {"name": op.name, "kind": op.kind, "stream": op.stream, "flops": 0.0, "hbm_bytes": 0.0, "net_bytes": 0.0,
             "device_time_s": 1e-5 * (i + 1), "host_time_s": 5e-6, "start_s": 1e-5 * i, "end_s": 1e-5 * (i + 1),
             "host_start_s": 5e-6 * i, "host_end_s": 5e-6 * (i + 1)}
            for i, op in enumerate(self.program.ops)
        ]  # fmt: skip
        return {
            "program": self.program.name, "system": "stand-in", "gpus": self.gpus, "bound_time_s": 1e-5,
            "baseline_time_s": 4e-5, "graph_time_s": 3.5e-5, "host_time_s": 2e-5,
            "best": {"schedule": "inter_sm", "comm_sms": 16, "mechanism": "tma", "time_s": 2e-5},
            "terms": {"compute_s": 1e-5, "memory_s": 5e-6, "comm_s": 2e-6},
            "ops": ops, "unmodelled": [{"name": "aten.cumsum", "count": 2, "device_time_s": 2e-6, "share": 0.05}],
            "notes": [],
            "params": {op.name: {k: v for k, v in op.params.items() if k != "host_calls"} for op in self.program.ops},
        }  # fmt: skip


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rooflib.program, "predict_program", StandIn, raising=False)


def test_help() -> None:
    result = run("--help")
    assert result.exit_code == 0 and "FILE.py:FUNC" in result.output and "--inputs" in result.output


def test_unmodelled_line() -> None:
    line = unmodelled_line(StandIn(Program("p", 1, ()), None, gpus=1).as_dict())
    assert line.startswith("unmodelled: 5.0 % of the eager time") and "aten.cumsum x2" in line
    assert unmodelled_line({"unmodelled": []}) == "unmodelled: none (every op has a model)"


@pytest.mark.usefixtures("stand_in")
def test_table_and_summary() -> None:
    result = run(*MLP, "--system", "hgx-h100", "--gpus", "8", "--set", "t=64", "--set", "h=128", "--set", "f=512")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("traced tp_mlp.py:tp_mlp: 12 calls, 4 ops")  # 5 of them autograd records
    assert lines[1] == "tp_mlp on 8 GPUs of stand-in"
    assert any(line.startswith("bound 10 us") for line in lines)
    assert any(line.startswith("eager PyTorch + NCCL 40 us") and "CUDA graph 35 us" in line for line in lines)
    assert any(line.startswith("best: inter_sm with tma") for line in lines)
    header = next(line for line in lines if line.startswith("op "))
    assert header.split()[:7] == ["op", "kind", "stream", "device", "host", "start", "end"]
    assert any(line.startswith("c10d.allreduce_") and "collective" in line for line in lines)
    assert lines[-1].startswith("unmodelled: 5.0 % of the eager time")


@pytest.mark.usefixtures("stand_in")
def test_timeline_plot(tmp_path: Any) -> None:
    out = tmp_path / "timeline.png"
    result = run(*MLP, "--system", "hgx-h100", "--gpus", "2", "--set", "t=64", "--set", "h=128", "--set", "f=512",
                 "--out", str(out), "--json")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert out.stat().st_size > 0 and out.read_bytes()[:4] == b"\x89PNG"
    bad = run(*MLP, "--system", "hgx-h100", "--gpus", "2", "--out", str(tmp_path / "timeline.txt"))
    assert bad.exit_code == 2 and "unsupported image" in bad.output


@pytest.mark.usefixtures("stand_in")
def test_json_and_set_values_reach_inputs() -> None:
    result = run(*MLP, "--system", "hgx-h100", "--gpus", "4", "--set", "t=64", "--set", "h=128", "--set", "f=512",
                 "--json")  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["gpus"] == 4 and [op["kind"] for op in data["ops"]] == ["gemm", "elementwise", "gemm", "collective"]
    mm = {"m": 64, "n": 128, "k": 512 // 4, "batch": 1, "dtype": "bf16"}  # nn.Linear's weight requires grad:
    assert data["params"]["aten.mm"] == {**mm, "host_extra": ["python.autograd_record"] * 2}  # t, mm record
    assert data["params"]["c10d.allreduce_"] == {"op": "all_reduce", "bytes": 64 * 128 * 2}


def test_real_prediction_json() -> None:
    pytest.importorskip("rooflib.program.predict")
    result = run(*MLP, "--system", "hgx-h100", "--gpus", "8", "--set", "t=256", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert {"bound_time_s", "baseline_time_s", "graph_time_s", "host_time_s", "best", "ops", "unmodelled"} <= set(data)
    assert data["bound_time_s"] <= data["best"]["time_s"] <= data["baseline_time_s"] * (1 + 1e-9)
    up = data["ops"][0]
    assert up["name"] == "aten.mm" and up["flops"] == pytest.approx(2 * 256 * 8192 * 28672 / 8)


def test_single_gpu() -> None:
    result = run(target("elementwise_chain.py:chain"), "--inputs", target("elementwise_chain.py:inputs"),
                 "--system", "hgx-h100", "--gpus", "1")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "aten.silu" in result.output and "unmodelled: none" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope.py:f", "--system", "hgx-h100", "--gpus", "2"], "nope.py: no such file"),
        ([target("bad.py:missing"), "--system", "hgx-h100", "--gpus", "2"], "has no attribute 'missing'"),
        (
            [target("bad.py:fine"), "--inputs", target("bad.py:inputs_raising"), "--system", "hgx-h100", "--gpus", "2"],
            "INPUTS bad.py:inputs_raising raised RuntimeError",
        ),
        ([*MLP, "--system", "hgx-h100", "--gpus", "2", "--set", "t"], "--set expects KEY=VALUE, got 't'"),
        ([*MLP, "--system", "no-such-system", "--gpus", "2"], "unknown system 'no-such-system'"),
        ([*MLP, "--system", "hgx-h100", "--gpus", "0"], "--gpus"),
        ([target("bad.py:fine"), "--system", "hgx-h100", "--gpus", "1", "--set", "n=2"], "no INPUTS function"),
    ],
)
def test_errors_exit_2_with_one_line(args: list[str], message: str) -> None:
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and message in result.output
    assert "Traceback" not in result.output


def test_unmodelled_ops_are_listed(tmp_path: Any) -> None:
    pytest.importorskip("rooflib.program.predict")
    prog = tmp_path / "scan.py"
    prog.write_text(
        "import torch\n\n"
        "def scan(x):\n    return torch.cdist(x, x) + torch.cdist(x, x)\n\n"
        "def inputs(rank, world, device, n=1024):\n    return (torch.randn(n, n, device=device),)\n"
    )
    result = run(f"{prog}:scan", "--inputs", f"{prog}:inputs", "--system", "hgx-h100", "--gpus", "1", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [op["kind"] for op in data["ops"]] == ["unmodelled", "unmodelled", "elementwise"]
    (row,) = data["unmodelled"]
    assert row["name"] == "aten._euclidean_dist" and row["count"] == 2 and 0 < row["share"] < 1
    text = run(f"{prog}:scan", "--inputs", f"{prog}:inputs", "--system", "hgx-h100", "--gpus", "1").output
    assert "unmodelled: " in text and "aten._euclidean_dist x2" in text


def test_explain_prints_each_regions_rationale() -> None:
    result = run(*MLP, "--system", "hgx-h100", "--gpus", "8", "--set", "t=4096", "--explain")
    assert result.exit_code == 0, result.output
    assert "binds (compute" in result.output and "Mechanism:" in result.output and "Schedule:" in result.output
