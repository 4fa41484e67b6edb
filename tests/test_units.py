"""Unit parsing and formatting (rooflib.units): SI inside, strings with units only at the edges."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rooflib.errors import UnitError
from rooflib.units import (
    Dimension,
    format_bandwidth,
    format_bytes,
    format_flops,
    format_time,
    parse_quantity,
    parse_size,
)


@pytest.mark.parametrize(
    ("text", "dimension", "expected"),
    [
        # bytes: decimal and binary prefixes kept apart, lower-case b is a bit
        ("80 GB", "bytes", 80e9),
        ("80 GiB", "bytes", 80 * 2**30),
        ("64 MiB", "bytes", 64 * 2**20),
        ("2 KiB", "bytes", 2048),
        ("1 TB", "bytes", 1e12),
        ("8 b", "bytes", 1.0),
        ("16 bit", "bytes", 2.0),
        ("1 byte", "bytes", 1.0),
        ("1e3 GB", "bytes", 1e12),
        (4096, "bytes", 4096.0),
        # bandwidth: bytes or bits per second
        ("450 GB/s", "bandwidth", 450e9),
        ("400 Gb/s", "bandwidth", 50e9),
        ("400 Gbps", "bandwidth", 50e9),
        ("200 Gb/s", "bandwidth", 25e9),
        ("3.35 TB/s", "bandwidth", 3.35e12),
        ("1 GiB/s", "bandwidth", 2.0**30),
        # time
        ("1.5 us", "time", 1.5e-6),
        ("1.5 µs", "time", 1.5e-6),
        ("20 ns", "time", 20e-9),
        ("8.4 ms", "time", 8.4e-3),
        ("2 s", "time", 2.0),
        ("1 min", "time", 60.0),
        (0.001, "time", 1e-3),
        # frequency and FLOP rates
        ("1.98 GHz", "frequency", 1.98e9),
        ("1410 MHz", "frequency", 1.41e9),
        ("989 TFLOP/s", "flop_rate", 989e12),
        ("2.25 PFLOP/s", "flop_rate", 2.25e15),
        ("67 TFLOPS", "flop_rate", 67e12),
        ("1979 TOPS", "flop_rate", 1979e12),
        # counts and fractions
        ("132", "count", 132.0),
        (18, "count", 18.0),
        ("82%", "fraction", 0.82),
        ("82 %", "fraction", 0.82),
        (0.82, "fraction", 0.82),
        ("0.5", "fraction", 0.5),
        ("1_000 GB", "bytes", 1e12),
    ],
)
def test_parse_quantity(text: object, dimension: str, expected: float) -> None:
    assert parse_quantity(text, dimension) == pytest.approx(expected, rel=1e-12)  # type: ignore[arg-type]


def test_bits_are_an_eighth_of_bytes() -> None:
    assert parse_quantity("400 Gb/s", "bandwidth") * 8 == parse_quantity("400 GB/s", "bandwidth")
    assert parse_quantity("400 Gb/s", "bandwidth") == 50e9


def test_gib_is_not_gb() -> None:
    gib, gb = parse_quantity("1 GiB", "bytes"), parse_quantity("1 GB", "bytes")
    assert gib == 1073741824
    assert gb == 1_000_000_000
    assert gib / gb == pytest.approx(1.073741824)


@pytest.mark.parametrize(
    ("text", "dimension"),
    [
        ("450 GB/z", "bandwidth"),
        ("80 GX", "bytes"),
        ("1.98 Ghz", "frequency"),
        ("5 parsecs", "time"),
        ("450 GB/s", "time"),  # right unit, wrong dimension
        ("80 GB", "bandwidth"),
        ("1.5 us", "bytes"),
        ("989 TFLOP/s", "bandwidth"),
        ("82 GB", "fraction"),
    ],
)
def test_unknown_unit_or_wrong_dimension_names_the_value(text: str, dimension: str) -> None:
    with pytest.raises(UnitError) as info:
        parse_quantity(text, dimension)  # type: ignore[arg-type]
    message = str(info.value)
    assert repr(text) in message
    assert dimension in message


@pytest.mark.parametrize("bad", ["", "GB/s", "fast", "1.2.3 GB", None, [1, 2], {"value": 1}, True])
def test_not_a_quantity(bad: object) -> None:
    with pytest.raises(UnitError) as info:
        parse_quantity(bad, "bandwidth")
    assert repr(bad) in str(info.value)


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan, "1e999 GB"])
def test_non_finite_rejected(bad: object) -> None:
    with pytest.raises(UnitError, match="finite"):
        parse_quantity(bad, "bytes")


def test_unit_error_is_a_value_error() -> None:
    # pydantic turns ValueErrors raised in validators into validation errors with the field's location
    assert issubclass(UnitError, ValueError)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1GiB", 2**30),
        ("1 GiB", 2**30),
        ("64MB", 64_000_000),
        ("64 MiB", 64 * 2**20),
        ("4096", 4096),
        (" 4096 ", 4096),
        ("0", 0),
        ("1.5 KiB", 1536),
        (4096, 4096),
        ("128 b", 16),
    ],
)
def test_parse_size(text: object, expected: int) -> None:
    out = parse_size(text)
    assert out == expected
    assert isinstance(out, int)


@pytest.mark.parametrize("bad", ["-1 KiB", "-4096", -1, "-0.5 GB"])
def test_parse_size_rejects_negative(bad: object) -> None:
    with pytest.raises(UnitError) as info:
        parse_size(bad)
    assert repr(bad) in str(info.value)


@pytest.mark.parametrize("bad", ["1 GB/s", "12 parsecs", "big"])
def test_parse_size_rejects_non_sizes(bad: str) -> None:
    with pytest.raises(UnitError, match=repr(bad)):
        parse_size(bad)


@pytest.mark.parametrize(
    ("fn", "value", "expected"),
    [
        (format_bytes, 2**30, "1 GiB"),
        (format_bytes, 64 * 2**20, "64 MiB"),
        (format_bytes, 2048, "2 KiB"),
        (format_bytes, 512, "512 B"),
        (format_bytes, 0, "0 B"),
        (format_bandwidth, 4.5e11, "450 GB/s"),
        (format_bandwidth, 3.35e12, "3.35 TB/s"),
        (format_bandwidth, 50e9, "50 GB/s"),
        (format_flops, 989e12, "989 TFLOP/s"),
        (format_flops, 2.25e15, "2.25 PFLOP/s"),
        (format_time, 1.5e-6, "1.5 us"),
        (format_time, 20e-9, "20 ns"),
        (format_time, 8.4e-3, "8.4 ms"),
        (format_time, 2.0, "2 s"),
        (format_time, 0.0, "0 ns"),
    ],
)
def test_format_round_numbers(fn: object, value: float, expected: str) -> None:
    assert fn(value) == expected  # type: ignore[operator]


@pytest.mark.parametrize(
    ("fn", "dimension", "value"),
    [
        (format_bandwidth, "bandwidth", 4.5e11),
        (format_bytes, "bytes", 2.0**30),
        (format_flops, "flop_rate", 989e12),
        (format_time, "time", 1.5e-6),
    ],
)
def test_format_then_parse_round_trips(fn: object, dimension: str, value: float) -> None:
    assert parse_quantity(fn(value), dimension) == pytest.approx(value, rel=1e-3)  # type: ignore[operator,arg-type]


finite = st.floats(min_value=-1e12, max_value=1e12, allow_nan=False, allow_infinity=False)


@given(finite)
def test_gb_per_s_property(x: float) -> None:
    assert parse_quantity(f"{x} GB/s", "bandwidth") == pytest.approx(x * 1e9, rel=1e-12, abs=1e-300)


@given(finite)
def test_gbit_per_s_property(x: float) -> None:
    assert parse_quantity(f"{x} Gb/s", "bandwidth") == pytest.approx(x * 1e9 / 8, rel=1e-12, abs=1e-300)


@given(st.integers(min_value=0, max_value=2**50))
def test_parse_size_of_digits_is_exact(n: int) -> None:
    assert parse_size(str(n)) == n


# --- bad input: whole bytes, finite, one dimension, int64 ------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0.5KiB", 512), ("1.1KB", 1100), ("1e9", 10**9), ("12 Gb", 1_500_000_000), ("9223372036854775807", 2**63 - 1)],
)
def test_parse_size_exact(text: str, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("1.5B", "a size must be a whole number of bytes, got '1.5B' (= 1.5 bytes)"),
        ("1b", "a size must be a whole number of bytes, got '1b' (= 0.125 bytes)"),
        (1.5, "a size must be a whole number of bytes, got 1.5"),
        ("-1", "a size must not be negative, got '-1'"),
        ("nan", "a size in bytes must be finite, got 'nan'"),
        (float("inf"), "a size in bytes must be finite, got inf"),
        ("1e400", "size '1e400' is too large: at most 9223372036854775807 bytes"),
        ("9223372036854775808", "is too large"),
        (10**400, "is too large"),
        ("1 GiB/s", "'1 GiB/s' is a bandwidth, not a size in bytes"),
        (True, "expected a size in bytes such as"),
        ("", "expected a size in bytes such as"),
    ],
)
def test_parse_size_refuses(value: object, message: str) -> None:
    with pytest.raises(UnitError, match=re.escape(message)):
        parse_size(value)


@pytest.mark.parametrize(
    ("text", "dimension", "message"),
    [
        ("450 GB", "bandwidth", "'450 GB' is a size in bytes, not a bandwidth; use e.g. '450 GB/s'"),
        ("1.98 GB", "frequency", "'1.98 GB' is a size in bytes, not a frequency"),
        ("450", "bandwidth", "'450' has no unit; a bandwidth needs one"),
        ("1.5 us", "bytes", "'1.5 us' is a time, not a size in bytes"),
        ("nan GB/s", "bandwidth", "expected a bandwidth such as"),
        ("inf", "time", "a time must be finite, got 'inf'"),
        ("1e400 GB/s", "bandwidth", "a bandwidth must be finite"),
        (10**400, "bytes", "is too large"),
    ],
)
def test_parse_quantity_names_the_dimension(text: object, dimension: Dimension, message: str) -> None:
    with pytest.raises(UnitError, match=re.escape(message)):
        parse_quantity(text, dimension)


def test_parse_quantity_takes_numpy_numbers() -> None:
    assert parse_quantity(np.int64(4096), "bytes") == 4096.0
    assert parse_size(np.int64(4096)) == 4096
