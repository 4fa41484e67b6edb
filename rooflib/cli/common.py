"""Pieces shared by the commands: options, size parsing, system loading, JSON and table output, error handling.

Every error of the library (:class:`rooflib.errors.RooflibError` and its subclasses) and every usage error of
click (a bad option value, a missing option) becomes one ``error: ...`` line on stderr and exit code 2, with no
traceback; a :class:`~rooflib.errors.SpecError` keeps its one line per problem.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
import numpy as np

from rooflib.collectives.model import Launch
from rooflib.errors import RooflibError, UnitError
from rooflib.specs import Catalog, System, default_catalog, load_system
from rooflib.transfer import Reduction
from rooflib.units import parse_size

__all__ = [
    "PLOT_FORMATS",
    "ImagePath",
    "RooflibGroup",
    "SizeList",
    "SizeSpec",
    "as_launch",
    "as_reduction",
    "catalog_option",
    "emit_json",
    "json_option",
    "jsonable",
    "launch_option",
    "load",
    "open_catalog",
    "parse_amount",
    "parse_bytes",
    "print_table",
    "profile_for",
    "profile_option",
    "system_option",
]

F = TypeVar("F", bound=Callable[..., Any])
EXIT_ERROR = 2
_PREFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}


class RooflibGroup(click.Group):
    """A click group turning library errors into a short message and exit code 2."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.exceptions.NoArgsIsHelpError:
            raise  # ``rooflib plot`` alone shows the group's help, as click does
        except click.UsageError as exc:  # one line instead of click's usage block
            click.echo(f"error: {exc.format_message()}", err=True)
            ctx.exit(EXIT_ERROR)
        except RooflibError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(EXIT_ERROR)
        except BrokenPipeError:  # the reader went away (``rooflib ... | head``): nothing left to say
            sys.stderr.close()
            ctx.exit(0)
        except OSError as exc:  # a file that cannot be written or read
            click.echo(f"error: {exc}", err=True)
            ctx.exit(1)


# --- numbers and sizes ------------------------------------------------------------------------------------------
def parse_bytes(text: str) -> int:
    """Bytes from ``'1GiB'``, ``'64MB'``, ``'4096'``, ``'1e9'`` or ``'0.5KiB'`` (:func:`rooflib.units.parse_size`):
    a whole number of bytes, not negative, at most 2**63 - 1."""
    return parse_size(text)


def parse_amount(text: str, what: str = "a number") -> float:
    """A count such as FLOPs: ``'2e12'``, ``'2T'``, ``'350G'`` (decimal SI prefixes)."""
    value = text.strip()
    prefix = value[-1] if value and value[-1] in "kKMGTPE" else ""
    try:
        out = float(value[: len(value) - len(prefix)]) * _PREFIX[prefix]
    except (ValueError, OverflowError):
        raise UnitError(f"expected {what} such as 2e12 or 2T, got {text!r}") from None
    if not math.isfinite(out) or out < 0:
        raise UnitError(f"{what} must be finite and >= 0, got {text!r}")
    return out


@dataclass(frozen=True)
class SizeSpec:
    """Sizes from ``--bytes``; ``many`` is True for a comma list or a range (then output is a list)."""

    values: tuple[int, ...]
    many: bool


if TYPE_CHECKING:  # click >= 8.4 makes ParamType generic; older versions are not subscriptable
    _SizeParam = click.ParamType[SizeSpec]
else:
    _SizeParam = click.ParamType


class SizeList(_SizeParam):
    """``SIZE``, ``SIZE,SIZE,...`` or ``START:END`` (powers of two from START up to END)."""

    name = "size"

    def __init__(self, *, single: bool = False) -> None:
        self.single = single

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> SizeSpec:
        if isinstance(value, SizeSpec):
            return value
        text = str(value).strip()
        try:
            if self.single and ("," in text or ":" in text):
                raise UnitError(f"takes one size, not a list or range, got {text!r}")
            if self.single or ("," not in text and ":" not in text):
                return SizeSpec((parse_bytes(text),), False)
            if ":" in text:
                return SizeSpec(_size_range(text), True)
            return SizeSpec(_size_list(text), True)
        except UnitError as exc:
            self.fail(str(exc), param, ctx)


def _size_range(text: str) -> tuple[int, ...]:
    """``START:END``: START, 2 START, 4 START, ... up to END."""
    parts = text.split(":")
    if len(parts) != 2 or not all(p.strip() for p in parts):
        raise UnitError(f"a range is START:END with both ends given, got {text!r}")
    lo, hi = parse_bytes(parts[0]), parse_bytes(parts[1])
    if lo <= 0 or hi < lo:
        raise UnitError(f"a range START:END needs 0 < START <= END, got {text!r}")
    sizes = []
    while lo <= hi:
        sizes.append(lo)
        lo *= 2
    return tuple(sizes)


def _size_list(text: str) -> tuple[int, ...]:
    """``SIZE,SIZE,...``: every item given (``1MiB,,1GiB`` and ``,`` are refused)."""
    items = text.split(",")
    if not all(item.strip() for item in items):
        raise UnitError(f"a size list needs a size between every comma, got {text!r}")
    return tuple(parse_bytes(item) for item in items)


PLOT_FORMATS = ("pdf", "png", "svg")
"""Image formats the plot commands write (``--out FILE``; the suffix picks the format)."""

if TYPE_CHECKING:
    _PathParam = click.ParamType[Path]
else:
    _PathParam = click.ParamType


class ImagePath(_PathParam):
    """An image file to write, ``busbw.png``: refused up front unless its suffix is one of :data:`PLOT_FORMATS`
    (before any work is done, and before matplotlib would raise on an unknown format)."""

    name = "file"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Path:
        path = Path(value)
        supported = ", ".join(f".{f}" for f in PLOT_FORMATS)
        if path.is_dir():
            self.fail(f"{str(value)!r} is a folder; give an image file ending in {supported}", param, ctx)
        suffix = path.suffix.lower()
        if suffix.lstrip(".") not in PLOT_FORMATS:
            what = f"format {suffix!r}" if suffix else "format (no suffix)"
            self.fail(f"{str(value)!r} has an unsupported image {what}; supported: {supported}", param, ctx)
        return path


def as_launch(text: str) -> Launch:
    return "graph" if text == "graph" else "isolated" if text == "isolated" else "stream"


def as_reduction(text: str) -> Reduction:
    return "peer" if text == "peer" else "switch" if text == "switch" else "none"


# --- options ----------------------------------------------------------------------------------------------------
def json_option(f: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON (SI units: bytes, s, B/s, FLOP/s).")(f)


def launch_option(f: F) -> F:
    return click.option(
        "--launch",
        type=click.Choice(["stream", "isolated", "graph"]),
        default="stream",
        show_default=True,
        help="How calls are timed: stream = back-to-back launches from the host, the steady state (nccl-tests, "
        "PyTorch loops: host issue overlaps the device); isolated = one call from an idle host, events around it; "
        "graph = inside a replayed CUDA graph.",
    )(f)


def profile_option(f: F) -> F:
    return click.option(
        "--profile",
        metavar="NAME|PATH",
        default=None,
        help="Calibrated profile (a catalog name or a YAML file) overriding catalog figures.",
    )(f)


def catalog_option(f: F) -> F:
    return click.option(
        "--catalog",
        "catalog_paths",
        multiple=True,
        type=click.Path(exists=True, path_type=Path),
        help="Extra catalog file or folder (repeatable); its items add to or replace built-in ones.",
    )(f)


def system_option(f: F) -> F:
    return click.option(
        "--system", "-s", "system_name", required=True, metavar="NAME", help="System name (see `rooflib systems`)."
    )(f)


# --- loading ----------------------------------------------------------------------------------------------------
def open_catalog(paths: Sequence[Path] = (), profile: str | None = None) -> Catalog:
    """The default catalog, or a fresh one when extra paths are given or a profile file would be added to it."""
    if paths or (profile is not None and Path(profile).is_file()):
        return Catalog.load(paths)
    return default_catalog()


def profile_for(catalog: Catalog, profile: str | None, system: str) -> str | None:
    """``profile`` when it is for ``system`` (so one profile can go with a list of systems), else None."""
    if profile is None:
        return None
    spec, _ = catalog.profile(profile)
    return profile if spec.system == system else None


def load(
    name: str,
    *,
    gpus: int | None = None,
    profile: str | None = None,
    catalog: Catalog | None = None,
    paths: Sequence[Path] = (),
) -> System:
    """``load_system`` sized to hold ``gpus`` GPUs (clusters take a node count)."""
    cat = catalog or open_catalog(paths, profile)
    return load_system(name, gpus=gpus, profile=profile, catalog=cat)


# --- output -----------------------------------------------------------------------------------------------------
def jsonable(obj: Any) -> Any:
    """Plain JSON data: numpy scalars and arrays to Python, non-finite floats to None, tuples to lists."""
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return jsonable(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, Path):
        return str(obj)
    return obj


def emit_json(obj: Any) -> None:
    click.echo(json.dumps(jsonable(obj), indent=2, allow_nan=False))


def print_table(headers: Sequence[str], rows: Iterable[Sequence[object]], *, title: str | None = None) -> None:
    """A plain text table: left-aligned text, right-aligned numbers and units."""
    body = [[str(c) for c in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in body)]) for i, h in enumerate(headers)]
    right = [bool(body) and all(_numeric(r[i]) for r in body) for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right, strict=True)).rstrip()

    if title:
        click.echo(title)
    click.echo(line(list(headers)))
    click.echo("  ".join("-" * w for w in widths))
    for row in body:
        click.echo(line(row))


def _numeric(cell: str) -> bool:
    head = cell.split(" ")[0].replace(",", "").replace("%", "")
    try:
        float(head)
    except ValueError:
        return False
    return True
