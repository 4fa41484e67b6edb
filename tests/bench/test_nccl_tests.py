"""nccl-tests logs of several versions and layouts, and every way a log can be wrong (file, line, column, value)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflib.bench.nccl_tests import read_nccl_tests
from rooflib.bench.records import MeasurementError

DATA = Path(__file__).resolve().parent / "data"
AR = (DATA / "all_reduce_h100.log").read_text()  # nccl-tests 2.17: names its test; NVLS available
A2A = (DATA / "alltoall_2proc_old.log").read_text()  # old: no test name, 2 MPI processes, in-place N/A
RS = (DATA / "reduce_scatter_graph.log").read_text()  # 2.19: -G 10, -I 1 (per-iteration columns), -c 0


def _replace_line(text: str, number: int, old: str, new: str) -> str:
    lines = text.split("\n")
    assert old in lines[number - 1], lines[number - 1]
    lines[number - 1] = lines[number - 1].replace(old, new, 1)
    return "\n".join(lines)


def test_a_current_log() -> None:
    (run,) = read_nccl_tests(AR, source="ar.log")
    assert (run.op, run.gpus, run.processes, run.hosts) == ("all_reduce", 8, 1, 1)
    assert run.gpu_model == "NVIDIA H100 80GB HBM3" and run.nccl == "2.27.4" and run.nccl_tests == "2.17.6"
    assert run.nvls == "on" and "NVLS multicast support is available" in run.nvls_evidence
    assert "Collective test starting" in run.op_evidence and run.launch == "stream"
    assert "20 iterations after 5 warm-up" in run.timing and "results checked" in run.timing
    recs = run.records
    assert len(recs) == 12 and {r["mode"] for r in recs} == {"stream", "stream-in-place"}
    big = next(r for r in recs if r["bytes"] == 1 << 30 and r["placement"] == "out_of_place")
    assert big["time_s"] == pytest.approx(3521e-6) and big["verified"] is True and big["log_line"] == 26
    assert big["busbw_bytes_per_s"] == pytest.approx(533.67e9)


def test_an_old_log_without_a_test_name_asks_for_op() -> None:
    with pytest.raises(
        MeasurementError, match=r"a2a.log line 1: cannot tell the collective.* all_gather, all_to_all; pass --op"
    ):
        read_nccl_tests(A2A, source="a2a.log")  # redop none, root -1, factor 7/8: two collectives fit
    (run,) = read_nccl_tests(A2A, source="a2a.log", op="alltoall")
    assert (run.op, run.gpus, run.processes, run.hosts) == ("all_to_all", 8, 2, 2)  # nGpus 4 x 2 processes
    assert run.gpu_model == "NVIDIA H200" and run.nccl is None and run.nvls == "off"
    in_place = [r for r in run.records if r["placement"] == "in_place"]
    assert in_place and all(r["verified"] is None and r["mismatches"] is None for r in in_place)  # N/A: unchecked


def test_a_test_name_anywhere_in_the_log_is_enough() -> None:
    text = "+ mpirun -np 2 ./build/alltoall_perf_mpi -b 1M -e 256M -f 4\n" + A2A
    (run,) = read_nccl_tests(text)
    assert run.op == "all_to_all" and run.op_evidence == "the test name in the text"


def test_an_unambiguous_table_gives_the_collective() -> None:
    text = "\n".join(line for line in AR.split("\n") if "Collective test" not in line)
    (run,) = read_nccl_tests(text)
    assert run.op == "all_reduce" and "inferred" in run.op_evidence  # redop sum, root -1, factor 2(n-1)/n


def test_graph_and_per_iteration_columns() -> None:
    (run,) = read_nccl_tests(RS)
    assert (run.op, run.gpus, run.launch, run.nccl) == ("reduce_scatter", 2, "graph", "2.28.3")
    assert "CUDA graph of 10 launches" in run.timing and "not checked" in run.timing and run.nvls == "unknown"
    first = run.records[0]
    assert first["mode"] == "graph" and first["time_s"] == pytest.approx(12.3e-6)  # not i_min
    assert first["busbw_bytes_per_s"] == pytest.approx(42.63e9) and first["verified"] is None


@pytest.mark.parametrize(
    ("old", "new", "column"),
    [
        ("28.40", "-5.00", "time (out_of_place)"),
        ("28.40", "nan", "time (out_of_place)"),
        ("28.40", "inf", "time (out_of_place)"),
        ("28.40", "N/A", "time (out_of_place)"),
        ("28.68", "0.00", "time (in_place)"),
        ("64.61", "-1.00", "busbw (out_of_place)"),
        ("36.92", "fast", "algbw (out_of_place)"),
    ],
)
def test_bad_values_name_line_column_and_value(old: str, new: str, column: str) -> None:
    text = _replace_line(AR, 21, old, new)
    with pytest.raises(MeasurementError) as info:
        read_nccl_tests(text, source="ar.log")
    assert str(info.value).startswith(f"ar.log line 21: column {column!r} = {new!r}: ")
    assert (info.value.line, info.value.field, info.value.value) == (21, column, new)


def test_rows_and_counts_that_do_not_fit() -> None:
    with pytest.raises(MeasurementError, match=r"line 22: row cut short: 11 cells where the column header has 13"):
        read_nccl_tests(_replace_line(AR, 22, "   99.11  173.45", ""))
    (blank,) = read_nccl_tests(_replace_line(AR, 22, "  100.10  175.18       0    42.32", ""))  # out-of-place blank
    assert len(blank.records) == 11  # (trace replay prints only the in-place columns)
    with pytest.raises(MeasurementError, match=r"--gpus 4, but the text lists 8 GPUs \(8 rank lines, 1 process"):
        read_nccl_tests(AR, gpus=4)
    with pytest.raises(MeasurementError, match=r"--op all_gather, but line 2: # Collective test starting"):
        read_nccl_tests(AR, op="all_gather")
    no_ranks = "\n".join(line for line in A2A.split("\n") if "Rank" not in line)
    (run,) = read_nccl_tests(no_ranks, op="alltoall", gpus=8)  # nGpus 4 alone would say 4: --gpus decides
    with pytest.raises(
        MeasurementError, match=r"busbw / algbw = 0.875, but all_to_all on 4 GPUs has the nccl-tests factor 0.750"
    ):
        read_nccl_tests(no_ranks, op="alltoall")  # 4 GPUs by nGpus: the bus factor shows it is wrong
    bare = "\n".join(line for line in A2A.split("\n") if "Rank" not in line and "nThread" not in line)
    with pytest.raises(MeasurementError, match=r"cannot tell the GPU count .* pass --gpus"):
        read_nccl_tests(bare, op="alltoall")
    with pytest.raises(MeasurementError, match="hypercube_perf is not a collective rooflib models"):
        read_nccl_tests(AR.replace("all_reduce_perf", "hypercube_perf"))
    with pytest.raises(MeasurementError, match="nothing to import: no nccl-tests result rows"):
        read_nccl_tests("# nThread 1 nGpus 8\n# Using devices\nsome other output\n")
    assert run.gpus == 8


def test_nvls_from_the_log_or_the_flag() -> None:
    assert read_nccl_tests(RS, nvls="off")[0].nvls == "off"  # the log says nothing: the flag decides
    with pytest.raises(MeasurementError, match=r"--nvls on, but NVLS was off \(line 12: .*set by environment to 0"):
        read_nccl_tests(A2A, op="alltoall", nvls="on")
    env = RS.replace(
        "# Using devices", "# Using devices\nh:1:1 [0] NCCL INFO NCCL_NVLS_ENABLE set by environment to 1."
    )
    assert read_nccl_tests(env)[0].nvls == "on"
    absent = AR.replace("is available on dev", "is not available on dev")
    assert read_nccl_tests(absent)[0].nvls == "off"


def test_several_runs_in_one_log() -> None:
    runs = read_nccl_tests(AR + "\n" + RS)
    assert [(r.op, r.gpus, r.first_line) for r in runs] == [("all_reduce", 8, 1), ("reduce_scatter", 2, 32)]
