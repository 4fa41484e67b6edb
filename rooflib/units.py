"""Unit parsing and formatting. Everything inside rooflib is SI: bytes, seconds, B/s, FLOP/s, Hz.

Strings such as ``"450 GB/s"``, ``"80 GiB"``, ``"400 Gb/s"`` (bits) or ``"1.98 GHz"`` are converted once, at the
edge (YAML loading, CLI arguments). ``GB`` is 1e9 bytes and ``GiB`` is 2**30 bytes; a lower-case ``b`` is a bit.

>>> parse_quantity("450 GB/s", "bandwidth")
450000000000.0
>>> parse_quantity("400 Gb/s", "bandwidth")
50000000000.0
>>> parse_size("1GiB")
1073741824
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, localcontext
from numbers import Integral, Real
from typing import Literal

from rooflib.errors import UnitError

__all__ = [
    "MAX_SIZE",
    "Dimension",
    "format_bandwidth",
    "format_bytes",
    "format_flops",
    "format_time",
    "parse_quantity",
    "parse_size",
]

Dimension = Literal["bytes", "bandwidth", "time", "frequency", "flop_rate", "count", "fraction"]

_DECIMAL = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_BINARY = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50}


def _byte_units() -> dict[str, float]:
    units: dict[str, float] = {}
    for prefix, scale in _DECIMAL.items():
        units[f"{prefix}B"] = scale
        units[f"{prefix}b"] = scale / 8.0
        units[f"{prefix}bit"] = scale / 8.0
    for prefix, scale in _BINARY.items():
        units[f"{prefix}B"] = scale
        units[f"{prefix}b"] = scale / 8.0
    units["byte"] = units["bytes"] = 1.0
    return units


_BYTES = _byte_units()
_TIME = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9, "ps": 1e-12, "min": 60.0}
_FREQ = {f"{p}Hz": s for p, s in _DECIMAL.items()}
_FLOPS: dict[str, float] = {}
for _p, _s in _DECIMAL.items():
    for _form in ("FLOP/s", "FLOPS", "FLOPs/s", "OP/s", "OPS"):
        _FLOPS[f"{_p}{_form}"] = _s
_BANDWIDTH = {f"{u}/s": s for u, s in _BYTES.items()} | {f"{u}ps": s for u, s in _BYTES.items() if u.endswith("b")}

_TABLES: dict[Dimension, dict[str, float]] = {
    "bytes": _BYTES,
    "bandwidth": _BANDWIDTH,
    "time": _TIME,
    "frequency": _FREQ,
    "flop_rate": _FLOPS,
    "count": {"": 1.0},
    "fraction": {"": 1.0, "%": 0.01},
}
_EXAMPLES: dict[Dimension, str] = {
    "bytes": "'80 GB', '64 MiB', 4096",
    "bandwidth": "'450 GB/s', '400 Gb/s'",
    "time": "'1.5 us', '20 ns', 0.001",
    "frequency": "'1.98 GHz'",
    "flop_rate": "'989 TFLOP/s'",
    "count": "132",
    "fraction": "0.82, '82%'",
}
_NOUNS: dict[Dimension, str] = {
    "bytes": "size in bytes",
    "bandwidth": "bandwidth",
    "time": "time",
    "frequency": "frequency",
    "flop_rate": "FLOP rate",
    "count": "count",
    "fraction": "fraction",
}
MAX_SIZE = 2**63 - 1
"""The largest size :func:`parse_size` accepts: what an int64 holds (8 EiB, beyond any machine's memory)."""
_NUMBER = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(.*?)\s*$")


def _noun(dimension: Dimension) -> str:
    return _NOUNS[dimension]


def _shown(value: object) -> str:
    """``repr(value)``, cut short for the 400-digit integers a hostile caller may pass."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"


def _not_finite(text: str) -> bool:
    return text.strip().lstrip("+-").lower() in ("nan", "inf", "infinity")


def _unit_error(value: object, unit: str, dimension: Dimension) -> UnitError:
    """The clearest complaint about ``unit``: missing, belonging to another dimension, or unknown."""
    hint = f"use e.g. {_EXAMPLES[dimension]}"
    if unit == "":
        return UnitError(f"{value!r} has no unit; a {_noun(dimension)} needs one: {hint}")
    for other, table in _TABLES.items():
        if other != dimension and unit in table and unit != "":
            return UnitError(f"{value!r} is a {_noun(other)}, not a {_noun(dimension)}; {hint}")
    return UnitError(f"unknown unit {unit!r} in {value!r} for a {_noun(dimension)}; {hint}")


def parse_quantity(value: object, dimension: Dimension) -> float:
    """Convert ``value`` (a number already in SI, or a string with a unit) to a float in SI units.

    A plain number string is accepted for sizes in bytes, counts and fractions (``"4096"``); every other
    dimension needs its unit. Raises :class:`rooflib.errors.UnitError` naming the value and the units accepted
    for ``dimension`` (a unit of another dimension, e.g. ``"450 GB"`` for a bandwidth, is named as such).
    """
    expected = f"expected a {_noun(dimension)} such as {_EXAMPLES[dimension]}, got {value!r}"
    if isinstance(value, bool) or not isinstance(value, Real | str):
        raise UnitError(expected)
    if isinstance(value, Real):
        try:
            out = float(value)
        except OverflowError:
            raise UnitError(f"a {_noun(dimension)} of {_shown(value)} is too large") from None
    else:
        if _not_finite(value):
            raise UnitError(f"a {_noun(dimension)} must be finite, got {value!r}")
        match = _NUMBER.match(value.replace("_", ""))
        if match is None:
            raise UnitError(expected)
        number, unit = match.groups()
        table = _TABLES[dimension]
        scale = table.get(unit, 1.0 if unit == "" and dimension == "bytes" else None)
        if scale is None:
            raise _unit_error(value, unit, dimension)
        out = float(number) * scale
    if not math.isfinite(out):
        raise UnitError(f"a {_noun(dimension)} must be finite, got {value!r}")
    return out


def parse_size(value: object) -> int:
    """Parse a message size: ``'1GiB'``, ``'64MB'``, ``'4096'``, ``'1e9'``, ``'0.5KiB'`` -> bytes (an int).

    The size must be a whole number of bytes (``'1.5B'`` and ``'1b'``, one bit, are refused; ``'0.5KiB'`` is
    512), not negative, and at most :data:`MAX_SIZE` (2**63 - 1, what an int64 holds). The arithmetic is
    exact (decimal), so ``'1.1KB'`` is 1100 bytes.

    >>> parse_size("0.5KiB"), parse_size("1e9"), parse_size("12 Gb")
    (512, 1000000000, 1500000000)
    """
    if isinstance(value, bool) or not isinstance(value, Real | str):
        raise UnitError(f"expected a size in bytes such as {_EXAMPLES['bytes']}, got {value!r}")
    exact: Decimal
    if isinstance(value, Integral):
        exact = Decimal(int(value))
    elif isinstance(value, Real):
        number = float(value)
        if not math.isfinite(number):
            raise UnitError(f"a size in bytes must be finite, got {value!r}")
        exact = Decimal(number)
    else:
        text = value.strip().replace("_", "")
        if _not_finite(text):
            raise UnitError(f"a size in bytes must be finite, got {value!r}")
        match = _NUMBER.match(text)
        if match is None or (match.group(2) != "" and match.group(2) not in _BYTES):
            parse_quantity(value, "bytes")  # raises the error that names the unit
            raise UnitError(f"expected a size in bytes such as {_EXAMPLES['bytes']}, got {value!r}")
        number_text, unit = match.groups()
        with localcontext() as ctx:
            ctx.prec = 60
            exact = Decimal(number_text) * Decimal(_BYTES[unit] if unit else 1.0)
    if exact < 0:
        raise UnitError(f"a size must not be negative, got {value!r}")
    if exact > MAX_SIZE:
        raise UnitError(f"size {_shown(value)} is too large: at most {MAX_SIZE} bytes (2**63 - 1, 8 EiB)")
    if exact != exact.to_integral_value():
        raise UnitError(f"a size must be a whole number of bytes, got {value!r} (= {exact.normalize()} bytes)")
    return int(exact)


def _scaled(value: float, unit: str, base: float, prefixes: tuple[str, ...]) -> str:
    magnitude = abs(value)
    for i in range(len(prefixes) - 1, -1, -1):
        scale = base**i
        if magnitude >= scale:
            return f"{value / scale:.3g} {prefixes[i]}{unit}"
    return f"{value:.3g} {unit}"


def format_bytes(n: float) -> str:
    """``1073741824 -> '1 GiB'`` (binary prefixes, as message sizes are usually powers of two)."""
    return _scaled(n, "B", 1024.0, ("", "Ki", "Mi", "Gi", "Ti", "Pi"))


def format_bandwidth(bps: float) -> str:
    """``4.5e11 -> '450 GB/s'`` (decimal prefixes, as datasheets use)."""
    return _scaled(bps, "B/s", 1000.0, ("", "k", "M", "G", "T", "P"))


def format_flops(fps: float) -> str:
    return _scaled(fps, "FLOP/s", 1000.0, ("", "k", "M", "G", "T", "P", "E"))


def format_time(seconds: float) -> str:
    """``1.5e-6 -> '1.5 us'``."""
    magnitude = abs(seconds)
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if magnitude >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"
