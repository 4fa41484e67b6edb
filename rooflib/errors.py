"""Errors raised for bad input. Each message names what was wrong, where, and with which value."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

__all__ = ["GroupError", "RooflibError", "SpecError", "SpecFileError", "UnitError", "UnknownNameError"]


class RooflibError(Exception):
    """Base class: the CLI prints these as one clear line instead of a traceback."""


class UnitError(RooflibError, ValueError):
    """A quantity with a missing, unknown or wrong unit, or a value out of range."""


class SpecError(RooflibError, ValueError):
    """A hardware, workload or profile file that does not validate.

    ``problems`` holds ``(field, value, message)`` triples; the text names the file and every field.
    """

    def __init__(self, file: str | Path, problems: Iterable[tuple[str, object, str]]) -> None:
        self.file = str(file)
        self.problems = list(problems)
        lines = [f"{self.file}: {len(self.problems)} problem(s)"]
        for field, value, message in self.problems:
            lines.append(f"  field {field!r} = {value!r}: {message}")
        super().__init__("\n".join(lines))


class SpecFileError(SpecError):
    """A catalog or profile file that cannot be used at all (missing, not UTF-8 text, not YAML, an alias bomb).

    One line: ``"<file>: <message>"``; ``problems`` holds the single ``("<file>", None, message)``.
    """

    def __init__(self, file: str | Path, message: str) -> None:
        self.file = str(file)
        self.problems = [("<file>", None, message)]
        Exception.__init__(self, f"{self.file}: {message}")


class UnknownNameError(RooflibError, KeyError):
    """An unknown system, device, workload, algorithm, ... The message lists the valid names."""

    def __init__(self, kind: str, name: str, valid: Iterable[str]) -> None:
        self.kind = kind
        self.name = name
        self.valid = sorted(valid)
        if kind.endswith(("s", "x", "ch", "sh")):
            plural = kind + "es"
        elif kind.endswith("y") and not kind.endswith(("ay", "ey", "oy", "uy")):
            plural = kind[:-1] + "ies"
        else:
            plural = kind + "s"
        super().__init__(f"unknown {kind} {name!r}; valid {plural}: {', '.join(self.valid)}")

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class GroupError(RooflibError, ValueError):
    """A GPU group that does not fit a system, or a size that a group does not divide."""
