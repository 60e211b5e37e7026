"""Feeding ``tfr schema``'s statistics a batch of records at a time.

The work is :func:`tfrecord_engine.example.infer_records.add_records` (shared with
``tfe.infer_features``); the CLI hands it its own per-record decoder, whose errors say
which ``tfr`` options read other records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy.typing as npt

from ..example.infer import SchemaStats
from ..example.infer_records import add_records as add_to_stats
from .render import Kind, decode_record

__all__ = ["add_records"]


def _decode(
    record: bytes, kind: Kind, where: str
) -> tuple[dict[str, npt.NDArray[Any]], Mapping[str, list[npt.NDArray[Any]]] | None]:
    decoded = decode_record(record, kind, where=where)
    return decoded.features, decoded.lists


def add_records(
    stats: SchemaStats, records: Sequence[bytes], wheres: Sequence[str], kind: Kind
) -> None:
    """Adds a batch of records to ``stats``; ``wheres`` name each record for errors."""
    add_to_stats(stats, records, wheres, kind, _decode)
