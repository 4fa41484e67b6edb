"""resolve_params: every parameter value checked, errors naming the workload, the key and the value."""

from __future__ import annotations

import re

import pytest

from rooflib.errors import UnitError
from rooflib.workloads.spec import load_workloads, resolve_params

SPECS = load_workloads()


def _resolve(workload: str, **given: object) -> dict[str, object]:
    return resolve_params(SPECS[workload][0], dict(given))


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"k": "-5"}, "workload 'gemm_rs': parameter k=-5: must be >= 1"),
        ({"k": -5}, "workload 'gemm_rs': parameter k=-5: must be >= 1"),
        ({"k": "-5KiB"}, "workload 'gemm_rs': parameter k=-5KiB: must be >= 1"),
        ({"k": "1.5"}, "workload 'gemm_rs': parameter k=1.5: must be a whole number"),
        ({"k": 1.5}, "workload 'gemm_rs': parameter k=1.5: must be a whole number"),
        ({"k": True}, "workload 'gemm_rs': parameter k=True: expected a whole number, got a bool"),
        ({"m": 2**70}, "parameter m=1180591620717411303424: must be <= 9223372036854775807 (2**63 - 1)"),
        ({"m": "1e400"}, "parameter m=1e400: must be <= 9223372036854775807"),
        ({"m": "abc"}, "parameter m=abc: expected a size in bytes such as"),
        ({"dtype": "fp9"}, "parameter dtype=fp9: dtype must be one of fp64"),
    ],
)
def test_gemm_rs_bad_values(given: dict[str, object], message: str) -> None:
    with pytest.raises(UnitError, match=re.escape(message)):
        _resolve("gemm_rs", **given)


@pytest.mark.parametrize(("given", "expected"), [("1e3", 1000), ("8KiB", 8192), ("+64", 64), (4096.0, 4096)])
def test_whole_numbers_in_any_spelling(given: object, expected: int) -> None:
    assert _resolve("gemm_rs", k=given)["k"] == expected


@pytest.mark.parametrize("value", ["maybe", "2", "", "y", None])
def test_bool_must_be_a_bool(value: object) -> None:
    with pytest.raises(UnitError, match=r"parameter causal=.*: expected one of true/1/yes/on/false/0/no/off"):
        _resolve("ring_attention", causal=value)


@pytest.mark.parametrize(
    ("value", "expected"), [("TRUE", True), ("On", True), ("1", True), ("no", False), (False, False)]
)
def test_bool_spellings(value: object, expected: bool) -> None:
    assert _resolve("ring_attention", causal=value)["causal"] is expected


def test_op_is_checked_and_normalised() -> None:
    assert _resolve("collective", op="all-gather")["op"] == "all_gather"
    with pytest.raises(UnitError, match="parameter op=allreduce: unknown collective 'allreduce'; valid collectives"):
        _resolve("collective", op="allreduce")


def test_size_may_be_zero_but_not_negative() -> None:
    assert _resolve("collective", bytes="0")["bytes"] == 0
    with pytest.raises(UnitError, match="parameter bytes=-1: must be >= 0"):
        _resolve("collective", bytes="-1")
