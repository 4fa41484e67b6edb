"""Programs written in YAML (``kind: program``), loadable from ``--catalog`` folders.

A file names its parameters (as workloads do: kind, default, description, ``split``) and lists its ops. Every
op has a ``kind`` (see :data:`rooflib.program.OP_KINDS`) and the parameters of that kind, each a number or a
shape expression over the parameters and ``world`` (:mod:`rooflib.program.expr`); optional ``name``,
``stream``, ``after`` (names of earlier ops it waits for), ``host`` (its host cost kind) and ``repeat`` (the op,
or a block of ops under ``ops:``, unrolled that many times: the layers of a model). ``checks`` list conditions
the parameters must meet on ``world`` ranks (``require``, an expression) and the error otherwise (``error``,
with ``{name}`` for values).

.. code-block:: yaml

    kind: program
    name: tp_mlp
    description: Megatron tensor-parallel MLP, all-reduce after the down projection
    sources: ["Megatron-LM (Shoeybi et al., 2019)"]
    parameters:
      tokens: {kind: int, default: 8192, min: 1, description: tokens per rank}
      hidden: {kind: int, default: 8192, min: 1, description: model width}
      ffn: {kind: int, default: 28672, min: 1, split: true, description: MLP width (split over the ranks)}
      dtype: {kind: dtype, default: bf16, description: activations and weights}
    ops:
      - {kind: gemm, name: up, m: tokens, n: "ffn // world", k: hidden, dtype: dtype}
      - {kind: elementwise, op: gelu, elements: "tokens * ffn // world", dtype: dtype}
      - {kind: gemm, name: down, m: tokens, n: hidden, k: "ffn // world", dtype: dtype}
      - {kind: collective, op: all_reduce, bytes: "tokens * hidden * bytes(dtype)"}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from rooflib.errors import GroupError, RooflibError, SpecError
from rooflib.program.expr import evaluate
from rooflib.program.ir import OP_KINDS, Program, ProgramBuilder, ProgramError
from rooflib.program.params import Parameter, resolve_params
from rooflib.specs.catalog import Catalog, validate_model
from rooflib.specs.figures import SpecModel

__all__ = ["Check", "ProgramSpec", "build_program", "load_program", "load_spec"]

_RESERVED = {"kind", "name", "stream", "after", "host", "repeat", "ops"}
MAX_OPS = 100_000
_WORDS = {"op", "dtype", "overlaps"}  # keys whose values are words (an op, dtype or op name), not numbers


class Check(SpecModel):
    """A condition the parameters must meet on ``world`` ranks, with the error to give when they do not."""

    require: str = Field(description="an expression over the parameters and world that must be true")
    error: str = Field(description="the message, with {name} standing for a parameter's value or world")


class ProgramSpec(SpecModel):
    kind: Literal["program"]
    name: str
    display_name: str = ""
    description: str
    sources: tuple[str, ...] = Field(min_length=1)
    parameters: dict[str, Parameter] = Field(default_factory=dict)
    checks: tuple[Check, ...] = ()
    ops: tuple[dict[str, Any], ...] = Field(min_length=1)


def _check(spec: ProgramSpec, names: Mapping[str, Any]) -> None:
    for check in spec.checks:
        if not evaluate(check.require, names):
            try:
                message = check.error.format(**names)
            except (KeyError, IndexError, ValueError):
                message = check.error
            raise GroupError(message)


def _expand(
    entries: Sequence[Mapping[str, Any]], names: Mapping[str, Any], where: str
) -> list[tuple[str, dict[str, Any]]]:
    """Entries with ``repeat`` unrolled, as ``(where, entry)`` pairs."""
    out: list[tuple[str, dict[str, Any]]] = []
    for i, entry in enumerate(entries):
        here = f"{where}[{i}]"
        if not isinstance(entry, Mapping):
            raise ProgramError(f"{here}: an op must be a mapping with a kind, got {entry!r}")
        times = evaluate(entry.get("repeat", 1), names)
        if isinstance(times, bool) or not isinstance(times, int | float) or times != int(times) or times < 0:
            raise ProgramError(f"{here}.repeat must be a whole number >= 0, got {times!r}")
        block = entry.get("ops")
        for r in range(int(times)):
            if block is not None:
                out += _expand(block, names, f"{here}.ops")
            else:
                out.append((f"{here}" + (f"(repeat {r})" if times != 1 else ""), dict(entry)))
            if len(out) > MAX_OPS:
                raise ProgramError(f"{here}: the program unrolls to more than {MAX_OPS:,} ops")
    return out


def build_program(spec: ProgramSpec, world: int, given: Mapping[str, Any] | None = None) -> Program:
    """The program of ``spec`` for ``world`` ranks with parameters ``given`` (defaults otherwise)."""
    values = resolve_params(spec, dict(given or {}))
    names: dict[str, Any] = {**values, "world": world}
    _check(spec, names)
    b = ProgramBuilder(spec.name, world=world)
    index: dict[str, int] = {}
    for where, entry in _expand(spec.ops, names, "ops"):
        kind = entry.get("kind")
        if kind not in OP_KINDS:
            raise ProgramError(f"{where}.kind = {kind!r}: must be one of {', '.join(OP_KINDS)}")
        params = {k: evaluate(v, names) for k, v in entry.items() if k not in _RESERVED}
        for key, value in params.items():
            if isinstance(value, str) and key not in _WORDS:
                known = ", ".join(sorted(names))
                raise ProgramError(f"{where}.{key} = {value!r}: not a number or a known name (known: {known})")
        after = [entry["after"]] if isinstance(entry.get("after"), str) else list(entry.get("after", []))
        missing = [a for a in after if a not in index]
        if missing:
            raise ProgramError(f"{where}.after names {missing}, which no earlier op is called")
        name = str(entry.get("name", f"{kind}{len(index)}"))
        i = b.add(
            kind,
            params,
            name=name,
            stream=str(entry.get("stream", "compute")),
            after=[index[a] for a in after],
            host=entry.get("host"),
        )
        index[name] = i
    return b.build()


def load_spec(catalog: Catalog, name: str) -> tuple[ProgramSpec, Path]:
    """The ``kind: program`` file ``name`` of ``catalog``, validated (errors name the file)."""
    item = catalog.raw("program", name)
    spec: ProgramSpec = validate_model(ProgramSpec, item.data, item.path, "program")
    return spec, Path(item.path)


def load_program(catalog: Catalog, name: str, world: int, given: Mapping[str, Any] | None = None) -> Program:
    """Program ``name`` of ``catalog`` (a ``kind: program`` file) built for ``world`` ranks; errors name the file."""
    spec, path = load_spec(catalog, name)
    try:
        return build_program(spec, world, given)
    except RooflibError as exc:
        if isinstance(exc, SpecError):
            raise
        raise ProgramError(f"{path}: program {name!r}: {exc}") from None
