"""The multicast-off environment, read the way each library reads it (imports only :mod:`rooflib.conventions`).

Three switches keep NVLink multicast (NVLS) off, and each library parses its own differently:

- ``NCCL_NVLS_ENABLE``: NCCL reads an integer with ``strtoll(value, NULL, 0)`` (src/misc/param.cc): leading
  blanks, a sign, ``0x`` hex or ``0`` octal, digits, and whatever follows ignored; no digits at all reads as 0,
  an out-of-range number falls back to the default (2: on where the hardware has it). 0 is off.
- ``TORCH_SYMM_MEM_DISABLE_MULTICAST``: PyTorch's ``c10::utils::check_env`` takes exactly ``"1"`` as true and
  ``"0"`` as false; anything else is ignored with a warning, leaving multicast on.
- ``NVSHMEM_DISABLE_NVLS``: NVSHMEM's boolean options read ``1``, ``y``, ``yes``, ``t``, ``true`` (any case) as true.

A value *clearly* keeps multicast off when every one of those readings says off, e.g. ``NCCL_NVLS_ENABLE=0``;
``NCCL_NVLS_ENABLE=false`` is off in NCCL only by the accident that ``strtoll`` finds no digits, so it does not
count. :func:`keep_multicast_off` replaces whatever is not clearly off; :func:`multicast_requested` is the
opposite test (used before anything is allowed to turn multicast on).

>>> keep_multicast_off({"NCCL_NVLS_ENABLE": "false"})[1]
["NCCL_NVLS_ENABLE='false' -> '0'"]
>>> nvls_state({"NCCL_NVLS_ENABLE": "0x0"})
'off'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

from rooflib.conventions import MULTICAST_OFF

__all__ = [
    "NvlsState",
    "clearly_off",
    "keep_multicast_off",
    "multicast_requested",
    "nccl_env_int",
    "nvls_state",
]

NvlsState = Literal["on", "off", "unknown"]
_NCCL_DEFAULT = 2  # NCCL_NVLS_ENABLE when unset or unreadable: on where the hardware supports it
_INT64 = 2**63
_STRTOLL = re.compile(r"\s*([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")
_PLAIN_INT = re.compile(r"\s*[+-]?(0[xX][0-9a-fA-F]+|[0-9]+)\s*")
_NVSHMEM_TRUE = {"1", "y", "yes", "t", "true"}


def nccl_env_int(value: str | None) -> int:
    """The integer NCCL reads from an environment value (``strtoll(value, NULL, 0)``; unset or empty: 2)."""
    if value is None or value == "":
        return _NCCL_DEFAULT
    match = _STRTOLL.match(value)
    if match is None:  # no digits: strtoll converts nothing and returns 0
        return 0
    sign, digits = match.groups()
    base = 16 if digits[:2].lower() == "0x" else 8 if len(digits) > 1 and digits[0] == "0" else 10
    number = int(digits, base) * (-1 if sign == "-" else 1)
    if not -_INT64 <= number < _INT64:  # ERANGE: NCCL keeps its default
        return _NCCL_DEFAULT
    return number


def clearly_off(name: str, value: str | None) -> bool:
    """Whether ``name=value`` keeps multicast off in the library that reads it, with no reliance on accidents."""
    if value is None:
        return False
    if name == "NCCL_NVLS_ENABLE":
        return _PLAIN_INT.fullmatch(value) is not None and nccl_env_int(value) == 0
    if name == "TORCH_SYMM_MEM_DISABLE_MULTICAST":
        return value == "1"
    if name == "NVSHMEM_DISABLE_NVLS":
        return value.strip().lower() in _NVSHMEM_TRUE
    raise KeyError(name)


def keep_multicast_off(env: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """``env`` with every multicast switch that is not clearly off set to its canonical off value, and a note
    per replaced value (``"NAME='old' -> 'new'"``; an unset switch is set without a note)."""
    out = dict(env)
    notes = []
    for name, off in MULTICAST_OFF.items():
        old = out.get(name)
        if not clearly_off(name, old):
            out[name] = off
            if old is not None:
                notes.append(f"{name}={old!r} -> {off!r}")
    return out, notes


def nvls_state(env: Mapping[str, str]) -> NvlsState:
    """Whether NCCL may use NVLS under ``env``: ``off`` when it reads NCCL_NVLS_ENABLE as 0, else ``on``
    (NCCL's default uses NVLS where the hardware has it)."""
    return "off" if nccl_env_int(env.get("NCCL_NVLS_ENABLE")) == 0 else "on"


def multicast_requested(env: Mapping[str, str]) -> bool:
    """True only when NCCL_NVLS_ENABLE is a plain nonzero integer (``1``, ``2``): an explicit request for
    multicast. ``false``, ``yes``, ``on``, an empty or missing value are not requests."""
    value = env.get("NCCL_NVLS_ENABLE")
    return value is not None and _PLAIN_INT.fullmatch(value) is not None and nccl_env_int(value) != 0
