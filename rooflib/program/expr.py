"""Shape expressions in program YAML files: arithmetic over parameters, safely evaluated.

Allowed: numbers, parameter names, ``world`` (the group's GPU count), ``+ - * / // % **``, parentheses,
comparisons and ``a if cond else b``, and the functions ``ceil``, ``floor``, ``min``, ``max``, ``sqrt``,
``bytes(dtype)`` (bytes per element) and ``div(a, b)`` (``a / b`` that must divide exactly). Nothing else: no
attributes, no subscripts, no other calls, so a catalog file cannot run code.

>>> evaluate("2 * ffn // world", {"ffn": 28672, "world": 8})
7168
>>> evaluate("tokens * hidden * bytes(dtype)", {"tokens": 4, "hidden": 8, "dtype": "bf16"})
64.0
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from typing import Any

from rooflib.compute import bytes_per_element
from rooflib.program.ir import ProgramError

__all__ = ["evaluate"]

_BIN: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_CMP: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}


def _div(a: float, b: float) -> int:
    if b == 0 or a % b:
        raise ProgramError(f"div({a:g}, {b:g}): {a:g} is not divisible by {b:g}")
    return int(a // b)


_FUNCS: dict[str, Callable[..., Any]] = {
    "ceil": math.ceil,
    "floor": math.floor,
    "min": min,
    "sqrt": math.sqrt,
    "max": max,
    "bytes": bytes_per_element,
    "div": _div,
}


def _binary(node: ast.BinOp, names: Mapping[str, Any], text: str) -> Any:
    left, right = _eval(node.left, names, text), _eval(node.right, names, text)
    if isinstance(node.op, ast.Pow) and abs(right) > 64:
        raise ProgramError(f"expression {text!r}: exponent {right} is too large")
    try:
        return _BIN[type(node.op)](left, right)
    except (ZeroDivisionError, TypeError) as exc:
        raise ProgramError(f"expression {text!r}: {exc}") from None


def _eval(node: ast.AST, names: Mapping[str, Any], text: str) -> Any:
    if isinstance(node, ast.Expression):
        return _eval(node.body, names, text)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float | str | bool):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in names:
            raise ProgramError(f"expression {text!r}: unknown name {node.id!r}; known: {', '.join(sorted(names))}")
        return names[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BIN:
        return _binary(node, names, text)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _eval(node.operand, names, text)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMP:
        return _CMP[type(node.ops[0])](_eval(node.left, names, text), _eval(node.comparators[0], names, text))
    if isinstance(node, ast.IfExp):
        return _eval(node.body if _eval(node.test, names, text) else node.orelse, names, text)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS and not node.keywords:
        args = [_eval(a, names, text) for a in node.args]
        try:
            return _FUNCS[node.func.id](*args)
        except (TypeError, ValueError) as exc:
            raise ProgramError(f"expression {text!r}: {exc}") from None
    raise ProgramError(f"expression {text!r}: {ast.dump(node)[:40]}... is not allowed (arithmetic on parameters only)")


def evaluate(value: object, names: Mapping[str, Any]) -> Any:
    """``value`` itself when it is a number or bool, else the expression it spells, evaluated over ``names``;
    a plain string that is a name's value (a dtype, an op name) stays as it is."""
    if isinstance(value, bool | int | float) or value is None:
        return value
    if not isinstance(value, str):
        raise ProgramError(f"expected a number or an expression, got {value!r}")
    text = value.strip()
    if len(text) > 500:
        raise ProgramError(f"expression of {len(text)} characters is too long (500 at most)")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return value  # a plain word (an op or dtype name)
    if isinstance(tree.body, ast.Name) and tree.body.id not in names:
        return value  # a bare word such as all_reduce or rmsnorm
    return _eval(tree, names, text)
