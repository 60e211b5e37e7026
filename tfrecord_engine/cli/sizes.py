"""Byte sizes on the command line: ``--cache-limit 50G``."""

from __future__ import annotations

import re
from typing import Any, Final

import click

__all__ = ["ByteSize", "parse_size"]

_SIZE: Final = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*$", re.IGNORECASE)
_UNITS: Final = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str) -> int:
    """Bytes of ``N``, ``NK``, ``NM``, ``NG``, ``NT`` (powers of 1024; ``B``/``iB`` may follow).

    >>> parse_size("512"), parse_size("64K"), parse_size("1.5GiB"), parse_size("2tb")
    (512, 65536, 1610612736, 2199023255552)

    Raises:
        ValueError: anything else.
    """
    m = _SIZE.match(text)
    if m is None:
        raise ValueError(f"{text!r} is not a size like 512, 64K, 20G or 1.5T")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


class ByteSize(click.ParamType):  # type: ignore[type-arg]
    """A click parameter type for :func:`parse_size`."""

    name = "size"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        try:
            return parse_size(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)
