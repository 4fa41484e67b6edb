"""``FILE.py:NAME`` targets and ``--set`` values (no torch needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflib.trace import TraceError, convert_value, load_target, parse_sets
from rooflib.trace.load import split_target

from .conftest import PROGRAMS


def test_split_target_takes_the_last_colon() -> None:
    assert split_target("C:/work/prog.py:fn") == (Path("C:/work/prog.py"), "fn")


@pytest.mark.parametrize("spec", ["prog.py", "prog.py:", ":fn", "prog.py:1fn", "prog.py:a-b"])
def test_bad_target_is_one_line(spec: str) -> None:
    with pytest.raises(TraceError, match=r"FILE\.py:NAME|not a Python name"):
        split_target(spec)


def test_missing_file_names_it(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match=r"nope\.py: no such file"):
        load_target(f"{tmp_path}/nope.py:fn")


def test_missing_function_names_the_file_and_attribute(tmp_path: Path) -> None:
    prog = tmp_path / "prog.py"
    prog.write_text("def fn():\n    return 1\n")
    with pytest.raises(TraceError, match=r"prog\.py has no attribute 'other'"):
        load_target(f"{prog}:other")
    with pytest.raises(TraceError, match="the INPUTS of"):
        load_target(f"{prog}:missing", "INPUTS")


def test_not_callable(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="NOT_A_FUNCTION is not callable"):
        load_target(f"{PROGRAMS / 'bad.py'}:NOT_A_FUNCTION")


def test_import_error_is_one_line(tmp_path: Path) -> None:
    prog = tmp_path / "broken.py"
    prog.write_text("x = 1 / 0\n")
    with pytest.raises(TraceError, match=r"broken\.py: importing it raised ZeroDivisionError"):
        load_target(f"{prog}:x")


def test_one_module_per_file_and_neighbours_import(tmp_path: Path) -> None:
    (tmp_path / "helper.py").write_text("VALUE = 3\n")
    prog = tmp_path / "prog.py"
    prog.write_text(
        "import helper\n\nclass Model:\n    def run(self):\n        return helper.VALUE\n\ndef make():\n    return Model()\n"
    )
    make, run = load_target(f"{prog}:make"), load_target(f"{prog}:Model.run")
    assert run(make()) == 3
    assert make.__module__ == run.__module__
    assert str(tmp_path) not in __import__("sys").path


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("8192", 8192),
        ("-3", -3),
        ("1_024", 1024),
        ("0.5", 0.5),
        ("1e-3", 1e-3),
        ("bf16", "bf16"),
        ("true", "true"),
        (" 7 ", 7),
        ("", ""),
    ],
)
def test_convert_value(text: str, value: object) -> None:
    got = convert_value(text)
    assert got == value and type(got) is type(value)


def test_parse_sets() -> None:
    assert parse_sets(["t=4096", "dtype=bf16", "scale=0.5", "t=8"]) == {"t": 8, "dtype": "bf16", "scale": 0.5}


@pytest.mark.parametrize("item", ["t", "=3", "1t=3", "a b=2"])
def test_parse_sets_refuses(item: str) -> None:
    with pytest.raises(TraceError, match="--set"):
        parse_sets([item])
