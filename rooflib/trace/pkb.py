"""ParallelKernelBench (PKB) problems as traces: its own input builder, its reference ``solution``, no GPU.

PKB (github.com/togethercomputer/ParallelKernelBench, Apache-2.0) is read by path and never copied: a checkout
(or its snapshot) ``ROOT`` holds ``reference/<id>_<name>.py`` (each defines ``solution(*inputs)``) and
``utils/input_output_tensors.py`` (``create_input_tensor(rank, world_size, problem_id, (M, N), dtype, trial,
device)``, the tuple ``solution`` is called with). :func:`trace_problem` runs that builder on the meta device
(as :mod:`rooflib.trace.capture` runs any INPUTS) and the reference under fake tensors and a fake process group.

>>> suite = open_suite("/path/to/pkb")  # doctest: +SKIP
>>> [p.stem for p in suite.problems[:2]]  # doctest: +SKIP
['1_allreduce', '2_allgather']
>>> t = trace_problem(suite, "16", (1024, 1024), world=8)  # doctest: +SKIP
>>> t.names()  # doctest: +SKIP
['aten.mm', 'aten.empty', 'c10d._reduce_scatter_base_']
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import re
import sys
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, cast

from rooflib.trace.errors import TraceError
from rooflib.trace.pkb_catalog import category_of
from rooflib.trace.records import Trace
from rooflib.trace.triton_stub import stub_triton

__all__ = ["DTYPES", "Problem", "Suite", "open_suite", "parse_size", "trace_problem"]

DTYPES = ("bfloat16", "float16", "float32")
_BUILDER = Path("utils") / "input_output_tensors.py"
_SIZE = re.compile(r"^\s*(\d+)\s*[xX*,]\s*(\d+)\s*$")


@dataclass(frozen=True)
class Problem:
    """One PKB problem: its number, file stem (``16_gemm_reducescatter``), reference file and category."""

    id: int
    stem: str
    path: Path

    @property
    def category(self) -> str:
        return category_of(self.id)


@dataclass(frozen=True)
class Suite:
    """A PKB checkout: its problems in id order and its input builder."""

    root: Path
    problems: tuple[Problem, ...]

    def problem(self, spec: str | int) -> Problem:
        """The problem named by its number (``16``) or stem (``16_gemm_reducescatter``, ``.py`` allowed)."""
        text = str(spec).strip().removesuffix(".py")
        for p in self.problems:
            if text == p.stem or (text.isdigit() and int(text) == p.id):
                return p
        raise TraceError(
            f"--problem {spec!r}: no such ParallelKernelBench problem under {self.root / 'reference'} "
            f"(ids {self.problems[0].id}..{self.problems[-1].id}, or a stem like {self.problems[0].stem!r})"
        )

    def builder(self) -> Callable[..., Any]:
        """PKB's ``create_input_tensor`` (imported once per checkout)."""
        return _builder(self.root)


def open_suite(root: str | Path) -> Suite:
    """The PKB checkout at ``root``; a :class:`TraceError` naming ``root`` when it is not one."""
    base = Path(root).expanduser()
    ref = base / "reference"
    if not ref.is_dir() or not (base / _BUILDER).is_file():
        raise TraceError(
            f"--pkb {str(root)!r}: not a ParallelKernelBench checkout (needs reference/ and {_BUILDER.as_posix()})"
        )
    found = []
    for path in ref.glob("*.py"):
        m = re.match(r"^(\d+)_", path.stem)
        if m:
            found.append(Problem(int(m.group(1)), path.stem, path))
    if not found:
        raise TraceError(f"--pkb {str(root)!r}: reference/ holds no <id>_<name>.py problems")
    return Suite(base.resolve(), tuple(sorted(found, key=lambda p: (p.id, p.stem))))


def parse_size(text: str) -> tuple[int, int]:
    """``(M, N)`` from ``'1024x1024'`` (also ``1024,1024``): PKB's base shape, both >= 1."""
    m = _SIZE.match(str(text))
    if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1:
        raise TraceError(f"--size {text!r}: expected MxN with whole numbers >= 1, e.g. 1024x1024")
    return int(m.group(1)), int(m.group(2))


_BUILDERS: dict[str, Callable[..., Any]] = {}


def _builder(root: Path) -> Callable[..., Any]:
    key = str(root)
    if key not in _BUILDERS:
        module = _import(root / _BUILDER, f"_rooflib_pkb_inputs_{abs(hash(key)):x}", root)
        fn = getattr(module, "create_input_tensor", None)
        if not callable(fn):
            raise TraceError(f"{root / _BUILDER}: has no create_input_tensor function")
        _BUILDERS[key] = fn
    return _BUILDERS[key]


def _import(path: Path, name: str, root: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TraceError(f"{path}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(root))
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise TraceError(f"{path}: importing it raised {type(exc).__name__}: {exc}") from exc
    finally:
        if str(root) in sys.path:
            sys.path.remove(str(root))
    sys.modules[name] = module
    return module


def inputs_for(suite: Suite, problem: Problem, size: tuple[int, int], dtype: str = "bfloat16") -> Callable[..., Any]:
    """An INPUTS function for :func:`rooflib.trace.capture_trace`: PKB's builder for ``problem`` at ``size``."""
    if dtype not in DTYPES:
        raise TraceError(f"--dtype {dtype!r}: expected one of {', '.join(DTYPES)}")
    build = suite.builder()

    def inputs(rank: int, world: int, device: Any) -> tuple[Any, ...]:
        import torch

        with _tiled_randn(torch) if str(device) == "cpu" else contextlib.nullcontext():
            got = build(rank, world, problem.id, tuple(size), getattr(torch, dtype), 0, device)
        return tuple(got) if isinstance(got, tuple | list) else (got,)

    inputs.__qualname__ = f"create_input_tensor[{problem.id}]"
    return inputs


TILE = 1 << 20
"""Elements of the random block that fills a large input of a run with values (:func:`_tiled_randn`)."""
TILED_ABOVE = 1 << 26
"""Inputs of more elements than this are tiled from one random block in a run with values."""
LAZY_ABOVE = 1 << 30
"""Inputs of more elements than this get only their first random block written in a run with values; the rest
stays as the allocator maps it (untouched pages, zeros on Linux): a table of billions of elements (problem 68's
embedding shard: 3.6e9 at world 8, 1.4e10 at world 2, more than this machine's memory) of which a program reads a
few rows, so pages it never reads are never made. Its values past the first block are not random."""


@contextlib.contextmanager
def _tiled_randn(torch: Any) -> Iterator[None]:
    """``torch.randn`` for PKB's builder in a run with values (host tensors): a tensor of more than
    :data:`TILED_ABOVE` elements repeats one :data:`TILE`-element random block (a memory copy, not minutes of
    normal draws on one core); values stay standard-normal, only periodic. Above :data:`LAZY_ABOVE` only the
    first block is written (problem 68 builds 3.6e9 to 1.4e10 elements and reads a few rows)."""
    orig = torch.randn

    def randn(*size: Any, **kw: Any) -> Any:
        shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], tuple | list | torch.Size) else size
        n = math.prod(int(d) for d in shape) if all(isinstance(d, int) for d in shape) else 0
        if n <= TILED_ABOVE or kw.get("out") is not None or kw.get("generator") is not None:
            return orig(*size, **kw)
        grad = bool(kw.pop("requires_grad", False))
        block = orig(TILE, **kw)
        out = torch.empty(shape, **kw)
        flat, full = out.view(-1), n // TILE
        if n > LAZY_ABOVE:
            flat[:TILE].copy_(block)
        else:
            flat[: full * TILE].view(full, TILE).copy_(block)
            flat[full * TILE :].copy_(block[: n - full * TILE])
        return out.requires_grad_(grad)

    torch.randn = randn
    try:
        yield
    finally:
        torch.randn = orig


_FRESH = [0]


def solution_of(problem: Problem) -> Callable[..., Any]:
    """The reference ``solution`` of ``problem``, from a fresh import (references cache process groups in module
    globals, which must not outlive the trace that made them); Triton stands in when it is missing."""
    _FRESH[0] += 1
    with stub_triton():
        module = _import(problem.path, f"_rooflib_pkb_{problem.id}_{_FRESH[0]}", problem.path.parent)
    fn = getattr(module, "solution", None)
    if not callable(fn):
        raise TraceError(f"{problem.path}: has no solution function")
    sys.modules.pop(module.__name__, None)
    return cast(Callable[..., Any], fn)


def trace_problem(
    suite: Suite,
    spec: str | int,
    size: tuple[int, int],
    *,
    world: int,
    dtype: str = "bfloat16",
    rank: int = 0,
    values: bool | None = None,
) -> Trace:
    """The trace of one rank of ``world`` running the reference of problem ``spec`` on PKB's inputs.

    ``values=None`` (the default) traces with fake tensors and falls back to a run with values
    (:mod:`rooflib.trace.capture`) when the fake run fails or reads device values (``.item()``, ``.tolist()``:
    sizes that depend on them would be stand-ins); ``True`` or ``False`` forces one of the two.
    """
    from rooflib.trace.capture import capture

    problem = suite.problem(spec)
    func, inputs = solution_of(problem), inputs_for(suite, problem, size, dtype)

    def run(with_values: bool) -> Trace:
        fn = solution_of(problem) if with_values else func
        stop = values is None and not with_values  # a fake run that reads values is rerun: stop it at the read
        with warnings.catch_warnings():  # the references' own deprecation warnings are not the trace's
            warnings.simplefilter("ignore")
            return capture(
                fn, inputs, world=world, rank=rank, name=problem.stem, values=with_values, stop_on_values=stop
            )

    if values:
        return run(True)
    try:
        fake = run(False)
    except TraceError:
        if values is False:
            raise
        return run(True)
    return run(True) if values is None and _reads_values(fake) else fake


def _reads_values(trace: Trace) -> bool:
    return any(c.name == "aten._local_scalar_dense" for c in trace.calls) or bool(trace.notes)
