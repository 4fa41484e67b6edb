"""Reading one YAML file of the catalog safely: size, encoding, duplicate keys and alias bombs refused with the
file named, before anything is built.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from rooflib.errors import SpecFileError

__all__ = ["MAX_FILE_BYTES", "MAX_NODES", "load_yaml"]

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

MAX_FILE_BYTES = 16 * 2**20
"""Largest catalog or profile file read (the built-in ones are a few KiB)."""
MAX_NODES = 100_000
"""Most YAML nodes a file may expand to once its aliases are followed (the built-in files have under 1,000);
a file past it (a "billion laughs" alias bomb) is refused before it is built."""


class _Refused(Exception):
    """Why a composed YAML document is refused (turned into a SpecFileError by the caller)."""


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _check_keys(node: yaml.MappingNode) -> None:
    seen: set[tuple[str, str]] = set()
    for key, _ in node.value:
        if isinstance(key, yaml.ScalarNode) and key.value != "<<":
            ident = (key.tag, key.value)
            if ident in seen:
                raise _Refused(f"key {key.value!r} is given twice (line {key.start_mark.line + 1})")
            seen.add(ident)


def _check_nodes(root: yaml.Node) -> None:
    """Refuse recursive aliases, duplicate keys and documents that expand past :data:`MAX_NODES` nodes.

    Iterative depth-first walk; each node's expanded size (itself plus its children's, an alias counting
    every time it is used) is computed once, so an alias bomb is measured in microseconds, not built.
    """
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        ident = id(node)
        if finished:
            open_nodes.discard(ident)
            sizes[ident] = 1 + sum(sizes[id(child)] for child in _children(node))
            if sizes[ident] > MAX_NODES:
                raise _Refused(
                    f"expands to more than {MAX_NODES:,} YAML nodes through its aliases (an alias bomb?); refused"
                )
            continue
        if ident in sizes:
            continue
        if ident in open_nodes:
            raise _Refused(f"a YAML alias refers to itself (line {node.start_mark.line + 1}); refused")
        open_nodes.add(ident)
        if isinstance(node, yaml.MappingNode):
            _check_keys(node)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)


def _yaml_message(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        return f"not valid YAML at line {mark.line + 1}, column {mark.column + 1}: {exc.problem}"
    return "not valid YAML: " + " ".join(str(exc).split())


def load_yaml(path: Path) -> Any:
    """The YAML document in ``path`` (safe loader), or a :class:`SpecFileError` naming the file when it is
    missing, unreadable, larger than :data:`MAX_FILE_BYTES`, not UTF-8, not YAML, has a duplicate key or
    expands past :data:`MAX_NODES` nodes."""
    try:
        if (mib := path.stat().st_size / 2**20) > MAX_FILE_BYTES / 2**20:
            raise SpecFileError(path, f"is {mib:.0f} MiB; a catalog file is at most {MAX_FILE_BYTES >> 20} MiB")
        raw = path.read_bytes()
    except FileNotFoundError:
        raise SpecFileError(path, "no such file") from None
    except OSError as exc:
        raise SpecFileError(path, f"cannot be read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = f"byte 0x{raw[exc.start]:02x} at offset {exc.start}"
        raise SpecFileError(path, f"is not UTF-8 text ({where}); is it a YAML file?") from None
    loader = _LOADER(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_nodes(node)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise SpecFileError(path, _yaml_message(exc)) from None
    except _Refused as exc:
        raise SpecFileError(path, str(exc)) from None
    except RecursionError:
        raise SpecFileError(path, "is nested too deeply") from None
    finally:
        loader.dispose()
