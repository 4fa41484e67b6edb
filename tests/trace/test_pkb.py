"""The ParallelKernelBench adapter: problems found and resolved, inputs from PKB's own builder, fake and
value-carrying traces, Triton launches, the local part, the table rows, and the CLI's errors (exit code 2).

Needs torch and a PKB checkout at ../shared/pkb (or $ROOFLIB_PKB); skipped cleanly otherwise."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

torch = pytest.importorskip("torch")

from rooflib.cli.common import RooflibGroup  # noqa: E402
from rooflib.cli.trace import trace  # noqa: E402
from rooflib.program.ir import ProgramBuilder  # noqa: E402
from rooflib.specs import load_system  # noqa: E402
from rooflib.trace import lower  # noqa: E402
from rooflib.trace.errors import TraceError  # noqa: E402
from rooflib.trace.pkb import open_suite, parse_size, trace_problem  # noqa: E402
from rooflib.trace.pkb_catalog import CATEGORIES, category_of  # noqa: E402
from rooflib.trace.pkb_table import local_part, problem_result, problem_row  # noqa: E402

ROOT = Path(os.environ.get("ROOFLIB_PKB", Path(__file__).resolve().parents[3] / "shared" / "pkb"))
needs_pkb = pytest.mark.skipif(not (ROOT / "reference").is_dir(), reason=f"no ParallelKernelBench at {ROOT}")
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")


@click.group(cls=RooflibGroup)
def cli() -> None:
    """The trace command alone."""


cli.add_command(trace)


def test_parse_size() -> None:
    assert parse_size("4096x1024") == (4096, 1024)
    for bad in ("10y", "0x4", "x", "1024"):
        with pytest.raises(TraceError, match=repr(bad)):
            parse_size(bad)


def test_categories_cover_every_problem_once() -> None:
    assert {category_of(i) for i in range(1, 88)} == set(CATEGORIES)
    assert category_of(999) == "other"


def test_bad_root_names_it(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match=str(tmp_path)):
        open_suite(tmp_path)


def test_local_part_drops_communication() -> None:
    b = ProgramBuilder("p", world=4)
    mm = b.gemm(64, 64, 64)
    ar = b.collective("all_reduce", 8192, after=[mm], stream="comm")
    b.elementwise("add", 4096, after=[ar])
    local = local_part(b.build(), fake=False)
    assert [op.kind for op in local.ops] == ["gemm", "elementwise"] and local.world == 1
    assert local.ops[1].deps == (0,)  # it waited for the collective, which waited for the GEMM


@needs_pkb
def test_suite_resolves_ids_and_stems() -> None:
    suite = open_suite(ROOT)
    assert len(suite.problems) >= 87
    assert suite.problem("16").stem == suite.problem("16_gemm_reducescatter.py").stem == "16_gemm_reducescatter"
    with pytest.raises(TraceError, match="'999'"):
        suite.problem("999")


@needs_pkb
def test_gemm_reducescatter_shapes_come_from_pkbs_builder() -> None:
    t = trace_problem(open_suite(ROOT), 16, (1024, 2048), world=4)
    ops = lower(t).ops
    gemm = next(op for op in ops if op.kind == "gemm")
    # PKB builds A [M, K / world] and B [K / world, N] with K = 512
    assert (gemm.params["m"], gemm.params["n"], gemm.params["k"]) == (1024, 2048, 512 // 4)
    coll = next(op for op in ops if op.kind == "collective")
    assert coll.params["op"] == "reduce_scatter" and coll.params["bytes"] == 1024 * 2048 * 2


@needs_pkb
def test_data_dependent_splits_trace_with_values() -> None:
    t = trace_problem(open_suite(ROOT), 31, (1024, 1024), world=4)
    assert any("with values" in n for n in t.notes)
    a2a = [op for op in lower(t).ops if op.kind == "collective" and op.params["op"] == "all_to_all"]
    assert a2a and all(op.params["bytes"] > 1024 for op in a2a)  # real split sizes, not stand-ins of 1


@needs_pkb
def test_triton_launch_is_a_streaming_kernel() -> None:
    ops = lower(trace_problem(open_suite(ROOT), 19, (1024, 1024), world=2)).ops
    kernel = next(op for op in ops if op.name.startswith("triton."))
    assert kernel.kind == "elementwise" and kernel.params["elements"] == 1024 * 1024
    # the grid (triton.cdiv(numel, 128),) and Triton's default 4 warps: the launch's program floor
    assert kernel.params["programs"] == 1024 * 1024 // 128 and kernel.params["warps"] == 4


@needs_pkb
def test_row_has_trace_keys_and_derived_figures() -> None:
    suite = open_suite(ROOT)
    result = problem_result(suite, suite.problem(13), (1024, 1024), load_system("hgx-h200", gpus=8), 8)
    row = problem_row(result)
    assert row["bound_time_s"] <= row["best_time_s"] <= row["baseline_time_s"]
    assert row["speedup_available"] == pytest.approx(row["baseline_time_s"] / row["bound_time_s"])
    assert row["category"] == "gemm+comm" and row["unmodelled_share"] < 0.05


@needs_pkb
@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--pkb", "/no/such/pkb", "--problem", "1"], "/no/such/pkb"),
        (["--pkb", str(ROOT), "--problem", "999"], "'999'"),
        (["--pkb", str(ROOT), "--problem", "1", "--size", "12q"], "'12q'"),
        (["--pkb", str(ROOT)], "--problem"),
    ],
)
def test_cli_errors(args: list[str], named: str) -> None:
    res = CliRunner().invoke(cli, ["trace", *args, "--system", "hgx-h200", "--gpus", "2"])
    assert res.exit_code == 2 and named in res.output and len(res.output.strip().splitlines()) == 1


@needs_pkb
def test_cli_json_one_problem() -> None:
    res = CliRunner().invoke(
        cli, ["trace", "--pkb", str(ROOT), "--problem", "1", "--system", "hgx-h200", "-n", "4", "--json"]
    )
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert d["pkb"]["problem"] == "1_allreduce" and d["bound_time_s"] <= d["baseline_time_s"]


def test_large_random_inputs_are_tiled_and_huge_ones_written_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from rooflib.trace import pkb

    monkeypatch.setattr(pkb, "TILE", 8)
    monkeypatch.setattr(pkb, "TILED_ABOVE", 20)
    monkeypatch.setattr(pkb, "LAZY_ABOVE", 1000)
    orig = torch.randn
    with pkb._tiled_randn(torch):
        small, tiled, huge = torch.randn(4, 5), torch.randn(5, 7), torch.randn(40, 50)
    assert torch.randn is orig and small.shape == (4, 5)
    flat = tiled.view(-1)
    assert tiled.shape == (5, 7) and torch.equal(flat[8:16], flat[:8]) and torch.equal(flat[32:], flat[:3])
    assert not torch.equal(flat[:8], torch.zeros(8))
    assert huge.shape == (40, 50) and torch.isfinite(huge.view(-1)[:8]).all()
    with pkb._tiled_randn(torch):
        grad = torch.randn(40, 50, requires_grad=True)
    assert grad.requires_grad
