from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rooflib.cli import main

RUNS = Path(__file__).resolve().parents[2] / "docs" / "validation" / "h200" / "runs"


def test_bench_without_a_gpu_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    result = CliRunner().invoke(main, ["bench", "all", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "no NVIDIA GPU is visible" in result.output


def test_calibrate_then_validate(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "lab.yaml"
    r = runner.invoke(main, ["calibrate", str(RUNS / "x1-quick"), "--system", "hgx-h200", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "fitted figures" in r.output and out.exists()
    r = runner.invoke(main, ["validate", str(RUNS / "x1-quick"), "-s", "hgx-h200", "--profile", str(out), "--json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)
    assert {"family", "name", "variant", "model", "median_abs_pct"} <= set(rows[0])


def test_shipped_profile_changes_predictions() -> None:
    runner = CliRunner()
    args = ["collective", "all_reduce", "-s", "hgx-h200", "-n", "2", "-b", "1GiB", "-a", "library", "--json"]
    base = json.loads(runner.invoke(main, args).output)
    tuned = json.loads(runner.invoke(main, [*args, "--profile", "h200-x2"]).output)
    assert tuned["time_s"] != base["time_s"]


def test_import_nccl_tests(tmp_path: Path) -> None:
    text = tmp_path / "ar.txt"
    text.write_text(
        "# Collective test starting: all_reduce_perf\n"
        "#  Rank  0 Group  0 Pid 1 on h device  0 [0x07] NVIDIA H200\n"
        "#  Rank  1 Group  0 Pid 1 on h device  1 [0x08] NVIDIA H200\n"
        "     1048576        262144     float     sum      -1    10.50   99.86   99.86      0    10.20  102.80  102.80      0\n"
    )
    r = CliRunner().invoke(main, ["import-nccl-tests", str(text), "--out", str(tmp_path / "res")])
    assert r.exit_code == 0, r.output
    assert "added 2 points" in r.output and (tmp_path / "res" / "results.csv").exists()


# --- bad input: one `error:` line naming file, line, column and value; exit code 2; never a traceback ----------
DATA = Path(__file__).resolve().parents[1] / "bench" / "data"


def _one_error(*args: str) -> str:
    from .conftest import invoke

    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert [line for line in lines if line.startswith("error: ")] == lines[-1:], result.stderr
    return lines[-1]


def _log(tmp_path: Path, name: str, old: str = "", new: str = "") -> str:
    text = (DATA / name).read_text()
    path = tmp_path / name
    path.write_text(text.replace(old, new, 1) if old else text)
    return str(path)


def test_import_reads_the_log_and_says_what_it_found(tmp_path: Path) -> None:
    from .conftest import invoke

    log = _log(tmp_path, "all_reduce_h100.log")
    r = invoke("import-nccl-tests", log, "--out", str(tmp_path / "res"))
    assert r.exit_code == 0, r.output
    assert "all_reduce on 8 GPUs (NVIDIA H100 80GB HBM3), NCCL 2.27.4, NVLS on" in r.stdout
    assert "added 12 points" in r.stdout
    again = invoke("import-nccl-tests", log, "--out", str(tmp_path / "res"))
    assert "replacing 1 earlier import(s) of this log" in again.stdout
    graph = invoke("import-nccl-tests", _log(tmp_path, "reduce_scatter_graph.log"), "--out", str(tmp_path / "g"))
    assert graph.exit_code == 0 and "warning:" in graph.stderr and "NVLS state unknown" in graph.stderr
    r = invoke("calibrate", str(tmp_path / "res"), "-s", "hgx-h100", "-o", str(tmp_path / "p.yaml"))
    assert r.exit_code == 0, r.output
    r = invoke("validate", str(tmp_path / "res"), "-s", "hgx-h100", "--profile", str(tmp_path / "p.yaml"))
    assert r.exit_code == 0 and "stream-in-place" in r.stdout


@pytest.mark.parametrize(
    ("name", "old", "new", "args", "message"),
    [
        ("alltoall_2proc_old.log", "", "", (), "cannot tell the collective"),
        ("all_reduce_h100.log", "28.40", "N/A", (), "line 21: column 'time (out_of_place)' = 'N/A': no value (N/A)"),
        ("all_reduce_h100.log", "28.40", "-5.00", (), "line 21: column 'time (out_of_place)' = '-5.00': must be"),
        ("all_reduce_h100.log", "41.90", "nan", (), "line 22: column 'time (out_of_place)' = 'nan': must be"),
        ("all_reduce_h100.log", "", "", ("--gpus", "4"), "--gpus 4, but the text lists 8 GPUs"),
        ("all_reduce_h100.log", "", "", ("--nvls", "off"), "--nvls off, but NVLS was on"),
        ("all_reduce_h100.log", "", "", ("--op", "allreduce"), "unknown collective 'allreduce'"),
    ],
)
def test_import_refuses_bad_logs(
    tmp_path: Path, name: str, old: str, new: str, args: tuple[str, ...], message: str
) -> None:
    log = _log(tmp_path, name, old, new)
    err = _one_error("import-nccl-tests", log, "--out", str(tmp_path / "res"), *args)
    assert message in err and (log in err or "unknown collective" in err)
    assert not (tmp_path / "res").exists()


def test_import_of_nothing_or_a_folder(tmp_path: Path) -> None:
    from .conftest import invoke

    empty = tmp_path / "empty.log"
    empty.write_text("# nThread 1 nGpus 8\n")
    assert "nothing to import" in _one_error("import-nccl-tests", str(empty), "--out", str(tmp_path / "r"))
    for args in ((str(tmp_path),), (str(empty), "--nvls", "maybe"), (str(empty), "--gpus", "0")):
        r = invoke("import-nccl-tests", *args, "--out", str(tmp_path / "r"))
        assert r.exit_code == 2 and "Traceback" not in r.output  # usage errors name the option


def _copy_run(tmp_path: Path, run: str = "x1-quick") -> Path:
    import shutil

    dst = tmp_path / run
    shutil.copytree(RUNS / run, dst)
    return dst


def test_calibrate_and_validate_refuse_broken_measurements(tmp_path: Path) -> None:
    run = _copy_run(tmp_path)
    csv = run / "results.csv"
    good = csv.read_text()
    out = str(tmp_path / "p.yaml")
    csv.write_text(good.replace("time_s_median", "t_median", 1).replace(",time_s,", ",t,", 1))
    err = _one_error("calibrate", str(run), "-s", "hgx-h200", "-o", out)
    assert f"{csv} line 2: this ceilings row has no time" in err and "time_s, time_s_median absent" in err
    csv.write_text(good[:-30])
    err = _one_error("calibrate", str(run), "-s", "hgx-h200", "-o", out)
    assert f"{csv} line 189:" in err and "cut off" in err
    lines = good.splitlines(keepends=True)
    csv.write_text("".join([lines[0], lines[1], lines[1], *lines[2:]]))
    assert "lines 2 and 3 are the same measurement" in _one_error("validate", str(run), "-s", "hgx-h200")
    csv.unlink()  # only raw/ left: it is collected; a corrupt line is named, in the middle or cut off at the end
    raw = run / "raw" / "p2p.jsonl"
    middle = raw.read_text().splitlines(keepends=True)
    raw.write_text("".join([*middle[:5], middle[5][:40] + "\n", *middle[6:]]))
    assert f"{raw} line 6: not a JSON record" in _one_error("validate", str(run), "-s", "hgx-h200")
    raw.write_text("".join(middle))
    raw.write_bytes(raw.read_bytes()[:-50])
    err = _one_error("calibrate", str(run), "-s", "hgx-h200", "-o", out)
    assert f"{raw} line " in err and "the last line is cut off" in err


def test_calibrate_refuses_another_gpu_model_unless_forced(tmp_path: Path) -> None:
    from .conftest import invoke

    args = ("calibrate", str(RUNS / "x1-quick"), "-s", "hgx-h100", "-o", str(tmp_path / "p.yaml"))
    err = _one_error(*args)
    assert "NVIDIA H200 (model H200)" in err and "NVIDIA H100 SXM5 80GB (model H100)" in err and "--force" in err
    r = invoke(*args, "--force")
    assert r.exit_code == 0 and r.stderr.startswith("warning: ") and "--force: used anyway" in r.stderr
    r = invoke("validate", str(RUNS / "x1-quick"), "-s", "hgx-a100", "--force")
    assert r.exit_code == 0 and "warning: " in r.stderr and "array(" not in r.output


def test_hostile_paths(tmp_path: Path) -> None:
    from .conftest import invoke

    (tmp_path / "empty").mkdir()
    (tmp_path / "noresults" / "raw").mkdir(parents=True)
    out = str(tmp_path / "p.yaml")
    assert "no results.csv and no raw/ folder" in _one_error(
        "calibrate", str(tmp_path / "empty"), "-s", "hgx-h200", "-o", out
    )
    assert "no measurements in it" in _one_error("calibrate", str(tmp_path / "noresults"), "-s", "hgx-h200", "-o", out)
    run = str(RUNS / "x1-quick")
    assert "is a folder: give the profile's file name" in _one_error(
        "calibrate", run, "-s", "hgx-h200", "-o", str(tmp_path)
    )
    assert "unknown system 'nosuch'" in _one_error("calibrate", run, "-s", "nosuch", "-o", out)
    r = invoke("calibrate", run, "-s", "hgx-h200", "-o", str(tmp_path / "new" / "dir" / "p.yaml"))
    assert r.exit_code == 0 and (tmp_path / "new" / "dir" / "p.yaml").exists()
    assert "is a folder, not a profile file" in _one_error(
        "validate", run, "-s", "hgx-h200", "--profile", str(tmp_path)
    )
    (tmp_path / "f").write_text("x")
    assert "is a file: the report goes to a folder" in _one_error(
        "validate", run, "-s", "hgx-h200", "-o", str(tmp_path / "f")
    )
    bad = _copy_run(tmp_path)
    text = (bad / "results.csv").read_text().splitlines(keepends=True)
    cells = text[1].split(",")
    header = text[0].rstrip("\n").split(",")
    cells[header.index("iters")] = "many"
    (bad / "results.csv").write_text("".join([text[0], ",".join(cells), *text[2:]]))
    assert "line 2: column 'iters' = 'many': not a number" in _one_error("validate", str(bad), "-s", "hgx-h200")


def test_bench_options_and_interruption(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rooflib.bench import runner

    from .conftest import invoke

    r = invoke("bench", "latency", "--out", str(tmp_path / "o"), "--job-timeout", "0")
    assert r.exit_code == 2 and "--job-timeout" in r.stderr

    def stopped(*args: object, **kwargs: object) -> None:
        raise runner.BenchInterrupted("stopped by SIGINT during job p2p/tma/size: ...", 2)

    monkeypatch.setattr(runner, "run_bench", stopped)
    r = invoke("bench", "p2p", "--out", str(tmp_path / "o"))
    assert r.exit_code == 130 and r.stderr.startswith("error: stopped by SIGINT during job p2p/tma/size")
